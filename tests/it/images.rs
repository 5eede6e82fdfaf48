//! Images through read_file: PNG, JPEG, GIF and WebP files (by their magic bytes, never the
//! extension) arrive as MCP `image` content with a text line and their facts, under every
//! payload form; only files that decode as what they claim, never a corrupt, truncated or
//! absurd one; large ones downscaled to the bounds, with the original size said (and sent on
//! request); the size caps; SVG stays text; other binary files keep today's refusal;
//! path_info names an image's type. The images are real files made with the `image` crate,
//! and what comes back is decoded with it.

use std::fs;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use pretty_assertions::assert_eq;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::common::*;

/// A complete, valid 1x1 RGBA PNG (signature, IHDR, one IDAT, IEND; CRCs correct).
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x56, 0xc7, 0x2f, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A `width` x `height` image with detail in every pixel (a photo's worth of entropy).
fn photo(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        let noise = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 27;
        Rgb([
            (x * 255 / width) as u8 ^ noise as u8,
            (y * 255 / height) as u8,
            (x + y) as u8 & 0xf0,
        ])
    }))
}

/// A `width` x `height` image of noise: incompressible, so its files are as large as they go.
fn noise(width: u32, height: u32) -> DynamicImage {
    let mut state = 0x2545_f491_u32;
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let [r, g, b, _] = state.to_le_bytes();
        Rgb([r, g, b])
    }))
}

/// A `width` x `height` screenshot: flat bands and lines of dark "text".
fn screenshot(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgba8(RgbaImage::from_fn(width, height, |x, y| {
        let glyph = ((x / 7) ^ (y / 9)) % 5 == 0 && y % 40 < 24 && x % 600 < 520;
        match (glyph, (y / 40) % 2) {
            (true, _) => Rgba([20, 20, 20, 255]),
            (false, 0) => Rgba([250, 250, 250, 255]),
            (false, _) => Rgba([235, 238, 245, 255]),
        }
    }))
}

/// `image` encoded as `format`.
fn encode(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut out), format)
        .unwrap();
    out
}

/// A `width` x `height` file of each format: (file name, MIME type, bytes).
fn each_format(width: u32, height: u32) -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let image = photo(width, height);
    vec![
        ("pic.png", "image/png", encode(&image, ImageFormat::Png)),
        ("pic.jpg", "image/jpeg", encode(&image, ImageFormat::Jpeg)),
        ("pic.gif", "image/gif", encode(&image, ImageFormat::Gif)),
        ("pic.webp", "image/webp", encode(&image, ImageFormat::WebP)),
    ]
}

/// CRC-32 (PNG's), bit by bit: the absurd-size PNG needs an IHDR whose CRC holds, so only its
/// size is wrong.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// `file` (of `mime`) with the size in pixels its header states changed to an absurd one,
/// everything else intact.
fn claiming_absurd_size(mime: &str, mut file: Vec<u8>) -> Vec<u8> {
    match mime {
        "image/png" => {
            file[16..24].copy_from_slice(&[0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f]);
            let crc = crc32(&file[12..29]);
            file[29..33].copy_from_slice(&crc.to_be_bytes());
        }
        "image/gif" => file[6..10].copy_from_slice(&[0xff; 4]),
        "image/jpeg" => {
            // The start-of-frame segment (FF C0) holds height then width after its precision.
            let sof = file.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
            file[sof + 5..sof + 9].copy_from_slice(&[0xff; 4]);
        }
        _ => {
            // A lossless WebP (what the encoder writes): after its signature byte (0x2f) at
            // byte 20, width-1 and height-1 in 14 bits each.
            assert_eq!(&file[12..16], b"VP8L", "a lossless WebP");
            // 16383 x 16383 (WebP's largest), 268 megapixels.
            file[21..25].copy_from_slice(&[0xfe, 0xbf, 0xff, 0x0f]);
        }
    }
    file
}

/// The structured facts and decoded image of a read_file result for an image.
fn sent_image(result: &CallToolResult) -> (Value, String, DynamicImage) {
    let mut blocks = images(result);
    assert_eq!(blocks.len(), 1, "one image block");
    let (mime, bytes) = blocks.remove(0);
    let decoded = image::load_from_memory(&bytes).expect("the sent image decodes");
    (ok(result), mime, decoded)
}

