//! Plugins: tools declared in TOML manifests, loaded without recompiling, reloaded live.
//!
//! - [`settings`]: which directories are read (`--plugins`, `[plugins] dirs`,
//!   `TOOLPORT_PLUGIN_DIRS`, or `~/.config/toolport/plugins/`);
//! - [`manifest`]: the manifest format, read strictly and checked when it loads;
//! - [`template`]: how arguments become an argv (never a shell) — security-relevant;
//! - [`tool`]: the [`AiTool`] a manifest declares, run through the shared command executor;
//! - [`reload`]: SIGHUP and a debounced file watch re-run discovery and swap the served set.
//!
//! [`Catalog`] is discovery plus registration: built-in tools first (a plugin cannot shadow
//! one), then plugin tools, directories in the configured order and files in name order, the
//! first tool of a name winning (each skipped duplicate is a warning naming both files), then
//! the tools of the upstream MCP servers that are ready ([`crate::upstreams`], named by their
//! prefix modes around the names already taken); then the operator's tool selection. A manifest that does not load is skipped with one error line;
//! the others load.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::registry::ToolRegistry;
use crate::tool::AiTool;
use crate::tools::exec::Executor;
use crate::tools::{Builtins, SelectionError, ToolSelection};
use crate::upstreams::Upstreams;

mod manifest;
pub(crate) mod reload;
mod settings;
mod template;
mod tool;

// The fuzz target `plugin_manifest`'s doors (fuzz/; `fuzzing` feature only).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use manifest::fuzz_load;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use template::{fuzz_argv, fuzz_text};

pub(crate) use manifest::ManifestError;
pub(crate) use settings::FilePlugins;
pub(crate) use settings::PluginArgs;
pub use settings::PluginSettings;
use tool::PluginTool;

/// The file extension of a manifest.
const MANIFEST_EXTENSION: &str = "toml";

/// Everything needed to (re)build the served tool set.
pub struct Catalog {
    /// The built-in tools, unfiltered, in listing order.
    builtins: ToolRegistry,
    executor: Arc<Executor>,
    web_requests: crate::tools::web::RequestCounter,
    dirs: Vec<PathBuf>,
    selection: ToolSelection,
    limits: manifest::Limits,
    /// The directories that could not be read when the served set was built (at first: all
    /// of them, so a folder missing from the start never blocks a reload).
    missing: std::sync::Mutex<Vec<PathBuf>>,
    /// The upstream MCP servers whose ready tools join the set.
    upstreams: Option<Arc<Upstreams>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("dirs", &self.dirs)
            .finish_non_exhaustive()
    }
}

/// A plugin tool that loaded, with the file it came from.
pub struct Loaded {
    pub tool: Arc<dyn AiTool>,
    pub file: PathBuf,
}

/// What reading the plugin directories found.
#[derive(Default)]
pub struct Discovery {
    /// Tools that loaded, in registration order (before duplicate and selection checks).
    pub tools: Vec<Loaded>,
    /// Manifests that were skipped, each with its one-line reason.
    pub errors: Vec<ManifestError>,
    /// Directories that could not be read, with why.
    pub unreadable: Vec<(PathBuf, std::io::Error)>,
}

/// The served set and what was skipped on the way.
pub struct Built {
    pub registry: ToolRegistry,
    pub discovery: Discovery,
    /// Plugin tools skipped because an earlier tool (built-in or plugin) has the name, and
    /// upstream tools skipped (a name taken, a schema that does not compile).
    pub duplicates: Vec<String>,
}

impl Built {
    /// Log every problem: unreadable directories and skipped manifests as errors, skipped
    /// duplicates as warnings.
    pub fn log(&self) {
        for (dir, error) in &self.discovery.unreadable {
            tracing::error!(dir = %dir.display(), %error, "cannot read the plugin directory");
        }
        for error in &self.discovery.errors {
            tracing::error!("skipping a plugin manifest: {error}");
        }
        for duplicate in &self.duplicates {
            tracing::warn!("{duplicate}");
        }
    }
}

impl Catalog {
    /// A catalog over the built-in tools, reading `dirs`.
    pub fn new(
        builtins: Builtins,
        dirs: Vec<PathBuf>,
        selection: ToolSelection,
        timeout_max: std::time::Duration,
    ) -> Result<Self, SelectionError> {
        let mut registry = ToolRegistry::new();
        for tool in builtins.tools {
            registry.register(tool)?;
        }
        Ok(Self {
            builtins: registry,
            executor: builtins.executor,
            web_requests: builtins.web_requests,
            missing: std::sync::Mutex::new(dirs.clone()),
            dirs,
            selection,
            limits: manifest::Limits { timeout_max },
            upstreams: None,
        })
    }

    /// Serve the ready tools of `upstreams` too (after the built-in and plugin tools).
    #[must_use]
    pub fn with_upstreams(mut self, upstreams: Arc<Upstreams>) -> Self {
        self.upstreams = Some(upstreams);
        self
    }

    /// The upstream MCP servers, when the set includes theirs.
    pub fn upstreams(&self) -> Option<&Arc<Upstreams>> {
        self.upstreams.as_ref()
    }

