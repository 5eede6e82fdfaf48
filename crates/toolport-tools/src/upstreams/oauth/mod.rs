//! OAuth to upstreams: an HTTP upstream with `auth = "oauth"` or `"client_credentials"` gets
//! its access tokens from its authorization server instead of a static token. rmcp's `auth`
//! client does the protocol (RFC 9728 protected-resource metadata, RFC 8414 / OIDC discovery,
//! client ID metadata documents, dynamic registration, PKCE S256, RFC 8707 `resource` on every
//! token request including refreshes, RFC 9207 `iss`, client credentials and
//! `private_key_jwt`); this module wraps it where toolport needs more:
//!
//! - [`store`]: where the tokens are kept (the system's credential store, or a private file);
//! - [`http`]: the Streamable HTTP client that puts the token on each request, renews it once
//!   when the upstream refuses it, and tells the supervisor when only a new login can help
//!   (rmcp's own `AuthClient` sends the request without a token instead, which the upstream
//!   refuses with no word of why);
//! - [`login`]: `toolport upstreams login NAME` (the authorization code flow; the binary plays
//!   the loopback redirect and the browser) and `logout`.
//!
//! [`Authorizer`] is one connection's: it is built when the supervisor connects (reading the
//! store, so a login made since is used) and dropped with the connection. A refresh the
//! authorization server rejects, or tokens that are missing, end the connection with
//! "needs login" ([`Authorizer::lost`]); the supervisor waits for the store to change.
//!
//! Where rmcp falls short, and what is done about it: it refreshes only when a request is
//! made and the token has under 30 s left (a fixed margin: an authorization server issuing
//! tokens for less than that is refreshed at every request; toolport's 30 s pings keep an
//! idle upstream's token fresh); it keeps no state of "needs login" (this module does); a
//! logout cannot revoke at the server (rmcp has no revocation call), so `logout` forgets the
//! tokens and says so.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, ClientCredentialsConfig, JwtSigningAlgorithm,
    OAuthClientConfig,
};
use tokio_util::sync::CancellationToken;

use super::settings::{ClientAuth, Grant, KeyAlg, OAuthSettings, UpstreamSettings};

pub(crate) mod http;
pub(crate) mod login;
pub(crate) mod store;

use store::TokenStore;

/// How often an upstream that needs a login looks whether one was made (its stored tokens
/// changed): a login in another terminal is picked up within this, without a restart.
pub(crate) const LOGIN_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// A digest of upstream `settings`' stored tokens, when it logs in (`auth = "oauth"`); `None`
/// otherwise, or when it has none.
pub(crate) async fn stored(settings: &UpstreamSettings) -> Option<[u8; 32]> {
    let super::settings::Endpoint::Http {
        url,
        oauth: Some(oauth),
        ..
    } = &settings.endpoint
    else {
        return None;
    };
    if !matches!(oauth.grant, Grant::AuthorizationCode { .. }) {
        return None;
    }
    let store = TokenStore::open(&settings.name, url.as_str(), oauth.store)
        .await
        .ok()?;
    store.fingerprint().await
}

/// One connection's source of access tokens for an OAuth upstream.
pub(crate) struct Authorizer {
    upstream: String,
    manager: tokio::sync::Mutex<AuthorizationManager>,
    /// For `client_credentials`: how a new token is obtained (again at each expiry).
    client_credentials: Option<ClientCredentialsConfig>,
    /// Fires when only a new login can help (a refresh was rejected, the tokens are gone).
    lost: CancellationToken,
    /// Told each new access token (the audit log scrubs it).
    secret: Box<dyn Fn(&str) + Send + Sync>,
    last_told: Mutex<String>,
}

/// Why an upstream could not be authorized.
pub(crate) enum Refused {
    /// Only a login helps: none was made, or its tokens were refused.
    NeedsLogin(String),
    /// Something else (the authorization server unreachable, a bad client secret): retried.
    Failed(String),
}

/// What a status and an error say for an upstream that needs a login.
pub(crate) fn needs_login_text(upstream: &str, why: &str) -> String {
    format!("{why}: run `toolport upstreams login {upstream}`")
}

