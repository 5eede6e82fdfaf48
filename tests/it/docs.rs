//! The documentation is checked against the code, so it cannot drift from what the server
//! really does: `docs/tools.md`'s tool reference is generated from the registry (run with
//! `UPDATE_DOCS=1` to rewrite it), `docs/configuration.md`'s example is a config file the
//! binary loads and names every key `toolport config` prints, every relative link in the
//! Markdown files leads to a file (and heading) that exists, and the README keeps the set-up
//! commands CI runs. (The plugin manifest in `docs/plugins.md` is loaded in `plugins.rs`.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolport::config::Config;
use toolport_tools::host::param_docs;

use crate::common::{bare_command, tempdir, within};

const START: &str = "<!-- tool-reference:start (generated from the registry by tests/it/docs.rs; UPDATE_DOCS=1 cargo test --test it docs rewrites it) -->";
const END: &str = "<!-- tool-reference:end -->";

/// The file with the generated tool reference.
const TOOLS_DOC: &str = "docs/tools.md";
/// The file with the config reference (its first ```toml block is the example).
const CONFIG_DOC: &str = "docs/configuration.md";

fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn read(relative: &str) -> String {
    let path = repo_path(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn reference() -> String {
    let shared = toolport::build(&Config::default()).unwrap();
    let registry = shared.registry.load();
    let mut out = String::new();
    for tool in registry.all() {
        let def = registry.definition(tool.name()).unwrap();
        let a = tool.annotations();
        let hints: Vec<&str> = [
            (a.read_only, "read-only"),
            (a.destructive, "destructive"),
            (a.idempotent, "idempotent"),
            (a.open_world, "open world"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
        out.push_str(&format!(
            "### `{}` — {}\n\n{}\n\nCategory `{}`; tags {}; {}.\n\n| Parameter | Type | Required | Default | Description |\n|---|---|---|---|---|\n",
            tool.name(),
            tool.title().unwrap_or_default(),
            def.description,
            tool.category().unwrap_or("-"),
            tool.tags().iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", "),
            hints.join(", "),
        ));
        for param in param_docs(&def.input_schema) {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                param.name,
                param.type_name,
                if param.required { "yes" } else { "no" },
                param
                    .default
                    .map_or_else(|| "-".into(), |d| format!("`{d}`")),
                cell(param.description),
            ));
        }
        if let Some(schema) = &def.output_schema {
            // An output with `oneOf` branches (read_file: text or image) has its fields in
            // the branches: the result names each once, in the order they first appear.
            let branches = match schema.get("oneOf") {
                Some(Value::Array(branches)) => branches.as_slice(),
                _ => &[],
            };
            let mut fields: Vec<String> = Vec::new();
            let own = schema.get("properties").into_iter();
            for props in own.chain(branches.iter().filter_map(|b| b.get("properties"))) {
                if let Value::Object(props) = props {
                    for key in props.keys().map(|k| format!("`{k}`")) {
                        if !fields.contains(&key) {
                            fields.push(key);
                        }
                    }
                }
            }
            if !fields.is_empty() {
                out.push_str(&format!(
                    "\nResult (`structuredContent`): {}.\n",
                    fields.join(", ")
                ));
            }
        }
        out.push('\n');
    }
    out
}

#[test]
fn the_tool_reference_matches_the_registry() {
    let path = repo_path(TOOLS_DOC);
    let doc = read(TOOLS_DOC);
    let start = doc
        .find(START)
        .expect("docs/tools.md has the tool-reference start marker")
        + START.len();
    let end = doc
        .find(END)
        .expect("docs/tools.md has the tool-reference end marker");
    let expected = format!("\n\n{}", reference());
    if doc[start..end] != expected {
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let updated = format!("{}{}{}", &doc[..start], expected, &doc[end..]);
            std::fs::write(&path, updated).unwrap();
        } else {
            panic!(
                "the tool reference in docs/tools.md is out of date; run `UPDATE_DOCS=1 cargo test --test it docs` and commit docs/tools.md"
            );
        }
    }
}

/// The config example: the first ```toml block of docs/configuration.md.
fn config_example() -> String {
    let doc = read(CONFIG_DOC);
    let start = doc
        .find("```toml\n")
        .expect("docs/configuration.md has a TOML example")
        + "```toml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    doc[start..end].to_owned()
}

