//! The full decode that proves a file is the image its first bytes claim ([`decode`]), under
//! bounds on its size in pixels, or the refusal that says what was found ([`Unreadable`]).
//!
//! A decode costs memory in proportion to the pixels (four bytes each, eight for 16-bit
//! images), which the headers state before anything is allocated: a file that claims more
//! than [`MAX_SIDE`] on a side or [`MAX_PIXELS`] in all is refused on its header, so a small
//! file cannot make the server allocate gigabytes. Within those bounds the decode is whole:
//! a file damaged anywhere is refused, never sent.

use std::io::Cursor;

use image::codecs::gif::GifDecoder;
use image::codecs::jpeg::JpegDecoder;
use image::codecs::png::PngDecoder;
use image::codecs::webp::WebPDecoder;
use image::{AnimationDecoder, DynamicImage, ImageDecoder, ImageError, Limits};

use super::{Format, structure};

/// Longest side a file may claim to be decoded: twice the 16,384 px of the largest
/// screenshots and scans, so a real image passes and an absurd header (a damaged or crafted
/// file claiming billions of pixels) is refused before any allocation.
pub(crate) const MAX_SIDE: u32 = 32_768;
/// Most pixels a file may claim to be decoded: 50 megapixels holds a full-frame camera's
/// photo (45 MP) and an 8K screenshot (33 MP); decoded, it is at most 200 MB (400 MB at 16
/// bits a channel), held for the length of one call, one call per CPU at a time.
pub(crate) const MAX_PIXELS: u64 = 50_000_000;
/// The decoders' own allocation cap, behind the header check: what [`MAX_PIXELS`] needs at
/// 16 bits a channel with alpha (8 bytes a pixel), and not more.
const MAX_ALLOC: u64 = MAX_PIXELS * 8;

/// An image decoded whole: what [`fit()`](super::fit()) sends a copy of.
pub(crate) struct Decoded {
    /// The format the file is (its first bytes claimed it, and it decoded as one).
    pub(crate) format: Format,
    /// The pixels, upright: a JPEG's EXIF orientation is applied.
    pub(crate) image: DynamicImage,
    /// Whether the file's pixels were turned to be upright (its EXIF orientation), so the
    /// file itself would show on its side to a model that ignores the orientation.
    pub(crate) turned: bool,
    /// Whether the file is an animation (GIF, WebP or APNG with more than one frame):
    /// `image` is its first frame.
    pub(crate) animated: bool,
}

/// A file whose first bytes claim an image format and which is not one: what it claims and
/// what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    /// The format its first bytes claim.
    pub(crate) format: Format,
    /// What was found, as the end of "starts like a PNG but …".
    pub(crate) found: String,
}

/// Decode `bytes`, whose first bytes claim `format`, whole: the pixels (the first frame of an
/// animation), or what is wrong with the file.
pub(crate) fn decode(bytes: &[u8], format: Format) -> Result<Decoded, Unreadable> {
    let unreadable = |found: String| Unreadable { format, found };
    match format {
        Format::Png => structure::png(bytes).map_err(unreadable)?,
        Format::Jpeg => structure::jpeg(bytes).map_err(unreadable)?,
        Format::Gif => structure::gif(bytes).map_err(unreadable)?,
        Format::Webp => structure::webp(bytes).map_err(unreadable)?,
    }
    let failed = |error: ImageError| unreadable(describe(&error, bytes.len()));
    let reader = || Cursor::new(bytes);
    match format {
        Format::Png => {
            // No limits while the header is read: the size it states is checked first, so an
            // absurd one is named (a limit here would refuse it without saying the size).
            let decoder = PngDecoder::with_limits(reader(), Limits::no_limits()).map_err(failed)?;
            let animated = decoder.is_apng().map_err(failed)?;
            still(decoder, format, animated).map_err(failed)
        }
        Format::Jpeg => {
            still(JpegDecoder::new(reader()).map_err(failed)?, format, false).map_err(failed)
        }
        Format::Webp => {
            let decoder = WebPDecoder::new(reader()).map_err(failed)?;
            let animated = decoder.has_animation();
            still(decoder, format, animated).map_err(failed)
        }
        Format::Gif => gif(GifDecoder::new(reader()).map_err(failed)?).map_err(failed),
    }
}

