//! Confirmation over MCP: how a risky call asks the user. `elicitation/create` on the
//! protocol versions with `initialize`; on 2026-07-28 (no server-to-client requests) an
//! `InputRequiredResult` the client answers by retrying the call with the user's answer; and
//! the operator's fallback (`[exec] confirm`) when the client cannot ask its user.

use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequests, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use toolport_tools::host::Elicitor;
use toolport_tools::{ConfirmFallback, Confirmation, Confirmer};

/// How long the user has to answer a confirmation dialog. Generous (a human reads the
/// command), but bounded so an abandoned dialog does not hold a call forever.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(600);

/// The key of the confirmation question in a 2026-07-28 `InputRequiredResult`.
const CONFIRM_KEY: &str = "confirm";

/// Confirmation over MCP: `elicitation/create` on the protocol versions with `initialize`, an
/// `InputRequiredResult` round trip on 2026-07-28, and the operator's fallback when the client
/// cannot ask its user.
pub(super) struct McpConfirmer {
    peer: Peer<RoleServer>,
    /// The request uses the 2026-07-28 protocol (server-to-client requests are forbidden).
    input_required_flow: bool,
    /// The client declared the elicitation capability.
    can_elicit: bool,
    /// The answer to an earlier `InputRequiredResult`, when the client retries with one.
    answer: Option<serde_json::Value>,
    fallback: ConfirmFallback,
}

impl McpConfirmer {
    /// The confirmer of one `tools/call` request.
    pub(super) fn for_request(
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        fallback: ConfirmFallback,
    ) -> Self {
        Self {
            peer: context.peer.clone(),
            input_required_flow: context
                .protocol_version()
                .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28),
            can_elicit: context
                .client_capabilities()
                .is_some_and(|caps| caps.elicitation.is_some()),
            answer: request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(CONFIRM_KEY))
                .cloned(),
            fallback,
        }
    }
}

/// The 2026-07-28 answer to a call that needs confirmation: the question, for the client to
/// ask its user and retry the call with the answer. No request state: the retry carries the
/// whole call again plus the answer, and nothing the client sends back is trusted beyond that
/// answer.
pub(super) fn input_required(description: &str) -> Result<InputRequiredResult, &'static str> {
    let mut requests = InputRequests::new();
    requests.insert(
        CONFIRM_KEY.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(confirm_params(description)?)),
    );
    Ok(InputRequiredResult::new(Some(requests), None))
}

fn confirm_params(description: &str) -> Result<ElicitRequestParams, &'static str> {
    let schema = ElicitationSchema::builder()
        .required_bool_property(CONFIRM_KEY, |b| {
            b.title("Run it")
                .description("Check to allow this call; leave unchecked or decline to refuse it")
        })
        .build()?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "An AI agent wants to run a risky tool call through toolport. Allow it?\n\n{description}"
        ),
        requested_schema: schema,
    })
}

/// Whether an elicitation result says yes: accepted, with `confirm: true`.
fn accepted(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result
            .content
            .as_ref()
            .and_then(|c| c.get(CONFIRM_KEY))
            .and_then(serde_json::Value::as_bool)
            == Some(true)
}

#[async_trait]
impl Confirmer for McpConfirmer {
    async fn confirm(&self, description: &str) -> Confirmation {
        if self.input_required_flow {
            return match &self.answer {
                Some(answer) => match serde_json::from_value::<ElicitResult>(answer.clone()) {
                    Ok(result) if accepted(&result) => Confirmation::Accepted,
                    _ => Confirmation::Declined,
                },
                None if self.can_elicit => Confirmation::AskClient,
                None => self
                    .fallback
                    .answer("the client does not support elicitation", description),
            };
        }
        if !self.can_elicit {
            return self.fallback.answer(
                "the client does not support elicitation, so toolport cannot ask the user",
                description,
            );
        }
        let params = match confirm_params(description) {
            Ok(params) => params,
            Err(error) => {
                return Confirmation::Unavailable(format!(
                    "cannot build the confirmation question: {error}"
                ));
            }
        };
        match self
            .peer
            .create_elicitation_with_timeout(params, Some(CONFIRM_TIMEOUT))
            .await
        {
            Ok(result) if accepted(&result) => Confirmation::Accepted,
            Ok(_) => Confirmation::Declined,
            Err(error) => Confirmation::Unavailable(format!(
                "asking the user for confirmation failed ({error}); the call was not run"
            )),
        }
    }
}

/// An upstream server's question for the user, put to the client of the call it came during:
/// `elicitation/create` with the upstream's own message and schema, bounded like a
/// confirmation. Only for a client that declared elicitation on a protocol version with
/// server-to-client requests ([`McpElicitor::for_request`] gives none otherwise, and the
/// upstream is told why).
pub(super) struct McpElicitor {
    peer: Peer<RoleServer>,
}

impl McpElicitor {
    /// The elicitor of one `tools/call` request, when its client can answer.
    pub(super) fn for_request(context: &RequestContext<RoleServer>) -> Option<Self> {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let can_elicit = context
            .client_capabilities()
            .is_some_and(|caps| caps.elicitation.is_some());
        (can_elicit && !modern).then(|| Self {
            peer: context.peer.clone(),
        })
    }
}

#[async_trait]
impl Elicitor for McpElicitor {
    async fn elicit(&self, request: ElicitRequestParams) -> Result<ElicitResult, String> {
        self.peer
            .create_elicitation_with_timeout(request, Some(CONFIRM_TIMEOUT))
            .await
            .map_err(|error| format!("asking the user failed ({error})"))
    }
}
