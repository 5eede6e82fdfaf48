//! Images a model can be shown: PNG, JPEG, GIF and WebP (the formats MCP clients and the
//! model APIs accept), known by their first bytes, never by their name. A `.txt` that is a
//! PNG is an image; a `.png` that holds text is text. SVG is XML, so it is text, read as any
//! text file.
//!
//! Knowing the format by its first bytes is only a claim. A model API that is sent an image
//! it cannot decode refuses the whole request, and the block stays in the conversation, so
//! every later turn fails too; and it refuses or shrinks (after paying for the upload) one
//! larger than its bound. So an image is served only after:
//! - `decode.rs`: a full decode under bounds ([`decode()`]) that proves the file is the image
//!   its first bytes claim, or a refusal that says what was found;
//! - `fit.rs`: the copy a model is sent ([`fit()`]): the file itself when it is within the
//!   bounds, else downscaled (and re-encoded where that is what shrinks it).
//!
//! The `image` crate does the decoding, resizing and encoding; `structure.rs` adds the two
//! checks it does not make (a JPEG cut short decodes to grey, and a PNG's first chunk is
//! named as it was found).

mod decode;
mod fit;
mod structure;

use std::io::{self, Read};

pub(crate) use self::decode::{Decoded, decode};
pub(crate) use self::fit::{Bounds, MIN_SIDE, Unfit, fit};

/// How many bytes of a file's start are read to recognise an image: WebP's `RIFF....WEBP`
/// needs 12; 16 leaves room without costing more than one small read.
pub(crate) const HEADER_LEN: usize = 16;

/// An image format served as images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl Format {
    /// The format's MIME type, as a content block and a result name it.
    pub(crate) fn mime(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// The format's name in a sentence ("starts like a PNG").
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Png => "PNG",
            Self::Jpeg => "JPEG",
            Self::Gif => "GIF",
            Self::Webp => "WebP",
        }
    }

    /// The format the first bytes of a file (`header`, up to [`HEADER_LEN`] bytes) claim, if
    /// it is one of those served as images.
    fn of(header: &[u8]) -> Option<Self> {
        match image::guess_format(header).ok()? {
            image::ImageFormat::Png => Some(Self::Png),
            image::ImageFormat::Jpeg => Some(Self::Jpeg),
            image::ImageFormat::Gif => Some(Self::Gif),
            image::ImageFormat::WebP => Some(Self::Webp),
            _ => None,
        }
    }
}

/// The MIME type of the image a file's start (`header`, up to [`HEADER_LEN`] bytes) claims.
#[cfg(test)]
fn image_mime(header: &[u8]) -> Option<&'static str> {
    Format::of(header).map(Format::mime)
}

/// The file-name extensions of the served image formats, for listings: a directory listing
/// opens only files named so to check their first bytes (opening every file would slow a
/// listing of thousands), and names the type only when those bytes confirm it.
const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// Whether a file's name has one of [`IMAGE_EXTENSIONS`] (in any case).
pub(crate) fn named_like_image(name: &std::ffi::OsStr) -> bool {
    std::path::Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.iter().any(|i| e.eq_ignore_ascii_case(i)))
}

