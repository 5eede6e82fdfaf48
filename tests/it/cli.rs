//! The command line: tools (every format and filter), instructions, call, config, help.

use std::fs;

use serde_json::{Value, json};

use crate::common::*;

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn run(root: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = command(root, args);
    let out = within(cmd.output()).await.unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

async fn json_of(root: &std::path::Path, args: &[&str]) -> Value {
    let out = run(root, args).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn names(defs: &Value, pointer: &str) -> Vec<String> {
    defs.as_array()
        .unwrap()
        .iter()
        .map(|d| d.pointer(pointer).unwrap().as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn tools_prints_definitions_in_every_format() {
    let (_d, root) = tempdir();
    let mcp = json_of(&root, &["tools"]).await;
    assert_eq!(names(&mcp, "/name"), BUILTIN_NAMES);
    assert_eq!(mcp[0]["annotations"]["readOnlyHint"], json!(true));
    assert!(mcp[0]["outputSchema"].is_object());
    let openai = json_of(&root, &["tools", "--format", "openai"]).await;
    insta::assert_json_snapshot!("tools_openai", openai);
    let anthropic = json_of(&root, &["tools", "--format", "anthropic"]).await;
    assert_eq!(names(&anthropic, "/name"), BUILTIN_NAMES);
    assert_eq!(
        anthropic[0]["input_schema"],
        openai[0]["function"]["parameters"]
    );
    assert_eq!(
        anthropic[0].as_object().unwrap().len(),
        3,
        "only name, description, input_schema"
    );
    let ollama = json_of(&root, &["tools", "--format", "ollama"]).await;
    assert_eq!(ollama, openai);
}

#[tokio::test]
async fn tools_filters_by_tag_category_and_name() {
    let (_d, root) = tempdir();
    let by_tag = json_of(
        &root,
        &["tools", "--tag", "filesystem", "--tag", "metadata"],
    )
    .await;
    assert_eq!(names(&by_tag, "/name"), ["path_info"]);
    let by_category = json_of(
        &root,
        &["tools", "--category", "filesystem", "--format", "anthropic"],
    )
    .await;
    assert_eq!(by_category.as_array().unwrap().len(), 14);
    let web = json_of(&root, &["tools", "--category", "web"]).await;
    assert_eq!(names(&web, "/name"), ["web_search", "fetch_url"]);
    let none = json_of(&root, &["tools", "--category", "Web"]).await;
    assert_eq!(none, json!([]), "categories match exactly");
    let by_name = json_of(
        &root,
        &[
            "tools",
            "--name-pattern",
            "^(read|path)_",
            "--format",
            "openai",
        ],
    )
    .await;
    assert_eq!(
        names(&by_name, "/function/name"),
        ["read_file", "path_info", "read_many_files"]
    );
    let bad = run(&root, &["tools", "--name-pattern", "("]).await;
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("--name-pattern"), "{}", bad.stderr);
}

#[tokio::test]
async fn instructions_prints_every_tools_instructions() {
    let (_d, root) = tempdir();
    let out = run(&root, &["instructions"]).await;
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout.matches("Tool: ").count(), BUILTIN_TOOLS);
    assert!(
        out.stdout.starts_with("Tool: read_file\nDescription: "),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("\n\nTool: list_directory\n"));
}

#[tokio::test]
async fn call_runs_a_tool_and_prints_its_structured_result() {
    let (_d, root) = tempdir();
    fs::write(root.join("README.md"), "# readme\n").unwrap();
    let out = json_of(
        &root,
        &["call", "read_file", "--args", r#"{"path":"README.md"}"#],
    )
    .await;
    assert_eq!(out["content"], json!("# readme\n"));
    let failed = run(
        &root,
        &["call", "read_file", "--args", r#"{"path":"../x"}"#],
    )
    .await;
    assert_eq!(failed.code, 1);
    assert!(
        failed.stderr.contains("outside the allowed roots"),
        "{}",
        failed.stderr
    );
    assert_eq!(failed.stdout, "");
    let unknown = run(&root, &["call", "nope"]).await;
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("unknown tool"),
        "{}",
        unknown.stderr
    );
    let not_object = run(&root, &["call", "read_file", "--args", "[1]"]).await;
    assert_eq!(not_object.code, 2);
    assert!(
        not_object.stderr.contains("JSON object"),
        "{}",
        not_object.stderr
    );
}

#[tokio::test]
async fn tool_selection_applies_to_every_command() {
    let (_d, root) = tempdir();
    let defs = json_of(&root, &["--disable-tool", "read_file", "tools"]).await;
    assert_eq!(names(&defs, "/name"), BUILTIN_NAMES[1..]);
    let defs = json_of(&root, &["--enable-tool", "path_info", "tools"]).await;
    assert_eq!(names(&defs, "/name"), ["path_info"]);
    let bad = run(&root, &["--enable-tool", "nope", "tools"]).await;
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr
            .contains("unknown tool \"nope\" in tools.enabled")
            && bad.stderr.contains("read_file"),
        "{}",
        bad.stderr
    );
}

#[tokio::test]
async fn config_prints_the_effective_configuration_and_rejects_unknown_keys() {
    let (_d, root) = tempdir();
    fs::write(
        root.join("toolport.toml"),
        "[limits]\nread_max_bytes = 4096\n",
    )
    .unwrap();
    let out = run(&root, &["--config", "toolport.toml", "config"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("read_max_bytes = 4096"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&root.display().to_string()),
        "{}",
        out.stdout
    );
    fs::write(root.join("bad.toml"), "[limits]\nread_max = 1\n").unwrap();
    let bad = run(&root, &["--config", "bad.toml", "config"]).await;
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("unknown field `read_max`"),
        "{}",
        bad.stderr
    );
}

/// Issue 39: every section refuses a misspelled key, the server's own too, and the message
/// names it: the cases the library's `Settings::from_toml` refuses, through the binary.
#[tokio::test]
async fn config_names_a_misspelled_key_in_any_section() {
    let (_d, root) = tempdir();
    let cases: toml::Table = toml::from_str(include_str!(
        "../../crates/toolport-tools/tests/data/misspelled_keys.toml"
    ))
    .unwrap();
    for (key, text) in &cases {
        fs::write(root.join("bad.toml"), text.as_str().unwrap()).unwrap();
        let bad = run(&root, &["--config", "bad.toml", "config"]).await;
        assert!(
            bad.code == 2 && bad.stderr.contains(&format!("unknown field `{key}`")),
            "{text}: exit {}: {}",
            bad.code,
            bad.stderr
        );
    }
}

/// `toolport` with `args` and extra environment `env`, in `root`.
async fn run_with_env(root: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command(root, args);
    cmd.envs(env.iter().copied());
    let out = within(cmd.output()).await.unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// `toolport config > printed.toml; toolport --config printed.toml config`: both succeed and
/// print the same; returns the printed config.
async fn round_trip(root: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let first = run_with_env(root, &[args, &["config"]].concat(), env).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    fs::write(root.join("printed.toml"), &first.stdout).unwrap();
    let second = run_with_env(root, &["--config", "printed.toml", "config"], env).await;
    assert_eq!(second.code, 0, "{}\n{}", second.stderr, first.stdout);
    assert_eq!(second.stdout, first.stdout);
    assert_eq!(second.stderr, "", "no warning about the printed file");
    first.stdout
}

/// `toolport config` prints a config file: `toolport config > f.toml; toolport --config
/// f.toml config` prints the same again, for the defaults and for a file that sets every
/// section. It printed keys no file takes (`[http] auth = "generate"`, `config_file = …`) and
/// durations under names with the wrong unit (`min_interval_ms = "1s 500ms"`,
/// `cache_ttl_secs = "10m"`).
#[tokio::test]
async fn config_prints_a_config_file_that_loads_back_the_same() {
    let (_d, root) = tempdir();
    let defaults = round_trip(&root, &[], &[]).await;
    for wanted in [
        "[web.duckduckgo]\nbase_url = \"https://html.duckduckgo.com\"\nmin_interval = \"1.5s\"\n",
        "call_timeout = \"30s\"\n",
        "cache_ttl = \"10m\"\n",
        "[web.fetch]\n",
        "min_interval = \"200ms\"\n",
        "timeout_max = \"2m\"\n",
        "no_auth = false\n",
    ] {
        assert!(defaults.contains(wanted), "{wanted}: {defaults}");
    }
    for unwanted in ["_ms =", "_secs =", "auth = \"", "config_file", "1s 500ms"] {
        assert!(!defaults.contains(unwanted), "{unwanted}: {defaults}");
    }

    // Every section set; keys from a key file, the environment and a token file; an
    // endpoint with credentials; deprecated names (printed under today's).
    fs::create_dir(root.join("my-plugins")).unwrap();
    fs::write(root.join("brave.key"), "brave-key-planted\n").unwrap();
    fs::write(root.join("token.txt"), "http-token-planted-0123456789\n").unwrap();
    fs::write(
        root.join("toolport.toml"),
        r#"log_level = "debug"
[tools]
disabled = ["grep"]
payload = "text"
[limits]
read_max_bytes = 4096
max_calls_per_minute = 30
[limits.tools.execute_command]
max_calls_per_session = 5
[fs]
write = "confirm"
[workspace]
secret_patterns = [".env*", "*.pem"]
[exec]
timeout_max = 90
yield_after = "0s"
deny = ["git push"]
job_retention = "1h30m"
[web]
providers = ["brave", "tavily", "duckduckgo"]
call_timeout_ms = 45500
cache_ttl = "1h30m"
[web.brave]
api_key_file = "brave.key"
min_interval = "1.5s"
[web.google]
cx = "engine-id"
[web.fetch]
allowed_hosts = ["wiki.corp"]
min_interval_ms = 250
cache_ttl_secs = 0
[http]
token_file = "token.txt"
allowed_hosts = ["*"]
max_requests_per_minute = 600
session_idle_timeout = "90s"
[plugins]
dirs = ["my-plugins"]
[audit]
path = "audit.log"
keep = 2
[telemetry]
service_name = "svc"
"#,
    )
    .unwrap();
    let env = [
        ("TOOLPORT_TAVILY_API_KEY", "tavily-key-planted"),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://collector:otlp-password-planted@127.0.0.1:4318",
        ),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20header-planted",
        ),
    ];
    let printed = round_trip(&root, &["--config", "toolport.toml"], &env).await;
    assert!(!printed.contains("planted"), "{printed}");
    for wanted in [
        "#   web.tavily.api_key: set from TOOLPORT_TAVILY_API_KEY (a secret: never printed)\n",
        "#   telemetry.otlp_traces_endpoint: http://***@127.0.0.1:4318/v1/traces",
        "#   telemetry headers: authorization,",
        &format!(
            "api_key_file = {:?}\n",
            root.join("brave.key").display().to_string()
        ),
        &format!(
            "token_file = {:?}\n",
            root.join("token.txt").display().to_string()
        ),
        "providers = [\n    \"brave\",\n    \"tavily\",\n    \"duckduckgo\",\n]\n",
        "call_timeout = \"45.5s\"\n",
        "cache_ttl = \"1h30m\"\n",
        "timeout_max = \"1m30s\"\n",
        "job_retention = \"1h30m\"\n",
        "min_interval = \"250ms\"\n",
        "cache_ttl = \"0s\"\n",
        "allowed_hosts = [\"*\"]\n",
        "session_idle_timeout = \"1m30s\"\n",
        "[limits.tools.execute_command]\nmax_calls_per_session = 5\n",
        "write = \"confirm\"\n",
        "cx = \"engine-id\"\n",
    ] {
        assert!(printed.contains(wanted), "{wanted}: {printed}");
    }

    // Secrets written in the file itself are never printed: the output says where they are
    // set, and still loads (without them: they are nowhere else).
    fs::write(
        root.join("inline.toml"),
        "[web]\nproviders = [\"brave\", \"duckduckgo\"]\n[web.brave]\napi_key = \"inline-key-planted\"\n[http]\ntoken = \"inline-token-planted-0123456789\"\n",
    )
    .unwrap();
    let out = run(&root, &["--config", "inline.toml", "config"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("planted"), "{}", out.stdout);
    for wanted in [
        "#   web.providers: brave, duckduckgo (as listed;",
        "#   web.brave.api_key: set in the config file (a secret: never printed;",
        "#   http.token: set in the config file (a secret: never printed;",
    ] {
        assert!(out.stdout.contains(wanted), "{wanted}: {}", out.stdout);
    }
    fs::write(root.join("printed.toml"), &out.stdout).unwrap();
    let again = run(&root, &["--config", "printed.toml", "config"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
}

/// Issue 40: `toolport config` showed `web.providers` only as a note when it was unset, and
/// nothing said where a search key or the SearXNG instance is set, so a reader of the
/// effective configuration could not see how to add a provider. The unset keys are printed as
/// comments with the environment variable each can come from, and the file still loads back
/// the same; a key that is set is not among them.
#[tokio::test]
async fn config_shows_where_to_set_a_search_provider() {
    let (_d, root) = tempdir();
    let defaults = round_trip(&root, &[], &[]).await;
    let unset = [
        "#   web.providers = [\"searxng\", \"brave\", \"tavily\", \"google\", \"duckduckgo\"]  (or TOOLPORT_WEB_PROVIDERS)\n",
        "#   web.searxng.base_url = \"…\"  (or TOOLPORT_SEARXNG_URL)\n",
        "#   web.brave.api_key_file = \"…\"  (or TOOLPORT_BRAVE_API_KEY)\n",
        "#   web.tavily.api_key_file = \"…\"  (or TOOLPORT_TAVILY_API_KEY)\n",
        "#   web.google.api_key_file = \"…\"  (or TOOLPORT_GOOGLE_API_KEY)\n",
        "#   web.google.cx = \"…\"  (or TOOLPORT_GOOGLE_CX)\n",
    ];
    for wanted in unset {
        assert!(defaults.contains(wanted), "{wanted}: {defaults}");
    }

    // Set from the environment, SearXNG's instance and Brave's key are no longer unset.
    let env = [
        ("TOOLPORT_SEARXNG_URL", "http://127.0.0.1:8888"),
        ("TOOLPORT_BRAVE_API_KEY", "brave-key-planted"),
    ];
    let printed = round_trip(&root, &[], &env).await;
    assert!(!printed.contains("planted"), "{printed}");
    assert!(
        printed.contains("base_url = \"http://127.0.0.1:8888\"\n"),
        "{printed}"
    );
    for gone in ["web.searxng.base_url = ", "web.brave.api_key_file = "] {
        assert!(!printed.contains(gone), "{gone}: {printed}");
    }
    for kept in &unset[2..] {
        if !kept.contains("brave") {
            assert!(printed.contains(kept), "{kept}: {printed}");
        }
    }
}

/// The duration keys named after a unit are still read under those names (a bare number in
/// that unit), with a warning naming the old and the new key; both names at once is an error
/// naming both.
#[tokio::test]
async fn old_duration_key_names_load_with_a_warning() {
    let (_d, root) = tempdir();
    fs::write(
        root.join("old.toml"),
        "[web]\ncall_timeout_ms = 1500\n[web.fetch]\ncache_ttl_secs = 90\n",
    )
    .unwrap();
    let out = run(&root, &["--config", "old.toml", "config"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("call_timeout = \"1.5s\"")
            && out.stdout.contains("cache_ttl = \"1m30s\""),
        "{}",
        out.stdout
    );
    for (old, new) in [
        ("web.call_timeout_ms", "web.call_timeout"),
        ("web.fetch.cache_ttl_secs", "web.fetch.cache_ttl"),
    ] {
        assert!(
            out.stderr.contains(&format!(
                "WARN toolport_tools::settings: config key {old} is deprecated: rename it to {new}"
            )),
            "{}",
            out.stderr
        );
    }
    fs::write(
        root.join("both.toml"),
        "[web.brave]\nmin_interval = \"1s\"\nmin_interval_ms = 1000\n",
    )
    .unwrap();
    let out = run(&root, &["--config", "both.toml", "config"]).await;
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "toolport: invalid setting web.brave.min_interval: web.brave.min_interval_ms is the same setting under its deprecated name; keep only web.brave.min_interval\n"
    );
}

#[tokio::test]
async fn help_explains_the_commands() {
    let (_d, root) = tempdir();
    let out = run(&root, &["--help"]).await;
    assert_eq!(out.code, 0);
    for needle in [
        "serve",
        "tools",
        "instructions",
        "call",
        "--root",
        "--config",
        "--log-level",
        "Examples:",
    ] {
        assert!(
            out.stdout.contains(needle),
            "--help lacks {needle}: {}",
            out.stdout
        );
    }
}

/// The schema portability rules of the MCP Inspector's `--strict` report (CI runs the
/// Inspector itself on `tools/list`), applied here to every export format: no `type` arrays,
/// no remote `$ref`, no bare boolean schema where a schema object is expected, no schema
/// that constrains nothing; and no `format` outside JSON Schema's own list.
fn portability_findings(schema: &Value, path: &str, out: &mut Vec<String>) {
    const FORMATS: &[&str] = &[
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "uuid",
        "regex",
    ];
    const CONSTRAINING: &[&str] = &[
        "type",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "properties",
        "items",
        "required",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "additionalProperties",
        "$ref",
    ];
    let Some(node) = schema.as_object() else {
        out.push(format!(
            "{path}: bare {schema} where a schema object is expected"
        ));
        return;
    };
    if node.get("type").is_some_and(Value::is_array) {
        out.push(format!("{path}: `type` is an array"));
    }
    if let Some(format) = node.get("format").and_then(Value::as_str)
        && !FORMATS.contains(&format)
    {
        out.push(format!("{path}: non-standard format {format:?}"));
    }
    if node
        .get("$ref")
        .and_then(Value::as_str)
        .is_some_and(|r| !r.starts_with('#'))
    {
        out.push(format!("{path}: remote $ref"));
    }
    if !CONSTRAINING.iter().any(|k| node.contains_key(*k)) {
        out.push(format!("{path}: constrains nothing"));
    }
    for key in ["properties", "$defs", "patternProperties"] {
        if let Some(Value::Object(children)) = node.get(key) {
            for (name, child) in children {
                portability_findings(child, &format!("{path}.{key}.{name}"), out);
            }
        }
    }
    for key in ["items", "not", "contains"] {
        if let Some(child) = node.get(key) {
            portability_findings(child, &format!("{path}.{key}"), out);
        }
    }
    // `additionalProperties: false` is the one place a boolean is a normal value.
    if let Some(child) = node.get("additionalProperties").filter(|v| v.is_object()) {
        portability_findings(child, &format!("{path}.additionalProperties"), out);
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = node.get(key) {
            for (i, child) in children.iter().enumerate() {
                portability_findings(child, &format!("{path}.{key}[{i}]"), out);
            }
        }
    }
}

#[tokio::test]
async fn every_export_format_has_portable_schemas() {
    let (_d, root) = tempdir();
    for (format, schemas) in [
        ("mcp", &["/inputSchema", "/outputSchema"][..]),
        ("openai", &["/function/parameters"][..]),
        ("anthropic", &["/input_schema"][..]),
        ("ollama", &["/function/parameters"][..]),
    ] {
        let defs = json_of(&root, &["tools", "--format", format]).await;
        let mut findings = Vec::new();
        for def in defs.as_array().unwrap() {
            for pointer in schemas {
                let schema = def.pointer(pointer).unwrap();
                portability_findings(
                    schema,
                    &format!("{format} {}{pointer}", def["name"]),
                    &mut findings,
                );
            }
        }
        assert_eq!(findings, Vec::<String>::new(), "{format}");
    }
    // The checker itself finds what it is for.
    let mut findings = Vec::new();
    portability_findings(
        &json!({"type": "object", "properties": {
            "a": {"type": ["integer", "null"], "format": "uint64"},
            "b": {"description": "anything"},
        }}),
        "t",
        &mut findings,
    );
    assert_eq!(
        findings,
        [
            "t.properties.a: `type` is an array",
            "t.properties.a: non-standard format \"uint64\"",
            "t.properties.b: constrains nothing",
        ]
    );
}

/// `toolport tools | head` and friends: the reader goes away before the output is written.
/// A Unix tool then ends quietly with success; toolport used to panic with "failed printing
/// to stdout: Broken pipe".
#[tokio::test]
async fn output_to_a_closed_pipe_ends_quietly() {
    let (_d, root) = tempdir();
    for args in [
        &["tools"][..],
        &["instructions"],
        &["config"],
        &["tools", "--format", "openai"],
    ] {
        let mut cmd = command(&root, args);
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        // Close the read end before the command writes anything.
        drop(child.stdout.take());
        let out = within(child.wait_with_output()).await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// `toolport serve DIR…` serves those folders as roots (what a Claude Desktop bundle's folder
/// list expands to), and a setting the bundle left as its unexpanded `${user_config.…}`
/// placeholder counts as unset: here an API key, so web search still has no Brave provider.
#[tokio::test]
async fn serve_takes_roots_as_arguments_and_ignores_unexpanded_placeholders() {
    let (_d, first) = tempdir();
    let (_e, second) = tempdir();
    fs::write(second.join("b.txt"), "in the second root\n").unwrap();
    let mut cmd = bare_command(&first, &["serve"]);
    cmd.arg(&first).arg(&second);
    cmd.env("TOOLPORT_BRAVE_API_KEY", "${user_config.brave_api_key}");
    let client = connect_command(cmd, TestClient::default()).await;
    let path = second.join("b.txt");
    let read = ok(&call(&client, "read_file", json!({"path": path})).await);
    assert_eq!(read["content"], "in the second root\n", "{read}");
    let outside = call(&client, "read_file", json!({"path": "/etc/hostname"})).await;
    assert_eq!(outside.is_error, Some(true));
    let roots = err(&outside);
    assert!(
        roots.contains(&first.display().to_string())
            && roots.contains(&second.display().to_string()),
        "{roots}"
    );
    within(client.cancel()).await.unwrap();

    let mut cmd = bare_command(&first, &["config"]);
    cmd.env("TOOLPORT_BRAVE_API_KEY", "${user_config.brave_api_key}");
    let out = within(cmd.output()).await.unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    // Brave's key is unset: no note says it is set, and it is listed as unset.
    assert!(
        !stdout.contains("web.brave.api_key:")
            && stdout.contains("web.brave.api_key_file = \"…\"  (or TOOLPORT_BRAVE_API_KEY)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("TOOLPORT_BRAVE_API_KEY holds an unexpanded placeholder"),
        "{stderr}"
    );
}
