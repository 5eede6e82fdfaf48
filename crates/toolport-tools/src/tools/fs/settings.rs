//! The file tools' settings: the `[limits]` section of the config file, the
//! `--read-max-bytes` / `--image-max-bytes` / `--image-max-side` / `--image-send-max-bytes` /
//! `--list-max-entries` flags (and their `TOOLPORT_*` variables), and
//! [`FsSettings`], what `read_file` and `list_directory` are built with; and the `[fs]`
//! section with `--read-only`, [`WriteSettings`]: whether the write tools are served, whether
//! each write asks the user, and whether `.git/` may be written.
//!
//! `[limits]` also holds the server's call budgets ([`FileLimits`] says why): one type with
//! every key of the section, so an unknown key is an error wherever the file is read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::settings::{SettingError, check_range};
use crate::tool::ToolContext;

/// Default cap on text returned by one `read_file` call: 1 MiB is ~250k tokens, already more
/// than most context windows; larger files are paged with `offset`/`limit`.
pub(crate) const DEFAULT_READ_MAX_BYTES: u64 = 1024 * 1024;
/// Smallest `read_max_bytes`: a page must hold at least a screenful of text.
const MIN_READ_MAX_BYTES: u64 = 1024;
/// Largest `read_max_bytes` an operator may set: one call should never be able to flood a
/// client with more than this.
const MAX_READ_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Default cap on the size of an image file `read_file` reads: 32 MiB holds a 12-megapixel
/// photo (3 to 8 MB as JPEG) and a 4K or 5K screenshot (up to about 30 MB as PNG) with room;
/// what is sent is a copy within the two bounds below. The file is held whole in memory while
/// it is decoded.
pub(crate) const DEFAULT_IMAGE_MAX_BYTES: u64 = 32 * 1024 * 1024;
/// Smallest `image_max_bytes`: below this even an icon would be refused.
const MIN_IMAGE_MAX_BYTES: u64 = 1024;
/// Largest `image_max_bytes` an operator may set: the same bound as `read_max_bytes`, for
/// the same reason (an image is held whole in memory).
const MAX_IMAGE_MAX_BYTES: u64 = MAX_READ_MAX_BYTES;
/// Default longest side of an image sent to a model: 1,568 px, what Anthropic's API
/// downsizes larger images to (after the whole upload is paid for); OpenAI's and Google's
/// scale theirs to 2,048 px or less, so this fits all three.
pub(crate) const DEFAULT_IMAGE_MAX_SIDE: u32 = 1568;
/// Smallest `image_max_side`: the smallest copy made to fit the byte bound.
const MIN_IMAGE_MAX_SIDE: u32 = super::media::MIN_SIDE;
/// Largest `image_max_side`: Anthropic's API refuses images over 8,000 px on a side.
const MAX_IMAGE_MAX_SIDE: u32 = 8000;
/// Default most bytes of an image sent to a model: 3.75 MiB, whose base64 is the 5 MiB a
/// single image may be in Anthropic's API (the smallest of the model APIs' limits).
pub(crate) const DEFAULT_IMAGE_SEND_MAX_BYTES: u64 = 3 * 1024 * 1024 + 768 * 1024;
/// Smallest `image_send_max_bytes`: a copy of [`MIN_IMAGE_MAX_SIDE`] px a side with alpha
/// and incompressible pixels (256 KiB) fits, so downscaling always ends with an image.
const MIN_IMAGE_SEND_MAX_BYTES: u64 = 512 * 1024;
/// Default cap on entries returned by one `list_directory` call.
pub(crate) const DEFAULT_LIST_MAX_ENTRIES: usize = 1000;
/// Largest `list_max_entries` an operator may set.
const MAX_LIST_MAX_ENTRIES: usize = 100_000;
/// Default deepest recursion of `list_directory` (its `depth` argument is capped at this).
pub(crate) const DEFAULT_LIST_MAX_DEPTH: usize = 10;
/// Largest `list_max_depth` an operator may set.
pub(crate) const MAX_LIST_MAX_DEPTH: usize = 64;