/// The image blocks of a result: (mime type, decoded bytes).
fn images(result: &CallToolResult) -> Vec<(String, Vec<u8>)> {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image(image) => Some((
                image.mime_type.clone(),
                base64::engine::general_purpose::STANDARD
                    .decode(&image.data)
                    .expect("image data is base64"),
            )),
            _ => None,
        })
        .collect()
}

/// The facts of an image result that do not depend on the file's path or hash.
fn facts(structured: &Value) -> Value {
    pick(
        structured,
        &["kind", "mime_type", "width", "height", "size_bytes"],
    )
}

/// Assert the result's structuredContent matches read_file's published output schema (the
/// Python and TypeScript SDKs' clients check it).
async fn assert_valid(client: &Client, result: &CallToolResult) {
    let tools = within(client.list_all_tools()).await.unwrap();
    let tool = tools.iter().find(|t| t.name == "read_file").unwrap();
    let schema = Value::Object((*tool.output_schema.clone().unwrap()).clone());
    let structured = ok(result);
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&structured)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:?} in {structured}");
}

#[tokio::test]
async fn read_file_returns_a_png_as_an_image_block_with_a_text_line_and_its_facts() {
    let (_d, root) = tempdir();
    fs::write(root.join("dot.png"), PNG_1X1).unwrap();
    let client = connect(&root).await;
    let result = call(&client, "read_file", json!({"path": "dot.png"})).await;
    let structured = ok(&result);
    assert_eq!(
        structured,
        json!({
            "kind": "image",
            "path": root.join("dot.png").display().to_string(),
            "mime_type": "image/png",
            "width": 1,
            "height": 1,
            "size_bytes": PNG_1X1.len(),
            "sha256": sha256(PNG_1X1),
            "sent": {"mime_type": "image/png", "width": 1, "height": 1, "size_bytes": PNG_1X1.len(), "original": true},
            "resized": false,
            "animated": false,
        }),
        "the structured result describes the image; its bytes are not in it"
    );
    assert_eq!(
        images(&result),
        vec![("image/png".into(), PNG_1X1.to_vec())]
    );
    assert_eq!(
        text(&result),
        format!(
            "{}: image/png, 1x1, {} bytes (the image is the next content block)",
            root.join("dot.png").display(),
            PNG_1X1.len()
        ),
        "clients that cannot show images get a line saying what it is"
    );
}

/// The payload form (`[tools] payload`, or the client's name) moves a text payload between
/// the text block and structuredContent; an image is neither, and reaches every client.
#[tokio::test]
async fn an_image_reaches_every_client_whatever_the_payload_form() {
    let (_d, root) = tempdir();
    fs::write(root.join("dot.png"), PNG_1X1).unwrap();
    for form in ["structured", "text", "both"] {
        let client = connect_with(&root, &["--payload", form], TestClient::default()).await;
        let result = call(&client, "read_file", json!({"path": "dot.png"})).await;
        assert_valid(&client, &result).await;
        assert_eq!(
            facts(&ok(&result)),
            json!({"kind": "image", "mime_type": "image/png", "width": 1, "height": 1, "size_bytes": PNG_1X1.len()}),
            "{form}"
        );
        assert_eq!(
            images(&result),
            vec![("image/png".into(), PNG_1X1.to_vec())],
            "{form}"
        );
        assert!(text(&result).contains("image/png, 1x1"), "{form}");
    }
}

#[tokio::test]
async fn each_format_is_an_image_with_its_dimensions_sent_as_the_file_itself() {
    let (_d, root) = tempdir();
    let files = each_format(320, 200);
    for (name, _, bytes) in &files {
        fs::write(root.join(name), bytes).unwrap();
    }
    let client = connect(&root).await;
    for (name, mime, bytes) in files {
        let result = call(&client, "read_file", json!({"path": name})).await;
        assert_eq!(
            facts(&ok(&result)),
            json!({"kind": "image", "mime_type": mime, "width": 320, "height": 200, "size_bytes": bytes.len()}),
            "{name}"
        );
        assert_eq!(
            ok(&result)["sent"],
            json!({"mime_type": mime, "width": 320, "height": 200, "size_bytes": bytes.len(), "original": true}),
            "{name}"
        );
        assert_eq!(images(&result), vec![(mime.into(), bytes)], "{name}");
    }
}

