//! The README's tool reference is generated from the registry and checked here, so it cannot
//! drift from what the server really offers. Run with `UPDATE_README=1` to rewrite it.

use std::path::Path;

use serde_json::Value;
use toolport::config::Config;
use toolport::instructions::param_docs;

const START: &str = "<!-- tool-reference:start (generated from the registry by tests/it/readme.rs; UPDATE_README=1 cargo test rewrites it) -->";
const END: &str = "<!-- tool-reference:end -->";

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
        if let Some(Value::Object(props)) =
            def.output_schema.as_ref().and_then(|s| s.get("properties"))
        {
            let fields: Vec<String> = props.keys().map(|k| format!("`{k}`")).collect();
            out.push_str(&format!(
                "\nResult (`structuredContent`): {}.\n",
                fields.join(", ")
            ));
        }
        out.push('\n');
    }
    out
}

#[test]
fn the_readme_tool_reference_matches_the_registry() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme
        .find(START)
        .expect("README has the tool-reference start marker")
        + START.len();
    let end = readme
        .find(END)
        .expect("README has the tool-reference end marker");
    let expected = format!("\n\n{}", reference());
    if readme[start..end] != expected {
        if std::env::var_os("UPDATE_README").is_some() {
            let updated = format!("{}{}{}", &readme[..start], expected, &readme[end..]);
            std::fs::write(&path, updated).unwrap();
        } else {
            panic!(
                "the README's tool reference is out of date; run `UPDATE_README=1 cargo test --test it readme` and commit README.md"
            );
        }
    }
}

#[tokio::test]
async fn the_readme_config_example_is_a_valid_config() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find("```toml\n").expect("README has a TOML example") + "```toml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let (_d, dir) = crate::common::tempdir();
    std::fs::write(dir.join("example.toml"), &readme[start..end]).unwrap();
    let out = crate::common::within(
        crate::common::bare_command(&dir, &["--config", "example.toml", "config"]).output(),
    )
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the README's example config is rejected: {stderr}"
    );
    assert!(
        !stderr.contains("deprecated"),
        "the README's example uses a deprecated key: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("read_max_bytes = 1048576") && stdout.contains("/home/me/code/project"),
        "{stdout}"
    );
}
