//! Plugin tools through the real binary and rmcp's client: manifests listed and called,
//! templates (optional, array, dash refusal, paths), the command policy on a plugin's argv,
//! registration rules, broken manifests, live reload (SIGHUP and file edits) with
//! `tools/list_changed`, `toolport plugins check`, and every shipped example tool.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::*;

/// A manifest with tools that use only programs every Linux machine has (no shell).
const ECHO: &str = r#"
[[tools]]
name = "say"
title = "Say"
description = "Print the words, optionally with a count prefix."
category = "test"
tags = ["test", "text"]
annotations = { read_only = true, destructive = false, idempotent = true, open_world = false }

[tools.input_schema]
type = "object"
additionalProperties = false
required = ["words"]
properties.words = { type = "array", items = { type = "string" }, description = "Words to print" }
properties.count = { type = "integer", description = "A prefix" }
properties.upper = { type = "boolean", default = false }

[tools.run]
command = "echo"
args = ["count={count}", "{upper?UPPER}", "{words}"]

[[tools]]
name = "numbers"
description = "Return a JSON object."
input_schema = { type = "object", properties = { n = { type = "integer", default = 7 }, s = { type = "string" } } }
output_schema = { type = "object", required = ["n"], properties = { n = { type = "integer" }, s = { type = "string" } } }

[tools.run]
command = "printf"
args = ['{{"n": %s, "s": "%s"}}', "{n}", "{s}"]
output = "json"

[[tools]]
name = "show_path"
description = "Print the absolute path of a workspace path."
input_schema = { type = "object", properties = { path = { type = "string" } }, required = ["path"] }

[tools.run]
command = "echo"
args = ["{path}"]
paths = ["path"]

[[tools]]
name = "fail"
description = "Fail with a message."
input_schema = { type = "object", properties = { file = { type = "string" } }, required = ["file"] }

[tools.run]
command = "ls"
args = ["--", "{file}"]
"#;

/// A plugin dir holding `files` (name, text), inside a fresh workspace root.
fn plugin_dir(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (dir, root) = tempdir();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    // The plugin dir is beside the root, not inside it.
    let root = root.join("work");
    std::fs::create_dir(&root).unwrap();
    for (name, text) in files {
        std::fs::write(plugins.join(name), text).unwrap();
    }
    (dir, root, plugins)
}

async fn connect_plugins(root: &Path, plugins: &Path, client: TestClient) -> Client {
    connect_with(root, &["--plugins", plugins.to_str().unwrap()], client).await
}

#[tokio::test]
async fn a_plugin_tool_is_listed_with_its_schema_and_called() {
    let (_d, root, plugins) = plugin_dir(&[("echo.toml", ECHO)]);
    let client = connect_plugins(&root, &plugins, TestClient::default()).await;
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert_eq!(
        capabilities.tools.as_ref().and_then(|t| t.list_changed),
        Some(true),
        "the server declares tools.listChanged"
    );
    let tools = within(client.list_all_tools()).await.unwrap();
    let say = tools
        .iter()
        .find(|t| t.name == "say")
        .expect("say is listed");
    assert_eq!(say.title.as_deref(), Some("Say"));
    assert_eq!(
        Value::Object((*say.input_schema).clone())["required"],
        json!(["words"])
    );
    let hints = say.annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(true));
    // Claude Code's search hint, from the manifest: the title and the tags it does not name;
    // without a title, the description's first sentence.
    let search_hint = |tool: &str| {
        let entry = tools.iter().find(|t| t.name == tool).unwrap();
        entry.meta.as_ref().unwrap().0["anthropic/searchHint"].clone()
    };
    assert_eq!(search_hint("say"), json!("say: test text"));
    assert!(
        search_hint("numbers")
            .as_str()
            .is_some_and(|h| h.starts_with("return a json object")),
        "{}",
        search_hint("numbers")
    );
    assert_eq!(
        tool_names(&client).await[..BUILTIN_TOOLS],
        BUILTIN_NAMES,
        "built-ins come first"
    );

    // Text output: stdout is the result; an array expands to one element per item; the
    // optional count is left out, so its element is dropped; the flag is off by default.
    let result = call(&client, "say", json!({"words": ["a b", "c"]})).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert_eq!(text(&result), "a b c\n");
    assert!(result.structured_content.is_none());
    let result = call(
        &client,
        "say",
        json!({"words": ["x"], "count": 2, "upper": true}),
    )
    .await;
    assert_eq!(text(&result), "count=2 UPPER x\n");

    // JSON output: structuredContent, with the schema default applied.
    let result = call(&client, "numbers", json!({"s": "hi"})).await;
    assert_eq!(ok(&result), json!({"n": 7, "s": "hi"}));
    let numbers = tools.iter().find(|t| t.name == "numbers").unwrap();
    assert!(numbers.output_schema.is_some());
}

