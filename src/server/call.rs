//! `tools/call`: a short pipeline — the tool exists, the session's budget admits the call, the
//! client's roots are in, the tool runs — whose every exit is a [`Finished`], which the one
//! outer function records (audit log, metrics) in one place before answering.
//!
//! Tool errors are `isError` results; an unknown tool is JSON-RPC -32602. A call that needs
//! confirmation from a 2026-07-28 client is answered with an `InputRequiredResult` and
//! recorded only when the client retries it. A tasks-capable client's call that left work
//! running ([`BackgroundTable`](toolport_tools::host::BackgroundTable)) is answered with that
//! work as a task; otherwise a result that names such work links its output.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use toolport_tools::host::{CallFacts, CallJob, Elicitor};
use toolport_tools::{ExecuteError, ToolContext, ToolRegistry};

use super::confirm::{self, McpConfirmer, McpElicitor};
use super::resources::job_links;
use super::{ToolportServer, clients, error_result, progress, tasks, tool_result};
use crate::identity::policy::PolicyDenial;
use crate::identity::{Principal, ToolClass};
use crate::observe::audit::{Caller, Outcome};
use crate::observe::budget::Denial;
use crate::observe::{Call, Failure, TOOL_ERROR};

/// The error kind of a call refused by a budget (`[limits]`).
const OVER_BUDGET: &str = "over_budget";

/// The error kind of a call outside the caller's access token's scopes.
const OUT_OF_SCOPE: &str = "insufficient_scope";
/// The kind of a call the operator's policy per principal refuses (`[http.principals]`).
const REFUSED_BY_POLICY: &str = "refused_by_policy";

/// The metrics' tool label for a call to a tool that does not exist.
const UNKNOWN_TOOL_LABEL: &str = "(unknown)";

/// How a call ended: the answer, and what to record of it.
struct Finished {
    answer: Result<CallToolResponse, McpError>,
    record: Record,
}

/// What the audit log and the metrics get of a call.
enum Record {
    /// The call is over: what failed (`None`: it succeeded) and the size of its result
    /// (0 for a JSON-RPC error, or when nobody asked for it).
    Ended {
        failure: Option<Failure>,
        bytes_out: usize,
    },
    /// Nothing: the client retries the call with the user's answer, and the retry is what
    /// gets recorded.
    Retried,
}

impl Finished {
    /// A call to a tool that does not exist: JSON-RPC -32602.
    fn unknown_tool(message: String) -> Self {
        let error = McpError::invalid_params(message, None);
        Self::error(error, "unknown_tool")
    }

    /// A call outside the caller's scopes: JSON-RPC -32600, audited as denied.
    fn out_of_scope(tool: &str, class: &ToolClass) -> Self {
        let error = McpError::invalid_request(
            format!(
                "insufficient_scope: the access token's scopes do not allow {tool} (a {class} tool); ask the authorization server for a token with a scope that grants it"
            ),
            None,
        );
        let mut finished = Self::error(error, OUT_OF_SCOPE);
        if let Record::Ended {
            failure: Some(failure),
            ..
        } = &mut finished.record
        {
            failure.outcome = Outcome::Denied;
        }
        finished
    }

    /// A call over a budget (its session's, or its principal's): an `isError` result naming
    /// the limit, recorded as denied.
    fn over_budget(call: &Call, denial: &Denial) -> Self {
        let result = CallToolResult::error(vec![ContentBlock::text(denial.to_string())]);
        let failure = Failure {
            kind: OVER_BUDGET,
            message: denial.to_string(),
            outcome: Outcome::Denied,
            error_type: TOOL_ERROR.into(),
        };
        Self {
            record: Record::Ended {
                failure: Some(failure),
                bytes_out: call.size_of(&result),
            },
            answer: Ok(result.into()),
        }
    }

    /// A call the operator's policy refuses this principal: an `isError` result saying which
    /// rule (the model can do without the tool; asking again will not help), recorded as
    /// denied.
    fn refused_by_policy(denial: &PolicyDenial) -> Self {
        let message = format!(
            "{denial}. The tool is not listed for you; do without it, or ask the server's operator"
        );
        let result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
        Self {
            record: Record::Ended {
                failure: Some(Failure {
                    kind: REFUSED_BY_POLICY,
                    message,
                    outcome: Outcome::Denied,
                    error_type: TOOL_ERROR.into(),
                }),
                bytes_out: 0,
            },
            answer: Ok(result.into()),
        }
    }

    /// A call that failed inside the server: JSON-RPC -32603.
    fn internal_error(message: String) -> Self {
        let error = McpError::internal_error(message, None);
        Self::error(error, "internal_error")
    }

