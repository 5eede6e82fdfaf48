//! `toolport upstreams login NAME` and `logout NAME`, the library's half: the authorization
//! code flow with PKCE through rmcp, from what the upstream's 401 names (its protected-resource
//! metadata, then the authorization server's RFC 8414 / OIDC metadata), registering as the
//! configured client, by toolport's client ID metadata document, or dynamically (in that
//! order, as the server offers), always with `resource`; the callback's `state` must be the
//! one sent (rmcp keeps the PKCE verifier under it) and its `iss` the server's (RFC 9207).
//! The binary's half (`src/cli/login.rs`) is the loopback redirect and the browser.

use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore as _,
};

use super::super::settings::{Endpoint, Grant, OAuthSettings, UpstreamSettings};
use super::{describe, store::TokenStore};

/// How long the upstream's first answer (its 401) may take.
const CHALLENGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// The client name toolport registers under (dynamic registration): what the person sees on
/// the consent page.
const CLIENT_NAME: &str = "toolport";

/// A login under way: the URL the person opens, and what completes it.
pub struct Login {
    session: AuthorizationSession,
    store: TokenStore,
}

/// The OAuth settings of an upstream that logs in, or why it does not.
fn login_settings(settings: &UpstreamSettings) -> Result<(&url::Url, &OAuthSettings), String> {
    let name = &settings.name;
    match &settings.endpoint {
        Endpoint::Http {
            url,
            oauth: Some(oauth),
            ..
        } => match oauth.grant {
            Grant::AuthorizationCode { .. } => Ok((url, oauth)),
            Grant::ClientCredentials { .. } => Err(format!(
                "upstream {name} authorizes with client credentials (auth = \"client_credentials\"): it needs no login"
            )),
        },
        _ => Err(format!(
            "upstream {name} does not authorize with OAuth; give it auth = \"oauth\" in its [[upstreams]] entry to log in"
        )),
    }
}

impl Login {
    /// Start a login to upstream `settings` whose callback comes to `redirect_uri` (a loopback
    /// URL): ask the upstream (its 401 names its metadata), discover, register, and build the
    /// authorization URL.
    pub async fn begin(settings: &UpstreamSettings, redirect_uri: &str) -> Result<Self, String> {
        let (url, oauth) = login_settings(settings)?;
        let Grant::AuthorizationCode {
            client_id,
            client_secret,
            client_metadata_url,
        } = &oauth.grant
        else {
            unreachable!("login_settings returns only authorization code upstreams")
        };
        let store = TokenStore::open(&settings.name, url.as_str(), oauth.store).await?;
        let challenge = challenge(url).await?;
        let mut manager = AuthorizationManager::new(url.as_str())
            .await
            .map_err(|e| format!("its OAuth client could not be made ({})", describe(&e)))?;
        let resolution = manager
            .resolve_metadata_from_challenge(challenge.as_deref())
            .await
            .map_err(|e| {
                format!(
                    "its authorization server could not be discovered ({})",
                    describe(&e)
                )
            })?;
        if !resolution.source.is_discovered() {
            return Err(format!(
                "{} publishes no OAuth metadata (no protected-resource metadata, no authorization server metadata): it cannot be logged into",
                crate::secret::display_url(url)
            ));
        }
        manager.set_metadata(resolution.metadata);
        manager.set_credential_store(store.clone());
        let mut request = AuthorizationRequest::new(redirect_uri).with_client_name(CLIENT_NAME);
        if !oauth.scopes.is_empty() {
            request = request.with_scopes(oauth.scopes.iter().cloned());
        }
        if let Some(id) = client_id {
            request = request.with_preregistered_client(id.clone());
        }
        if let Some(source) = client_secret {
            request = request.with_client_secret(source.read("client secret")?);
        }
        if let Some(metadata_url) = client_metadata_url {
            request = request.with_client_metadata_url(metadata_url.clone());
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| format!("the login could not start ({})", describe(&e)))?;
        Ok(Self { session, store })
    }

    /// The authorization URL the person opens.
    pub fn url(&self) -> &str {
        &self.session.auth_url
    }

    /// Complete the login with the URL the browser was sent back to: the code is exchanged
    /// (with the PKCE verifier and `resource`) and the tokens stored. Returns where they are.
    pub async fn finish(self, callback_url: &str) -> Result<String, String> {
        let parsed = url::Url::parse(callback_url)
            .map_err(|e| format!("the callback URL is not a URL ({e})"))?;
        let param = |name: &str| {
            parsed
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if let Some(error) = param("error") {
            let description = param("error_description").unwrap_or_default();
            return Err(format!(
                "the authorization server refused the login: {error} {description}"
            ));
        }
        self.session
            .handle_callback_url(callback_url)
            .await
            .map_err(|e| format!("the login could not be completed ({})", describe(&e)))?;
        Ok(self.store.backend.describe())
    }
}

/// Forget upstream `settings`' stored tokens (they are not revoked at the server: rmcp has
/// no revocation call; revoke them there too if they must stop working before they expire).
/// Returns whether there were any, and where.
pub async fn logout(settings: &UpstreamSettings) -> Result<(bool, String), String> {
    let (url, oauth) = login_settings(settings)?;
    let store = TokenStore::open(&settings.name, url.as_str(), oauth.store).await?;
    let had = store.load().await.ok().flatten().is_some();
    let removed = store.remove().await?;
    Ok((had || removed, store.backend.describe()))
}

/// The upstream's `WWW-Authenticate` challenge: an `initialize` sent without a token, which
/// an upstream that needs OAuth answers with 401 naming its protected-resource metadata.
/// `None` when it answers 401 without one (discovery then tries the well-known places).
async fn challenge(url: &url::Url) -> Result<Option<String>, String> {
    let shown = crate::secret::display_url(url);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(CHALLENGE_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "toolport", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let response = client
        .post(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("{shown} could not be reached ({e})"))?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Err(format!(
            "{shown} answered {} without asking for authorization: it needs no login (drop auth from its entry)",
            response.status()
        ));
    }
    Ok(response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned))
}
