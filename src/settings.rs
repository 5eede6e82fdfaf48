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
//! Durations have one convention: a human string such as `"30s"`, `"500ms"` or `"5m"`
//! (humantime), printed the same way by `toolport config`. Keys that took a bare number before
//! there was one convention (`*_ms`, `*_secs`, `exec.timeout_max`) still read a number in the
//! unit their name says, so existing files keep working.

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
    pub(crate) key: Cow<'static, str>,
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
pub(crate) fn check_range<T: PartialOrd + Display + Copy>(
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
pub(crate) enum LegacyUnit {
    /// `*_ms` keys.
    Millis,
    /// `*_secs` keys and `exec.timeout_max`.
    Secs,
}

/// A duration as written in the file: a human string (the convention) or, in the keys listed
/// in the module doc, a bare number.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "a duration like \"30s\", \"500ms\" or \"5m\" (or a whole number in the key's unit)"
)]
pub(crate) enum DurationValue {
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
pub(crate) fn duration_setting(
    key: impl Into<Cow<'static, str>>,
    value: Option<&DurationValue>,
    legacy: Option<LegacyUnit>,
    default: Duration,
    range: RangeInclusive<Duration>,
) -> Result<Duration, SettingError> {
    value.map_or(Ok(default), |value| value.resolve(key, legacy, range))
}

/// A duration as people write it: `30s`, `1m 30s`, `250ms`.
pub(crate) fn human(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

/// `#[serde(serialize_with = "settings::serialize_duration")]`: a duration in `toolport
/// config` output, in the one convention.
pub(crate) fn serialize_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
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
