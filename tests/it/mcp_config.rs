//! The ready-made client configs in `mcp-config/`: each must parse, name the toolport binary
//! (installed, through `cargo run`, or the npm / PyPI package through `npx` / `uvx`), and its
//! arguments must start a working server. (The `npx` and `uvx` forms themselves are run by
//! `.ci/packaging/check.py` against the packages; here the arguments toolport gets from them
//! are.) Each is
//! launched for real, with the placeholder project path replaced by a temp dir. The HTTP and
//! SSE variants must point at the documented address with a bearer-token header, and a real
//! client must work through them against a real `toolport serve --http`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;

/// Placeholders a user replaces (or the client expands) with their project folder.
const PROJECT_PLACEHOLDERS: &[&str] = &["/path/to/your/project", "${workspaceFolder}", "."];

fn read(file: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn config_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp-config");
    let mut files = Vec::new();
    for client in std::fs::read_dir(&dir).unwrap() {
        for file in std::fs::read_dir(client.unwrap().path()).unwrap() {
            files.push(file.unwrap().path());
        }
    }
    files.sort();
    files
}

/// Token placeholders the user or the client fills in (VS Code prompts for its input, Cursor
/// reads the environment, the others are edited by hand).
const TOKEN_PLACEHOLDERS: &[&str] = &[
    "${input:toolport-token}",
    "${env:TOOLPORT_TOKEN}",
    "YOUR_TOOLPORT_TOKEN",
];

/// The package names (dist/npm/toolport/package.json, dist/pypi/pyproject.toml).
const NPM_PACKAGE: &str = "toolport";
const PYPI_PACKAGE: &str = "toolport-mcp";

/// The address the HTTP configs and the README use.
const DOCUMENTED_ADDRESS: &str = "http://127.0.0.1:8787";

/// The `toolport` entry of a client config, whatever the client calls its server map.
fn server_entry(config: &Value) -> &Value {
    ["mcpServers", "servers", "context_servers"]
        .iter()
        .find_map(|key| config.get(key))
        .and_then(|servers| servers.get("toolport"))
        .expect("a `toolport` entry under mcpServers, servers or context_servers")
}

/// The arguments toolport itself receives, after checking how it is launched.
fn toolport_args(file: &Path, entry: &Value) -> Vec<String> {
    let command = entry["command"].as_str().unwrap();
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    if let Some(kind) = entry.get("type") {
        assert_eq!(kind, &json!("stdio"), "{}", file.display());
    }
    match command {
        "toolport" => args,
        "cargo" => {
            let split = args
                .iter()
                .position(|a| a == "--")
                .expect("cargo args end with `--`");
            let cargo = &args[..split];
            assert_eq!(
                cargo[..3],
                ["run", "--release", "--quiet"],
                "{}",
                file.display()
            );
            match &cargo[3..] {
                [] => {}
                [flag, path] if flag == "--manifest-path" => {
                    assert!(path.ends_with("/Cargo.toml"), "{path}");
                }
                other => panic!("{}: unexpected cargo arguments {other:?}", file.display()),
            }
            args[split + 1..].to_vec()
        }
        // The npm package's launcher (`npx -y toolport ARGS`) and the PyPI one (`uvx
        // toolport-mcp ARGS`) pass ARGS on to the binary unchanged.
        "npx" => {
            assert_eq!(args[..2], ["-y", NPM_PACKAGE], "{}", file.display());
            args[2..].to_vec()
        }
        "uvx" => {
            assert_eq!(args[0], PYPI_PACKAGE, "{}", file.display());
            args[1..].to_vec()
        }
        other => panic!("{}: launches {other:?}, not toolport", file.display()),
    }
}

/// The OS a config file is the form for (`*.windows.json`, `*.macos.json`), if it is one:
/// those name the binary and the project by that OS's absolute paths and are not launched
/// here.
fn os_variant(file: &Path) -> Option<&'static str> {
    let name = file.file_name()?.to_str()?;
    ["windows", "macos"]
        .into_iter()
        .find(|os| name.ends_with(&format!(".{os}.json")))
}

