//! The `[telemetry]` settings ([`TelemetrySettings`]): the file section (its keys are the
//! library's [`FileTelemetry`], which owns the file's format) layered under the standard
//! OpenTelemetry variables, as the module doc of [`super`] says, and the rules that keep an
//! endpoint's credentials and the exporter's header values out of `toolport config`.

use std::borrow::Cow;

use serde::{Serialize, Serializer};
use toolport_tools::host::config::FileTelemetry;
use toolport_tools::host::secret::display_url;
use toolport_tools::host::settings::{Note, SettingError};
use url::Url;

/// `service.name` when nothing else names the service.
const DEFAULT_SERVICE_NAME: &str = "toolport";

/// The path of the traces signal under an OTLP/HTTP base endpoint (OTLP specification).
const TRACES_PATH: &str = "v1/traces";

/// The one OTLP protocol built in.
const HTTP_PROTOBUF: &str = "http/protobuf";

/// Trace export settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TelemetrySettings {
    /// Where spans are sent (OTLP/HTTP, protobuf); `None`: nowhere (the default). One with
    /// userinfo is not printed as a key (a note shows it without).
    #[serde(skip_serializing_if = "not_printed", serialize_with = "serialize_url")]
    pub(crate) otlp_traces_endpoint: Option<Url>,
    /// The `service.name` resource of every span.
    pub(crate) service_name: String,
    /// The names of the headers the exporter adds from the environment (values not kept): a
    /// note in `toolport config`.
    #[serde(skip)]
    pub(crate) otlp_headers: Vec<String>,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otlp_traces_endpoint: None,
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            otlp_headers: Vec::new(),
        }
    }
}

/// The endpoint as `[telemetry] otlp_traces_endpoint` takes it (only one without userinfo is
/// printed: see [`not_printed`]).
fn serialize_url<S: Serializer>(url: &Option<Url>, serializer: S) -> Result<S::Ok, S::Error> {
    match url {
        Some(url) => serializer.serialize_str(url.as_str()),
        None => serializer.serialize_none(),
    }
}

/// Whether `toolport config` leaves the endpoint out of its keys: none is set, or it holds
/// userinfo (credentials, never printed; [`TelemetrySettings::notes`] shows it without).
fn not_printed(url: &Option<Url>) -> bool {
    url.as_ref()
        .is_none_or(|url| !url.username().is_empty() || url.password().is_some())
}

impl TelemetrySettings {
    /// What `toolport config` prints as comments: an endpoint with credentials (shown
    /// without them) and the headers added from the environment (names only).
    pub(crate) fn notes(&self) -> Vec<Note> {
        let mut notes = Vec::new();
        if let Some(url) = &self.otlp_traces_endpoint
            && not_printed(&self.otlp_traces_endpoint)
        {
            notes.push(Note::new(
                "telemetry.otlp_traces_endpoint",
                format!("{} (it holds credentials: never printed)", display_url(url)),
            ));
        }
        if !self.otlp_headers.is_empty() {
            notes.push(Note::new(
                "telemetry headers",
                format!(
                    "{}, from OTEL_EXPORTER_OTLP_(TRACES_)HEADERS (values never printed)",
                    self.otlp_headers.join(", ")
                ),
            ));
        }
        notes
    }