/// The file tools' flags.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "host", derive(clap::Args))]
pub(crate) struct FsArgs {
    /// Most bytes of text one read_file call returns (default 1048576 = 1 MiB).
    #[cfg_attr(
        feature = "host",
        arg(
            long,
            value_name = "BYTES",
            env = "TOOLPORT_READ_MAX_BYTES",
            global = true
        )
    )]
    pub(crate) read_max_bytes: Option<u64>,

    /// Largest image file (PNG, JPEG, GIF, WebP) read_file reads as an image (default
    /// 33554432 = 32 MiB); what is sent is a copy within --image-max-side and
    /// --image-send-max-bytes.
    #[cfg_attr(
        feature = "host",
        arg(
            long,
            value_name = "BYTES",
            env = "TOOLPORT_IMAGE_MAX_BYTES",
            global = true
        )
    )]
    pub(crate) image_max_bytes: Option<u64>,

    /// Longest side, in pixels, of an image read_file sends; larger images are downscaled
    /// (default 1568, what Anthropic's API scales images to).
    #[cfg_attr(
        feature = "host",
        arg(
            long,
            value_name = "PIXELS",
            env = "TOOLPORT_IMAGE_MAX_SIDE",
            global = true
        )
    )]
    pub(crate) image_max_side: Option<u32>,

    /// Most bytes of an image read_file sends; a larger one is re-encoded or downscaled
    /// (default 3932160 = 3.75 MiB, 5 MiB as base64: Anthropic's per-image limit).
    #[cfg_attr(
        feature = "host",
        arg(
            long,
            value_name = "BYTES",
            env = "TOOLPORT_IMAGE_SEND_MAX_BYTES",
            global = true
        )
    )]
    pub(crate) image_send_max_bytes: Option<u64>,

    /// Most entries one list_directory call returns (default 1000).
    #[cfg_attr(
        feature = "host",
        arg(
            long,
            value_name = "N",
            env = "TOOLPORT_LIST_MAX_ENTRIES",
            global = true
        )
    )]
    pub(crate) list_max_entries: Option<usize>,

    /// Serve no tool that writes (write_file, edit_file, apply_patch, create_directory,
    /// move_path, copy_path, delete_path, undo_last_change): the same as `[fs] write = "off"`.
    #[cfg_attr(feature = "host", arg(long, env = "TOOLPORT_READ_ONLY", global = true))]
    pub(crate) read_only: bool,
}

/// The `[limits]` section of the config file: the file tools' sizes, read by
/// [`FsSettings::load`], and the server's call budgets (docs/observability.md), which share
/// the section (it was the file tools' alone before budgets existed, and files that use it
/// keep working) and which the server reads from the `pub` fields. One type with every key:
/// an unknown key is refused wherever the file is read, by the library too.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileLimits {
    read_max_bytes: Option<u64>,
    image_max_bytes: Option<u64>,
    image_max_side: Option<u32>,
    image_send_max_bytes: Option<u64>,
    list_max_entries: Option<usize>,
    list_max_depth: Option<usize>,
    /// The server's: calls admitted in one session.
    pub max_calls_per_session: Option<u64>,
    /// The server's: calls one session may make per minute.
    pub max_calls_per_minute: Option<u32>,
    /// The server's: calls one session may have running at once.
    pub max_concurrent_calls_per_session: Option<u32>,
    /// The server's: `[limits.tools.NAME]`, the same three limits for one tool.
    #[serde(default)]
    pub tools: BTreeMap<String, FileBudget>,
}

/// `[limits.tools.NAME]`: one tool's call budget, the server's (beside [`FileLimits`], whose
/// section it is part of).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileBudget {
    /// Calls of the tool admitted in one session.
    pub max_calls_per_session: Option<u64>,
    /// Calls of the tool one session may make per minute.
    pub max_calls_per_minute: Option<u32>,
    /// Calls of the tool one session may have running at once.
    pub max_concurrent_calls_per_session: Option<u32>,
}

/// What the file tools are built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsSettings {
    /// Most bytes of text one `read_file` call returns.
    pub read_max_bytes: u64,
    /// Largest image file one `read_file` call reads as an image.
    pub(crate) image_max_bytes: u64,
    /// Longest side, in pixels, of an image sent to a model.
    pub(crate) image_max_side: u32,
    /// Most bytes of an image sent to a model.
    pub(crate) image_send_max_bytes: u64,
    /// Most entries one `list_directory` call returns.
    pub list_max_entries: usize,
    /// Deepest `list_directory` recursion.
    pub(crate) list_max_depth: usize,
}

impl Default for FsSettings {
    fn default() -> Self {
        Self {
            read_max_bytes: DEFAULT_READ_MAX_BYTES,
            image_max_bytes: DEFAULT_IMAGE_MAX_BYTES,
            image_max_side: DEFAULT_IMAGE_MAX_SIDE,
            image_send_max_bytes: DEFAULT_IMAGE_SEND_MAX_BYTES,
            list_max_entries: DEFAULT_LIST_MAX_ENTRIES,
            list_max_depth: DEFAULT_LIST_MAX_DEPTH,
        }
    }
}

impl FsSettings {
    /// Most bytes of text one call of `read_file`, `read_many_files` or `grep` returns by
    /// default: `read_max_bytes`, or less for a client whose result cap would not keep that
    /// much ([`ToolContext::page_bytes`]); the result says where to go on.
    pub(crate) fn read_page_bytes(&self, ctx: &ToolContext) -> u64 {
        ctx.page_bytes(self.read_max_bytes)
    }

    /// The bounds of an image sent to a model.
    pub(crate) fn image_bounds(&self) -> super::media::Bounds {
        super::media::Bounds {
            max_side: self.image_max_side,
            max_bytes: self.image_send_max_bytes,
        }
    }