    /// Whether `built` may replace the served set: not when a directory that was read for
    /// the served set cannot be read now (it is returned); a directory missing then and now
    /// is read as empty. On success `built` becomes the reference for the next reload.
    pub fn accept(&self, built: &Built) -> Result<(), Vec<PathBuf>> {
        let mut missing = match self.missing.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let now: Vec<PathBuf> = built
            .discovery
            .unreadable
            .iter()
            .map(|(dir, _)| dir.clone())
            .collect();
        let lost: Vec<PathBuf> = now
            .iter()
            .filter(|dir| !missing.contains(dir))
            .cloned()
            .collect();
        if !lost.is_empty() {
            return Err(lost);
        }
        *missing = now;
        Ok(())
    }

    /// The gauge of commands running (the shared executor's), for the metrics.
    pub fn commands_running(&self) -> prometheus_client::metrics::gauge::Gauge {
        self.executor.running()
    }

    /// The shared executor's jobs, for the server (MCP tasks are jobs).
    pub fn jobs(&self) -> crate::tools::exec::JobTable {
        self.executor.job_table()
    }

    /// `web_search`'s provider request counter, for the metrics.
    pub fn web_requests(&self) -> crate::tools::web::RequestCounter {
        self.web_requests.clone()
    }

    /// The plugin directories, in reading order.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Read every manifest of the plugin directories (in order; files in name order).
    fn discover(&self) -> Discovery {
        let mut found = Discovery::default();
        for dir in &self.dirs {
            let files = match manifest_files(dir) {
                Ok(files) => files,
                Err(error) => {
                    found.unreadable.push((dir.clone(), error));
                    continue;
                }
            };
            for file in files {
                match self.load_file(&file) {
                    Ok(tools) => found.tools.extend(tools.into_iter().map(|tool| Loaded {
                        tool,
                        file: file.clone(),
                    })),
                    Err(error) => found.errors.push(error),
                }
            }
        }
        found
    }

    /// The tools of one manifest file.
    fn load_file(&self, file: &Path) -> Result<Vec<Arc<dyn AiTool>>, ManifestError> {
        let text = std::fs::read_to_string(file).map_err(|e| ManifestError {
            file: file.to_path_buf(),
            line: None,
            message: format!("cannot read it: {e}"),
        })?;
        Ok(manifest::parse(file, &text, self.limits)?
            .into_iter()
            .map(|m| Arc::new(PluginTool::new(m, self.executor.clone())) as Arc<dyn AiTool>)
            .collect())
    }

    /// Discover the plugins and build the served set: built-ins, then plugins (first of a
    /// name wins), then the operator's selection. Problems are in the result
    /// ([`Built::log`] logs them). With `strict` (at start), a tool name in the selection
    /// that nothing has is an error (a typo in `--disable-tool` must not leave a tool on),
    /// unless a manifest failed to load or an upstream is configured: the name may be one of
    /// their tools, so a warning.
    pub fn build(&self, strict: bool) -> Result<Built, SelectionError> {
        let mut discovery = self.discover();
        let (all, duplicates) = self.register(&mut discovery)?;
        let clean = discovery.errors.is_empty()
            && discovery.unreadable.is_empty()
            && self.upstreams.as_ref().is_none_or(|u| u.is_empty());
        let registry = self.selection.apply(&all, strict && clean)?;
        Ok(Built {
            registry,
            discovery,
            duplicates,
        })
    }

    /// Built-ins, then the discovered plugin tools in order, skipping duplicates.
    fn register(
        &self,
        found: &mut Discovery,
    ) -> Result<(ToolRegistry, Vec<String>), SelectionError> {
        let mut all = self.builtins.clone();
        let mut origin: HashMap<String, PathBuf> = HashMap::new();
        let mut duplicates = Vec::new();
        let mut refused = Vec::new();
        for loaded in &found.tools {
            let name = loaded.tool.name();
            if self.builtins.get(name).is_some() {
                duplicates.push(format!(
                    "skipping plugin tool {name} from {}: a built-in tool has that name (built-in tools cannot be replaced; rename the plugin tool)",
                    loaded.file.display()
                ));
                continue;
            }
            if let Some(first) = origin.get(name) {
                duplicates.push(format!(
                    "skipping plugin tool {name} from {}: {} already defines it (the first one loaded wins)",
                    loaded.file.display(),
                    first.display()
                ));
                continue;
            }
            // The registry compiles the input schema: one that is not a valid JSON Schema is
            // reported like any other bad manifest.
            match all.register(loaded.tool.clone()) {
                Ok(_) => {
                    origin.insert(name.to_owned(), loaded.file.clone());
                }
                Err(error) => refused.push(ManifestError {
                    file: loaded.file.clone(),
                    line: None,
                    message: error.to_string(),
                }),
            }
        }
        found.errors.extend(refused);
        if let Some(upstreams) = &self.upstreams {
            duplicates.extend(upstreams.register(&mut all));
        }
        Ok((all, duplicates))
    }
}

/// The manifest files of a directory, in name order.
fn manifest_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == MANIFEST_EXTENSION)
                && path.is_file()
                && !path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}