/// A file whose first bytes claim an image format and which does not decode as one never
/// reaches the client as an image block (a model API refuses the whole request, and every
/// later one that carries it): the signature and garbage, cut after the header, cut in its
/// data, an absurd size in the header. Each is refused saying what it claims and what was
/// found.
#[tokio::test]
async fn a_corrupt_truncated_or_absurd_image_is_refused_never_sent() {
    let (_d, root) = tempdir();
    let garbage: Vec<u8> = (0..2048u32).map(|i| (i * 7919 % 251) as u8).collect();
    let mut cases = Vec::new();
    for (name, mime, bytes) in each_format(200, 150) {
        let format = match mime {
            "image/png" => "PNG",
            "image/jpeg" => "JPEG",
            "image/gif" => "GIF",
            _ => "WebP",
        };
        let mut signed = bytes[..12].to_vec();
        signed.extend_from_slice(&garbage);
        let header_end = if mime == "image/webp" { 30 } else { 40 };
        for (what, file) in [
            ("garbage", signed),
            ("header-only", bytes[..header_end].to_vec()),
            ("cut", bytes[..bytes.len() * 2 / 3].to_vec()),
            ("absurd", claiming_absurd_size(mime, bytes.clone())),
        ] {
            let path = format!("{what}-{name}");
            fs::write(root.join(&path), file).unwrap();
            cases.push((path, format, what));
        }
    }
    let client = connect(&root).await;
    for (path, format, what) in cases {
        let result = call(&client, "read_file", json!({"path": path})).await;
        assert!(
            images(&result).is_empty(),
            "{path}: an image block was sent"
        );
        let message = err(&result);
        assert!(
            message.starts_with(&format!(
                "invalid arguments: {} starts like a {format} image (its first bytes) but is not one: ",
                root.join(&path).display()
            )) && message.contains("Check the file"),
            "{path}: {message}"
        );
        let expected = match what {
            "absurd" => "more than the server decodes",
            "garbage" => "",
            _ => "truncated",
        };
        assert!(message.contains(expected), "{path}: {message}");
    }
}

/// A valid image under another format's name is what its bytes are: each format's file named
/// as the next format comes back as the format it is.
#[tokio::test]
async fn a_renamed_image_is_sent_as_what_its_bytes_are() {
    let (_d, root) = tempdir();
    let files = each_format(64, 48);
    let names = ["photo.jpg", "anim.gif", "pic.webp", "shot.png"];
    for ((_, _, bytes), name) in files.iter().zip(names) {
        fs::write(root.join(name), bytes).unwrap();
    }
    let client = connect(&root).await;
    for ((_, mime, _), name) in files.iter().zip(names) {
        let result = call(&client, "read_file", json!({"path": name})).await;
        let (facts, sent_mime, image) = sent_image(&result);
        assert_eq!(
            (facts["mime_type"].as_str(), sent_mime.as_str()),
            (Some(*mime), *mime),
            "{name}"
        );
        assert_eq!((image.width(), image.height()), (64, 48), "{name}");
    }
}