    /// Layer the file < flags/environment over the defaults, and validate.
    pub(crate) fn load(file: &FileLimits, args: &FsArgs) -> Result<Self, SettingError> {
        let defaults = Self::default();
        Ok(Self {
            read_max_bytes: check_range(
                "limits.read_max_bytes",
                args.read_max_bytes
                    .or(file.read_max_bytes)
                    .unwrap_or(defaults.read_max_bytes),
                MIN_READ_MAX_BYTES..=MAX_READ_MAX_BYTES,
            )?,
            image_max_bytes: check_range(
                "limits.image_max_bytes",
                args.image_max_bytes
                    .or(file.image_max_bytes)
                    .unwrap_or(defaults.image_max_bytes),
                MIN_IMAGE_MAX_BYTES..=MAX_IMAGE_MAX_BYTES,
            )?,
            image_max_side: check_range(
                "limits.image_max_side",
                args.image_max_side
                    .or(file.image_max_side)
                    .unwrap_or(defaults.image_max_side),
                MIN_IMAGE_MAX_SIDE..=MAX_IMAGE_MAX_SIDE,
            )?,
            image_send_max_bytes: check_range(
                "limits.image_send_max_bytes",
                args.image_send_max_bytes
                    .or(file.image_send_max_bytes)
                    .unwrap_or(defaults.image_send_max_bytes),
                MIN_IMAGE_SEND_MAX_BYTES..=MAX_IMAGE_MAX_BYTES,
            )?,
            list_max_entries: check_range(
                "limits.list_max_entries",
                args.list_max_entries
                    .or(file.list_max_entries)
                    .unwrap_or(defaults.list_max_entries),
                1..=MAX_LIST_MAX_ENTRIES,
            )?,
            list_max_depth: check_range(
                "limits.list_max_depth",
                file.list_max_depth.unwrap_or(defaults.list_max_depth),
                1..=MAX_LIST_MAX_DEPTH,
            )?,
        })
    }
}

/// What the write tools do (`[fs] write`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WriteMode {
    /// Served, and a write runs without asking (clients that ask before destructive tools
    /// still ask: write_file, edit_file and move_path are annotated destructive).
    #[default]
    Allow,
    /// Served, and each write asks the user first (elicitation or `InputRequiredResult`), with
    /// the diff or a summary in the question.
    Confirm,
    /// Not served: the server only reads (`--read-only`).
    Off,
}

/// What `delete_path` does with what it deletes (`[fs] delete`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DeleteMode {
    /// Move it to the system's trash (the user can restore it from there), without asking
    /// unless `[fs] write = "confirm"`.
    #[default]
    Trash,
    /// Delete it for good, and only after the user confirms each deletion (for systems
    /// without a trash, or servers whose trash would only fill the disk).
    Confirm,
}

/// The `[fs]` section of the config file.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileFs {
    write: Option<WriteMode>,
    allow_git_writes: Option<bool>,
    delete: Option<DeleteMode>,
}

/// What the write tools are built with (`[fs]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WriteSettings {
    /// Whether the write tools are served and whether each write asks the user.
    pub(crate) write: WriteMode,
    /// Whether a path with a `.git` component may be written (hooks are code that git runs,
    /// so by default they are not).
    pub(crate) allow_git_writes: bool,
    /// Whether `delete_path` moves to the trash or deletes for good after asking.
    pub(crate) delete: DeleteMode,
}

impl WriteSettings {
    /// Whether no tool may write (`--read-only`, `[fs] write = "off"`): also what upstream
    /// servers' tools are served (only those that declare themselves read-only).
    pub fn read_only(self) -> bool {
        self.write == WriteMode::Off
    }

    /// The file's `[fs]` section, with `--read-only` (or `TOOLPORT_READ_ONLY`) winning.
    pub(crate) fn load(file: FileFs, args: &FsArgs) -> Self {
        Self {
            write: if args.read_only {
                WriteMode::Off
            } else {
                file.write.unwrap_or_default()
            },
            allow_git_writes: file.allow_git_writes.unwrap_or(false),
            delete: file.delete.unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(toml: &str) -> FileLimits {
        toml::from_str(toml).unwrap()
    }

    #[test]
    fn image_max_bytes_layers_file_then_flag_and_names_itself_out_of_range() {
        let none = FsArgs::default();
        let load = |file: &FileLimits, args: &FsArgs| {
            FsSettings::load(file, args).map(|s| s.image_max_bytes)
        };
        assert_eq!(
            load(&FileLimits::default(), &none),
            Ok(DEFAULT_IMAGE_MAX_BYTES)
        );
        let file = limits("image_max_bytes = 8192");
        assert_eq!(load(&file, &none), Ok(8192));
        let flag = FsArgs {
            image_max_bytes: Some(4096),
            ..FsArgs::default()
        };
        assert_eq!(load(&file, &flag), Ok(4096), "the flag (or its env) wins");
        let error = load(&limits("image_max_bytes = 10"), &none)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("limits.image_max_bytes") && error.contains("1024..="),
            "{error}"
        );
    }
}
