//! An image file as `read_file` returns it: the facts a model reads as text or JSON
//! ([`ImageFile`]: type, pixel size, bytes, sha256) and the image itself, base64-encoded, for
//! the result's image content block ([`Image`]).
//!
//! The size cap (`[limits] image_max_bytes`) is checked against the file's size before
//! anything is read, and again against what the read returned (a file growing meanwhile):
//! an image is held whole in memory and sent in one message. A file whose first bytes name an
//! image format but whose headers give no dimensions (truncated or damaged) is not served as
//! an image: a model API refuses an image it cannot decode, which would fail the whole
//! conversation; it goes on to the text read, which refuses it as binary as before.

use std::fs::File;
use std::io::{Read, Seek};

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Serialize;

use super::super::media;
use super::super::text::sha256_hex;
use crate::settings::human_bytes;
use crate::tool::{Image, ToolError};

/// What `read_file` says of an image file (the `structuredContent` of its result); the image
/// itself is an `image` content block.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ImageFile {
    /// Absolute path of the file.
    pub(super) path: String,
    /// The image's MIME type, from its first bytes (not its name): image/png, image/jpeg,
    /// image/gif or image/webp.
    pub(super) mime_type: &'static str,
    /// Width in pixels.
    pub(super) width: u64,
    /// Height in pixels.
    pub(super) height: u64,
    /// Size of the file in bytes.
    pub(super) size_bytes: u64,
    /// sha256 of the file's bytes (hex), as for a text file.
    pub(super) sha256: String,
    /// The image for the content block (not part of the structured result).
    #[serde(skip)]
    #[schemars(skip)]
    pub(super) image: Option<Image>,
}

/// Read the image `file` (`size` bytes, recognised as `mime`) whole, from its first byte, if
/// it is at most `max_bytes`. `None` when its headers give no dimensions: not an image after all.
pub(super) fn read(
    file: &mut File,
    display: &str,
    size: u64,
    mime: &'static str,
    max_bytes: u64,
) -> Result<Option<ImageFile>, ToolError> {
    if size > max_bytes {
        return Err(too_large(display, mime, size, max_bytes));
    }
    let failed =
        |e: std::io::Error| ToolError::ExecutionFailed(format!("reading {display} failed: {e}"));
    file.rewind().map_err(failed)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    let read = bytes.len() as u64;
    if read > max_bytes {
        return Err(too_large(display, mime, read, max_bytes));
    }
    let Some((width, height)) = media::dimensions(&bytes) else {
        return Ok(None);
    };
    Ok(Some(ImageFile {
        path: display.to_owned(),
        mime_type: mime,
        width,
        height,
        size_bytes: read,
        sha256: sha256_hex(&bytes),
        image: Some(Image {
            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
            mime_type: mime.to_owned(),
        }),
    }))
}

/// The refusal of an image over the cap: its size, the cap, and the settings that raise it.
fn too_large(display: &str, mime: &str, size: u64, max_bytes: u64) -> ToolError {
    ToolError::InvalidArguments(format!(
        "{display} is an image ({mime}) of {size} bytes, larger than the {} ({max_bytes} bytes) the server returns as an image, so it is not returned; the operator can raise the cap with [limits] image_max_bytes, --image-max-bytes or TOOLPORT_IMAGE_MAX_BYTES",
        human_bytes(max_bytes)
    ))
}

/// The line a model reads for an image: what it is, and where it is in the result.
pub(super) fn describe(image: &ImageFile) -> String {
    format!(
        "{}: {}, {}x{}, {} bytes (the image is the next content block)",
        image.path, image.mime_type, image.width, image.height, image.size_bytes
    )
}