    /// Layer the file < the OpenTelemetry variables (read through `env`), as the module doc
    /// says. An empty variable counts as unset (the OpenTelemetry specification's rule).
    pub(crate) fn load(
        file: &FileTelemetry,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, SettingError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let endpoint = [
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
                false,
            ),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                var("OTEL_EXPORTER_OTLP_ENDPOINT"),
                true,
            ),
            (
                "telemetry.otlp_traces_endpoint",
                file.otlp_traces_endpoint.clone(),
                false,
            ),
            ("telemetry.otlp_endpoint", file.otlp_endpoint.clone(), true),
        ]
        .into_iter()
        .find_map(|(key, value, base)| Some((key, value?, base)))
        .map(|(key, value, base)| traces_url(key, &value, base))
        .transpose()?;
        let disabled =
            var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let exporter_off = match var("OTEL_TRACES_EXPORTER").as_deref().map(str::trim) {
            None | Some("otlp") => false,
            Some("none") => true,
            Some(other) => {
                return Err(SettingError::new(
                    "OTEL_TRACES_EXPORTER",
                    format!("{other:?} is not built in; toolport exports traces by otlp (or none)"),
                ));
            }
        };
        let otlp_traces_endpoint = endpoint.filter(|_| !disabled && !exporter_off);
        if otlp_traces_endpoint.is_some() {
            for name in [
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ] {
                if let Some(protocol) = var(name).filter(|p| p.trim() != HTTP_PROTOBUF) {
                    return Err(SettingError::new(
                        name,
                        format!(
                            "{protocol:?} is not built in; toolport sends OTLP as {HTTP_PROTOBUF}"
                        ),
                    ));
                }
            }
        }
        let service_name = var("OTEL_SERVICE_NAME")
            .or_else(|| var("OTEL_RESOURCE_ATTRIBUTES").and_then(|a| resource_service_name(&a)))
            .or_else(|| file.service_name.clone().filter(|s| !s.trim().is_empty()))
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
        // The exporter reads the traces variable if set, else the general one (not both).
        let otlp_headers = var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| var("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|headers| header_names(&headers))
            .unwrap_or_default();
        Ok(Self {
            otlp_traces_endpoint,
            service_name,
            otlp_headers,
        })
    }
}

/// The traces URL from `value` (of setting `key`): as is, or with `/v1/traces` appended to its
/// path when it is a base endpoint. Only `http` and `https` URLs are accepted.
fn traces_url(key: &'static str, value: &str, base: bool) -> Result<Url, SettingError> {
    let mut url = Url::parse(value.trim())
        .map_err(|e| SettingError::new(key, format!("{value:?} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(SettingError::new(
            key,
            format!("{value:?} is not an http:// or https:// URL (OTLP is sent over HTTP)"),
        ));
    }
    if base {
        let path = url.path();
        let joined = if path.ends_with('/') {
            format!("{path}{TRACES_PATH}")
        } else {
            format!("{path}/{TRACES_PATH}")
        };
        url.set_path(&joined);
    }
    Ok(url)
}

/// `service.name` from `OTEL_RESOURCE_ATTRIBUTES` (`key=value` pairs, comma-separated,
/// values percent-encoded).
fn resource_service_name(attributes: &str) -> Option<String> {
    attributes.split(',').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key.trim() == "service.name")
            .then(|| percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy())
            .filter(|v| !v.is_empty())
            .map(Cow::into_owned)
    })
}

