//! The one shape of a feature's settings, and the helpers every feature shares.
//!
//! Each feature (the file tools, `execute_command`, `web_search`, the HTTP transport) owns a
//! settings module of the same shape:
//! - `File<X>`: its section of the TOML file (serde; every key optional; unknown keys refused,
//!   so a typo is an error naming the key, never a silent no-op);
//! - `<X>Settings`: the effective values; `Default` is the built-in defaults (written once,
//!   there), `Serialize` renders them for `toolport config` with secrets masked;
//! - `<X>Settings::load(file, …overrides…)`: layer the file, then the environment and flags,
//!   and validate once with [`check_range`] / [`DurationValue::resolve`], returning a
//!   [`SettingError`] that names the key and what is allowed.
//!
//! `config/` only composes these. This module sits at the bottom of the crate: it imports
//! nothing from it.
//!
//! Durations have one convention: a human string such as `"30s"`, `"1.5s"`, `"500ms"` or
//! `"1h30m"` (parsed by humantime), printed by [`human`] the way a person writes it, so
//! `toolport config` prints what a file may say. A duration key's name carries no unit
//! (`web.call_timeout`). The keys that took a bare number before there was one convention
//! still read one in their old unit: the `exec` durations (seconds) and the keys that were
//! named after their unit (`web.call_timeout_ms`, `web.cache_ttl_secs` …), which are read
//! under their old names too, with a deprecation warning ([`renamed_duration`]).
//!
//! `toolport config` prints each feature's `Serialize` form: only keys the file takes, so the
//! output loads again with `--config`. What is set but cannot be a key there (a secret, the
//! `--http` address, a default folder) is a [`Note`], printed as a comment at the top.

use std::borrow::Cow;
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::time::Duration;

use serde::{Deserialize, Serializer};

/// A setting with a value outside what is allowed. The message says what is wrong and what is
/// allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid setting {key}: {message}")]
pub struct SettingError {
    /// The setting as written in the file (`exec.timeout_max`), or the flag/variable.
    pub key: Cow<'static, str>,
    /// What is wrong and what is allowed.
    pub(crate) message: String,
}

impl SettingError {
    /// An error about `key`.
    pub fn new(key: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// `value` if it lies in `range`, else an error naming `key` and the allowed range.
pub fn check_range<T: PartialOrd + Display + Copy>(
    key: impl Into<Cow<'static, str>>,
    value: T,
    range: RangeInclusive<T>,
) -> Result<T, SettingError> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(out_of_range(key, value, range.start(), range.end()))
    }
}

/// "`value` is out of range; allowed is `start..=end`", about `key`.
fn out_of_range(
    key: impl Into<Cow<'static, str>>,
    value: impl Display,
    start: impl Display,
    end: impl Display,
) -> SettingError {
    SettingError::new(
        key,
        format!("{value} is out of range; allowed is {start}..={end}"),
    )
}

/// The unit of a bare number in a duration key that predates the one convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyUnit {
    /// The old `*_ms` keys.
    Millis,
    /// The old `*_secs` keys and the `exec` durations.
    Secs,
}

impl LegacyUnit {
    /// The unit in words, for the deprecation warning.
    fn name(self) -> &'static str {
        match self {
            Self::Millis => "milliseconds",
            Self::Secs => "seconds",
        }
    }
}

/// A key read under its deprecated name: loading collects these (`WebSettings::deprecated`)
/// and the command logs each as a warning once logging is set up (the log level is itself a
/// setting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deprecated {
    /// The old name, as written in the file (`web.call_timeout_ms`).
    pub(crate) old: String,
    /// The name to use instead (`web.call_timeout`).
    pub(crate) new: String,
    /// The unit a bare number under the old name is read in.
    pub(crate) unit: LegacyUnit,
}

impl Deprecated {
    /// Log the warning (stderr), naming both keys.
    pub fn warn(&self) {
        tracing::warn!(
            "config key {} is deprecated: rename it to {} (a bare number under the old name is {}; under the new one write a duration like \"30s\" or \"1.5s\")",
            self.old,
            self.new,
            self.unit.name()
        );
    }
}

/// A duration as written in the file: a human string (the convention) or, in the keys listed
/// in the module doc, a bare number.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "a duration like \"30s\", \"500ms\" or \"5m\" (or a whole number in the key's unit)"
)]
pub enum DurationValue {
    /// `"30s"`, `"500ms"`, `"5m"`.
    Text(String),
    /// A number in the key's legacy unit.
    Number(u64),
}