#[tokio::test]
async fn template_refusals_and_path_confinement() {
    let (_d, root, plugins) = plugin_dir(&[("echo.toml", ECHO)]);
    std::fs::write(root.join("notes.txt"), "x").unwrap();
    let client = connect_plugins(&root, &plugins, TestClient::default()).await;

    // A value that would start an argument with '-' is refused (argument injection).
    let message = err(&call(&client, "say", json!({"words": ["--help"]})).await);
    assert!(message.contains("permission denied"), "{message}");
    assert!(message.contains("words"), "names the argument: {message}");
    // After a literal "--" it is allowed: `ls -- -x` looks for a file named -x.
    let message = err(&call(&client, "fail", json!({"file": "-x"})).await);
    assert!(message.contains("exited with code 2"), "{message}");
    assert!(message.contains("-x"), "stderr is in the error: {message}");

    // Paths resolve inside the roots and arrive absolute.
    let result = call(&client, "show_path", json!({"path": "notes.txt"})).await;
    assert_eq!(
        text(&result),
        format!("{}\n", root.join("notes.txt").display())
    );
    let message = err(&call(&client, "show_path", json!({"path": "../plugins"})).await);
    assert!(message.contains("outside the allowed roots"), "{message}");
    let message = err(&call(&client, "show_path", json!({"path": "/etc/passwd"})).await);
    assert!(message.contains("outside the allowed roots"), "{message}");
    let message = err(&call(&client, "show_path", json!({"path": ".env"})).await);
    assert!(message.contains("secret"), "{message}");
    // A symlink out of the roots is refused by its real path.
    std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
    let message = err(&call(&client, "show_path", json!({"path": "etc/hosts"})).await);
    assert!(message.contains("outside the allowed roots"), "{message}");
}

