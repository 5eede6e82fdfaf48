//! The structural checks the decoders do not make, each naming the byte where the file goes
//! wrong. The decoders stop at the last pixel they need and some fill in what is missing, so a
//! file cut short can decode, where other image libraries (and the model APIs behind them)
//! refuse it; these walks check each file reaches its end:
//! - a PNG must begin with its IHDR chunk and end with its IEND chunk, every chunk whole: the
//!   decoder's own error for a file that does not begin with IHDR prints the chunk type it
//!   found as raw bytes, and it stops reading after the image data, so a file cut inside its
//!   last chunk decodes;
//! - a JPEG must reach its end-of-image marker: the JPEG decoder fills the rest of a file cut
//!   short with grey;
//! - a GIF's blocks must be whole up to its trailer (a file that ends where the trailer would
//!   be is accepted, as image libraries do);
//! - a WebP file must be as long as its RIFF header says.
//!
//! Each walks the file's framing only (chunk and segment lengths, markers, blocks), in one
//! pass: the pixels are the decoder's.

/// The PNG signature's length: the first chunk starts after it.
const PNG_SIGNATURE_LEN: usize = 8;
/// The IHDR chunk's data length, fixed by the PNG specification.
const PNG_IHDR_LEN: u32 = 13;

/// A PNG chunk's framing around its data: length and type before, CRC after.
const PNG_CHUNK_FRAME: usize = 12;

/// Whether `bytes` (a file that starts with the PNG signature) begins with its IHDR chunk and
/// holds whole chunks up to its IEND chunk (anything after it is ignored, as every decoder
/// does); else what was found instead, and where.
pub(super) fn png(bytes: &[u8]) -> Result<(), String> {
    let header = PNG_SIGNATURE_LEN..PNG_SIGNATURE_LEN + 8;
    let Some(first) = bytes.get(header) else {
        return Err(format!(
            "it ends at byte {}, before its IHDR header chunk (byte {PNG_SIGNATURE_LEN}): the file is truncated",
            bytes.len()
        ));
    };
    let (length, kind) = first.split_at(4);
    if kind != b"IHDR" {
        return Err(format!(
            "its IHDR header chunk is missing: the first chunk, at byte {PNG_SIGNATURE_LEN}, is {}",
            printable(kind)
        ));
    }
    if length != PNG_IHDR_LEN.to_be_bytes() {
        return Err(format!(
            "its IHDR header chunk at byte {PNG_SIGNATURE_LEN} is corrupt: its length says {} bytes, where IHDR is always {PNG_IHDR_LEN}",
            u32::from_be_bytes([length[0], length[1], length[2], length[3]])
        ));
    }
    let mut at = PNG_SIGNATURE_LEN;
    loop {
        let Some(header) = bytes.get(at..at + 8) else {
            return Err(format!(
                "it ends at byte {} before its IEND chunk (the end of a PNG): the file is truncated (a partial download or copy)",
                bytes.len()
            ));
        };
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let kind = &header[4..];
        let end = usize::try_from(length)
            .ok()
            .and_then(|length| (at + PNG_CHUNK_FRAME).checked_add(length));
        match end {
            Some(end) if end <= bytes.len() => {
                if kind == b"IEND" {
                    return Ok(());
                }
                at = end;
            }
            _ => {
                return Err(format!(
                    "the chunk at byte {at} ({}) says it holds {length} bytes, past the end of the file at byte {}: the file is truncated (a partial download or copy) or the chunk is corrupt",
                    printable(kind),
                    bytes.len()
                ));
            }
        }
    }
}

/// A four-byte chunk type as a model can read it: the letters when they are ASCII letters,
/// else the bytes in hex.
fn printable(kind: &[u8]) -> String {
    if kind.iter().all(u8::is_ascii_alphabetic) {
        format!("{:?}", String::from_utf8_lossy(kind))
    } else {
        let hex: Vec<String> = kind.iter().map(|b| format!("{b:02x}")).collect();
        format!("the bytes {} (not a chunk type)", hex.join(" "))
    }
}