/// A 4000x3000 PNG screenshot and a 12-megapixel JPEG photo come back at most 1568 px on their
/// longest side and within the byte bound, the aspect kept, with the original size in the
/// result and the line a model reads; the original size on request.
#[tokio::test]
async fn large_images_are_downscaled_to_the_bounds_with_the_original_size_stated() {
    let (_d, root) = tempdir();
    let shot = encode(&screenshot(4000, 3000), ImageFormat::Png);
    let photo = encode(&photo(4000, 3000), ImageFormat::Jpeg);
    fs::write(root.join("shot.png"), &shot).unwrap();
    fs::write(root.join("photo.jpg"), &photo).unwrap();
    let client = connect(&root).await;
    for (path, mime, file) in [
        ("shot.png", "image/png", &shot),
        ("photo.jpg", "image/jpeg", &photo),
    ] {
        let result = call(&client, "read_file", json!({"path": path})).await;
        assert_valid(&client, &result).await;
        let (facts, sent_mime, image) = sent_image(&result);
        assert_eq!(sent_mime, mime, "{path}: kept in its format");
        assert_eq!((image.width(), image.height()), (1568, 1176), "{path}");
        let sent_bytes = images(&result)[0].1.len();
        assert!(sent_bytes <= 3_932_160, "{path}: {sent_bytes} bytes");
        assert_eq!(
            pick(
                &facts,
                &["width", "height", "size_bytes", "resized", "animated"]
            ),
            json!({"width": 4000, "height": 3000, "size_bytes": file.len(), "resized": true, "animated": false}),
            "{path}"
        );
        assert_eq!(
            facts["sent"],
            json!({"mime_type": mime, "width": 1568, "height": 1176, "size_bytes": sent_bytes, "original": false})
        );
        assert_eq!(
            text(&result),
            format!(
                "{}: {mime}, 4000x3000, {} bytes; sent as {mime} 1568x1176 ({sent_bytes} bytes): downscaled to the server's bounds for a model; read_file with original_size=true sends the full size (the image is the next content block)",
                root.join(path).display(),
                file.len()
            )
        );
    }
    // The screenshot at its original size: the file itself (it is within the byte bound).
    let result = call(
        &client,
        "read_file",
        json!({"path": "shot.png", "original_size": true}),
    )
    .await;
    assert_eq!(images(&result), vec![("image/png".into(), shot)]);
    assert_eq!(ok(&result)["resized"], json!(false));
}

/// The bounds are the operator's: `--image-max-side` and `[limits] image_send_max_bytes`.
#[tokio::test]
async fn the_image_bounds_are_the_operators_settings() {
    let (_d, root) = tempdir();
    fs::write(
        root.join("wide.png"),
        encode(&screenshot(2000, 500), ImageFormat::Png),
    )
    .unwrap();
    let client = connect_with(&root, &["--image-max-side", "800"], TestClient::default()).await;
    let (_, _, image) = sent_image(&call(&client, "read_file", json!({"path": "wide.png"})).await);
    assert_eq!((image.width(), image.height()), (800, 200));
    fs::write(
        root.join("noisy.png"),
        encode(&noise(1200, 900), ImageFormat::Png),
    )
    .unwrap();
    let client = connect_configured(
        &root,
        "[limits]\nimage_send_max_bytes = 524288\n",
        TestClient::default(),
    )
    .await;
    let result = call(&client, "read_file", json!({"path": "noisy.png"})).await;
    let sent = images(&result);
    assert!(sent[0].1.len() <= 524_288, "{} bytes", sent[0].1.len());
    assert_eq!(ok(&result)["sent"]["original"], json!(false));
    let message = err(&call(
        &client,
        "read_file",
        json!({"path": "noisy.png", "original_size": true}),
    )
    .await);
    assert!(
        message.contains("at 1200x900 is") && message.contains("read it without original_size"),
        "{message}"
    );
}

/// An animated GIF sends its first frame, and says so.
#[tokio::test]
async fn an_animated_gif_sends_its_first_frame() {
    use image::codecs::gif::GifEncoder;
    let (_d, root) = tempdir();
    let mut gif = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut gif);
        for shade in [0u8, 255] {
            let frame = RgbaImage::from_pixel(30, 20, Rgba([shade, shade, shade, 255]));
            encoder.encode_frame(image::Frame::new(frame)).unwrap();
        }
    }
    fs::write(root.join("spin.gif"), &gif).unwrap();
    let client = connect(&root).await;
    let result = call(&client, "read_file", json!({"path": "spin.gif"})).await;
    let (facts, mime, image) = sent_image(&result);
    assert_eq!(
        (mime.as_str(), facts["animated"].clone()),
        ("image/png", json!(true))
    );
    assert_eq!(image.to_rgba8().get_pixel(0, 0), &Rgba([0, 0, 0, 255]));
    assert!(
        text(&result).contains("only the first frame of the animation"),
        "{}",
        text(&result)
    );
}