impl DurationValue {
    /// The duration, checked against `range`. `legacy` is the unit of a bare number in this
    /// key (`None`: the key only ever took strings, so a number is an error).
    pub(crate) fn resolve(
        &self,
        key: impl Into<Cow<'static, str>>,
        legacy: Option<LegacyUnit>,
        range: RangeInclusive<Duration>,
    ) -> Result<Duration, SettingError> {
        let key = key.into();
        let value = match (self, legacy) {
            (Self::Text(text), _) => humantime::parse_duration(text.trim()).map_err(|e| {
                SettingError::new(
                    key.clone(),
                    format!("{text:?} is not a duration like \"30s\", \"500ms\" or \"5m\" ({e})"),
                )
            })?,
            (Self::Number(n), Some(LegacyUnit::Millis)) => Duration::from_millis(*n),
            (Self::Number(n), Some(LegacyUnit::Secs)) => Duration::from_secs(*n),
            (Self::Number(n), None) => {
                return Err(SettingError::new(
                    key,
                    format!("{n} has no unit; write a duration like \"30s\", \"500ms\" or \"5m\""),
                ));
            }
        };
        if range.contains(&value) {
            Ok(value)
        } else {
            Err(out_of_range(
                key,
                human(value),
                human(*range.start()),
                human(*range.end()),
            ))
        }
    }
}

/// A setting `toolport config` prints as a comment, not as a key: it is in effect but cannot
/// be written as a key the file takes (a secret, the `--http` address, the default plugin
/// folder), so the output stays a file that loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The setting, as the file would name it (`web.brave.api_key`).
    key: String,
    /// What is set and where from, in words.
    text: String,
}

impl Note {
    /// A note about `key`.
    pub fn new(key: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            text: text.into(),
        }
    }
}

/// A key that is not set and that an operator is likely to set (a search provider's key or
/// instance): `toolport config` prints it as a comment, with an example value and the
/// environment variable it can come from instead, so the effective configuration shows how
/// to set it and still loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unset {
    /// The setting, as the file would name it (`web.searxng.base_url`).
    key: String,
    /// An example value, as TOML (`"…"` for a string to fill in).
    example: String,
    /// The environment variable that sets it too (`TOOLPORT_SEARXNG_URL`).
    env: &'static str,
}

impl Unset {
    /// Unset `key`, which `example` shows and `env` can set too.
    pub fn new(key: impl Into<String>, example: impl Into<String>, env: &'static str) -> Self {
        Self {
            key: key.into(),
            example: example.into(),
            env,
        }
    }
}

/// `toml` (a rendered config) under a comment block: the `header` lines, the notes, then the
/// unset keys. Each comment is one line whatever the text holds (a path may hold a newline),
/// so no text can turn into a key.
pub fn commented(header: &[String], notes: &[Note], unset: &[Unset], toml: &str) -> String {
    let line = |text: &str| format!("# {}\n", text.replace(['\n', '\r'], " "));
    let mut out: String = header.iter().map(|h| line(h)).collect();
    if !notes.is_empty() {
        out.push_str(&line("In effect, but not printed as keys:"));
        for note in notes {
            out.push_str(&line(&format!("  {}: {}", note.key, note.text)));
        }
    }
    if !unset.is_empty() {
        out.push_str(&line(
            "Not set (each as a key under its section, or from its environment variable):",
        ));
        for unset in unset {
            out.push_str(&line(&format!(
                "  {} = {}  (or {})",
                unset.key, unset.example, unset.env
            )));
        }
    }
    out.push('\n');
    out.push_str(toml);
    out
}

/// A size as people write it, for tool descriptions: `1 MiB`, `100 KiB`, `1500 bytes`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// A duration setting: the file's `value` resolved and checked against `range` (see
/// [`DurationValue::resolve`]), or `default` when the file does not set it.
pub fn duration_setting(
    key: impl Into<Cow<'static, str>>,
    value: Option<&DurationValue>,
    legacy: Option<LegacyUnit>,
    default: Duration,
    range: RangeInclusive<Duration>,
) -> Result<Duration, SettingError> {
    value.map_or(Ok(default), |value| value.resolve(key, legacy, range))
}

