//! Resources: `toolport://metrics` (the metrics as JSON), `toolport://upstreams` (the upstream
//! MCP servers' states, when some are configured) and the output of work a call left running
//! ([`BackgroundTable`](toolport_tools::host::BackgroundTable)), `toolport://jobs/ID/stdout`
//! and `/stderr`, linked from the results that name such work and readable by the session that
//! owns it (among replicas, through any replica: another replica's job's output is read
//! there, as its `tasks/*` are).

use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::model::{
    ContentBlock, ListResourcesResult, ReadResourceResult, Resource, ResourceContents,
};
use rmcp::service::RequestContext;
use toolport_tools::host::{BackgroundTable, OutputStream, Session, UpstreamStatus};

use super::tasks::Remote;
use super::{Shared, ToolportServer};
use crate::cluster::jobs::{Answer, Forwarded};
use crate::observe::metrics;

/// Where a job's output is offered as a resource: `toolport://jobs/ID/stdout` and `/stderr`.
const JOB_RESOURCE_PREFIX: &str = "toolport://jobs/";

/// The upstream MCP servers' states, as JSON.
const UPSTREAMS_URI: &str = "toolport://upstreams";

/// Most bytes one `resources/read` of a job's output returns: its start, for a look; the
/// rest is paged with job_output (a resource read has no offsets).
const JOB_RESOURCE_MAX_BYTES: usize = 4 * 1024 * 1024;

/// The job whose output `uri` is (`toolport://jobs/ID/stdout`: `ID`).
pub(super) fn job_of(uri: &str) -> Option<&str> {
    Some(uri.strip_prefix(JOB_RESOURCE_PREFIX)?.split_once('/')?.0)
}

/// The resource links to a job's output, added to the results that name a job.
pub(super) fn job_links(id: &str) -> Vec<ContentBlock> {
    ["stdout", "stderr"]
        .into_iter()
        .map(|stream| {
            ContentBlock::resource_link(
                Resource::new(format!("{JOB_RESOURCE_PREFIX}{id}/{stream}"), format!("{id} {stream}"))
                    .with_description(format!("The whole {stream} of {id} so far (its start, up to 4 MiB; page the rest with job_output)"))
                    .with_mime_type("text/plain"),
            )
        })
        .collect()
}

/// `resources/list`: the metrics and, when upstreams are configured, their states (a job's
/// output is linked from the results that name it).
pub(super) fn list(shared: &Shared) -> ListResourcesResult {
    let mut resources = vec![
        Resource::new(metrics::RESOURCE_URI, "metrics")
            .with_title("toolport metrics")
            .with_description(
                "Calls by tool and outcome, call durations, sessions, calls in flight and commands running, as JSON (the same samples as /metrics over HTTP)",
            )
            .with_mime_type("application/json"),
    ];
    if !shared.upstreams.is_empty() {
        resources.push(
            Resource::new(UPSTREAMS_URI, "upstreams")
                .with_title("upstream MCP servers")
                .with_description(
                    "Each configured upstream MCP server: its state (starting, ready, retrying, disabled, stopped), tool count, restarts and last error, as JSON",
                )
                .with_mime_type("application/json"),
        );
    }
    ListResourcesResult::with_all_items(resources)
}

impl ToolportServer {
    /// `resources/read`: the metrics, or a job's output.
    pub(super) fn read_resource_uri(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        if let Some(rest) = uri.strip_prefix(JOB_RESOURCE_PREFIX) {
            return self.read_job_output(uri, rest, context);
        }
        let json = match uri {
            metrics::RESOURCE_URI => self.shared.metrics.render_json(),
            UPSTREAMS_URI => serde_json::to_value(
                self.shared
                    .upstreams
                    .status()
                    .into_iter()
                    .map(UpstreamStatus::for_clients)
                    .collect::<Vec<_>>(),
            )
            .map_err(|e| McpError::internal_error(e.to_string(), None))?,
            _ => {
                return Err(McpError::resource_not_found(
                    format!(
                        "unknown resource {:?}; the resources are {}, {UPSTREAMS_URI} and a job's output, {JOB_RESOURCE_PREFIX}JOB_ID/stdout or /stderr",
                        uri,
                        metrics::RESOURCE_URI
                    ),
                    None,
                ));
            }
        };
        let text = serde_json::to_string_pretty(&json)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("application/json"),
        ]))
    }

    /// `resources/read` of `toolport://jobs/ID/stdout` (or `/stderr`) of another replica's job:
    /// read there. `None`: not such a resource, or this replica's.
    pub(super) async fn read_remote_job_output(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<ReadResourceResult, McpError>> {
        let id = job_of(uri)?;
        let forwarded = |owner| Forwarded::Resource {
            owner,
            uri: uri.to_owned(),
        };
        let remote = match self.forward_work(id, forwarded, context).await? {
            Ok(remote) => remote,
            Err(error) => return Some(Err(error)),
        };
        Some(match remote {
            Remote::Answer(Answer::Result(value)) => serde_json::from_value(value).map_err(|e| {
                McpError::internal_error(format!("the replica's answer cannot be read ({e})"), None)
            }),
            Remote::Answer(Answer::Error { message, .. }) | Remote::Lost(message) => {
                Err(McpError::resource_not_found(message, None))
            }
        })
    }

    /// `resources/read` of `toolport://jobs/ID/stdout` (or `/stderr`) of this replica's job.
    fn read_job_output(
        &self,
        uri: &str,
        rest: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        job_output(&self.shared.jobs, &self.job_owner(context), uri, rest)
    }
}

/// The resource `uri` (`toolport://jobs/ID/stdout` or `/stderr`; `rest` after the prefix):
/// the start of a job's whole output, for `owner` alone.
fn job_output(
    jobs: &BackgroundTable,
    owner: &Session,
    uri: &str,
    rest: &str,
) -> Result<ReadResourceResult, McpError> {
    let not_found = |why: String| McpError::resource_not_found(why, None);
    let (id, stream) = match rest.split_once('/') {
        Some((id, "stdout")) => (id, OutputStream::Stdout),
        Some((id, "stderr")) => (id, OutputStream::Stderr),
        _ => {
            return Err(not_found(format!(
                "{uri:?} is not a job's output: use {JOB_RESOURCE_PREFIX}JOB_ID/stdout or /stderr"
            )));
        }
    };
    let job = jobs.get(owner, id).map_err(|e| not_found(e.to_string()))?;
    let start = job
        .read_output(stream, JOB_RESOURCE_MAX_BYTES)
        .map_err(|e| {
            McpError::internal_error(format!("cannot read the job's output: {e}"), None)
        })?;
    let mut text = start.text;
    if start.next < start.readable {
        text.push_str(&format!(
            "\n[... {} more bytes: read them with job_output from offset {} ...]\n",
            start.readable - start.next,
            start.next
        ));
    }
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type("text/plain"),
    ]))
}

/// A job output resource read for `owner` (a request another replica forwarded here).
pub(super) fn job_output_for(
    jobs: &BackgroundTable,
    owner: &Session,
    uri: &str,
) -> Result<ReadResourceResult, McpError> {
    match uri.strip_prefix(JOB_RESOURCE_PREFIX) {
        Some(rest) => job_output(jobs, owner, uri, rest),
        None => Err(McpError::resource_not_found(
            format!("{uri:?} is not a job's output"),
            None,
        )),
    }
}
