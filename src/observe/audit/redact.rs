//! Redaction: a [`Record`] rendered as one JSON line with its secrets removed (values under
//! secret-looking names, `env` values, configured secrets, the userinfo of URLs, and every
//! removed value wherever else it appears).

use serde_json::{Map, Value, json};
use toolport_tools::host::secret::{
    Secret, hide_userinfo, replace_all, secret_name, url_credentials,
};

use super::record::Record;

/// What replaces a redacted value.
pub(crate) const REDACTED: &str = "[redacted]";

/// Arguments whose every value is redacted (keys kept): environment variables carry secrets.
const ENV_ARGUMENTS: &[&str] = &["env"];

/// Shortest secret value scrubbed wherever it appears: shorter ones (`1`, `no`) would garble
/// every record they occur in, and hide nothing.
const MIN_SCRUBBED_CHARS: usize = 4;

/// Most bytes of an error message a record keeps: toolport's own messages are far shorter,
/// but an upstream server's error result (its every text block) has no bound of its own, and
/// one record must not grow the log by megabytes.
const MESSAGE_BYTES: usize = 8 * 1024;

/// `message` cut to [`MESSAGE_BYTES`] (at a character boundary), saying how much was left out.
fn bounded(mut message: String) -> String {
    if message.len() > MESSAGE_BYTES {
        let cut = (0..=MESSAGE_BYTES)
            .rev()
            .find(|&i| message.is_char_boundary(i))
            .unwrap_or(0);
        let left = message.len() - cut;
        message.truncate(cut);
        message.push_str(&format!(" … ({left} more bytes not recorded)"));
    }
    message
}

/// The record as one JSON line, redacted.
pub(super) fn render(r: &Record<'_>, secrets: &[Secret]) -> String {
    // Values removed from the arguments (by name, or as `env` values) are secrets for this
    // record too: a plugin passes them in its argv, a schema error repeats them.
    let mut removed = Vec::new();
    let args = redact_arguments(r.args, &mut removed);
    // The userinfo of a URL in an argument (`https://user:token@host`) too: a plugin may pass
    // its parts on in its argv, an error may repeat the password alone.
    strings(&args, &mut |text| {
        for credential in url_credentials(text) {
            removed.push(credential.to_owned());
        }
    });
    let mut patterns: Vec<&str> = secrets
        .iter()
        .map(Secret::expose)
        .chain(removed.iter().map(String::as_str))
        .filter(|p| p.chars().count() >= MIN_SCRUBBED_CHARS)
        .collect();
    // Longest first, so a secret containing another is replaced whole.
    patterns.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let scrub = |text: &str| scrub(text, &patterns);
    let args = scrub_strings(args, &scrub);
    let mut object = json!({
        "ts": humantime::format_rfc3339_millis(r.at).to_string(),
        "session": r.session,
        "transport": r.transport,
        "client": r.client.map(scrub),
        "tool": scrub(r.tool),
        "args": args,
        "outcome": r.outcome,
        "duration_ms": u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX),
        "bytes_out": r.bytes_out,
    });
    if let Some(map) = object.as_object_mut() {
        if let Some(upstream) = r.upstream {
            map.insert("upstream".into(), json!(upstream));
        }
        if let Some(via) = r.via {
            map.insert("via".into(), json!(via));
        }
        if let Some((subject, client_id)) = r.principal {
            map.insert(
                "principal".into(),
                json!({"sub": scrub(subject), "client_id": client_id.map(scrub)}),
            );
        }
        if let Some((kind, message)) = r.error {
            map.insert(
                "error".into(),
                json!({"kind": kind, "message": bounded(scrub(message))}),
            );
        }
        if let Some(command) = r.command {
            map.insert(
                "argv".into(),
                Value::Array(
                    command
                        .argv
                        .iter()
                        .map(|a| Value::String(scrub(a)))
                        .collect(),
                ),
            );
            map.insert("exit_code".into(), json!(command.exit_code));
            map.insert("signal".into(), json!(command.signal));
        }
    }
    let mut line = object.to_string();
    line.push('\n');
    line
}

/// The arguments with secrets replaced by [`REDACTED`]; every string removed is pushed to
/// `removed`.
fn redact_arguments(args: &Map<String, Value>, removed: &mut Vec<String>) -> Value {
    Value::Object(
        args.iter()
            .map(|(name, value)| {
                let value = if ENV_ARGUMENTS.contains(&name.as_str()) {
                    redact_all(value, removed)
                } else {
                    redact(name, value, removed)
                };
                (name.clone(), value)
            })
            .collect(),
    )
}

fn redact(name: &str, value: &Value, removed: &mut Vec<String>) -> Value {
    if secret_name(name) {
        return redact_all(value, removed);
    }
    match value {
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact(name, v, removed)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact(k, v, removed)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Every leaf value replaced (keys kept: `env = {"A": "[redacted]"}`), its text remembered.
fn redact_all(value: &Value, removed: &mut Vec<String>) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_all(v, removed)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_all(v, removed)).collect()),
        Value::String(text) => {
            removed.push(text.clone());
            Value::String(REDACTED.into())
        }
        // A number or boolean under a secret-looking name (`max_tokens`) is hidden, but not
        // scrubbed from the rest of the record: `4096` is no secret worth garbling it for.
        _ => Value::String(REDACTED.into()),
    }
}

/// Call `f` with every string inside `value`.
fn strings(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(text) => f(text),
        Value::Array(items) => items.iter().for_each(|v| strings(v, f)),
        Value::Object(map) => map.values().for_each(|v| strings(v, f)),
        _ => {}
    }
}