/// A renamed duration setting: the file's value under `new` (the key's name today: a number
/// there is an error, see [`DurationValue::resolve`]) or under `old` (its name before, whose
/// bare numbers are in `unit`; noted in `deprecated`), resolved as [`duration_setting`] does.
/// Both names at once is an error naming both. `section` is the keys' table (`web.fetch`).
pub(crate) fn renamed_duration(
    section: &str,
    (new, new_value): (&str, Option<&DurationValue>),
    (old, old_value, unit): (&str, Option<&DurationValue>, LegacyUnit),
    default: Duration,
    range: RangeInclusive<Duration>,
    deprecated: &mut Vec<Deprecated>,
) -> Result<Duration, SettingError> {
    let new = format!("{section}.{new}");
    let old = format!("{section}.{old}");
    match (new_value, old_value) {
        (Some(_), Some(_)) => Err(SettingError::new(
            new.clone(),
            format!("{old} is the same setting under its deprecated name; keep only {new}"),
        )),
        (None, Some(value)) => {
            let resolved = value.resolve(old.clone(), Some(unit), range)?;
            deprecated.push(Deprecated { old, new, unit });
            Ok(resolved)
        }
        (value, None) => duration_setting(new, value, None, default, range),
    }
}

/// A duration as a person writes it, and as every `toolport config` duration is printed:
/// `0s`, `500ms`, `1.5s`, `30s`, `10m`, `1h30m`, `1m30.5s`, `24h`. Hours, minutes and seconds
/// are whole units run together, seconds take a decimal fraction, and under a second it is
/// milliseconds (with a fraction for what is finer). humantime parses every form back to the
/// same duration.
pub(crate) fn human(duration: Duration) -> String {
    const NANOS_PER_MILLI: u32 = 1_000_000;
    let secs = duration.as_secs();
    let nanos = duration.subsec_nanos();
    if secs == 0 {
        return if nanos == 0 {
            "0s".to_owned()
        } else {
            format!(
                "{}ms",
                decimal(nanos / NANOS_PER_MILLI, nanos % NANOS_PER_MILLI, 6)
            )
        };
    }
    let (hours, minutes, seconds) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut text = String::new();
    if hours > 0 {
        text.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        text.push_str(&format!("{minutes}m"));
    }
    if seconds > 0 || nanos > 0 {
        text.push_str(&decimal(seconds, nanos, 9));
        text.push('s');
    }
    text
}

/// `whole.fraction` with `fraction` written in `digits` places, trailing zeros dropped.
fn decimal(whole: impl Display, fraction: u32, digits: usize) -> String {
    if fraction == 0 {
        return whole.to_string();
    }
    let places = format!("{fraction:0digits$}");
    format!("{whole}.{}", places.trim_end_matches('0'))
}

/// `#[serde(serialize_with = "settings::serialize_duration")]`: a duration in `toolport
/// config` output, in the one convention.
pub fn serialize_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&human(*d))
}

