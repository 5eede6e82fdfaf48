//! An image file as `read_file` returns it: the facts a model reads as text or JSON
//! ([`ImageFile`]: type, pixel size, bytes, sha256, and what was sent) and the image itself,
//! base64-encoded, for the result's image content block ([`Image`]).
//!
//! The file is read whole, up to `[limits] image_max_bytes` (checked against its size before
//! anything is read, and against what the read returned: a file growing meanwhile), decoded
//! whole ([`media::decode()`]: a file that does not decode as the image its first bytes claim is
//! refused, saying what was found), and sent as the copy [`media::fit()`] makes within
//! `image_max_side` and `image_send_max_bytes` (the file itself when it is within them).

use std::fs::File;
use std::io::{Read, Seek};

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Serialize;

use super::super::media::{self, Format, Unfit};
use super::super::settings::FsSettings;
use super::super::text::sha256_hex;
use crate::settings::human_bytes;
use crate::tool::{Image, ToolError};

/// What `read_file` says of an image file (the `structuredContent` of its result); the image
/// itself is an `image` content block.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ImageFile {
    /// Absolute path of the file.
    pub(super) path: String,
    /// The file's MIME type, from its first bytes (not its name), confirmed by decoding it:
    /// image/png, image/jpeg, image/gif or image/webp.
    pub(super) mime_type: &'static str,
    /// The file's width in pixels (upright: a photo's EXIF orientation applied).
    pub(super) width: u32,
    /// The file's height in pixels (upright).
    pub(super) height: u32,
    /// Size of the file in bytes.
    pub(super) size_bytes: u64,
    /// sha256 of the file's bytes (hex), as for a text file.
    pub(super) sha256: String,
    /// The image as sent in the image content block: the file itself, or a copy within the
    /// server's bounds for a model.
    pub(super) sent: SentImage,
    /// True when the sent image is smaller, in pixels, than the file's: call read_file with
    /// `original_size` true for the full size.
    pub(super) resized: bool,
    /// True when the file is an animation (GIF, WebP, APNG): only its first frame is sent.
    pub(super) animated: bool,
    /// Whether the pixels were turned upright by the file's EXIF orientation (for the line a
    /// model reads; `width` and `height` already say the upright size).
    #[serde(skip)]
    #[schemars(skip)]
    turned: bool,
    /// The image for the content block (not part of the structured result).
    #[serde(skip)]
    #[schemars(skip)]
    pub(super) image: Option<Image>,
}

/// The image as sent to the client.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct SentImage {
    /// Its MIME type (a copy may be re-encoded into a smaller format).
    mime_type: &'static str,
    /// Width in pixels.
    width: u32,
    /// Height in pixels.
    height: u32,
    /// Size in bytes (before base64).
    size_bytes: u64,
    /// True when it is the file's own bytes; false for a copy (downscaled, re-encoded to fit
    /// the byte bound, turned upright, or an animation's first frame).
    original: bool,
}

/// Read the image `file` (`size` bytes, whose first bytes claim `format`) whole, decode it,
/// and make the image to send within the `settings`' bounds (at full size with
/// `original_size`).
pub(super) fn read(
    file: &mut File,
    display: &str,
    size: u64,
    format: Format,
    settings: &FsSettings,
    original_size: bool,
) -> Result<ImageFile, ToolError> {
    let max_bytes = settings.image_max_bytes;
    if size > max_bytes {
        return Err(too_large(display, format, size, max_bytes));
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
        return Err(too_large(display, format, read, max_bytes));
    }
    let decoded = media::decode(&bytes, format).map_err(|unreadable| {
        ToolError::InvalidArguments(format!(
            "{display} starts like a {} image (its first bytes) but is not one: {}. It is not returned as an image (a model's API refuses an image it cannot decode). Check the file: path_info shows its size, a complete copy or a new download may mend it, and a hex dump (xxd, od) shows its bytes",
            unreadable.format.name(),
            unreadable.found
        ))
    })?;
    let bounds = settings.image_bounds();
    let sent = media::fit(&bytes, &decoded, bounds, original_size).map_err(|unfit| match unfit {
        Unfit::TooLarge(copy) => ToolError::InvalidArguments(format!(
            "{display} at {}x{} is {} bytes even as {}, more than the {} ({} bytes) the server sends in one image ([limits] image_send_max_bytes){}",
            copy.width,
            copy.height,
            copy.bytes,
            copy.format.mime(),
            human_bytes(bounds.max_bytes),
            bounds.max_bytes,
            if original_size {
                "; read it without original_size for a copy downscaled to fit"
            } else {
                ""
            }
        )),
        Unfit::Encoding(e) => {
            ToolError::ExecutionFailed(format!("making a copy of {display} to send failed: {e}"))
        }
    })?;
    let (width, height) = (decoded.image.width(), decoded.image.height());
    let sha256 = sha256_hex(&bytes);
    let original = sent.bytes.is_none();
    let data = sent.bytes.unwrap_or(bytes);
    Ok(ImageFile {
        path: display.to_owned(),
        mime_type: format.mime(),
        width,
        height,
        size_bytes: read,
        sha256,
        sent: SentImage {
            mime_type: sent.format.mime(),
            width: sent.width,
            height: sent.height,
            size_bytes: data.len() as u64,
            original,
        },
        resized: sent.resized,
        animated: decoded.animated,
        turned: decoded.turned,
        image: Some(Image {
            data: base64::engine::general_purpose::STANDARD.encode(&data),
            mime_type: sent.format.mime().to_owned(),
        }),
    })
}

/// The refusal of an image file over the cap: its size, the cap, and the settings that raise
/// it.
fn too_large(display: &str, format: Format, size: u64, max_bytes: u64) -> ToolError {
    ToolError::InvalidArguments(format!(
        "{display} is an image ({}) of {size} bytes, larger than the {} ({max_bytes} bytes) the server reads as an image, so it is not returned; the operator can raise the cap with [limits] image_max_bytes, --image-max-bytes or TOOLPORT_IMAGE_MAX_BYTES",
        format.mime(),
        human_bytes(max_bytes)
    ))
}

/// The line a model reads for an image: what the file is, what was sent and why, and where
/// it is in the result.
pub(super) fn describe(image: &ImageFile) -> String {
    let mut line = format!(
        "{}: {}, {}x{}, {} bytes",
        image.path, image.mime_type, image.width, image.height, image.size_bytes
    );
    let sent = &image.sent;
    if !sent.original {
        let mut why = Vec::new();
        if image.animated {
            why.push("only the first frame of the animation");
        }
        if image.turned {
            why.push("turned upright by its EXIF orientation");
        }
        if image.resized {
            why.push("downscaled to the server's bounds for a model");
        } else if !image.animated && !image.turned {
            why.push("re-encoded to fit the server's byte bound for a model");
        }
        line.push_str(&format!(
            "; sent as {} {}x{} ({} bytes): {}",
            sent.mime_type,
            sent.width,
            sent.height,
            sent.size_bytes,
            why.join(", ")
        ));
        if image.resized {
            line.push_str("; read_file with original_size=true sends the full size");
        }
    }
    line.push_str(" (the image is the next content block)");
    line
}
