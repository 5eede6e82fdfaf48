//! The watch on an upstream's stdout (crates/toolport-tools/src/upstreams/oversize.rs, through
//! its doors `fuzz_oversize::watch` and `fuzz_oversize::answer_id`).
//!
//! Input: one byte choosing the line bound (1..=256 bytes, so inputs reach it), one choosing
//! how many bytes are read at once (1..=64, so lines cross reads), then the bytes a server
//! writes. Properties: no panic; the output is the input with, after each line
//! past the bound, at most one added line, a JSON-RPC error for the (`i64` or string) id that
//! line answers, which rmcp reads as an error for that request; and
//! on every line that is a JSON object, the id found is the one serde_json reads: the first
//! top-level `"id"`, as written (a number, string, `null` or `true`/`false`; not an object or
//! an array, at most 256 bytes), and none when the object has a top-level `"method"`. (Keys
//! are compared as written: a line with an escaped key is left out of that comparison.)
#![no_main]

use std::fmt;

use libfuzzer_sys::fuzz_target;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use toolport_tools::host::fuzz_oversize;

/// The longest id the watch keeps (`MAX_ID_BYTES`).
const MAX_ID_BYTES: usize = 256;

/// What serde_json reads of a top-level object: its first `"id"` as written, and whether it
/// has a `"method"`.
#[derive(Default)]
struct Reference {
    id: Option<Box<RawValue>>,
    method: bool,
}

impl<'de> serde::Deserialize<'de> for Reference {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Reference;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Reference, A::Error> {
                let mut found = Reference::default();
                // Keys as written: a key with escapes is not matched (the watch's contract),
                // and such a line is left out of the comparison.
                while let Some(key) = map.next_key::<&str>()? {
                    match key {
                        "id" if found.id.is_none() => found.id = Some(map.next_value()?),
                        "method" => {
                            found.method = true;
                            map.next_value::<IgnoredAny>()?;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(found)
            }
        }
        deserializer.deserialize_map(Members)
    }
}

fuzz_target!(|data: &[u8]| {
    let [bound, chunk, input @ ..] = data else {
        return;
    };
    let limit = usize::from(*bound) + 1;
    let out = fuzz_oversize::watch(input, limit, usize::from(*chunk % 64) + 1);

    // The input passes through whole, each line past the bound followed by at most one error.
    let mut rest = &out[..];
    for line in input.split_inclusive(|&b| b == b'\n') {
        assert!(rest.starts_with(line), "a line changed or lost");
        rest = &rest[line.len()..];
        let ended = line.ends_with(b"\n");
        if ended
            && line.len() > limit
            && let Some(id) = fuzz_oversize::answer_id(&line[..line.len() - 1])
        {
            let id: serde_json::Value = match serde_json::from_slice(&id) {
                Ok(id) => id,
                Err(_) => continue,
            };
            if id.is_i64() || id.is_string() {
                let end = rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .expect("the added line ends");
                let error: serde_json::Value =
                    serde_json::from_slice(&rest[..end]).expect("the added line is JSON");
                assert_eq!(error["id"], id);
                assert_eq!(error["error"]["code"], -32603);
                let read: rmcp::model::ServerJsonRpcMessage =
                    serde_json::from_slice(&rest[..end]).expect("rmcp reads the added line");
                assert!(
                    matches!(read, rmcp::model::ServerJsonRpcMessage::Error(_)),
                    "rmcp reads the added line as {read:?}"
                );
                rest = &rest[end + 1..];
            }
        }
    }
    assert!(rest.is_empty(), "bytes added where no line was too long");

    // The id found in each line is the one serde_json reads.
    for line in input.split(|&b| b == b'\n') {
        let Ok(reference) = serde_json::from_slice::<Reference>(line) else {
            continue;
        };
        let expected = if reference.method {
            None
        } else {
            reference
                .id
                .map(|raw| raw.get().as_bytes().to_vec())
                .filter(|raw| {
                    !raw.starts_with(b"{") && !raw.starts_with(b"[") && raw.len() <= MAX_ID_BYTES
                })
        };
        assert_eq!(
            fuzz_oversize::answer_id(line),
            expected,
            "{:?}",
            String::from_utf8_lossy(line)
        );
    }
});