#[tokio::test]
async fn the_command_policy_applies_to_a_plugins_argv() {
    let (_d, root, plugins) = plugin_dir(&[("echo.toml", ECHO)]);
    let config = config_file(&root, "[exec]\ndeny = [\"echo count=666\"]\n");
    let client = connect_with(
        &root,
        &[
            "--plugins",
            plugins.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        TestClient::default(),
    )
    .await;
    let message = err(&call(&client, "say", json!({"words": ["x"], "count": 666})).await);
    assert!(message.contains("policy denies"), "{message}");
    let fine = call(&client, "say", json!({"words": ["x"], "count": 1})).await;
    assert_eq!(text(&fine), "count=1 x\n");
}

#[tokio::test]
async fn a_plugin_needing_confirmation_asks_the_client() {
    let manifest = r#"
[[tools]]
name = "wipe"
description = "Remove a folder."
input_schema = { type = "object", properties = { dir = { type = "string" } }, required = ["dir"] }
[tools.run]
command = "rm"
args = ["-r", "--", "{dir}"]
paths = ["dir"]
"#;
    let (_d, root, plugins) = plugin_dir(&[("wipe.toml", manifest)]);
    std::fs::create_dir(root.join("junk")).unwrap();
    let declining = TestClient::confirming(false);
    let asked = declining.asked.clone();
    let client = connect_plugins(&root, &plugins, declining).await;
    let message = err(&call(&client, "wipe", json!({"dir": "junk"})).await);
    assert!(message.contains("declined"), "{message}");
    assert!(root.join("junk").exists());
    let question = asked.lock().unwrap().join("\n");
    assert!(
        question.contains(&format!("rm -r -- {}", root.join("junk").display())),
        "the user sees the final argv: {question}"
    );
    assert!(question.contains("plugin tool wipe"), "{question}");
}

/// Run `toolport ARGS` with plugins and return (success, stdout, stderr).
async fn run_cli(root: &Path, args: &[&str]) -> (bool, String, String) {
    let mut cmd = command(root, args);
    cmd.stdin(Stdio::null());
    let out = within(cmd.output()).await.unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn duplicates_and_broken_manifests_are_skipped_with_a_message() {
    let shadow = r#"
[[tools]]
name = "read_file"
description = "Pretend to read."
[tools.run]
command = "true"
"#;
    let again = ECHO.replace("Print the words", "A second say");
    let broken = "[[tools]]\nname = \"broken\"\ndescription = \"x\"\n[tools.run]\ncommand = \"true\"\nshell = true\n";
    let (_d, root, plugins) = plugin_dir(&[
        ("a.toml", ECHO),
        ("b.toml", &again),
        ("c.toml", broken),
        ("d.toml", shadow),
    ]);
    let dir = plugins.to_str().unwrap();
    let (success, stdout, stderr) =
        run_cli(&root, &["--plugins", dir, "tools", "--format", "openai"]).await;
    assert!(success, "{stderr}");
    let tools: Value = serde_json::from_str(&stdout).unwrap();
    let listed: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed.iter().filter(|n| **n == "say").count(), 1);
    assert!(!listed.contains(&"broken"));
    let say = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "say")
        .unwrap();
    assert!(
        say["function"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Print the words"),
        "the first file wins"
    );
    let a = plugins.join("a.toml").display().to_string();
    let b = plugins.join("b.toml").display().to_string();
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("skipping plugin tool say") && l.contains(&a) && l.contains(&b)),
        "the duplicate is logged naming both files: {stderr}"
    );
    assert!(
        stderr.lines().any(|l| l.contains(&format!(
            "{}:6: tools[0].run.shell: unknown field `shell`, expected one of `command`",
            plugins.join("c.toml").display()
        ))),
        "the broken manifest is one error line with file, line and field: {stderr}"
    );
    assert!(
        stderr.contains("skipping plugin tool read_file") && stderr.contains("built-in"),
        "{stderr}"
    );

    // The selection applies to plugin tools, and `instructions` includes them.
    let (_, stdout, _) = run_cli(
        &root,
        &[
            "--plugins",
            dir,
            "--disable-tool",
            "numbers",
            "instructions",
        ],
    )
    .await;
    assert!(stdout.contains("say"), "{stdout}");
    assert!(!stdout.contains("Tool: numbers"), "{stdout}");

    // `plugins check` fails on the bad file and prints the tools it would register.
    let (success, stdout, stderr) = run_cli(&root, &["plugins", "check", dir]).await;
    assert!(!success);
    assert!(stdout.contains("say\t"), "{stdout}");
    assert!(stderr.contains("unknown field `shell`"), "{stderr}");
    std::fs::remove_file(plugins.join("c.toml")).unwrap();
    let (success, _, stderr) = run_cli(&root, &["plugins", "check", dir]).await;
    assert!(success, "duplicates are warnings, not errors: {stderr}");
}

/// Replace a file in one step (write beside, rename over), so the file watch never sees it
/// half written.
fn replace_file(path: &Path, text: &str) {
    let staged = path.with_extension("part");
    std::fs::write(&staged, text).unwrap();
    std::fs::rename(&staged, path).unwrap();
}

/// Ask the server to reload, as an operator would.
fn hangup(pid: i32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
}

