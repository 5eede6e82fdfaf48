//! The copy of an image a model is sent ([`fit`]): the file itself when it is within the
//! bounds, else a copy downscaled to them, in the file's format or a smaller one.
//!
//! The bounds ([`Bounds`]) are the model APIs': Anthropic's downsizes anything over about
//! 1,568 px on its longest side (after paying for the whole upload) and refuses images over
//! 8,000 px or 5 MB of base64; OpenAI's and Google's have larger limits of the same kind. A
//! copy is downscaled with its aspect ratio kept, by area averaging (`image`'s `thumbnail`:
//! every source pixel counts once, so text and fine lines survive; measured as sharp as a
//! Catmull-Rom filter on screenshot text at a third of its time, BENCHMARKS.md).
//!
//! The format of a copy: a JPEG stays JPEG (a photo); anything else is tried as PNG (lossless,
//! what screenshots and plots are), then lossless WebP (smaller for the same pixels), then
//! JPEG when it has no transparency; the first that fits the byte bound is sent. When none
//! does, the copy is made smaller again, by a quarter of its side each time, down to
//! [`MIN_SIDE`].

use std::borrow::Cow;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::codecs::webp::WebPEncoder;
use image::{DynamicImage, GenericImageView, ImageError};

use super::{Decoded, Format};

/// JPEG quality of a downscaled copy: 85 keeps text and edges clean to a model at about a
/// third of the bytes of 95; below 80, ringing around text starts to show.
const JPEG_QUALITY: u8 = 85;
/// The smallest side a copy is made down to, to fit the byte bound: even incompressible
/// pixels with alpha (256 KiB) fit the smallest bound an operator may set at this size
/// (`MIN_IMAGE_SEND_MAX_BYTES` in `settings.rs`).
pub(crate) const MIN_SIDE: u32 = 256;

/// How large an image sent to a model may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// Longest side in pixels.
    pub(crate) max_side: u32,
    /// Most bytes of the encoded image (before base64).
    pub(crate) max_bytes: u64,
}

/// The image a model is sent.
#[derive(Debug)]
pub(crate) struct Sent {
    /// Its format.
    pub(crate) format: Format,
    /// Its width in pixels.
    pub(crate) width: u32,
    /// Its height in pixels.
    pub(crate) height: u32,
    /// Its bytes when it is a copy; `None` when it is the file itself.
    pub(crate) bytes: Option<Vec<u8>>,
    /// Whether it is smaller, in pixels, than the file's image.
    pub(crate) resized: bool,
}

/// No copy fits the byte bound: the smallest one made.
#[derive(Debug)]
pub(crate) struct TooLarge {
    /// Its size in pixels.
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Its format and bytes.
    pub(crate) format: Format,
    pub(crate) bytes: usize,
}

/// Why no image is sent: no copy fits, or an encoder failed.
#[derive(Debug)]
pub(crate) enum Unfit {
    TooLarge(TooLarge),
    Encoding(ImageError),
}

/// The image to send of `decoded`, the image in `file`: the file itself when it is within
/// `bounds` (and upright and still), else a copy that is. With `original_size`, the copy keeps
/// the image's size in pixels (only its encoding may change to fit the byte bound).
pub(crate) fn fit(
    file: &[u8],
    decoded: &Decoded,
    bounds: Bounds,
    original_size: bool,
) -> Result<Sent, Unfit> {
    let (width, height) = decoded.image.dimensions();
    let longest = width.max(height);
    let mut side = if original_size {
        longest
    } else {
        longest.min(bounds.max_side)
    };
    let as_it_is = side == longest && !decoded.turned && !decoded.animated;
    if as_it_is && file.len() as u64 <= bounds.max_bytes {
        return Ok(Sent {
            format: decoded.format,
            width,
            height,
            bytes: None,
            resized: false,
        });
    }
    loop {
        let image = eight_bits(if side < longest {
            Cow::Owned(decoded.image.thumbnail(side, side))
        } else {
            Cow::Borrowed(&decoded.image)
        });
        let (sent_width, sent_height) = image.dimensions();
        let mut smallest = None;
        let mut failed = None;
        for &format in candidates(decoded.format, image.color().has_alpha()) {
            // A format that cannot hold this image (WebP stops at 16,383 px a side) is one
            // that does not fit: the next is tried.
            let bytes = match encode(&image, format) {
                Ok(bytes) => bytes,
                Err(error) => {
                    failed = Some(error);
                    continue;
                }
            };
            if bytes.len() as u64 <= bounds.max_bytes {
                return Ok(Sent {
                    format,
                    width: sent_width,
                    height: sent_height,
                    bytes: Some(bytes),
                    resized: side < longest,
                });
            }
            if smallest.is_none_or(|(_, size)| bytes.len() < size) {
                smallest = Some((format, bytes.len()));
            }
        }
        if original_size || side <= MIN_SIDE {
            let Some((format, bytes)) = smallest else {
                // Every format failed to encode it (none does only for a bug or no memory).
                return Err(failed.map_or(
                    Unfit::TooLarge(TooLarge {
                        width: sent_width,
                        height: sent_height,
                        format: decoded.format,
                        bytes: file.len(),
                    }),
                    Unfit::Encoding,
                ));
            };
            return Err(Unfit::TooLarge(TooLarge {
                width: sent_width,
                height: sent_height,
                format,
                bytes,
            }));
        }
        side = (side / 4 * 3).max(MIN_SIDE);
    }
}

/// The formats a copy of an image from a `source` file is tried in, first that fits wins.
fn candidates(source: Format, alpha: bool) -> &'static [Format] {
    match (source, alpha) {
        (Format::Jpeg, _) => &[Format::Jpeg],
        (_, true) => &[Format::Png, Format::Webp],
        (_, false) => &[Format::Png, Format::Webp, Format::Jpeg],
    }
}

/// `image` at 8 bits a channel (the encoders' common ground, and a 16-bit PNG's copy is half
/// the size), keeping grey as grey and alpha only where there is one.
fn eight_bits(image: Cow<'_, DynamicImage>) -> Cow<'_, DynamicImage> {
    let color = image.color();
    match (
        color.has_color(),
        color.has_alpha(),
        color.bytes_per_pixel(),
    ) {
        (false, false, 1) | (false, true, 2) | (true, false, 3) | (true, true, 4) => image,
        (false, false, _) => Cow::Owned(DynamicImage::ImageLuma8(image.to_luma8())),
        (false, true, _) => Cow::Owned(DynamicImage::ImageLumaA8(image.to_luma_alpha8())),
        (true, false, _) => Cow::Owned(DynamicImage::ImageRgb8(image.to_rgb8())),
        (true, true, _) => Cow::Owned(DynamicImage::ImageRgba8(image.to_rgba8())),
    }
}

/// `image` (8 bits a channel) encoded as `format`.
fn encode(image: &DynamicImage, format: Format) -> Result<Vec<u8>, ImageError> {
    let mut out = Vec::new();
    match format {
        // A GIF is never a candidate (its copies are PNG: GIF has 256 colours).
        Format::Png | Format::Gif => image.write_with_encoder(PngEncoder::new(&mut out))?,
        Format::Webp => image.write_with_encoder(WebPEncoder::new_lossless(&mut out))?,
        Format::Jpeg => {
            image.write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))?;
        }
    }
    Ok(out)
}
