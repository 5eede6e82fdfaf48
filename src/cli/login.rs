//! `toolport upstreams login NAME` and `logout NAME`, the person's half: a loopback redirect
//! on 127.0.0.1 with a port the system picks (RFC 8252 §7.3: the authorization server accepts
//! any port of a loopback redirect), the authorization URL on stderr and opened in the
//! browser when there is one (`$BROWSER` first, then the system's opener: the `webbrowser`
//! crate), the callback answered with a page saying how it went. The OAuth itself is the
//! library's (`toolport_tools::host::UpstreamLogin`: discovery, registration, PKCE,
//! `resource`, `state` and `iss` checks, the token store).

use std::process::ExitCode;
use std::time::Duration;

use axum::extract::State;
use axum::http::Uri;
use axum::response::Html;
use axum::routing::get;
use tokio::sync::{mpsc, oneshot};
use toolport_tools::host::{UpstreamLogin, UpstreamSettings, upstream_logout};

use crate::config::Config;

/// How long the person has to log in and approve: long enough for a password manager and a
/// second factor, short enough that a forgotten terminal does not hold a port open for hours.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(600);

/// The callback's path on the loopback listener.
const CALLBACK_PATH: &str = "/callback";

/// One callback: the URL the browser came back to, and where its outcome goes (the page).
type Callback = (String, oneshot::Sender<Result<String, String>>);

/// The upstream named `name`, or an error listing those that log in.
fn find<'a>(config: &'a Config, name: &str) -> Result<&'a UpstreamSettings, String> {
    config
        .upstreams
        .iter()
        .find(|u| u.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = config
                .upstreams
                .iter()
                .filter(|u| u.oauth().is_some())
                .map(|u| u.name.as_str())
                .collect();
            format!(
                "no upstream is named {name:?}; those that authorize with OAuth: {}",
                if names.is_empty() {
                    "none (give an HTTP upstream auth = \"oauth\")".to_owned()
                } else {
                    names.join(", ")
                }
            )
        })
}

/// `toolport upstreams login NAME [--no-browser]`.
pub(crate) async fn login(config: &Config, name: &str, no_browser: bool) -> ExitCode {
    match run(config, name, no_browser).await {
        Ok(place) => {
            eprintln!(
                "toolport: logged in to upstream {name}; its tokens are kept in {place}. A running toolport connects to it within a few seconds."
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("toolport: login to upstream {name} failed: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: &Config, name: &str, no_browser: bool) -> Result<String, String> {
    let settings = find(config, name)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1 for the redirect ({e})"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
    let login = UpstreamLogin::begin(settings, &redirect_uri).await?;
    let url = login.url().to_owned();
    eprintln!("toolport: to log in to upstream {name}, open this URL in a browser:\n\n  {url}\n");
    if !no_browser {
        let opening = url.clone();
        match tokio::task::spawn_blocking(move || webbrowser::open(&opening)).await {
            Ok(Ok(())) => eprintln!("toolport: opened in your browser; waiting for the login…"),
            _ => eprintln!(
                "toolport: no browser could be opened here; open the URL yourself (the redirect comes back to this machine's 127.0.0.1:{port})"
            ),
        }
    }
    let (callbacks, mut received) = mpsc::channel::<Callback>(4);
    let app = axum::Router::new()
        .route(CALLBACK_PATH, get(callback))
        .with_state(callbacks);
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let outcome = tokio::time::timeout(LOGIN_TIMEOUT, async {
        let (path, answer) = received
            .recv()
            .await
            .ok_or("the redirect listener stopped")?;
        let result = login
            .finish(&format!("http://127.0.0.1:{port}{path}"))
            .await;
        let _ = answer.send(result.clone());
        result
    })
    .await;
    // The page is answered before the listener goes (its answer is in flight on its task).
    tokio::task::yield_now().await;
    server.abort();
    outcome.map_err(|_| {
        format!(
            "no redirect came back within {} minutes (run the command again)",
            LOGIN_TIMEOUT.as_secs() / 60
        )
    })?
}

/// The redirect: handed to the login, answered with its outcome.
async fn callback(State(callbacks): State<mpsc::Sender<Callback>>, uri: Uri) -> Html<String> {
    let (tell, outcome) = oneshot::channel();
    let path = uri
        .path_and_query()
        .map_or_else(|| CALLBACK_PATH.to_owned(), ToString::to_string);
    if callbacks.send((path, tell)).await.is_err() {
        return page(
            "This login is already over",
            "Run the login command again if needed.",
        );
    }
    match outcome.await {
        Ok(Ok(_)) => page(
            "Logged in",
            "toolport has the upstream's tokens. You can close this tab.",
        ),
        Ok(Err(error)) => page("The login failed", &error),
        Err(_) => page("The login failed", "toolport stopped before it completed."),
    }
}

fn page(title: &str, text: &str) -> Html<String> {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    Html(format!(
        "<!doctype html><meta charset=\"utf-8\"><title>toolport: {0}</title><h1>{0}</h1><p>{1}</p>",
        escape(title),
        escape(text)
    ))
}

/// `toolport upstreams logout NAME`.
pub(crate) async fn logout(config: &Config, name: &str) -> ExitCode {
    let result = match find(config, name) {
        Ok(settings) => upstream_logout(settings).await,
        Err(error) => Err(error),
    };
    match result {
        Ok((true, place)) => {
            eprintln!(
                "toolport: forgot upstream {name}'s tokens (from {place}). They were not revoked at its authorization server; revoke them there if they must stop working before they expire."
            );
            ExitCode::SUCCESS
        }
        Ok((false, place)) => {
            eprintln!("toolport: upstream {name} had no stored tokens (in {place})");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("toolport: logout of upstream {name} failed: {error}");
            ExitCode::FAILURE
        }
    }
}
