//! Integration tests: the real `toolport` binary driven through real MCP clients (rmcp's client
//! over a child process), plus the CLI, the docs and the client configs. One test binary,
//! one module per area, shared helpers in `common`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

// The audit log: a record per call and outcome, redaction, concurrency, failures.
mod audit;
// Call budgets per session and tool, and the HTTP request rate.
mod budgets;
// Jobs: yield_after, background, job_output/input/kill/list, ownership, limits.
mod jobs;
// Processes that leave the command's group (setsid, daemons) die with it.
mod containment;
mod delete_copy;
// Bad tool arguments: the isError result names the field and what the tool accepts.
mod apply_patch;
mod args;
// The command line: `tools`, `instructions`, `call`, `config`, help.
mod cli;
// Shared helpers: client and connection, results, config files, processes, the web fixture.
mod common;
// The docs match the code: the tool reference (`UPDATE_DOCS=1` rewrites it), every config key,
// the config example, the links between the Markdown files.
mod docs;
// Workspace confinement: one test per way out of the roots (`..`, symlinks, races, secrets,
// client roots).
mod confinement;
// execute_command: output, timeouts, process-tree kills, cancellation, policy, confirmation,
// Landlock.
mod exec;
// fetch_url, offline, against a local site: formats, paging, cache, limits, the SSRF guard.
mod fetch_url;
// Results that fit the host: the tools/list `_meta` hints for Claude Code, and default pages
// under a client's result cap.
mod host_fit;
// read_file, list_directory and path_info: happy paths, paging, encodings and limits.
mod fs_tools;
// grep, glob and read_many_files: context, ignore rules, binary and secret skips, caps, errors.
mod search_tools;
// Images through read_file: magic bytes, image content under every payload form, the cap.
mod images;
// The HTTP transports (Streamable HTTP and legacy SSE) and their security rules.
mod http;
// Three replicas behind haproxy sharing budgets, rates and the registry through redis-server
// (Debian's; TOOLPORT_REQUIRE_REDIS in CI).
mod replicas;
// OAuth 2.1 resource server: tokens from oidc-provider (npm; pinned in .ci/oidc), refusals
// and their challenges, the metadata documents, scopes, introspection.
mod oauth;
// The built-in authorization server: its flow with the MCP Python SDK, and its refusals.
mod oauth_builtin;
// The built-in authorization server on three replicas behind haproxy, its state in Redis.
mod oauth_replicas;
// Behaviour that needs a fake tool (one that panics, one that waits), served in-process.
mod in_process;
// The ready-made client configs in `mcp-config/` start a working server.
mod mcp_config;
// Where a result's payload goes, by client and by setting; each form matches the schema.
mod payload;
// Other MCP servers behind toolport (toolport itself as the upstream): one list, the audit,
// confirmation, progress and cancellation, crashes and hangs, reload, no process left.
mod upstreams;
// OAuth to upstreams: `toolport upstreams login` against an upstream toolport in resource-server
// mode with oidc-provider as its identity provider (browser scripted), refresh with
// `resource`, a restart, a revoked refresh token, client credentials.
mod upstream_oauth;
// The official reference MCP servers (npm, PyPI; pinned in .ci/upstreams) behind toolport.
mod upstream_servers;
// The tool surface: the search surface (search_tools, call_tool) with the reference servers,
// its audit, confirmation and budgets, `auto` per client, list changes, the search's quality.
mod surface;
// Plugin tools: manifests, templates, policy, registration, live reload, the examples.
mod plugins;
// Metrics: the toolport://metrics resource and /metrics move with calls.
mod metrics;
// The MCP surface over stdio: initialize, tools/list, prompts, JSON-RPC errors, the wire.
mod protocol;
// Landlock through `toolport __sandbox-exec`: what the kernel allows and refuses.
mod sandbox;
// MCP tasks (SEP-2663): tasks-capable clients get their jobs as tasks; get, cancel, ownership.
mod tasks;
// Traces: request spans reach a local OTLP receiver in the client's trace; none without one.
mod traces;
// web_search, offline, against a local server that plays every provider.
mod web_search;
// write_file, edit_file, create_directory, move_path: confinement, secrets, .git, hashes,
// atomicity, encodings, confirmation, --read-only; read_file's byte cursor.
mod undo;
mod write_tools;