/// The type comes from the file's first bytes: a PNG named `.txt` is an image, a text file
/// named `.png` is text.
#[tokio::test]
async fn an_image_is_known_by_its_magic_bytes_not_its_extension() {
    let (_d, root) = tempdir();
    fs::write(root.join("shot.txt"), PNG_1X1).unwrap();
    fs::write(root.join("notes.png"), "not an image\n").unwrap();
    let client = connect(&root).await;
    let result = call(&client, "read_file", json!({"path": "shot.txt"})).await;
    assert_eq!(ok(&result)["mime_type"], "image/png");
    assert_eq!(images(&result).len(), 1);
    assert_valid(&client, &result).await;
    let result = call(&client, "read_file", json!({"path": "notes.png"})).await;
    assert_valid(&client, &result).await;
    let structured = ok(&result);
    assert_eq!(
        pick(&structured, &["kind", "content"]),
        json!({"kind": "text", "content": "not an image\n"})
    );
    assert!(images(&result).is_empty());
}

/// list_directory names an image file's type when its name and its first bytes agree (it
/// opens only files named like images), never a secret's.
#[tokio::test]
async fn list_directory_names_image_files() {
    let (_d, root) = tempdir();
    fs::write(root.join("plot.png"), PNG_1X1).unwrap();
    fs::write(
        root.join("photo.JPG"),
        encode(&photo(4, 3), ImageFormat::Jpeg),
    )
    .unwrap();
    fs::write(root.join("fake.png"), "text\n").unwrap();
    fs::write(root.join("shot.txt"), PNG_1X1).unwrap();
    fs::write(root.join("id_rsa.png"), PNG_1X1).unwrap();
    let client = connect(&root).await;
    let listed = ok(&call(&client, "list_directory", json!({"path": "."})).await);
    let media: Vec<(String, Value)> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap().to_owned(), e["media"].clone()))
        .collect();
    assert_eq!(
        media,
        [
            ("fake.png".to_owned(), Value::Null),
            ("id_rsa.png".to_owned(), Value::Null),
            ("photo.JPG".to_owned(), json!("image/jpeg")),
            ("plot.png".to_owned(), json!("image/png")),
            ("shot.txt".to_owned(), Value::Null),
        ]
    );
}

/// Over the cap (32 MiB by default) an image file is refused with its size, the cap and the
/// setting that raises it; nothing is read.
#[tokio::test]
async fn an_image_over_the_size_cap_is_refused_with_its_size() {
    let (_d, root) = tempdir();
    let big = root.join("huge.png");
    fs::write(&big, PNG_1X1).unwrap();
    fs::File::options()
        .append(true)
        .open(&big)
        .unwrap()
        .set_len(40 * 1024 * 1024)
        .unwrap();
    let client = connect(&root).await;
    let message = err(&call(&client, "read_file", json!({"path": "huge.png"})).await);
    assert_eq!(
        message,
        format!(
            "invalid arguments: {} is an image (image/png) of 41943040 bytes, larger than the 32 MiB (33554432 bytes) the server reads as an image, so it is not returned; the operator can raise the cap with [limits] image_max_bytes, --image-max-bytes or TOOLPORT_IMAGE_MAX_BYTES",
            big.display()
        )
    );
}

#[tokio::test]
async fn the_image_cap_is_the_operators_setting() {
    let (_d, root) = tempdir();
    let bytes = encode(&noise(40, 40), ImageFormat::Png);
    let len = bytes.len();
    assert!((3073..8192).contains(&len), "{len}");
    fs::write(root.join("small.png"), &bytes).unwrap();
    let client = connect_with(&root, &["--image-max-bytes", "2048"], TestClient::default()).await;
    let message = err(&call(&client, "read_file", json!({"path": "small.png"})).await);
    assert!(
        message.contains(&format!(
            "of {len} bytes, larger than the 2 KiB (2048 bytes)"
        )),
        "{message}"
    );
    let mut cmd = command(&root, &[]);
    cmd.env("TOOLPORT_IMAGE_MAX_BYTES", "3072");
    let client = connect_command(cmd, TestClient::default()).await;
    let message = err(&call(&client, "read_file", json!({"path": "small.png"})).await);
    assert!(
        message.contains(&format!(
            "of {len} bytes, larger than the 3 KiB (3072 bytes)"
        )),
        "{message}"
    );
    let client = connect_configured(
        &root,
        "[limits]\nimage_max_bytes = 8192\n",
        TestClient::default(),
    )
    .await;
    let result = call(&client, "read_file", json!({"path": "small.png"})).await;
    assert_eq!(
        facts(&ok(&result)),
        json!({"kind": "image", "mime_type": "image/png", "width": 40, "height": 40, "size_bytes": len})
    );
}