/// The image format `reader`'s first [`HEADER_LEN`] bytes claim (read from where it is; the
/// caller reads the rest from its own offsets): `None` for anything else. A claim only: what
/// [`decode()`] proves.
pub(crate) fn sniff(reader: &mut impl Read) -> io::Result<Option<Format>> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    reader.take(HEADER_LEN as u64).read_to_end(&mut header)?;
    Ok(Format::of(&header))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_formats_are_known_by_their_magic_bytes() {
        let webp = b"RIFF\x10\x00\x00\x00WEBPVP8X";
        assert_eq!(
            image_mime(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR"),
            Some("image/png")
        );
        assert_eq!(
            image_mime(b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01"),
            Some("image/jpeg")
        );
        assert_eq!(image_mime(b"GIF89a\x01\0\x01\0\0\0\0\0"), Some("image/gif"));
        assert_eq!(image_mime(webp), Some("image/webp"));
    }

    #[test]
    fn text_svg_other_formats_and_short_files_are_not_images() {
        for header in [
            &b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"[..],
            b"hello, world\n\n\n\n",
            b"BM\x3a\0\0\0\0\0\0\0\x36\0\0\0",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0",
            b"\x89PNG",
            b"",
        ] {
            assert_eq!(image_mime(header), None, "{header:?}");
        }
    }
}

#[cfg(test)]
mod image_tests;

/// The `image_decode` fuzz target's door (FUZZING.md): a file through [`sniff()`],
/// [`decode()`] and [`fit()`] as `read_file` takes it, under small bounds so a run stays fast,
/// and the sent image checked again by [`sniff()`] and [`decode()`]. Results come back as plain data (MIME types, sizes,
/// messages), so the target checks them with the `image` crate on its own.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz {
    use super::{Bounds, Unfit};

    /// The longest side of a copy: small, so the downscale and encodes are quick.
    pub const MAX_SIDE: u32 = 64;
    /// The larger longest side a target may choose: over [`super::MIN_SIDE`], so a copy too
    /// large for the byte bound is made smaller once (320 px, then 256) before it is refused.
    pub const MAX_SIDE_LARGE: u32 = 320;
    /// The most bytes of a sent image.
    pub const MAX_BYTES: u64 = 64 * 1024;
    /// The most pixels a file's header may claim for it to be decoded here. `decode` allows
    /// 50 megapixels, which a few bytes of one colour can claim, and decoding that under the
    /// sanitizer takes seconds an input: past 4 megapixels the work grows, the code paths do
    /// not. The header is read with the `image` crate's own reader, before `decode`.
    pub const MAX_PIXELS: u64 = 4_000_000;
    /// The most pixels of an image sent at its original size (`original_size`): a copy that
    /// large is encoded up to three times, which for megapixels takes seconds under the
    /// sanitizer; 512x512 and 16400x15 (past WebP's 16383 px a side) both fit.
    pub const ORIGINAL_SIZE_MAX_PIXELS: u64 = 262_144;

    /// What became of one input.
    #[derive(Debug)]
    pub enum Outcome {
        /// Its first bytes claim no served format.
        NotAnImage,
        /// Its header claims more than [`MAX_PIXELS`]: not decoded here.
        Skipped { width: u32, height: u32 },
        /// `decode` refused it: the format it claims and what was found.
        Unreadable { format: &'static str, found: String },
        /// `decode` accepted it, and what `fit` made of it.
        Decoded {
            /// The MIME type it decoded as.
            mime: &'static str,
            /// Its size in pixels, upright.
            width: u32,
            height: u32,
            /// The bounds it was fitted to, and whether at its original size.
            max_side: u32,
            max_bytes: u64,
            original_size: bool,
            fit: Fit,
        },
    }

    /// What `fit` returned.
    #[derive(Debug)]
    pub enum Fit {
        Sent {
            mime: &'static str,
            width: u32,
            height: u32,
            /// The bytes sent: the copy's, or the file's own when `original`.
            bytes: Vec<u8>,
            original: bool,
            resized: bool,
            /// The sent bytes through `sniff` and `decode` again: their MIME type and size in
            /// pixels, or what was wrong.
            again: Result<(&'static str, u32, u32), String>,
        },
        TooLarge {
            width: u32,
            height: u32,
            mime: &'static str,
            bytes: usize,
        },
        Encoding(String),
    }

    /// `file` as `read_file` takes it, fitted to [`MAX_SIDE`] (or [`MAX_SIDE_LARGE`] with
    /// `large`) and [`MAX_BYTES`]; at its original size when `original_size` and it has at
    /// most [`ORIGINAL_SIZE_MAX_PIXELS`].
    pub fn check(file: &[u8], large: bool, original_size: bool) -> Outcome {
        let Ok(Some(format)) = super::sniff(&mut &file[..]) else {
            return Outcome::NotAnImage;
        };
        let claimed = image::ImageReader::with_format(std::io::Cursor::new(file), as_image(format))
            .into_dimensions();
        if let Ok((width, height)) = claimed
            && u64::from(width) * u64::from(height) > MAX_PIXELS
        {
            return Outcome::Skipped { width, height };
        }
        let decoded = match super::decode(file, format) {
            Ok(decoded) => decoded,
            Err(unreadable) => {
                return Outcome::Unreadable {
                    format: unreadable.format.name(),
                    found: unreadable.found,
                };
            }
        };
        let (width, height) = (decoded.image.width(), decoded.image.height());
        let original_size =
            original_size && u64::from(width) * u64::from(height) <= ORIGINAL_SIZE_MAX_PIXELS;
        let bounds = Bounds {
            max_side: if large { MAX_SIDE_LARGE } else { MAX_SIDE },
            max_bytes: MAX_BYTES,
        };
        let fit = match super::fit(file, &decoded, bounds, original_size) {
            Ok(sent) => {
                let original = sent.bytes.is_none();
                let bytes = sent.bytes.unwrap_or_else(|| file.to_vec());
                let again = match super::sniff(&mut &bytes[..]) {
                    Ok(Some(format)) => super::decode(&bytes, format)
                        .map(|d| (format.mime(), d.image.width(), d.image.height()))
                        .map_err(|unreadable| unreadable.found),
                    _ => Err("its first bytes claim no image format".to_owned()),
                };
                Fit::Sent {
                    mime: sent.format.mime(),
                    width: sent.width,
                    height: sent.height,
                    bytes,
                    original,
                    resized: sent.resized,
                    again,
                }
            }
            Err(Unfit::TooLarge(copy)) => Fit::TooLarge {
                width: copy.width,
                height: copy.height,
                mime: copy.format.mime(),
                bytes: copy.bytes,
            },
            Err(Unfit::Encoding(error)) => Fit::Encoding(error.to_string()),
        };
        Outcome::Decoded {
            mime: format.mime(),
            width,
            height,
            max_side: bounds.max_side,
            max_bytes: bounds.max_bytes,
            original_size,
            fit,
        }
    }

    fn as_image(format: super::Format) -> image::ImageFormat {
        match format {
            super::Format::Png => image::ImageFormat::Png,
            super::Format::Jpeg => image::ImageFormat::Jpeg,
            super::Format::Gif => image::ImageFormat::Gif,
            super::Format::Webp => image::ImageFormat::WebP,
        }
    }
}