/// A non-empty environment value, trimmed (an empty variable counts as unset, as shells
/// treat `VAR=`).
pub(crate) fn env_value(env: &impl Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);
    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn check_range_names_the_key_and_the_range() {
        assert_eq!(check_range("a.b", 5u64, 1..=10), Ok(5));
        assert_eq!(
            check_range("a.b", 0u64, 1..=10),
            Err(SettingError::new(
                "a.b",
                "0 is out of range; allowed is 1..=10"
            ))
        );
        assert_eq!(
            check_range("a.b", 0u64, 1..=10).map_err(|e| e.to_string()),
            Err("invalid setting a.b: 0 is out of range; allowed is 1..=10".into())
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(
            [1024 * 1024, 100 * 1024, 1500, 3 * 1024 * 1024 + 1].map(human_bytes),
            ["1 MiB", "100 KiB", "1500 bytes", "3145729 bytes"]
        );
    }

    #[test]
    fn durations_are_human_strings_and_legacy_numbers_keep_their_unit() {
        let text = DurationValue::Text("90s".into());
        assert_eq!(
            text.resolve("k", None, SECOND..=HOUR),
            Ok(Duration::from_secs(90))
        );
        let ms = DurationValue::Number(1500);
        assert_eq!(
            ms.resolve("k", Some(LegacyUnit::Millis), Duration::ZERO..=HOUR),
            Ok(Duration::from_millis(1500))
        );
        let secs = DurationValue::Number(2);
        assert_eq!(
            secs.resolve("k", Some(LegacyUnit::Secs), SECOND..=HOUR),
            Ok(Duration::from_secs(2))
        );
    }

    #[test]
    fn bad_durations_say_what_is_allowed() {
        let err = |v: DurationValue, legacy| {
            v.resolve("http.x", legacy, SECOND..=HOUR)
                .map_err(|e| e.to_string())
                .err()
                .unwrap_or_default()
        };
        assert_eq!(
            err(DurationValue::Text("2h".into()), None),
            "invalid setting http.x: 2h is out of range; allowed is 1s..=1h"
        );
        assert!(
            err(DurationValue::Text("soon".into()), None)
                .starts_with("invalid setting http.x: \"soon\" is not a duration like \"30s\""),
        );
        assert_eq!(
            err(DurationValue::Number(5), None),
            "invalid setting http.x: 5 has no unit; write a duration like \"30s\", \"500ms\" or \"5m\""
        );
    }

    #[test]
    fn durations_print_as_people_write_them_and_parse_back() {
        for (duration, shown) in [
            (Duration::ZERO, "0s"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_micros(1500), "1.5ms"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_millis(1250), "1.25s"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_millis(90_500), "1m30.5s"),
            (Duration::from_secs(600), "10m"),
            (Duration::from_secs(5400), "1h30m"),
            (Duration::from_secs(3601), "1h1s"),
            (Duration::from_secs(86_400), "24h"),
            (Duration::from_nanos(1), "0.000001ms"),
            (Duration::new(2, 1), "2.000000001s"),
        ] {
            assert_eq!(human(duration), shown);
            assert_eq!(humantime::parse_duration(shown), Ok(duration), "{shown}");
        }
    }

    #[test]
    fn a_renamed_key_reads_either_name_but_not_both() {
        let text = |t: &str| DurationValue::Text(t.into());
        let resolve = |new: Option<DurationValue>, old: Option<DurationValue>| {
            let mut deprecated = Vec::new();
            renamed_duration(
                "web",
                ("call_timeout", new.as_ref()),
                ("call_timeout_ms", old.as_ref(), LegacyUnit::Millis),
                SECOND,
                Duration::ZERO..=HOUR,
                &mut deprecated,
            )
            .map(|d| (d, deprecated))
            .map_err(|e| e.to_string())
        };
        assert_eq!(resolve(None, None), Ok((SECOND, vec![])));
        assert_eq!(
            resolve(Some(text("1.5s")), None),
            Ok((Duration::from_millis(1500), vec![]))
        );
        assert_eq!(
            resolve(None, Some(DurationValue::Number(250))),
            Ok((
                Duration::from_millis(250),
                vec![Deprecated {
                    old: "web.call_timeout_ms".into(),
                    new: "web.call_timeout".into(),
                    unit: LegacyUnit::Millis
                }]
            ))
        );
        assert_eq!(
            resolve(Some(DurationValue::Number(250)), None),
            Err("invalid setting web.call_timeout: 250 has no unit; write a duration like \"30s\", \"500ms\" or \"5m\"".into())
        );
        assert_eq!(
            resolve(None, Some(text("2h"))),
            Err(
                "invalid setting web.call_timeout_ms: 2h is out of range; allowed is 0s..=1h"
                    .into()
            ),
            "an error names the key as the file wrote it"
        );
        assert_eq!(
            resolve(Some(text("1s")), Some(text("1s"))),
            Err("invalid setting web.call_timeout: web.call_timeout_ms is the same setting under its deprecated name; keep only web.call_timeout".into())
        );
    }

    #[test]
    fn notes_are_one_comment_line_each_above_the_keys() {
        let out = commented(
            &["Header.".into()],
            &[Note::new("a.b", "set\n[exec]\nallow_shells = true")],
            &[Unset::new("a.c", "\"…\"", "TOOLPORT_C")],
            "x = 1\n",
        );
        assert_eq!(
            out,
            "# Header.\n# In effect, but not printed as keys:\n#   a.b: set [exec] allow_shells = true\n# Not set (each as a key under its section, or from its environment variable):\n#   a.c = \"…\"  (or TOOLPORT_C)\n\nx = 1\n"
        );
        assert_eq!(commented(&[], &[], &[], "x = 1\n"), "\nx = 1\n");
    }

    #[test]
    fn a_file_value_reads_as_either_form() {
        #[derive(Deserialize)]
        struct Section {
            a: DurationValue,
            b: DurationValue,
        }
        let s: Section = toml::from_str("a = \"5m\"\nb = 300\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (s.a, s.b),
            (DurationValue::Text("5m".into()), DurationValue::Number(300))
        );
    }
}
