//! The image check of `read_file` (crates/toolport-tools/src/tools/fs/media/: `sniff`, then
//! `decode`, then `fit`, through its door `fuzz_image::check`).
//!
//! Input: one byte of flags (bit 0: `original_size`; bit 1: the larger longest side, 320 px
//! instead of 64, so a copy too large for the byte bound is made smaller once before it is
//! refused), then the file's bytes. The bounds are small (64 KiB a sent image) so a run stays
//! fast, and the door decodes no file whose header claims more than 4 megapixels (decode
//! allows 50; `fuzz_image::MAX_PIXELS` says why).
//!
//! Properties: no panic; a refusal (`Unreadable`) names what was found in non-empty printable
//! ASCII; whatever `decode` accepts, `fit` either sends an image, whose bytes (a copy's, or the
//! file's own) decode with the `image` crate to exactly the width and height it states, within
//! the bounds (longest side at most the bound unless at the original size, then the file's
//! own size; at most the byte bound), and pass the server's own check again (`sniff` and
//! `decode`) as the same format and size; or it refuses with an encoder's error, or with
//! `TooLarge`, which the bounds allow only at the original size or for a copy already at the
//! smallest side (`MIN_SIDE`, 256 px).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolport_tools::host::fuzz_image::{self, Fit, Outcome};

/// The smallest side a copy is made down to (`media::MIN_SIDE`).
const MIN_SIDE: u32 = 256;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, file)) = data.split_first() else {
        return;
    };
    let original_size = flags & 1 != 0;
    let large = flags & 2 != 0;
    match fuzz_image::check(file, large, original_size) {
        Outcome::NotAnImage | Outcome::Skipped { .. } => {}
        Outcome::Unreadable { format, found } => {
            assert!(
                !found.is_empty() && found.bytes().all(|b| b == b' ' || b.is_ascii_graphic()),
                "a {format} refusal that is not printable ASCII: {found:?}"
            );
        }
        Outcome::Decoded {
            mime,
            width,
            height,
            max_side,
            max_bytes,
            original_size,
            fit,
        } => check_fit(
            mime,
            (width, height),
            max_side,
            max_bytes,
            original_size,
            fit,
        ),
    }
});

/// The properties of what `fit` made of an image of `size` (decoded as `mime`).
fn check_fit(
    mime: &str,
    size: (u32, u32),
    max_side: u32,
    max_bytes: u64,
    original_size: bool,
    fit: Fit,
) {
    match fit {
        Fit::Sent {
            mime: sent_mime,
            width,
            height,
            bytes,
            original,
            resized,
            again,
        } => {
            let decoded = image::load_from_memory_with_format(&bytes, format_of(sent_mime))
                .unwrap_or_else(|e| {
                    panic!("the sent {sent_mime} (original: {original}) does not decode: {e}")
                });
            assert_eq!(
                (decoded.width(), decoded.height()),
                (width, height),
                "the sent {sent_mime} (original: {original}) decodes to another size than stated"
            );
            assert!(
                bytes.len() as u64 <= max_bytes,
                "{} bytes sent, over the bound of {max_bytes}",
                bytes.len()
            );
            assert!(
                width >= 1 && height >= 1,
                "an empty image: {width}x{height}"
            );
            if original_size {
                assert_eq!((width, height), size, "original_size sent another size");
            } else {
                assert!(
                    width.max(height) <= max_side,
                    "{width}x{height} sent, over the side bound {max_side}"
                );
            }
            assert_eq!(
                resized,
                (width, height) != size,
                "resized is {resized} for {width}x{height} of {size:?}"
            );
            if original {
                assert_eq!(sent_mime, mime, "the file itself sent as another type");
                assert_eq!((width, height), size, "the file itself at another size");
            }
            assert_eq!(
                again,
                Ok((sent_mime, width, height)),
                "the sent image does not pass the server's own check again"
            );
        }
        Fit::TooLarge {
            width,
            height,
            mime: copy_mime,
            bytes,
        } => {
            assert!(
                bytes as u64 > max_bytes,
                "TooLarge for a {copy_mime} copy of {bytes} bytes, within the bound {max_bytes}"
            );
            assert!(
                original_size || width.max(height) <= MIN_SIDE,
                "TooLarge at {width}x{height} ({copy_mime}), before the copy was made as small as it may be"
            );
        }
        Fit::Encoding(_) => {}
    }
}

/// The `image` crate's format for a MIME type the door names.
fn format_of(mime: &str) -> image::ImageFormat {
    match mime {
        "image/png" => image::ImageFormat::Png,
        "image/jpeg" => image::ImageFormat::Jpeg,
        "image/gif" => image::ImageFormat::Gif,
        "image/webp" => image::ImageFormat::WebP,
        other => panic!("the door named an unknown MIME type {other}"),
    }
}
