//! Images through read_file: PNG, JPEG, GIF and WebP files (by their magic bytes, never the
//! extension) arrive as MCP `image` content with a text line and their facts, under every
//! payload form; the size cap; SVG stays text; other binary files keep today's refusal;
//! path_info names an image's type.

use std::fs;

use base64::Engine as _;
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

/// The start of a PNG of `width` x `height`: the signature and an IHDR chunk (what the
/// headers say; the pixels are not there).
fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    bytes
}

/// A GIF89a header of `width` x `height` and a trailer.
fn gif(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = b"GIF89a".to_vec();
    bytes.extend_from_slice(&width.to_le_bytes());
    bytes.extend_from_slice(&height.to_le_bytes());
    bytes.extend_from_slice(&[0, 0, 0, 0x3b]);
    bytes
}

/// A JPEG (JFIF) with a baseline start-of-frame of `width` x `height`.
fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
    bytes.extend_from_slice(b"JFIF\0\x01\x01\x00\x00\x01\x00\x01\x00\x00");
    bytes.extend_from_slice(&[0xff, 0xc0, 0x00, 0x11, 0x08]);
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1, 0xff, 0xd9]);
    bytes
}

/// An extended WebP (VP8X) of `width` x `height`.
fn webp(width: u32, height: u32) -> Vec<u8> {
    let mut chunk = b"VP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
    chunk.extend_from_slice(&(width - 1).to_le_bytes()[..3]);
    chunk.extend_from_slice(&(height - 1).to_le_bytes()[..3]);
    let mut bytes = b"RIFF".to_vec();
    bytes.extend_from_slice(&(4 + u32::try_from(chunk.len()).unwrap()).to_le_bytes());
    bytes.extend_from_slice(b"WEBP");
    bytes.extend_from_slice(&chunk);
    bytes
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
async fn gif_jpeg_and_webp_are_images_with_their_dimensions() {
    let (_d, root) = tempdir();
    fs::write(root.join("anim.gif"), gif(320, 200)).unwrap();
    fs::write(root.join("photo.jpg"), jpeg(640, 480)).unwrap();
    fs::write(root.join("pic.webp"), webp(800, 600)).unwrap();
    let client = connect(&root).await;
    for (path, mime, width, height, bytes) in [
        ("anim.gif", "image/gif", 320, 200, gif(320, 200)),
        ("photo.jpg", "image/jpeg", 640, 480, jpeg(640, 480)),
        ("pic.webp", "image/webp", 800, 600, webp(800, 600)),
    ] {
        let result = call(&client, "read_file", json!({"path": path})).await;
        assert_eq!(
            facts(&ok(&result)),
            json!({"kind": "image", "mime_type": mime, "width": width, "height": height, "size_bytes": bytes.len()}),
            "{path}"
        );
        assert_eq!(images(&result), vec![(mime.into(), bytes)], "{path}");
    }
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
    fs::write(root.join("photo.JPG"), jpeg(4, 3)).unwrap();
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

/// Over the cap (5 MiB by default) an image is refused with its size, the cap and the
/// setting that raises it; nothing is read.
#[tokio::test]
async fn an_image_over_the_size_cap_is_refused_with_its_size() {
    let (_d, root) = tempdir();
    let big = root.join("huge.png");
    fs::write(&big, png_header(8000, 6000)).unwrap();
    fs::File::options()
        .append(true)
        .open(&big)
        .unwrap()
        .set_len(20 * 1024 * 1024)
        .unwrap();
    let client = connect(&root).await;
    let message = err(&call(&client, "read_file", json!({"path": "huge.png"})).await);
    assert_eq!(
        message,
        format!(
            "invalid arguments: {} is an image (image/png) of 20971520 bytes, larger than the 5 MiB (5242880 bytes) the server returns as an image, so it is not returned; the operator can raise the cap with [limits] image_max_bytes, --image-max-bytes or TOOLPORT_IMAGE_MAX_BYTES",
            big.display()
        )
    );
}

#[tokio::test]
async fn the_image_cap_is_the_operators_setting() {
    let (_d, root) = tempdir();
    let mut bytes = png_header(100, 100);
    bytes.resize(4096, 0);
    fs::write(root.join("small.png"), &bytes).unwrap();
    let client = connect_with(&root, &["--image-max-bytes", "2048"], TestClient::default()).await;
    let message = err(&call(&client, "read_file", json!({"path": "small.png"})).await);
    assert!(
        message.contains("of 4096 bytes, larger than the 2 KiB (2048 bytes)"),
        "{message}"
    );
    let mut cmd = command(&root, &[]);
    cmd.env("TOOLPORT_IMAGE_MAX_BYTES", "3072");
    let client = connect_command(cmd, TestClient::default()).await;
    let message = err(&call(&client, "read_file", json!({"path": "small.png"})).await);
    assert!(
        message.contains("of 4096 bytes, larger than the 3 KiB (3072 bytes)"),
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
        json!({"kind": "image", "mime_type": "image/png", "width": 100, "height": 100, "size_bytes": 4096})
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
    // A PNG's signature with no header after it: no dimensions, so not served as an image
    // (a model API would refuse it).
    fs::write(
        root.join("broken.png"),
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR",
    )
    .unwrap();
    let client = connect(&root).await;
    for name in ["data.bin", "fake.png", "broken.png"] {
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
    fs::write(root.join("anim.gif"), gif(2, 2)).unwrap();
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