/// A JPEG's marker byte (every marker is 0xFF then its code).
const MARKER: u8 = 0xff;
/// End of image: the last marker of a complete JPEG.
const EOI: u8 = 0xd9;
/// Start of scan: entropy-coded data follows its header, up to the next marker.
const SOS: u8 = 0xda;
/// Markers with no length after them: TEM, and the restart markers RST0..RST7.
fn standalone(code: u8) -> bool {
    code == 0x01 || (0xd0..=0xd7).contains(&code)
}

/// Whether `bytes` (a file that starts with the JPEG start-of-image marker) is framed as a
/// whole JPEG: segments whose lengths hold, scans whose data ends at a marker, and the
/// end-of-image marker at the end (anything after it is ignored, as every decoder does).
pub(super) fn jpeg(bytes: &[u8]) -> Result<(), String> {
    let truncated = || {
        format!(
            "it ends at byte {} before its end-of-image marker (FF D9): the file is truncated (a partial download or copy)",
            bytes.len()
        )
    };
    // After the start-of-image marker.
    let mut at = 2;
    loop {
        let Some(&byte) = bytes.get(at) else {
            return Err(truncated());
        };
        if byte != MARKER {
            return Err(format!(
                "its data is corrupt at byte {at}: a marker (FF) should begin there, and the byte is {byte:02x}"
            ));
        }
        // A marker may be preceded by any number of fill bytes (FF).
        while bytes.get(at) == Some(&MARKER) {
            at += 1;
        }
        let Some(&code) = bytes.get(at) else {
            return Err(truncated());
        };
        let marker_at = at - 1;
        at += 1;
        if code == EOI {
            return Ok(());
        }
        if standalone(code) {
            continue;
        }
        if code == 0 {
            return Err(format!(
                "its data is corrupt at byte {marker_at}: FF 00 (an escaped byte of image data) outside the image data"
            ));
        }
        let Some(length) = bytes.get(at..at + 2) else {
            return Err(truncated());
        };
        let length = usize::from(u16::from_be_bytes([length[0], length[1]]));
        if length < 2 {
            return Err(format!(
                "its segment at byte {marker_at} is corrupt: its length says {length} bytes, less than the length field itself"
            ));
        }
        at += length;
        if code == SOS {
            at = scan_end(bytes, at).ok_or_else(truncated)?;
        }
    }
}

