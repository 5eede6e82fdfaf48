//! The size of a value's compact JSON, counted without writing it out: for the audit log's
//! `bytes_out` (the size of a result as sent) and the payload rule for upstream results (is
//! the text long enough to carry the structured value). Counting costs one serialisation
//! pass and no memory, where `to_string().len()` would copy a result of megabytes.

use serde::Serialize;

/// The length in bytes of `value` as compact JSON; `None` when it cannot be serialised (a
/// map with non-string keys).
pub fn json_size(value: &impl Serialize) -> Option<usize> {
    let mut counter = ByteCounter(0);
    serde_json::to_writer(&mut counter, value).ok()?;
    Some(counter.0)
}

/// Counts what would be written, keeping nothing.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_size_is_the_compact_json_length() {
        for value in [
            json!(null),
            json!({"a": [1, "é\n"], "b": {}}),
            json!("x".repeat(100)),
        ] {
            assert_eq!(json_size(&value), Some(value.to_string().len()));
        }
    }
}