impl Authorizer {
    /// The authorizer of upstream `settings` (with `oauth`), ready to give a token: for a
    /// login, its stored tokens (refreshed if they are about to expire); for client
    /// credentials, a token obtained now.
    pub(crate) async fn open(
        settings: &UpstreamSettings,
        url: &url::Url,
        oauth: &OAuthSettings,
        secret: Box<dyn Fn(&str) + Send + Sync>,
    ) -> Result<Arc<Self>, Refused> {
        let name = &settings.name;
        let failed =
            |what: &str, e: AuthError| Refused::Failed(format!("{what} ({})", describe(&e)));
        let mut manager = AuthorizationManager::new(url.as_str())
            .await
            .map_err(|e| failed("its OAuth client could not be made", e))?;
        let client_credentials = match &oauth.grant {
            Grant::AuthorizationCode { client_secret, .. } => {
                let store = TokenStore::open(name, url.as_str(), oauth.store)
                    .await
                    .map_err(Refused::Failed)?;
                manager.set_credential_store(store);
                match manager.initialize_from_store().await {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(Refused::NeedsLogin(
                            "it authorizes with OAuth and has not been logged into".into(),
                        ));
                    }
                    Err(e) => {
                        return Err(failed("its authorization server could not be reached", e));
                    }
                }
                // A confidential client (registered out of band with a secret) refreshes
                // with its secret; rmcp configures the stored client without it.
                if let Some(source) = client_secret {
                    let secret_value = source.read("client secret").map_err(Refused::Failed)?;
                    secret(&secret_value);
                    let (client_id, _) = manager
                        .get_credentials()
                        .await
                        .map_err(|e| failed("its stored client could not be read", e))?;
                    manager
                        .configure_client(
                            OAuthClientConfig::new(client_id, url.as_str())
                                .with_client_secret(secret_value),
                        )
                        .map_err(|e| failed("its client could not be configured", e))?;
                }
                None
            }
            Grant::ClientCredentials {
                client_id,
                credential,
            } => {
                let config = client_credentials(client_id, credential, oauth, url, &*secret)
                    .map_err(Refused::Failed)?;
                let resolution = manager
                    .resolve_metadata()
                    .await
                    .map_err(|e| failed("its authorization server could not be discovered", e))?;
                manager.set_metadata(resolution.metadata);
                manager
                    .validate_client_credentials_metadata(&config)
                    .and_then(|()| manager.configure_client_credentials(&config))
                    .map_err(|e| {
                        failed(
                            "its client credentials do not fit its authorization server",
                            e,
                        )
                    })?;
                Some(config)
            }
        };
        let authorizer = Arc::new(Self {
            upstream: name.clone(),
            manager: tokio::sync::Mutex::new(manager),
            client_credentials,
            lost: CancellationToken::new(),
            secret,
            last_told: Mutex::new(String::new()),
        });
        match authorizer.token().await {
            Ok(_) => Ok(authorizer),
            Err(_) if authorizer.lost.is_cancelled() => Err(Refused::NeedsLogin(
                "its OAuth tokens were refused (the refresh token was rejected or expired)".into(),
            )),
            Err(e) => Err(failed("no access token could be obtained", e)),
        }
    }

    /// Fires when only a new login can help this upstream.
    pub(crate) fn lost(&self) -> &CancellationToken {
        &self.lost
    }

    /// The upstream's name.
    pub(crate) fn upstream(&self) -> &str {
        &self.upstream
    }

    /// An access token for the next request: the stored one, refreshed (with `resource`) when
    /// it is about to expire; for client credentials a new one once it has.
    pub(crate) async fn token(self: &Arc<Self>) -> Result<String, AuthError> {
        let stored = self.manager.lock().await.get_access_token().await;
        let token = match stored {
            Ok(token) => token,
            Err(AuthError::AuthorizationRequired) => match &self.client_credentials {
                Some(config) => access_token(&self.exchange(config).await?),
                None => {
                    self.lost.cancel();
                    return Err(AuthError::AuthorizationRequired);
                }
            },
            Err(e @ AuthError::TokenRefreshRejected(_)) => {
                self.lost.cancel();
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        self.tell(&token);
        Ok(token)
    }

    /// A new access token after the upstream refused `sent`: refreshed, or for client
    /// credentials obtained again. `None` when there is no other (then only a login helps).
    pub(crate) async fn renew(self: &Arc<Self>, sent: &str) -> Option<String> {
        let renewed = match &self.client_credentials {
            Some(config) => self.exchange(config).await,
            None => self.manager.lock().await.refresh_token().await,
        };
        match renewed.as_ref().map(access_token) {
            Ok(token) if token != sent => {
                self.tell(&token);
                Some(token)
            }
            Ok(_) => None,
            Err(AuthError::TokenRefreshRejected(_) | AuthError::AuthorizationRequired)
                if self.client_credentials.is_none() =>
            {
                self.lost.cancel();
                None
            }
            Err(error) => {
                tracing::warn!(upstream = %self.upstream, "its access token could not be renewed: {}", describe(error));
                None
            }
        }
    }

    /// A client credentials token, obtained now. rmcp's exchange is not `Send` with
    /// `private_key_jwt` built in (its form serializer, which borrows a `dyn Fn`, lives across
    /// an await), so it runs on a blocking thread, driven by this runtime's I/O.
    async fn exchange(
        self: &Arc<Self>,
        config: &ClientCredentialsConfig,
    ) -> Result<rmcp::transport::auth::OAuthTokenResponse, AuthError> {
        let this = self.clone();
        let config = config.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let manager = this.manager.blocking_lock();
            runtime.block_on(manager.exchange_client_credentials(&config))
        })
        .await
        .map_err(|e| AuthError::InternalError(e.to_string()))?
    }

    fn tell(&self, token: &str) {
        let mut last = self
            .last_told
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if *last != token {
            (self.secret)(token);
            token.clone_into(&mut last);
        }
    }
}

