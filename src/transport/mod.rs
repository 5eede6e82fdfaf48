//! Transports: how MCP messages reach the [`crate::server::ToolportServer`].
//!
//! - [`stdio`]: newline-delimited JSON-RPC on stdin/stdout (the default);
//! - [`http`]: the HTTP server and its security gate, carrying [`streamable`] (Streamable
//!   HTTP at `/mcp`) and [`sse`] (legacy HTTP+SSE at `/sse` + `/message`);
//! - [`http_settings`]: the `--http` flags and the `[http]` config section.

pub mod http;
pub mod http_settings;
pub mod sse;
pub mod stdio;
pub mod streamable;