/// The bounds every decoder is given (behind the header check of [`check_size`]).
fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    limits
}

/// Refuse a size in pixels over [`MAX_SIDE`] or [`MAX_PIXELS`], from the header, before the
/// pixels are allocated.
fn check_size(width: u32, height: u32) -> Result<(), ImageError> {
    let pixels = u64::from(width) * u64::from(height);
    if width == 0 || height == 0 || width.max(height) > MAX_SIDE || pixels > MAX_PIXELS {
        return Err(Oversized { width, height }.into());
    }
    Ok(())
}

/// The pixels of a still image (or the first frame of an animated WebP or APNG), upright.
fn still(
    mut decoder: impl ImageDecoder,
    format: Format,
    animated: bool,
) -> Result<Decoded, ImageError> {
    let (width, height) = decoder.dimensions();
    check_size(width, height)?;
    decoder.set_limits(limits())?;
    let orientation = decoder.orientation()?;
    let mut image = DynamicImage::from_decoder(decoder)?;
    let turned = orientation != image::metadata::Orientation::NoTransforms;
    image.apply_orientation(orientation);
    Ok(Decoded {
        format,
        image,
        turned,
        animated,
    })
}

/// A GIF's first frame, and whether a second follows (decoding one more frame at most).
fn gif(mut decoder: GifDecoder<Cursor<&[u8]>>) -> Result<Decoded, ImageError> {
    let (width, height) = decoder.dimensions();
    check_size(width, height)?;
    decoder.set_limits(limits())?;
    let mut frames = decoder.into_frames();
    let first = frames.next().ok_or_else(|| {
        ImageError::IoError(std::io::Error::from(std::io::ErrorKind::UnexpectedEof))
    })??;
    // A second frame, whole or damaged, makes it an animation: only the first is sent.
    let animated = frames.next().is_some();
    Ok(Decoded {
        format: Format::Gif,
        image: DynamicImage::ImageRgba8(first.into_buffer()),
        turned: false,
        animated,
    })
}

/// A size in pixels over the decode bounds, as the header states it.
#[derive(Debug)]
struct Oversized {
    width: u32,
    height: u32,
}

impl std::fmt::Display for Oversized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

impl std::error::Error for Oversized {}

impl From<Oversized> for ImageError {
    fn from(size: Oversized) -> Self {
        ImageError::Decoding(image::error::DecodingError::new(
            image::error::ImageFormatHint::Unknown,
            size,
        ))
    }
}

/// What a decoder's error says was found in a file of `len` bytes, in words a model can act
/// on (the decoders' own messages, cleaned of raw bytes, kept as the detail).
fn describe(error: &ImageError, len: usize) -> String {
    use std::error::Error as _;
    match error {
        ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => format!(
            "its data ends early, at byte {len}: the file is truncated (a partial download or copy)"
        ),
        ImageError::Decoding(decoding) => match decoding.source() {
            Some(source) => match source.downcast_ref::<Oversized>() {
                Some(size) if size.width == 0 || size.height == 0 => format!(
                    "its header says it is {size} pixels, which no image is: the header is corrupt"
                ),
                Some(size) => format!(
                    "its header says it is {size} pixels, more than the server decodes (at most {MAX_SIDE} px a side and {} megapixels): the header is corrupt, or the image is too large to be shown to a model",
                    MAX_PIXELS / 1_000_000
                ),
                None if source.to_string().contains("nexpected") => format!(
                    "its data ends early, at byte {len} ({}): the file is truncated or damaged",
                    clean(&source.to_string())
                ),
                None => format!("its data is corrupt ({})", clean(&source.to_string())),
            },
            None => "its data is corrupt".to_owned(),
        },
        ImageError::Limits(_) => format!(
            "decoding it needs more memory than the server allows for one image ({} MB)",
            MAX_ALLOC / 1_000_000
        ),
        ImageError::Unsupported(unsupported) => format!(
            "it uses a feature of the format that cannot be decoded ({})",
            clean(&unsupported.to_string())
        ),
        other => format!("it cannot be decoded ({})", clean(&other.to_string())),
    }
}

/// A decoder's message with anything but printable ASCII replaced: some print bytes of the
/// file as text.
fn clean(message: &str) -> String {
    message
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect()
}
