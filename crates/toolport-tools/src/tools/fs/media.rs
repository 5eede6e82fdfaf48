//! Which files are images a model can be shown: PNG, JPEG, GIF and WebP (the formats MCP
//! clients and the model APIs accept), known by their first bytes, never by their name. A
//! `.txt` that is a PNG is an image; a `.png` that holds text is text. SVG is XML, so it is
//! text, read as any text file.
//!
//! The format is recognised by the `imagesize` crate (with only these four formats' features),
//! which also reads an image's dimensions from its headers without decoding it: the same
//! magic-byte rules for `read_file` and `path_info`, from one place.

use std::io::{self, Read};

/// How many bytes of a file's start are read to recognise an image: `imagesize` needs 12
/// (WebP's `RIFF....WEBP`); 16 leaves room without costing more than one small read.
pub(crate) const HEADER_LEN: usize = 16;

/// The MIME type of the image a file's start (`header`, up to [`HEADER_LEN`] bytes) shows,
/// if it is one of the formats served as images.
fn image_mime(header: &[u8]) -> Option<&'static str> {
    match imagesize::image_type(header).ok()? {
        imagesize::ImageType::Png => Some("image/png"),
        imagesize::ImageType::Jpeg => Some("image/jpeg"),
        imagesize::ImageType::Gif => Some("image/gif"),
        imagesize::ImageType::Webp => Some("image/webp"),
        _ => None,
    }
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

/// The image type of what `reader` holds, from its first [`HEADER_LEN`] bytes (read from
/// where it is; the caller reads the rest from its own offsets): `None` for anything else.
pub(crate) fn sniff(reader: &mut impl Read) -> io::Result<Option<&'static str>> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    reader.take(HEADER_LEN as u64).read_to_end(&mut header)?;
    Ok(image_mime(&header))
}

/// An image's width and height in pixels, from its headers (`bytes` is the whole file);
/// `None` when the headers do not say (a truncated or damaged file).
pub(crate) fn dimensions(bytes: &[u8]) -> Option<(u64, u64)> {
    let size = imagesize::blob_size(bytes).ok()?;
    Some((
        u64::try_from(size.width).ok()?,
        u64::try_from(size.height).ok()?,
    ))
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
