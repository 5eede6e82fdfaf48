//! The door for a program that serves these tools over a protocol: what it builds from beyond
//! the crate's API. The live registry, the catalog and its reload, background jobs, upstream
//! MCP servers, the config file's format and loader, each feature's settings with their
//! command-line flags (clap derives), secrets, and what a call records for the audit log. The
//! `toolport` binary is that program: this module exists only with the `host` feature (which
//! the binary turns on), holds exactly what the binary, its tests and its benches use, and is
//! **not covered by semver**.
//!
//! The crate's modules are private, so an item the root and this module do not re-export is
//! `pub(crate)` and the compiler reports it once nothing uses it. Add an item here when the
//! server needs it, beside its group:
//!
//! - the served tool set: [`LiveRegistry`], [`Catalog`] (built-ins, plugins and upstreams'
//!   tools, then the operator's selection), its [`reload`], [`builtin_tools`], and
//!   [`ToolIndex`] (a search over it);
//! - a call as the server runs it: [`Session`], [`Payload`], [`Elicitor`], [`CallFacts`];
//! - work a call left running: [`BackgroundTable`]; among replicas, [`Elsewhere`] and the
//!   job table's [`JobSnapshot`]s;
//! - other MCP servers as tools: [`Upstreams`];
//! - settings: [`config`] (the file and the tools' flags), each feature's `*Settings`, and
//!   what the server's own sections share ([`settings`], [`secret`]);
//! - commands: [`exec`] (the host's set-up, the process layer alone, the sandbox);
//! - with the `fuzzing` feature, the fuzz targets' entry points (`fuzz_*`, FUZZING.md).

// The served tool set (and its parameters as prose, for the reference in docs/tools.md),
// and finding tools in it by what they do (the search surface).
pub use crate::find::ToolIndex;
pub use crate::instructions::param_docs;
pub use crate::plugins::Catalog;
pub use crate::registry::LiveRegistry;
pub use crate::tools::{SelectionError, builtin_tools};

// A call: its session, where its payload goes (and what Claude Code keeps of a result: the
// cap its pages fit under, the most a tool declares), who answers an upstream's questions,
// what it did for the audit log, and the client's roots it runs under.
pub use crate::definition::CLAUDE_CODE_RESULT_CAP;
pub use crate::size::json_size;
pub use crate::tool::{
    AlwaysConfirm, CallFacts, CallJob, CommandFacts, Elicitor, Payload, Session,
};
pub use crate::workspace::client_root_path;

// Work a call left running, and replicas' work (ids that name their replica, the job tools
// sent there, what a replica tells the others of its jobs).
pub use crate::background::{
    Background, BackgroundState, BackgroundTable, Elsewhere, OutputStream, SERVER_SEPARATOR,
    split_work_id,
};
pub use crate::tools::exec::{FORWARDED_TOOLS, JobSnapshot, JobTable};

// Other MCP servers.
pub use crate::upstreams::{
    Login as UpstreamLogin, State as UpstreamState, TOKEN_DIR_VARIABLE, UpstreamStatus, Upstreams,
    logout as upstream_logout,
};

// Each feature's settings, as the server's `Config` holds them.
pub use crate::plugins::PluginSettings;
pub use crate::tools::exec::ExecSettings;
pub use crate::tools::fs::{FileBudget, FileLimits, FsSettings, WriteSettings};
pub use crate::tools::web::settings::{ProviderId, WebSettings};
pub use crate::tools::{
    BuiltinSettings, DEFAULT_SEARCH_ABOVE, PayloadSetting, ResultCapSetting, Surface,
    SurfaceSetting, SurfaceSettings, ToolSelection,
};
pub use crate::upstreams::UpstreamSettings;
pub use crate::workspace::{WorkspaceError, WorkspaceSettings};

// The fuzz targets' entry points (FUZZING.md).
#[cfg(feature = "fuzzing")]
pub use crate::plugins::{fuzz_argv, fuzz_load, fuzz_text};
#[cfg(feature = "fuzzing")]
pub use crate::tools::exec::fuzz_decide;
#[cfg(feature = "fuzzing")]
pub use crate::tools::fs::fuzz_image;
#[cfg(feature = "fuzzing")]
pub use crate::tools::web::fuzz_duckduckgo;
#[cfg(feature = "fuzzing")]
pub use crate::upstreams::fuzz_oversize;

/// The config file's format ([`FileConfig`](config::FileConfig), the server's sections as
/// data) and its loader for the tool sections ([`ToolConfig`](config::ToolConfig)), with the
/// tools' flags ([`ToolArgs`](config::ToolArgs)).
pub mod config {
    pub use crate::config::{
        Environment, FileAudit, FileConfig, FileHttp, FileOAuth, FilePrincipalRule, FilePrincipals,
        FileReplicas, FileTelemetry, ToolArgs, ToolConfig, absolute,
    };
}

/// The one settings shape every section shares: errors, notes, range checks, durations.
pub mod settings {
    pub use crate::settings::{
        Deprecated, Note, SettingError, Unset, check_range, commented, duration_setting,
        serialize_duration,
    };
}

/// `fetch_url`'s address guard, for the server's own fetches of URLs a client names.
pub mod guard {
    pub use crate::tools::web::guard::{check_public_url, public_only};
}

/// Credentials held masked, and the functions that find and hide them in text.
pub mod secret {
    pub use crate::secret::{
        MASK, Secret, Source, display_url, hide_userinfo, random_token, replace_all, secret_name,
        url_credentials,
    };
}

/// Reloading the tool set: on SIGHUP, a manifest's change, a change of the config file.
pub mod reload {
    pub use crate::plugins::reload::{ConfigSource, reload, spawn};
}

/// Commands as a host runs them: `execute_command`'s name, the process set-up before the
/// first one ([`prepare_host`](exec::prepare_host)), the default environment, the process layer
/// alone and the sandbox.
pub mod exec {
    pub use crate::tools::exec::{NAME, child_env, prepare_host};

    /// Spawn, wait and kill, with output capture: one command without policy or rendering.
    pub mod process {
        pub use crate::tools::exec::process::{RunSpec, run};
    }

    /// The Landlock shim: whether the kernel can enforce it, and the command it wraps.
    pub mod sandbox {
        pub use crate::tools::exec::sandbox::{SandboxSpec, probe, shim_command};
    }

    /// The watchdog that kills running commands when the host dies.
    #[cfg(unix)]
    pub mod watchdog {
        pub use crate::tools::exec::os::unix::watchdog::installed;
    }
}
