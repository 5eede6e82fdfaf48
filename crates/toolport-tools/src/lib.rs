//! toolport's tools as a library: a registry of AI tools — confined file tools, a command
//! runner with policy and jobs, web search and fetch, tools from plugin manifests, and your own
//! — that any Rust agent can list for its model and call by name.
//!
//! The `toolport` binary serves this registry over MCP; this crate is the same registry
//! without the server. (The binary reaches the rest through the module `host`, which only
//! the `host` feature builds: not part of the API, not covered by semver.)
//!
//! - [`Toolbox`]: build the built-in tools (and plugin tools, and yours) from [`Settings`];
//! - [`ToolRegistry::definitions`]: the tools for a model's API ([`ToolFormat`]: MCP, OpenAI /
//!   OpenRouter, Anthropic, Ollama), of all tools or of [`ToolRegistry::filter`]'s subset
//!   ([`ToolFilter`]: tags, category, name);
//! - [`ToolRegistry::execute`]: run a call by name with JSON arguments and a [`ToolContext`]
//!   (the roots, cancellation, a [`Confirmer`] for risky calls, a [`ProgressSink`]);
//! - [`AiTool`] (or the typed [`TypedTool`]): add a tool of your own.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolport_tools::{Settings, Toolbox, ToolFormat};
//!
//! let toolbox = Toolbox::new(&Settings::new(["/home/me/project"]))?;
//! // What the model is told: OpenAI-form function definitions.
//! let tools = toolbox.registry().definitions(ToolFormat::Openai);
//! println!("{}", serde_json::to_string_pretty(&tools)?);
//! // What the model asked for, run inside the roots.
//! let args = serde_json::json!({"path": "README.md"});
//! let output = toolbox
//!     .registry()
//!     .execute("read_file", args.as_object().cloned().unwrap_or_default(), &toolbox.context())
//!     .await?;
//! println!("{}", output.text);
//! # Ok(())
//! # }
//! ```
//!
//! A program that runs commands with `sandbox = "landlock"` or survives its own crash (the
//! watchdog) re-executes itself as a helper process: call [`dispatch_helper`] first in `main`.

#![deny(missing_docs)]
// The private modules' docs are for those who work on toolport (`cargo doc
// --document-private-items`) and link the private items they describe.
#![allow(rustdoc::private_intra_doc_links)]
// Without `host` nothing outside the crate reaches what only a server uses (the live
// registry, upstreams, the config file's server sections, …): it is built and unused, and its
// `pub` items (`pub` for the door) are unreachable. The checks that show dead code run with
// the feature (the binary turns it on: `cargo clippy --workspace`), where they hold.
#![cfg_attr(not(feature = "host"), allow(dead_code, unreachable_pub))]

mod background;
mod config;
mod definition;
mod find;
mod hidden;
mod instructions;
mod plugins;
mod registry;
mod schema;
mod secret;
mod settings;
mod size;
mod tool;
mod toolbox;
mod tools;
mod typed;
mod upstreams;
mod validator;
mod workspace;

#[cfg(feature = "host")]
pub mod host;

pub use definition::{DefinitionError, ToolDefinition, ToolFormat};
pub use hidden::dispatch as dispatch_helper;
pub use registry::{ExecuteError, ToolFilter, ToolRegistry};
pub use schema::JsonObject;
pub use tool::{
    AiTool, Annotations, ConfirmFallback, Confirmation, Confirmer, Image, NoProgress, ProgressSink,
    ToolContext, ToolError, ToolOutput,
};
pub use toolbox::{BuildError, Settings, SettingsError, Toolbox};
pub use typed::{ToolSpec, TypedTool, typed};
pub use workspace::Workspace;
