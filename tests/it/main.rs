//! Integration tests: the real `toolport` binary driven through real MCP clients (rmcp's client
//! over a child process), plus the CLI, the README and the client configs. One test binary,
//! one module per area, shared helpers in `common`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod args;
mod cli;
mod common;
mod confinement;
mod exec;
mod fs_tools;
mod http;
mod in_process;
mod mcp_config;
mod protocol;
mod readme;
mod sandbox;
mod web_search;