/// Where the entropy-coded data that starts at `from` ends: the next marker that is not an
/// escaped data byte (FF 00) or a restart marker; `None` when the file ends first.
fn scan_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let at = from + memchr::memchr(MARKER, bytes.get(from..)?)?;
        match *bytes.get(at + 1)? {
            0 => from = at + 2,
            code if standalone(code) => from = at + 2,
            _ => return Some(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_start(length: u32, kind: [u8; 4]) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend_from_slice(&length.to_be_bytes());
        bytes.extend_from_slice(&kind);
        bytes
    }

    /// A PNG's framing: IHDR (13 bytes), an IDAT of 3, IEND; CRCs left zero (the decoder
    /// checks them, not this walk).
    fn png_file() -> Vec<u8> {
        let mut bytes = png_start(13, *b"IHDR");
        bytes.extend_from_slice(&[0; 13 + 4]);
        bytes.extend_from_slice(&[0, 0, 0, 3]);
        bytes.extend_from_slice(b"IDAT\x01\x02\x03\0\0\0\0");
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        bytes.extend_from_slice(b"IEND\0\0\0\0");
        bytes
    }

    #[test]
    fn a_png_is_whole_chunks_from_ihdr_to_iend() {
        let mut bytes = png_file();
        assert_eq!(png(&bytes), Ok(()));
        for cut in 16..bytes.len() {
            let error = png(&bytes[..cut]).unwrap_err();
            assert!(error.contains("truncated"), "cut at {cut}: {error}");
        }
        bytes.extend_from_slice(b"trailing");
        assert_eq!(png(&bytes), Ok(()));
    }

    #[test]
    fn a_png_must_begin_with_its_ihdr_chunk() {
        let missing = png(&png_start(13, *b"IDAT")).unwrap_err();
        assert!(
            missing.contains("IHDR header chunk is missing") && missing.contains("\"IDAT\""),
            "{missing}"
        );
        let garbage = png(&png_start(0x32bc_4bd5, [0x9c, 0x01, 0xff, 0x20])).unwrap_err();
        assert!(garbage.contains("the bytes 9c 01 ff 20"), "{garbage}");
        let corrupt = png(&png_start(99, *b"IHDR")).unwrap_err();
        assert!(
            corrupt.contains("says 99 bytes") && corrupt.contains("byte 8"),
            "{corrupt}"
        );
        let short = png(b"\x89PNG\r\n\x1a\n\0\0").unwrap_err();
        assert!(short.contains("ends at byte 10"), "{short}");
    }

    /// SOI, an APP0 segment, a scan with escaped bytes and a restart marker, EOI.
    fn jpeg_bytes() -> Vec<u8> {
        let mut bytes = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0xaa, 0xbb];
        bytes.extend_from_slice(&[0xff, 0xda, 0x00, 0x03, 0x01]);
        bytes.extend_from_slice(&[0x12, 0xff, 0x00, 0x34, 0xff, 0xd0, 0x56]);
        bytes.extend_from_slice(&[0xff, 0xff, 0xd9]);
        bytes
    }

    #[test]
    fn a_whole_jpeg_passes_and_trailing_bytes_are_ignored() {
        let mut bytes = jpeg_bytes();
        assert_eq!(jpeg(&bytes), Ok(()));
        bytes.extend_from_slice(b"trailing");
        assert_eq!(jpeg(&bytes), Ok(()));
    }

    #[test]
    fn a_jpeg_cut_anywhere_before_its_end_marker_is_truncated() {
        let bytes = jpeg_bytes();
        for cut in 2..bytes.len() {
            let error = jpeg(&bytes[..cut]).unwrap_err();
            assert!(
                error.contains(&format!("ends at byte {cut}")),
                "cut at {cut}: {error}"
            );
        }
    }

    #[test]
    fn a_jpeg_with_garbage_between_segments_names_the_byte() {
        let mut bytes = jpeg_bytes();
        bytes[8] = 0x42;
        let error = jpeg(&bytes).unwrap_err();
        assert!(
            error.contains("corrupt at byte 8") && error.contains("42"),
            "{error}"
        );
        let error = jpeg(&[0xff, 0xd8, 0xff, 0xe0, 0x00, 0x01]).unwrap_err();
        assert!(error.contains("segment at byte 2"), "{error}");
    }
}

/// What a truncated file is told, for the formats whose end is a marker.
fn truncated(len: usize, end: &str) -> String {
    format!(
        "it ends at byte {len} before its {end}: the file is truncated (a partial download or copy)"
    )
}

/// A GIF's header and logical screen descriptor: the first block follows them (and the global
/// colour table, when there is one).
const GIF_SCREEN_END: usize = 13;
/// A GIF image descriptor's length (its separator included).
const GIF_IMAGE_DESCRIPTOR: usize = 10;
/// GIF block introducers: extension, image descriptor, trailer.
const GIF_EXTENSION: u8 = 0x21;
const GIF_IMAGE: u8 = 0x2c;
const GIF_TRAILER: u8 = 0x3b;

/// The length of the colour table a GIF's packed `flags` byte announces (bit 7: present; bits
/// 0-2: its size as 2^(n+1) entries of 3 bytes).
fn gif_color_table(flags: u8) -> usize {
    if flags & 0x80 == 0 {
        0
    } else {
        3 << ((flags & 0x07) + 1)
    }
}