/// The server over HTTP with the bearer token and the plugin folder `plugins`.
async fn start_http(root: &Path, plugins: &Path) -> crate::common::http::Server {
    crate::common::http::start(
        root,
        &["--plugins", plugins.to_str().unwrap()],
        Some(crate::common::http::TOKEN),
    )
    .await
}

/// Wait for the next `tools/list_changed`.
async fn changed(rx: &mut tokio::sync::mpsc::UnboundedReceiver<()>) {
    within(rx.recv()).await.expect("tools/list_changed");
}

#[tokio::test]
async fn sighup_reloads_and_clients_are_told() {
    let (_d, root, plugins) = plugin_dir(&[("echo.toml", ECHO)]);
    let extra = r#"
[[tools]]
name = "later"
description = "Added later."
[tools.run]
command = "echo"
args = ["later"]
"#;
    let client = TestClient::default();
    let mut list_changed = client.list_changed();
    let mut cmd = command(&root, &["--plugins", plugins.to_str().unwrap()]);
    cmd.stdin(Stdio::piped());
    let transport = spawn_server(cmd);
    let pid = transport.id().expect("pid") as i32;
    let client = within(rmcp::ServiceExt::serve(client, transport))
        .await
        .unwrap();
    assert!(!tool_names(&client).await.contains(&"later".to_owned()));

    // The file watch may reload too; either way the client is told and lists the new set.
    replace_file(&plugins.join("later.toml"), extra);
    hangup(pid);
    changed(&mut list_changed).await;
    assert!(tool_names(&client).await.contains(&"later".to_owned()));
    let result = call(&client, "later", json!({})).await;
    assert_eq!(text(&result), "later\n");
}

#[tokio::test]
async fn editing_a_manifest_reloads_without_a_signal() {
    let (_d, root, plugins) = plugin_dir(&[("echo.toml", ECHO)]);
    let client = TestClient::default();
    let mut list_changed = client.list_changed();
    let client = connect_plugins(&root, &plugins, client).await;
    assert!(tool_names(&client).await.contains(&"numbers".to_owned()));

    // Remove a tool by rewriting the file without it.
    let without = ECHO.replace("name = \"numbers\"", "name = \"numbers2\"");
    replace_file(&plugins.join("echo.toml"), &without);
    changed(&mut list_changed).await;
    let now = tool_names(&client).await;
    assert!(now.contains(&"numbers2".to_owned()), "{now:?}");
    assert!(!now.contains(&"numbers".to_owned()), "{now:?}");
    let gone = within(client.call_tool(
        rmcp::model::CallToolRequestParams::new("numbers").with_arguments(Default::default()),
    ))
    .await
    .unwrap_err();
    assert!(gone.to_string().contains("unknown tool"), "{gone}");

    // A broken edit removes that file's tools and keeps the other files'.
    let other = r#"
[[tools]]
name = "say2"
description = "Another tool."
[tools.run]
command = "true"
"#;
    replace_file(&plugins.join("other.toml"), other);
    changed(&mut list_changed).await;
    replace_file(&plugins.join("echo.toml"), "[[tools]]\nname = 5\n");
    changed(&mut list_changed).await;
    let now = tool_names(&client).await;
    assert!(now.contains(&"say2".to_owned()), "{now:?}");
    assert!(!now.contains(&"say".to_owned()), "{now:?}");
}

/// A git repository with two commits, a staged change and an unstaged change.
fn git_repo(root: &Path) {
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_AUTHOR_NAME", "Ada")
            .env("GIT_AUTHOR_EMAIL", "ada@example.com")
            .env("GIT_COMMITTER_NAME", "Ada")
            .env("GIT_COMMITTER_EMAIL", "ada@example.com")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "first commit"]);
    std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
    git(&["commit", "-q", "-am", "second commit"]);
    std::fs::write(root.join("b.txt"), "staged\n").unwrap();
    git(&["add", "b.txt"]);
    std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").unwrap();
}