/// Every string inside `value` passed through `scrub`.
fn scrub_strings(value: Value, scrub: &impl Fn(&str) -> String) -> Value {
    match value {
        Value::String(text) => Value::String(scrub(&text)),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| scrub_strings(v, scrub)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, scrub_strings(v, scrub)))
                .collect(),
        ),
        other => other,
    }
}

/// `text` with the userinfo of every URL in it hidden ([`hide_userinfo`]) and every pattern
/// replaced by [`REDACTED`].
fn scrub(text: &str, patterns: &[&str]) -> String {
    replace_all(&hide_userinfo(text), patterns.iter().copied(), REDACTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::{Duration, SystemTime};

    use super::super::record::Outcome;
    use toolport_tools::host::CommandFacts;

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn secrets_are_redacted_by_name_by_env_and_by_value() {
        let a = args(json!({
            "command": "curl",
            "args": ["-H", "Authorization: Bearer tok-123456789", "--pass", "pw-planted"],
            "env": {"GITHUB_TOKEN": "ghp_x", "LANG": "C"},
            "api_key": "k",
            "options": {"password": "pw-planted", "user": "me"},
            "keys": null,
        }));
        let line = render(
            &Record {
                session: "s",
                transport: "stdio",
                client: None,
                principal: None,
                upstream: None,
                via: None,
                tool: "t",
                args: &a,
                outcome: Outcome::Error,
                error: Some((
                    "invalid_arguments",
                    "`password`: \"pw-planted\" is too short",
                )),
                duration: Duration::ZERO,
                bytes_out: 0,
                command: Some(&CommandFacts {
                    argv: vec!["curl".into(), "--pass".into(), "pw-planted".into()],
                    ..CommandFacts::default()
                }),
                at: SystemTime::now(),
            },
            &[Secret::new("tok-123456789")],
        );
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(
            v["args"],
            json!({
                "command": "curl",
                "args": ["-H", "Authorization: Bearer [redacted]", "--pass", "[redacted]"],
                "env": {"GITHUB_TOKEN": "[redacted]", "LANG": "[redacted]"},
                "api_key": "[redacted]",
                "options": {"password": "[redacted]", "user": "me"},
                "keys": null,
            })
        );
        assert_eq!(
            v["argv"],
            json!(["curl", "--pass", "[redacted]"]),
            "removed values are scrubbed from argv"
        );
        assert!(!line.contains("pw-planted"), "{line}");
        assert!(!line.contains("tok-123456789"), "{line}");
    }

    /// A URL's userinfo is a secret wherever the URL is: hidden in the URL (`***@`), and its
    /// parts scrubbed where a command passes them on alone.
    #[test]
    fn a_long_message_is_cut_at_a_character_saying_how_much_is_left_out() {
        let long = "é".repeat(MESSAGE_BYTES); // two bytes each
        let kept = bounded(long.clone());
        let (head, note) = kept.split_once(" … (").unwrap();
        assert_eq!(head.len(), MESSAGE_BYTES);
        assert_eq!(
            note,
            format!("{} more bytes not recorded)", long.len() - MESSAGE_BYTES)
        );
        assert_eq!(bounded("short".into()), "short");
    }

    #[test]
    fn the_userinfo_of_urls_is_redacted() {
        let a = args(json!({
            "url": "http://alice:s3cretpw@10.0.0.1/admin",
            "args": ["clone", "https://ghp_tokenplanted@github.com/o/r.git"],
        }));
        let line = render(
            &Record {
                session: "s",
                transport: "stdio",
                client: None,
                principal: None,
                upstream: None,
                via: None,
                tool: "t",
                args: &a,
                outcome: Outcome::Denied,
                error: Some(("permission_denied", "wrong password s3cretpw")),
                duration: Duration::ZERO,
                bytes_out: 0,
                command: Some(&CommandFacts {
                    argv: vec!["curl".into(), "-u".into(), "alice:s3cretpw".into()],
                    ..CommandFacts::default()
                }),
                at: SystemTime::now(),
            },
            &[],
        );
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(
            v["args"],
            json!({
                "url": "http://***@10.0.0.1/admin",
                "args": ["clone", "https://***@github.com/o/r.git"],
            })
        );
        assert_eq!(v["argv"], json!(["curl", "-u", "[redacted]"]));
        assert_eq!(v["error"]["message"], json!("wrong password [redacted]"));
        for planted in ["s3cretpw", "alice", "ghp_tokenplanted"] {
            assert!(!line.contains(planted), "{planted}: {line}");
        }
    }

    #[test]
    fn a_record_is_one_json_line_with_the_fields() {
        let a = args(json!({"path": "x"}));
        let line = render(
            &Record {
                session: "s1",
                transport: "stdio",
                client: Some("client 1.0"),
                principal: Some(("alice", Some("claude"))),
                upstream: None,
                via: None,
                tool: "execute_command",
                args: &a,
                outcome: Outcome::Error,
                error: Some(("execution_failed", "boom")),
                duration: Duration::from_millis(12),
                bytes_out: 99,
                command: Some(&CommandFacts {
                    argv: vec!["false".into()],
                    exit_code: Some(1),
                    signal: None,
                    timed_out: false,
                }),
                at: SystemTime::now(),
            },
            &[],
        );
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(v["outcome"], json!("error"));
        assert_eq!(
            v["error"],
            json!({"kind": "execution_failed", "message": "boom"})
        );
        assert_eq!(v["argv"], json!(["false"]));
        assert_eq!(
            v["principal"],
            json!({"sub": "alice", "client_id": "claude"})
        );
        assert_eq!(v["exit_code"], json!(1));
        assert_eq!(v["duration_ms"], json!(12));
        assert!(v["ts"].as_str().is_some_and(|t| t.ends_with('Z')));
    }
}