/// Whether `bytes` (a file that starts with a GIF signature) holds whole blocks up to its
/// trailer; else where it goes wrong.
pub(super) fn gif(bytes: &[u8]) -> Result<(), String> {
    let end = "trailer (3B, the end of a GIF)";
    let Some(&flags) = bytes.get(GIF_SCREEN_END - 3) else {
        return Err(truncated(bytes.len(), "logical screen descriptor"));
    };
    let mut at = GIF_SCREEN_END + gif_color_table(flags);
    let mut images = 0;
    loop {
        match bytes.get(at) {
            Some(&GIF_TRAILER) => return Ok(()),
            // Where the trailer would be, after at least one image: accepted.
            None if at == bytes.len() && images > 0 => return Ok(()),
            None => return Err(truncated(bytes.len(), end)),
            Some(&GIF_EXTENSION) => {
                at = sub_blocks(bytes, at + 2).ok_or_else(|| truncated(bytes.len(), end))?;
            }
            Some(&GIF_IMAGE) => {
                let Some(&flags) = bytes.get(at + GIF_IMAGE_DESCRIPTOR - 1) else {
                    return Err(truncated(bytes.len(), end));
                };
                // The descriptor, its colour table, the LZW code size, then the data.
                at += GIF_IMAGE_DESCRIPTOR + gif_color_table(flags) + 1;
                at = sub_blocks(bytes, at).ok_or_else(|| truncated(bytes.len(), end))?;
                images += 1;
            }
            Some(&byte) => {
                return Err(format!(
                    "its data is corrupt at byte {at}: a block (21, 2C, or the trailer 3B) should begin there, and the byte is {byte:02x}"
                ));
            }
        }
    }
}

/// Where the GIF data sub-blocks that start at `at` end (after their zero-length terminator);
/// `None` when the file ends first.
fn sub_blocks(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let size = usize::from(*bytes.get(at)?);
        at += 1;
        if size == 0 {
            return Some(at);
        }
        at += size;
    }
}

/// The RIFF header's length: "RIFF", the size of what follows it, "WEBP".
const RIFF_HEADER: usize = 12;

/// Whether `bytes` (a file that starts with a WebP signature) is as long as its RIFF header
/// says (the size counts from byte 8); trailing bytes are ignored, as decoders do.
pub(super) fn webp(bytes: &[u8]) -> Result<(), String> {
    let Some(size) = bytes.get(4..8) else {
        return Err(truncated(bytes.len(), "RIFF header"));
    };
    let size = u32::from_le_bytes([size[0], size[1], size[2], size[3]]) as usize;
    let whole = 8 + size;
    if size < RIFF_HEADER - 8 {
        return Err(format!(
            "its RIFF header is corrupt: it says the file is {whole} bytes, shorter than the header itself"
        ));
    }
    if bytes.len() < whole {
        return Err(format!(
            "it ends at byte {}, where its RIFF header says it is {whole} bytes: the file is truncated (a partial download or copy)",
            bytes.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod framing_tests {
    use super::*;

    /// GIF89a, a 1x1 screen with a 2-colour global table, a graphic control extension, one
    /// image with its data in one sub-block, the trailer.
    fn gif_file() -> Vec<u8> {
        let mut bytes = b"GIF89a\x01\x00\x01\x00\x80\x00\x00".to_vec();
        bytes.extend_from_slice(&[0, 0, 0, 255, 255, 255]);
        bytes.extend_from_slice(&[0x21, 0xf9, 4, 0, 0, 0, 0, 0]);
        bytes.extend_from_slice(&[0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0]);
        bytes.extend_from_slice(&[2, 2, 0x44, 0x01, 0]);
        bytes.push(0x3b);
        bytes
    }

    #[test]
    fn a_gif_is_whole_blocks_up_to_its_trailer() {
        let bytes = gif_file();
        assert_eq!(gif(&bytes), Ok(()));
        // Without its trailer (the file ends where it would be): accepted.
        assert_eq!(gif(&bytes[..bytes.len() - 1]), Ok(()));
        for cut in 0..bytes.len() - 1 {
            let error = gif(&bytes[..cut]).unwrap_err();
            assert!(error.contains("truncated"), "cut at {cut}: {error}");
        }
        let mut corrupt = bytes;
        corrupt[19] = 0x99;
        let error = gif(&corrupt).unwrap_err();
        assert!(error.contains("corrupt at byte 19"), "{error}");
    }

    #[test]
    fn a_webp_is_as_long_as_its_riff_header_says() {
        let mut bytes = b"RIFF\x08\x00\x00\x00WEBPVP8 ".to_vec();
        assert_eq!(webp(&bytes), Ok(()));
        bytes.pop();
        assert!(webp(&bytes).unwrap_err().contains("says it is 16 bytes"));
        assert!(
            webp(b"RIFF\x02\x00\x00\x00WEBP")
                .unwrap_err()
                .contains("corrupt")
        );
    }
}