/// The names in an `OTEL_EXPORTER_OTLP_HEADERS` value (`name=value,…`), lowercased.
fn header_names(headers: &str) -> Vec<String> {
    headers
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, _)| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A file section, variables, and what they should give.
    type Case<'a, T> = (&'a str, &'a [(&'a str, &'a str)], T);

    fn load(file: &str, env: &[(&str, &str)]) -> Result<TelemetrySettings, SettingError> {
        let file: FileTelemetry = toml::from_str(file).unwrap();
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TelemetrySettings::load(&file, |k| env.get(k).cloned())
    }

    fn endpoint(settings: &TelemetrySettings) -> Option<&str> {
        settings.otlp_traces_endpoint.as_ref().map(Url::as_str)
    }

    #[test]
    fn off_unless_an_endpoint_is_set() {
        let settings = load("", &[("OTEL_SERVICE_NAME", "svc")]).unwrap();
        assert_eq!(endpoint(&settings), None);
        assert_eq!(settings.service_name, "svc");
        assert_eq!(load("", &[]).unwrap(), TelemetrySettings::default());
    }

    #[test]
    fn endpoints_follow_the_otlp_rules_and_variables_win_over_the_file() {
        let cases: &[Case<Option<&str>>] = &[
            (
                "otlp_endpoint = \"http://c:4318\"",
                &[],
                Some("http://c:4318/v1/traces"),
            ),
            (
                "otlp_endpoint = \"http://c:4318/base/\"",
                &[],
                Some("http://c:4318/base/v1/traces"),
            ),
            (
                "otlp_traces_endpoint = \"http://c/t\"\notlp_endpoint = \"http://d\"",
                &[],
                Some("http://c/t"),
            ),
            (
                "otlp_traces_endpoint = \"http://c/t\"",
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://e:4318/p")],
                Some("http://e:4318/p/v1/traces"),
            ),
            (
                "",
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://e"),
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t/x"),
                ],
                Some("https://t/x"),
            ),
            ("", &[("OTEL_EXPORTER_OTLP_ENDPOINT", "")], None),
            (
                "otlp_endpoint = \"http://c\"",
                &[("OTEL_SDK_DISABLED", "TRUE")],
                None,
            ),
            (
                "otlp_endpoint = \"http://c\"",
                &[("OTEL_SDK_DISABLED", "false")],
                Some("http://c/v1/traces"),
            ),
            (
                "otlp_endpoint = \"http://c\"",
                &[("OTEL_TRACES_EXPORTER", "none")],
                None,
            ),
            (
                "otlp_endpoint = \"http://c\"",
                &[
                    ("OTEL_TRACES_EXPORTER", "otlp"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                ],
                Some("http://c/v1/traces"),
            ),
        ];
        for (file, env, expected) in cases {
            assert_eq!(
                endpoint(&load(file, env).unwrap()),
                *expected,
                "{file} {env:?}"
            );
        }
    }

    #[test]
    fn what_cannot_work_is_an_error_naming_the_setting() {
        let cases: &[Case<&str>] = &[
            (
                "otlp_endpoint = \"collector:4317\"",
                &[],
                "telemetry.otlp_endpoint",
            ),
            (
                "",
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url")],
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                "",
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ],
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ),
            (
                "",
                &[("OTEL_TRACES_EXPORTER", "zipkin")],
                "OTEL_TRACES_EXPORTER",
            ),
        ];
        for (file, env, key) in cases {
            assert_eq!(load(file, env).unwrap_err().key, *key, "{file} {env:?}");
        }
        // gRPC named while nothing is exported is no error: the variable may be meant for
        // another program.
        assert!(load("", &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).is_ok());
    }

    #[test]
    fn service_name_layers_and_secrets_never_print() {
        let file = "service_name = \"from-file\"\notlp_endpoint = \"https://user:s3cret@c\"";
        assert_eq!(load(file, &[]).unwrap().service_name, "from-file");
        let attributes = [(
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=prod,service.name=from%20attrs",
        )];
        assert_eq!(load(file, &attributes).unwrap().service_name, "from attrs");
        let both = [attributes[0], ("OTEL_SERVICE_NAME", "from-var")];
        assert_eq!(load(file, &both).unwrap().service_name, "from-var");

        let settings = load(
            file,
            &[(
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20hunter2,x-tenant=t1",
            )],
        )
        .unwrap();
        let shown = toml::to_string(&settings).unwrap();
        assert_eq!(shown, "service_name = \"from-file\"\n");
        assert_eq!(
            settings.notes(),
            [
                Note::new(
                    "telemetry.otlp_traces_endpoint",
                    "https://***@c/v1/traces (it holds credentials: never printed)"
                ),
                Note::new(
                    "telemetry headers",
                    "authorization, x-tenant, from OTEL_EXPORTER_OTLP_(TRACES_)HEADERS (values never printed)"
                )
            ]
        );
        assert_eq!(endpoint(&settings), Some("https://user:s3cret@c/v1/traces"));
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(toml::from_str::<FileTelemetry>("endpoint = \"http://c\"").is_err());
    }
}