#[tokio::test]
async fn the_example_plugins_work() {
    let (_d, root) = tempdir();
    git_repo(&root);
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/examples");
    let client = connect_plugins(&root, &examples, TestClient::default()).await;

    let status = text(&call(&client, "git_status", json!({})).await);
    assert!(status.contains("## main"), "{status}");
    assert!(
        status.contains(" M a.txt") && status.contains("A  b.txt"),
        "{status}"
    );

    let log = text(&call(&client, "git_log", json!({"count": 1})).await);
    assert!(
        log.contains("second commit") && !log.contains("first commit"),
        "{log}"
    );
    let log = text(&call(&client, "git_log", json!({"path": "a.txt"})).await);
    assert!(log.contains("first commit"), "{log}");

    let diff = text(&call(&client, "git_diff", json!({})).await);
    assert!(
        diff.contains("+three") && !diff.contains("+staged"),
        "{diff}"
    );
    let diff = text(&call(&client, "git_diff", json!({"staged": true})).await);
    assert!(
        diff.contains("+staged") && !diff.contains("+three"),
        "{diff}"
    );

    let show = text(&call(&client, "git_show", json!({"revision": "HEAD~1"})).await);
    assert!(
        show.contains("first commit") && show.contains("+one"),
        "{show}"
    );
    let refused = err(&call(&client, "git_show", json!({"revision": "--output=/tmp/x"})).await);
    assert!(refused.contains("refused"), "{refused}");

    let info = ok(&call(&client, "system_info", json!({})).await);
    assert!(info["uptime_seconds"].as_f64().unwrap() > 0.0, "{info}");
    assert!(
        info["memory"]["total_bytes"].as_u64().unwrap() > 0,
        "{info}"
    );
    assert_eq!(
        info["disks"][0]["path"],
        json!(root.display().to_string()),
        "{info}"
    );
}

#[tokio::test]
async fn http_sessions_are_told_too() {
    use crate::common::http::{TOKEN, legacy_session, mcp_client};
    let (_d, root, plugins) = plugin_dir(&[("echo.toml", ECHO)]);
    let server = start_http(&root, &plugins).await;
    let streamable = TestClient::default();
    let mut list_changed = streamable.list_changed();
    let client = mcp_client(&server, TOKEN, streamable).await;
    let (mut sse, _endpoint) = legacy_session(&server).await;

    let extra = "[[tools]]\nname = \"later\"\ndescription = \"Added later.\"\n[tools.run]\ncommand = \"true\"\n";
    replace_file(&plugins.join("later.toml"), extra);
    hangup(server.pid());
    changed(&mut list_changed).await;
    assert!(tool_names(&client).await.contains(&"later".to_owned()));
    let note = sse.message().await;
    assert_eq!(
        note["method"],
        json!("notifications/tools/list_changed"),
        "{note}"
    );
}

#[tokio::test]
async fn a_call_in_flight_finishes_with_the_tool_it_started_with() {
    let sleeper = r#"
[[tools]]
name = "nap"
description = "Sleep, then say so."
input_schema = { type = "object", properties = { marker = { type = "string" } }, required = ["marker"] }
[tools.run]
command = "sh"
args = ["-c", "echo started > \"$1\"; sleep 1; echo rested", "nap", "{marker}"]
paths = ["marker"]
"#;
    let (_d, root, plugins) = plugin_dir(&[("nap.toml", sleeper)]);
    let config = config_file(&root, ALLOW_SHELLS);
    let client = TestClient::default();
    let mut list_changed = client.list_changed();
    let client = std::sync::Arc::new(
        connect_with(
            &root,
            &[
                "--plugins",
                plugins.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
            ],
            client,
        )
        .await,
    );
    let marker = root.join("started");
    let running = {
        let client = client.clone();
        tokio::spawn(async move { call(&client, "nap", json!({"marker": "started"})).await })
    };
    crate::common::process::eventually("the plugin command started", || marker.exists()).await;
    std::fs::remove_file(plugins.join("nap.toml")).unwrap();
    changed(&mut list_changed).await;
    assert!(!tool_names(&client).await.contains(&"nap".to_owned()));
    let result = within(running).await.unwrap();
    assert_eq!(text(&result), "rested\n", "{result:?}");
}