    /// A JSON-RPC error, recorded as an error of `kind` with its code as the error type.
    fn error(error: McpError, kind: &'static str) -> Self {
        let failure = Failure {
            kind,
            message: error.message.to_string(),
            outcome: Outcome::Error,
            error_type: error.code.0.to_string().into(),
        };
        Self {
            answer: Err(error),
            record: Record::Ended {
                failure: Some(failure),
                bytes_out: 0,
            },
        }
    }
}

impl ToolportServer {
    /// `tools/call`: open the call's record, run the pipeline, finish the record from what came
    /// back, answer. `via`: the tool the call came through (`call_tool` of the search
    /// surface), which the record names beside the tool that ran.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        via: Option<&'static str>,
    ) -> Result<CallToolResponse, McpError> {
        // One snapshot for the whole call: a reload meanwhile does not change the tool.
        let registry = self.registry_with(&request.name).await;
        let facts: Arc<CallFacts> = Arc::default();
        let tool = registry.get(&request.name);
        let known = tool.is_some();
        let upstream = tool.as_deref().and_then(|t| t.upstream());
        let principal = Principal::of(&context);
        let call = self.begin_call(
            &request,
            &context,
            known,
            upstream,
            principal.as_deref(),
            facts.clone(),
            via,
        );
        let class = tool.as_deref().map(ToolClass::of);
        let refused = principal
            .as_deref()
            .zip(tool.as_deref())
            .and_then(|(principal, tool)| principal.access.policy_refuses(tool));
        let finished = if let (Some(principal), Some(class)) = (&principal, &class)
            && !principal.access.allows(class)
        {
            // The gate refuses such a call with 403 before it gets here; this one names a tool
            // that was not served yet when the gate looked (an upstream's, just connected).
            Finished::out_of_scope(&request.name, class)
        } else if let Some(denial) = refused {
            // A token with more scopes would not change this: the operator's rules refuse it.
            Finished::refused_by_policy(&denial)
        } else if known {
            self.run_call(&call, &registry, request, &context, &facts)
                .await
        } else {
            // Answered before waiting for the client's roots.
            let mut message = unknown_tool_message(&registry, &request.name, principal.as_deref());
            if let Some(hint) = self.shared.upstreams.unknown_hint(&request.name) {
                message = format!("{hint}. {message}");
            }
            Finished::unknown_tool(message)
        };
        match finished.record {
            Record::Ended { failure, bytes_out } => call.finish(failure, bytes_out),
            Record::Retried => call.skip(),
        }
        finished.answer
    }

    /// The served tools, once they hold `name` or nothing more is coming: a tool an upstream
    /// is about to serve (it is starting, or has just connected) is waited for, bounded
    /// ([`Upstreams::pending_for`](toolport_tools::host::Upstreams::pending_for)).
    async fn registry_with(&self, name: &str) -> Arc<ToolRegistry> {
        let mut registry = self.shared.registry.load();
        if registry.get(name).is_some() {
            return registry;
        }
        let Some(wait) = self.shared.upstreams.pending_for(name) else {
            return registry;
        };
        let deadline = tokio::time::Instant::now() + wait;
        let (mut tools, mut upstreams) = (
            self.shared.registry.changes(),
            self.shared.upstreams.changes(),
        );
        loop {
            let changed = tokio::select! {
                changed = tools.changed() => changed,
                changed = upstreams.changed() => changed,
                () = tokio::time::sleep_until(deadline) => return registry,
            };
            if changed.is_err() {
                return registry;
            }
            registry = self.shared.registry.load();
            if registry.get(name).is_some() || self.shared.upstreams.pending_for(name).is_none() {
                return registry;
            }
        }
    }

    /// The call's record (audit log, metrics) starts now.
    #[allow(clippy::too_many_arguments)] // each is one fact of the record
    pub(super) fn begin_call(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        known: bool,
        upstream: Option<&str>,
        principal: Option<&Principal>,
        facts: Arc<CallFacts>,
        via: Option<&'static str>,
    ) -> Call {
        let name = request.name.as_ref();
        let audit = self.shared.audit.as_ref().map(|log| {
            log.begin(
                Caller {
                    session: self.session_id.clone(),
                    transport: self.transport,
                    client: self.client_name(context),
                    principal,
                    via,
                },
                name,
                upstream,
                request.arguments.as_ref().unwrap_or(&Default::default()),
            )
        });
        // Metrics label an unknown tool with one name: a client calling random names must
        // not create a label set per name.
        let label = if known { name } else { UNKNOWN_TOOL_LABEL };
        Call::begin(&self.shared.metrics, audit, label, facts)
    }

    /// The call of a tool that exists: admitted by the budget, run, answered.
    async fn run_call(
        &self,
        call: &Call,
        registry: &ToolRegistry,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        facts: &Arc<CallFacts>,
    ) -> Finished {
        let name = request.name.as_ref();
        // Before anything runs: a call over its principal's budget (the policy rules') or its
        // session's is refused, not queued.
        let principal = Principal::of(context);
        let principal_permits = match principal
            .as_deref()
            .and_then(|p| p.access.policy().map(|applied| (p, applied)))
        {
            Some((principal, applied)) => {
                match self
                    .shared
                    .principal_budgets
                    .admit(&principal.subject, applied.budgeted(), name)
                    .await
                {
                    Ok(permits) => permits,
                    Err(denial) => return Finished::over_budget(call, &denial),
                }
            }
            None => Vec::new(),
        };
        let permit = match self.budget.admit(name) {
            Ok(permit) => permit,
            Err(denial) => {
                for permit in &principal_permits {
                    permit.refund();
                }
                return Finished::over_budget(call, &denial);
            }
        };
        self.roots_settled(&context.peer).await;
        let ctx = self.tool_context(&request, context, facts.clone());
        let args = request.arguments.clone().unwrap_or_default();
        let (mut result, failure) = match registry.execute(name, args, &ctx).await {
            Ok(output) => (tool_result(output), None),
            Err(ExecuteError::Tool(error)) => {
                let failure = Failure::tool(&error, facts);
                (error_result(error), Some(failure))
            }
            Err(ExecuteError::UnknownTool { name, .. }) => {
                let principal = Principal::of(context);
                return Finished::unknown_tool(unknown_tool_message(
                    registry,
                    &name,
                    principal.as_deref(),
                ));
            }
            Err(ExecuteError::ConfirmationRequired { description }) => {
                return match confirm::input_required(&description) {
                    Ok(question) => {
                        // The retry is what counts against the budgets.
                        permit.refund();
                        for permit in &principal_permits {
                            permit.refund();
                        }
                        Finished {
                            answer: Ok(question.into()),
                            record: Record::Retried,
                        }
                    }
                    Err(e) => Finished::internal_error(e.to_owned()),
                };
            }
        };
        let job = facts.job().filter(|_| failure.is_none());
        // A client that takes tasks gets the work the call left running as a task (SEP-2663:
        // only when this request declared the extension, in `initialize` or in its `_meta`).
        let task = match &job {
            Some(CallJob::Started(id))
                if context
                    .client_capabilities()
                    .is_some_and(|caps| caps.supports_tasks()) =>
            {
                self.shared.jobs.get(&ctx.session, id).ok()
            }
            _ => None,
        };
        // Otherwise the work's whole output, as resources the client can read
        // (`toolport://jobs/…`).
        if task.is_none()
            && let Some(job) = &job
        {
            result.content.extend(job_links(job.id()));
        }
        drop(permit);
        drop(principal_permits);
        let record = Record::Ended {
            failure,
            bytes_out: call.size_of(&result),
        };
        let answer = match task {
            Some(job) => CallToolResponse::Task(tasks::created(&*job)),
            None => result.into(),
        };
        Finished {
            answer: Ok(answer),
            record,
        }
    }

    /// What the tool runs with: this request's cancellation, progress and confirmation, this
    /// session's workspace, owner, payload placement and result cap; for an upstream's tool,
    /// who answers its questions and the trace context it continues.
    fn tool_context(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        facts: Arc<CallFacts>,
    ) -> ToolContext {
        let info = self.client_info(context);
        let client = info.as_ref().map(|i| i.name.as_str());
        ToolContext {
            cancel: context.ct.clone(),
            progress: progress::sink(context),
            workspace: self.workspace_for(context),
            confirmer: Arc::new(McpConfirmer::for_request(
                request,
                context,
                self.shared.confirm_fallback,
            )),
            facts,
            session: self.job_owner(context),
            payload: clients::payload_for(self.shared.payload, client),
            result_cap: clients::result_cap_for(self.shared.result_cap, client),
            elicitor: McpElicitor::for_request(context).map(|e| Arc::new(e) as Arc<dyn Elicitor>),
            traceparent: crate::observe::trace::traceparent(context.meta.get_traceparent()),
        }
    }
}

/// The unknown-tool error for `name`, listing the tools the caller may use: a principal whose
/// scopes or policy leave some out is not told their names.
fn unknown_tool_message(
    registry: &ToolRegistry,
    name: &str,
    principal: Option<&Principal>,
) -> String {
    match principal.filter(|p| !p.access.is_all()) {
        None => registry.unknown(name).to_string(),
        Some(principal) => ExecuteError::UnknownTool {
            name: name.to_owned(),
            available: registry
                .all()
                .iter()
                .filter(|tool| principal.access.allows_tool(tool.as_ref()))
                .map(|tool| tool.name())
                .collect::<Vec<_>>()
                .join(", "),
        }
        .to_string(),
    }
}