#[tokio::test]
async fn svg_is_text() {
    let (_d, root) = tempdir();
    let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1\" height=\"1\"/>\n";
    fs::write(root.join("icon.svg"), svg).unwrap();
    let client = connect(&root).await;
    let result = call(&client, "read_file", json!({"path": "icon.svg"})).await;
    assert_eq!(
        pick(&ok(&result), &["kind", "content"]),
        json!({"kind": "text", "content": svg})
    );
    assert!(images(&result).is_empty());
}

/// Any other binary file keeps today's refusal, word for word.
#[tokio::test]
async fn other_binary_files_are_still_refused_with_the_same_message() {
    let (_d, root) = tempdir();
    fs::write(root.join("data.bin"), b"\x7fELF\x02\x01\x00\x00binary").unwrap();
    fs::write(root.join("fake.png"), b"\x89PNX\x00\x00\x00\x00").unwrap();
    let client = connect(&root).await;
    for name in ["data.bin", "fake.png"] {
        let message = err(&call(&client, "read_file", json!({"path": name})).await);
        assert_eq!(
            message,
            format!(
                "invalid arguments: {} looks like a binary file (it contains NUL bytes), so it is not returned as text; read_file only returns text. If it is UTF-16 text without a byte-order mark, pass encoding \"utf-16le\" or \"utf-16be\"",
                root.join(name).display()
            )
        );
    }
}

/// Confinement and the secret rules come first: an image named like a secret, or outside
/// the roots, is refused as any file there is.
#[tokio::test]
async fn secret_and_outside_images_are_refused_as_before() {
    let (_d, root) = tempdir();
    let (_o, outside) = tempdir();
    fs::write(root.join(".env"), PNG_1X1).unwrap();
    fs::write(outside.join("dot.png"), PNG_1X1).unwrap();
    let client = connect(&root).await;
    let message = err(&call(&client, "read_file", json!({"path": ".env"})).await);
    assert!(message.contains("secret"), "{message}");
    let path = outside.join("dot.png").display().to_string();
    let message = err(&call(&client, "read_file", json!({"path": path})).await);
    assert!(message.contains("outside"), "{message}");
}

#[tokio::test]
async fn path_info_names_an_images_type() {
    let (_d, root) = tempdir();
    fs::write(root.join("shot.txt"), PNG_1X1).unwrap();
    fs::write(root.join("notes.png"), "text\n").unwrap();
    fs::write(root.join("anim.gif"), &each_format(2, 2)[2].2).unwrap();
    let client = connect(&root).await;
    let media = |path: &'static str| {
        let client = &client;
        async move {
            let info = ok(&call(client, "path_info", json!({"path": path})).await);
            (info["type"].clone(), info["media"].clone())
        }
    };
    assert_eq!(media("shot.txt").await, (json!("file"), json!("image/png")));
    assert_eq!(media("anim.gif").await, (json!("file"), json!("image/gif")));
    assert_eq!(media("notes.png").await, (json!("file"), Value::Null));
    let rendered = text(&call(&client, "path_info", json!({"path": "shot.txt"})).await);
    assert!(rendered.contains("image: image/png"), "{rendered}");
}

/// read_many_files returns text only; an image among its files gets an error that says
/// read_file shows it (not that read_file returns only text), and the other files are read.
#[tokio::test]
async fn read_many_files_points_an_image_to_read_file() {
    let (_d, root) = tempdir();
    fs::write(root.join("dot.png"), PNG_1X1).unwrap();
    fs::write(root.join("notes.txt"), "hello\n").unwrap();
    let client = connect(&root).await;
    let result = ok(&call(
        &client,
        "read_many_files",
        json!({"paths": ["dot.png", "notes.txt"]}),
    )
    .await);
    assert_eq!(
        result["files"][0]["error"],
        json!(format!(
            "invalid arguments: {} is an image (image/png); read_many_files returns only text: read it with read_file, which returns it as an image",
            root.join("dot.png").display()
        ))
    );
    assert_eq!(result["files"][1]["content"], json!("hello\n"));
}