#[tokio::test]
async fn timeouts_bad_json_and_schema_mismatches_are_tool_errors() {
    let manifest = r#"
[[tools]]
name = "slow"
description = "Too slow."
[tools.run]
command = "sleep"
args = ["30"]
timeout = 1

[[tools]]
name = "not_json"
description = "Prints text where JSON was promised."
[tools.run]
command = "echo"
args = ["hello"]
output = "json"

[[tools]]
name = "wrong_shape"
description = "Prints JSON of the wrong shape."
output_schema = { type = "object", required = ["n"], properties = { n = { type = "integer" } } }
[tools.run]
command = "echo"
args = ['{{"n": "seven"}}']
output = "json"
"#;
    let (_d, root, plugins) = plugin_dir(&[("bad.toml", manifest)]);
    let client = connect_plugins(&root, &plugins, TestClient::default()).await;
    let message = err(&call(&client, "slow", json!({})).await);
    assert!(message.starts_with("timed out:"), "{message}");
    let message = err(&call(&client, "not_json", json!({})).await);
    assert!(message.contains("did not print valid JSON"), "{message}");
    let message = err(&call(&client, "wrong_shape", json!({})).await);
    assert!(
        message.contains("does not match its output_schema"),
        "{message}"
    );
}

#[tokio::test]
async fn a_reload_that_cannot_read_a_folder_keeps_the_tools() {
    use crate::common::http::{TOKEN, mcp_client};
    let (d, root, plugins) = plugin_dir(&[("echo.toml", ECHO)]);
    // A second folder that is missing from the start: read as empty, never blocking.
    let missing = d.path().join("missing");
    let server = crate::common::http::start(
        &root,
        &[
            "--plugins",
            plugins.to_str().unwrap(),
            "--plugins",
            missing.to_str().unwrap(),
        ],
        Some(TOKEN),
    )
    .await;
    let client = TestClient::default();
    let mut list_changed = client.list_changed();
    let client = mcp_client(&server, TOKEN, client).await;
    let before = tool_names(&client).await;
    assert!(before.contains(&"say".to_owned()));

    // The folder that was read goes away: the tools stay.
    let moved = plugins.with_extension("moved");
    std::fs::rename(&plugins, &moved).unwrap();
    hangup(server.pid());
    crate::common::process::eventually("the failed reload is logged", || {
        server
            .stderr()
            .contains("could not read a plugin directory it read before; keeping the current tools")
    })
    .await;
    assert_eq!(tool_names(&client).await, before);
    assert_eq!(
        text(&call(&client, "say", json!({"words": ["still"]})).await),
        "still\n"
    );

    // It comes back with one more tool: the reload goes through although the other folder is
    // still missing.
    std::fs::rename(&moved, &plugins).unwrap();
    let extra = "[[tools]]\nname = \"later\"\ndescription = \"Added later.\"\n[tools.run]\ncommand = \"true\"\n";
    replace_file(&plugins.join("later.toml"), extra);
    hangup(server.pid());
    changed(&mut list_changed).await;
    assert!(tool_names(&client).await.contains(&"later".to_owned()));
}

