//! Images a model can be shown: PNG, JPEG, GIF and WebP (the formats MCP clients and the
//! model APIs accept), known by their first bytes, never by their name. A `.txt` that is a
//! PNG is an image; a `.png` that holds text is text. SVG is XML, so it is text, read as any
//! text file.
//!
//! Knowing the format by its first bytes is only a claim. A model API that is sent an image
//! it cannot decode refuses the whole request, and the block stays in the conversation, so
//! every later turn fails too; and it refuses or shrinks (after paying for the upload) one
//! larger than its bound. So an image is served only after:
//! - `decode.rs`: a full decode under bounds ([`decode`]) that proves the file is the image
//!   its first bytes claim, or a refusal that says what was found;
//! - `fit.rs`: the copy a model is sent ([`fit`]): the file itself when it is within the
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
/// [`decode`] proves.
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
