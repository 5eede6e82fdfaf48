//! The Streamable HTTP client of an OAuth upstream: reqwest's (rmcp's own implementation),
//! with the [`Authorizer`]'s access token on every request instead of a fixed header. When the
//! upstream answers 401, the token is renewed once and the request sent again; when it cannot
//! be renewed the error stands and the authorizer has told the supervisor ("needs login").
//! Unlike rmcp's `AuthClient`, a request never goes out without a token: an upstream that
//! needs a login is not asked anything until it has one.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

use super::Authorizer;

type Error = StreamableHttpError<reqwest::Error>;

/// reqwest's Streamable HTTP client, authorized by an [`Authorizer`].
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    inner: reqwest::Client,
    auth: Arc<Authorizer>,
}

impl OAuthHttp {
    pub(crate) fn new(auth: Arc<Authorizer>) -> Self {
        Self {
            inner: reqwest::Client::default(),
            auth,
        }
    }

    /// Run `call` with a token; on a 401, once more with a renewed one.
    async fn authorized<T, F, Fut>(&self, call: F) -> Result<T, Error>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let token = self.auth.token().await?;
        match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                tracing::debug!(upstream = %self.auth.upstream(), "the upstream refused its access token; renewing it");
                match self.auth.renew(&token).await {
                    Some(fresh) => call(fresh).await,
                    None => Err(StreamableHttpError::AuthRequired(challenge)),
                }
            }
            result => result,
        }
    }
}

impl StreamableHttpClient for OAuthHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.authorized(|token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                Some(token),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.authorized(|token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                Some(token),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        self.authorized(|token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                Some(token),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.authorized(|token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                Some(token),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.authorized(|token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                Some(token),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