#[tokio::test]
async fn folders_are_read_in_order_and_the_default_folder_only_outside_the_roots() {
    let other = ECHO.replace("Print the words", "From the second folder");
    let (d, root, first) = plugin_dir(&[("z.toml", ECHO)]);
    let second = d.path().join("second");
    std::fs::create_dir(&second).unwrap();
    std::fs::write(second.join("a.toml"), other).unwrap();
    let list = format!("{}:{}", second.display(), first.display());
    let mut cmd = command(&root, &["tools", "--format", "anthropic"]);
    cmd.env("TOOLPORT_PLUGIN_DIRS", &list).stdin(Stdio::null());
    let out = within(cmd.output()).await.unwrap();
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let say = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "say")
        .unwrap();
    assert!(
        say["description"]
            .as_str()
            .unwrap()
            .starts_with("From the second folder"),
        "the first folder in TOOLPORT_PLUGIN_DIRS wins over file names"
    );

    // The default folder: $XDG_CONFIG_HOME/toolport/plugins, read when nothing is configured…
    let config_home = d.path().join("config");
    std::fs::create_dir_all(config_home.join("toolport/plugins")).unwrap();
    std::fs::write(config_home.join("toolport/plugins/echo.toml"), ECHO).unwrap();
    let listed = |root: PathBuf| {
        let mut cmd = command(&root, &["tools"]);
        cmd.env("XDG_CONFIG_HOME", &config_home)
            .stdin(Stdio::null());
        async move {
            let out = within(cmd.output()).await.unwrap();
            (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
    };
    let (stdout, _) = listed(root.clone()).await;
    assert!(stdout.contains("\"say\""), "{stdout}");
    // …but not when it lies inside a workspace root.
    let (stdout, stderr) = listed(d.path().to_path_buf()).await;
    assert!(!stdout.contains("\"say\""), "{stdout}");
    assert!(
        stderr.contains("not reading the default plugin folder"),
        "{stderr}"
    );
}

#[tokio::test]
async fn clients_on_2026_07_28_hear_of_changes_on_their_subscription() {
    use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let (_d, root, plugins) = plugin_dir(&[("echo.toml", ECHO)]);
    let transport = spawn_server(command(&root, &["--plugins", plugins.to_str().unwrap()]));
    let client = within(().serve_with_lifecycle(
        transport,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    ))
    .await
    .unwrap();
    let mut subscription = within(
        client
            .peer()
            .listen(SubscriptionFilter::builder().tools_list_changed().build()),
    )
    .await
    .unwrap();
    replace_file(
        &plugins.join("echo.toml"),
        &ECHO.replace("name = \"say\"", "name = \"speak\""),
    );
    let note = within(subscription.next()).await.unwrap().unwrap();
    assert!(
        matches!(note, ServerNotification::ToolListChangedNotification(_)),
        "{note:?}"
    );
    let tools = within(client.list_all_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "speak"));
}

#[tokio::test]
async fn the_git_tools_do_not_reach_a_repository_above_the_roots() {
    let (_d, outer) = tempdir();
    git_repo(&outer);
    let root = outer.join("inner");
    std::fs::create_dir(&root).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/examples");
    let client = connect_plugins(&root, &examples, TestClient::default()).await;
    let message = err(&call(&client, "git_diff", json!({})).await);
    assert!(
        message.to_lowercase().contains("not a git repository"),
        "{message}"
    );
    assert!(!message.contains("+three"), "{message}");
}

#[tokio::test]
async fn the_documented_manifest_loads_and_runs() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/plugins.md"))
            .unwrap();
    let start = doc
        .find("```toml title=\"text.toml\"\n")
        .expect("the example manifest in docs/plugins.md");
    let body = &doc[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let manifest = &body[..body.find("```").unwrap()];
    let (_d, root, plugins) = plugin_dir(&[("text.toml", manifest)]);
    std::fs::write(root.join("README.md"), "one\ntwo\n").unwrap();
    let (success, stdout, stderr) =
        run_cli(&root, &["plugins", "check", plugins.to_str().unwrap()]).await;
    assert!(success, "{stderr}");
    assert!(stdout.starts_with("word_count\t"), "{stdout}");
    let client = connect_plugins(&root, &plugins, TestClient::default()).await;
    let result = call(
        &client,
        "word_count",
        json!({"files": ["README.md"], "lines_only": true}),
    )
    .await;
    assert_eq!(
        text(&result),
        format!("2 {}\n", root.join("README.md").display())
    );
}