/// `toolport [--config example.toml] config` in an empty directory: its stdout, after
/// checking that it succeeded without a deprecation warning.
async fn printed_config(with_example: bool) -> String {
    let (_d, dir) = tempdir();
    let mut args = Vec::new();
    if with_example {
        std::fs::write(dir.join("example.toml"), config_example()).unwrap();
        args.extend(["--config", "example.toml"]);
    }
    args.push("config");
    let out = within(bare_command(&dir, &args).output()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "`toolport {}` failed (is the example in docs/configuration.md a valid config?): {stderr}",
        args.join(" ")
    );
    assert!(
        !stderr.contains("deprecated"),
        "the example in docs/configuration.md uses a deprecated key: {stderr}"
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn the_config_example_is_a_valid_config() {
    let stdout = printed_config(true).await;
    assert!(
        stdout.contains("read_max_bytes = 1048576") && stdout.contains("/home/me/code/project"),
        "{stdout}"
    );
}

/// Keys whose value is a table of the operator's own names (an upstream's variables and
/// headers, the OAuth scopes), documented as one key.
const FREE_FORM_TABLES: &[&str] = &["upstreams.env", "upstreams.headers", "http.oauth.scopes"];

/// Every key of a TOML table, as its dotted path (`exec.timeout_max`); tables are walked,
/// not listed.
fn leaf_keys(table: &toml::Table, prefix: &str, out: &mut BTreeSet<String>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            // A table whose keys are the operator's names (variables, headers): one key.
            toml::Value::Table(_) if FREE_FORM_TABLES.contains(&path.as_str()) => {
                out.insert(path);
            }
            toml::Value::Table(inner) => leaf_keys(inner, &path, out),
            // An array of tables (`[[upstreams]]`): each entry's keys, under the array's name.
            toml::Value::Array(entries)
                if !entries.is_empty() && entries.iter().all(toml::Value::is_table) =>
            {
                for entry in entries.iter().filter_map(toml::Value::as_table) {
                    leaf_keys(entry, &path, out);
                }
            }
            _ => {
                out.insert(path);
            }
        }
    }
}

/// The keys the example documents, as dotted paths: every `key = …` line under its
/// `[section]` header, commented out or not (`# api_key_file = …` documents a key that has
/// no example value).
fn documented_keys(example: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut section = String::new();
    for line in example.lines() {
        let line = line.trim_start();
        let bare = line.strip_prefix('#').map_or(line, str::trim_start);
        // `[section]`, or `[[array]]` (an array of tables: its entries' keys are its own).
        let header = bare.strip_prefix("[[").or_else(|| bare.strip_prefix('['));
        if let Some((name, _)) = header.and_then(|r| r.split_once(']'))
            && !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            section = name.to_owned();
            continue;
        }
        let key: String = bare
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !key.is_empty() && bare[key.len()..].trim_start().starts_with('=') {
            keys.insert(if section.is_empty() {
                key
            } else {
                format!("{section}.{key}")
            });
        }
    }
    keys
}

/// A new setting without documentation fails here: `toolport config` prints every key in
/// effect (the defaults, and with the example loaded, what it sets), and each must appear in
/// the example of docs/configuration.md under its section.
#[tokio::test]
async fn every_setting_toolport_config_prints_is_documented() {
    let documented = documented_keys(&config_example());
    let mut printed = BTreeSet::new();
    for with_example in [false, true] {
        let text = printed_config(with_example).await;
        let table: toml::Table = toml::from_str(&text)
            .unwrap_or_else(|e| panic!("`toolport config` printed no TOML: {e}\n{text}"));
        leaf_keys(&table, "", &mut printed);
    }
    assert!(
        printed.len() > 50,
        "too few keys printed to be the whole configuration: {printed:?}"
    );
    let missing: Vec<&String> = printed.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "`toolport config` prints these keys, but the example in docs/configuration.md does not name them: {missing:?}; add each under its [section] there (as a comment when it has no example value)"
    );
}

/// The Markdown files a reader navigates between.
fn markdown_files() -> Vec<String> {
    let mut files: Vec<String> = [
        "README.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        "ARCHITECTURE.md",
        "BENCHMARKS.md",
        "FUZZING.md",
        "crates/toolport-tools/README.md",
    ]
    .map(str::to_owned)
    .to_vec();
    for entry in std::fs::read_dir(repo_path("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            files.push(format!("docs/{name}"));
        }
    }
    files
}

/// The lines of a Markdown text outside fenced code blocks.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut in_code = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            return false;
        }
        !in_code
    })
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose_lines(text)
        .filter_map(|line| line.strip_prefix('#'))
        .map(|heading| anchor(heading.trim_start_matches('#')))
        .collect()
}

#[test]
fn the_relative_links_in_the_docs_resolve() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        let dir = repo_path(&file).parent().unwrap().to_path_buf();
        for line in prose_lines(&text) {
            let mut rest = line;
            while let Some(at) = rest.find("](") {
                rest = &rest[at + 2..];
                let Some(close) = rest.find(')') else { break };
                let link = &rest[..close];
                rest = &rest[close..];
                if link.contains("://") || link.starts_with("mailto:") {
                    continue;
                }
                let (target, fragment) = link.split_once('#').unwrap_or((link, ""));
                let path = if target.is_empty() {
                    repo_path(&file)
                } else {
                    dir.join(target)
                };
                if !path.exists() {
                    broken.push(format!("{file}: {link} (no such file)"));
                } else if !fragment.is_empty()
                    && path.is_file()
                    && !anchors(&std::fs::read_to_string(&path).unwrap()).contains(fragment)
                {
                    broken.push(format!("{file}: {link} (no such heading)"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links: {broken:#?}");
}

#[test]
fn the_readme_keeps_the_set_up_commands() {
    let readme = read("README.md");
    for command in ["cargo run --release", "cargo test"] {
        assert!(
            readme.contains(&format!("\n{command} ")),
            "README.md must show `{command}` in its set-up: CI and the project's rules run it from there"
        );
    }
}