#[tokio::test]
async fn every_client_config_launches_a_working_toolport() {
    let files: Vec<PathBuf> = config_files()
        .into_iter()
        .filter(|f| os_variant(f).is_none() && server_entry(&read(f)).get("url").is_none())
        .collect();
    let clients: Vec<String> = files
        .iter()
        .map(|f| {
            f.parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for client in ["claude-desktop", "cursor", "inspector", "vscode", "zed"] {
        assert_eq!(
            clients.iter().filter(|c| *c == client).count(),
            4,
            "{client}: an installed, a cargo-run, an npx and a uvx variant"
        );
    }
    for file in files {
        let config = read(&file);
        let args = toolport_args(&file, server_entry(&config));
        let (_d, project) = tempdir();
        std::fs::write(project.join("hello.txt"), "hi\n").unwrap();
        let args: Vec<String> = args
            .into_iter()
            .map(|a| {
                if PROJECT_PLACEHOLDERS.contains(&a.as_str()) {
                    project.display().to_string()
                } else {
                    a
                }
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Started elsewhere, so only the config's own --root can make hello.txt readable.
        let (_e, elsewhere) = tempdir();
        let client = connect_command(bare_command(&elsewhere, &args), TestClient::default()).await;
        let tools = within(client.list_all_tools()).await.unwrap();
        assert_eq!(tools.len(), BUILTIN_TOOLS, "{}", file.display());
        let read = ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
        assert_eq!(read["content"], json!("hi\n"), "{}", file.display());
        within(client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn every_http_client_config_reaches_a_working_toolport() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("hello.txt"), "hi\n").unwrap();
    let server = crate::common::http::start(&root, &[], Some(crate::common::http::TOKEN)).await;
    let mut seen = Vec::new();
    for file in config_files() {
        let config = read(&file);
        let entry = server_entry(&config);
        let Some(url) = entry.get("url").and_then(Value::as_str) else {
            continue;
        };
        let name = file.display().to_string();
        let path = url
            .strip_prefix(DOCUMENTED_ADDRESS)
            .unwrap_or_else(|| panic!("{name}: {url} is not on {DOCUMENTED_ADDRESS}"));
        if let Some(kind) = entry.get("type").and_then(Value::as_str) {
            let expected = if path == "/mcp" {
                &["http", "streamable-http"][..]
            } else {
                &["sse"][..]
            };
            assert!(expected.contains(&kind), "{name}: type {kind} for {path}");
        }
        let authorization = entry["headers"]["Authorization"].as_str().unwrap();
        let placeholder = authorization
            .strip_prefix("Bearer ")
            .unwrap_or_else(|| panic!("{name}: {authorization} is not a bearer token"));
        assert!(
            TOKEN_PLACEHOLDERS.contains(&placeholder),
            "{name}: unknown token placeholder {placeholder}"
        );
        match path {
            "/mcp" => {
                let client = crate::common::http::mcp_client(
                    &server,
                    crate::common::http::TOKEN,
                    TestClient::default(),
                )
                .await;
                let read = ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
                assert_eq!(read["content"], json!("hi\n"), "{name}");
                within(client.cancel()).await.unwrap();
            }
            "/sse" => {
                let (mut reader, endpoint) = crate::common::http::legacy_session(&server).await;
                let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
                assert_eq!(
                    crate::common::http::post_message(&endpoint, list)
                        .await
                        .status(),
                    202
                );
                let answer = reader.message().await;
                assert_eq!(
                    answer["result"]["tools"].as_array().unwrap().len(),
                    BUILTIN_TOOLS
                );
            }
            other => panic!("{name}: {other} is neither /mcp nor /sse"),
        }
        seen.push(
            file.parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
                + path,
        );
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "cursor/mcp",
            "cursor/sse",
            "inspector/mcp",
            "inspector/sse",
            "vscode/mcp",
            "vscode/sse",
            "zed/mcp"
        ]
    );
}

/// The Windows and macOS forms (Claude Desktop and Zed start servers with the PATH of a GUI
/// app, so they name toolport by its absolute path) are the installed variant with only the
/// command and the project path changed, each an absolute path of that OS.
#[test]
fn the_windows_and_macos_forms_change_only_the_paths() {
    let mut seen = Vec::new();
    for file in config_files() {
        let Some(os) = os_variant(&file) else {
            continue;
        };
        let name = file.display().to_string();
        let base = PathBuf::from(name.replace(&format!(".{os}.json"), ".json"));
        let mut config = read(&file);
        let key = ["mcpServers", "context_servers"]
            .into_iter()
            .find(|key| config.get(key).is_some())
            .unwrap_or_else(|| panic!("{name}: no mcpServers or context_servers"));
        let entry = &mut config[key]["toolport"];
        let command = entry["command"].as_str().unwrap().to_owned();
        let root = entry["args"][1].as_str().unwrap().to_owned();
        assert_eq!(entry["args"][0], json!("--root"), "{name}");
        let (binary, absolute) = match os {
            "windows" => (r"\toolport.exe", r"C:\Users\"),
            _ => ("/toolport", "/Users/"),
        };
        assert!(
            command.starts_with(absolute) && command.ends_with(binary),
            "{name}: {command}"
        );
        assert!(root.starts_with(absolute), "{name}: {root}");
        entry["command"] = json!("toolport");
        entry["args"][1] = json!("/path/to/your/project");
        assert_eq!(
            config,
            read(&base),
            "{name} differs from {}",
            base.display()
        );
        seen.push(name.rsplit("mcp-config/").next().unwrap().to_owned());
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "claude-desktop/claude_desktop_config.macos.json",
            "claude-desktop/claude_desktop_config.windows.json",
            "zed/settings.macos.json",
            "zed/settings.windows.json"
        ]
    );
}

/// The `npx` and `uvx` configs name the packages dist/ builds.
#[test]
fn the_npx_and_uvx_configs_name_the_packages_dist_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let npm = read(&root.join("dist/npm/toolport/package.json"));
    assert_eq!(npm["name"], NPM_PACKAGE);
    assert_eq!(npm["bin"]["toolport"], "bin/toolport.js");
    let pyproject = std::fs::read_to_string(root.join("dist/pypi/pyproject.toml")).unwrap();
    assert!(
        pyproject.contains(&format!("name = \"{PYPI_PACKAGE}\"")),
        "{pyproject}"
    );
    let launcher = root.join("dist/pypi/data/scripts").join(PYPI_PACKAGE);
    assert!(
        pyproject.contains("data = \"data\"") && launcher.is_file(),
        "the wheel's command named after the package: {}",
        launcher.display()
    );
}