fn access_token(response: &rmcp::transport::auth::OAuthTokenResponse) -> String {
    use oauth2::TokenResponse as _;
    response.access_token().secret().clone()
}

/// rmcp's client credentials configuration of an upstream: the secret or key read now (and
/// told to the scrubber), `resource` = the upstream's URL (its MCP endpoint, the resource
/// indicator the MCP authorization spec names).
fn client_credentials(
    client_id: &str,
    credential: &ClientAuth,
    oauth: &OAuthSettings,
    url: &url::Url,
    secret: &(dyn Fn(&str) + Send + Sync),
) -> Result<ClientCredentialsConfig, String> {
    let resource = Some(url.as_str().to_owned());
    Ok(match credential {
        ClientAuth::Secret(source) => {
            let client_secret = source.read("client secret")?;
            secret(&client_secret);
            ClientCredentialsConfig::ClientSecret {
                client_id: client_id.to_owned(),
                client_secret,
                scopes: oauth.scopes.clone(),
                resource,
            }
        }
        ClientAuth::PrivateKey { file, alg } => {
            let signing_key = std::fs::read(file).map_err(|e| {
                format!("cannot read its private key file {} ({e})", file.display())
            })?;
            ClientCredentialsConfig::PrivateKeyJwt {
                client_id: client_id.to_owned(),
                signing_key,
                signing_algorithm: match alg {
                    KeyAlg::RS256 => JwtSigningAlgorithm::RS256,
                    KeyAlg::RS384 => JwtSigningAlgorithm::RS384,
                    KeyAlg::RS512 => JwtSigningAlgorithm::RS512,
                    KeyAlg::ES256 => JwtSigningAlgorithm::ES256,
                    KeyAlg::ES384 => JwtSigningAlgorithm::ES384,
                },
                token_endpoint_audience: None,
                scopes: oauth.scopes.clone(),
                resource,
            }
        }
    })
}

/// An rmcp OAuth error as one line for the operator. rmcp's messages carry no token (its
/// token types print as `[redacted]`), but an authorization server's error body is cut to a
/// line.
pub(crate) fn describe(error: &AuthError) -> String {
    let text = error.to_string();
    let line = text.lines().next().unwrap_or_default();
    const MAX: usize = 300;
    if line.len() > MAX {
        let mut end = MAX;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &line[..end])
    } else {
        line.to_owned()
    }
}
