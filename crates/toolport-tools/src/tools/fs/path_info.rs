//! `path_info`: whether a path exists inside the roots, and its metadata. A missing path is a
//! normal result (`exists: false`), not an error; a path outside the roots is an error (saying
//! "does not exist" there would leak what lies outside).
//!
//! For a regular file (or a symlink to one) `media` names an image's type (PNG, JPEG, GIF,
//! WebP: what read_file returns as an image), from the file's first 16 bytes, by the same
//! rules as read_file (`media.rs`): the one read this tool makes, through the same confined,
//! secret-refusing open (a secret is never opened, and has no `media`).
//!
//! On Windows `permissions` and `mode` are absent (access there is decided by ACLs, which are
//! not reported); `readonly` is the read-only attribute.

use std::io;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{ANNOTATIONS, CATEGORY, media};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::{FileKind, PathError};

/// The permission bits of a path where the system has them (Unix; not Windows).
#[cfg_attr(unix, path = "path_info/unix.rs")]
#[cfg_attr(windows, path = "path_info/windows.rs")]
mod os;

const DESCRIPTION: &str = "Check whether a path exists inside the workspace roots and get its metadata: type (file, directory, symlink, fifo, socket, block_device, char_device), size in bytes, last modification time (RFC 3339, UTC), permissions, whether it is read-only, for a symlink its target, and for an image file (PNG, JPEG, GIF, WebP, known by its first bytes) its type in `media` (read_file returns such a file as an image). A missing path returns exists=false, not an error. Cheap: reads at most a file's first 16 bytes.";

/// Arguments of `path_info`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The path: relative to the first workspace root, or absolute inside a root.
    path: String,
}

/// The structured result of `path_info`.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct PathInfoResult {
    /// Absolute path.
    path: String,
    /// Whether anything (even a dangling symlink) exists at the path.
    exists: bool,
    /// What the path is (a symlink is reported as such, not followed).
    #[serde(rename = "type")]
    kind: Option<FileKind>,
    /// Size in bytes (for a symlink: of its target, when that is inside the roots).
    size: Option<u64>,
    /// Last modification time, RFC 3339 in UTC.
    modified: Option<String>,
    // Absent on Windows, which has ACLs instead of permission bits (see `readonly`).
    /// Unix permission bits in ls style, e.g. "rw-r--r--".
    permissions: Option<String>,
    /// Unix permission bits in octal, e.g. "0644".
    mode: Option<String>,
    /// For a symlink: its target as written (not resolved).
    symlink_target: Option<String>,
    /// For a symlink: what the target is ("file", "directory", …, "missing", or "outside_roots").
    target_type: Option<String>,
    // Windows: the read-only attribute.
    /// True when no write permission bit is set.
    readonly: Option<bool>,
    /// For an image file (PNG, JPEG, GIF, WebP, known by its first bytes, not its name): its
    /// MIME type, e.g. "image/png"; read_file returns it as an image. Null for anything else.
    media: Option<String>,
}

/// The `path_info` tool.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PathInfo;

fn fill(result: &mut PathInfoResult, meta: &cap_std::fs::Metadata) {
    result.size = Some(meta.len());
    result.modified = meta
        .modified()
        .ok()
        .map(|t| humantime::format_rfc3339_seconds(t.into_std()).to_string());
    let (permissions, mode) = os::permissions(meta).unzip();
    result.permissions = permissions;
    result.mode = mode;
    result.readonly = Some(meta.permissions().readonly());
}

#[async_trait]
impl TypedTool for PathInfo {
    type Params = Params;
    type Output = PathInfoResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "path_info",
            title: "Path info",
            description: DESCRIPTION.into(),
            purpose: "Check that a file or folder exists, or how big or how recent it is, before reading or listing it.",
            example: json!({"path": "Cargo.toml"}),
            category: CATEGORY,
            tags: &["filesystem", "read", "metadata", "exists"],
            annotations: ANNOTATIONS,
        }
    }

    fn render(&self, output: &PathInfoResult) -> String {
        render(output)
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<PathInfoResult, ToolError> {
        let ws = &ctx.workspace;
        let target = ws.target(&p.path)?;
        let mut result = PathInfoResult {
            path: target.display().display().to_string(),
            ..Default::default()
        };
        match ws.symlink_metadata(&target) {
            Ok(meta) => {
                result.exists = true;
                let kind = FileKind::of_cap(meta.file_type());
                result.kind = Some(kind);
                fill(&mut result, &meta);
                if kind == FileKind::Symlink {
                    result.symlink_target =
                        ws.read_link(&target).ok().map(|t| t.display().to_string());
                    match ws.metadata(&target) {
                        Ok(followed) => {
                            result.target_type =
                                Some(FileKind::of_cap(followed.file_type()).as_str().into());
                            fill(&mut result, &followed);
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            result.target_type = Some("missing".into());
                        }
                        Err(e) => {
                            let state = match ws.io_error(&target, &e) {
                                PathError::Escapes { .. } | PathError::OutsideRoots { .. } => {
                                    "outside_roots"
                                }
                                _ => "unreadable",
                            };
                            result.target_type = Some(state.into());
                        }
                    }
                }
            }
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    || e.kind() == io::ErrorKind::NotADirectory => {}
            Err(e) => return Err(ws.io_error(&target, &e).into()),
        }
        let file =
            result.kind == Some(FileKind::File) || result.target_type.as_deref() == Some("file");
        if file {
            result.media = image_type(ws, &p.path);
        }
        Ok(result)
    }
}

/// The image type of the file at `path`, from its first bytes; `None` for anything else and
/// for a file that cannot be opened (a secret, an unreadable file): `media` is a hint, and
/// the other fields already say what the path is.
fn image_type(ws: &crate::workspace::Workspace, path: &str) -> Option<String> {
    let mut opened = ws.open_file(path).ok()?;
    media::sniff(&mut opened.file)
        .ok()?
        .map(|f| f.mime().to_owned())
}

fn render(r: &PathInfoResult) -> String {
    if !r.exists {
        return format!("{} does not exist", r.path);
    }
    let mut lines = vec![format!(
        "{}: {}",
        r.path,
        r.kind.unwrap_or(FileKind::Other).as_str()
    )];
    if let Some(target) = &r.symlink_target {
        lines.push(format!(
            "target: {target} ({})",
            r.target_type.as_deref().unwrap_or("unknown")
        ));
    }
    if let Some(size) = r.size {
        lines.push(format!("size: {size} bytes"));
    }
    if let Some(media) = &r.media {
        lines.push(format!("image: {media}"));
    }
    if let Some(modified) = &r.modified {
        lines.push(format!("modified: {modified}"));
    }
    if let (Some(perms), Some(mode)) = (&r.permissions, &r.mode) {
        let ro = if r.readonly == Some(true) {
            ", read-only"
        } else {
            ""
        };
        lines.push(format!("permissions: {perms} ({mode}){ro}"));
    }
    lines.join("\n")
}
