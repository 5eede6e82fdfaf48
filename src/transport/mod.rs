//! Transports: how MCP messages reach the [`crate::server::ToolportServer`].

pub mod stdio;
