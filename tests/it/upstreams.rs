//! Upstream MCP servers behind toolport, with toolport itself as the upstream (a real MCP
//! server that is always built): one list, calls with progress and cancellation, the audit
//! log naming the upstream, confirmation before a call reaches it, an upstream killed
//! mid-call and restarted, one that never answers `initialize` or exits at once not delaying
//! anything, the config reloaded, and no process left after toolport is killed.
//!
//! The official reference servers from npm and PyPI are checked end to end by `.ci/run`
//! (`.ci/upstreams/`), which installs them pinned.

use std::path::Path;

use rmcp::ServiceExt;
use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use crate::common::process::{alive, children, eventually, pids};
use crate::common::upstreams::{audited_server, child_with_arg, until_listed};
use crate::common::{
    ALLOW_SHELLS, Client, TestClient, audit_records, bin, call, command, config_file,
    connect_command, connect_configured, err, ok, spawn_server, start_long_command_of, tempdir,
    text, tool_names, within,
};

/// The `[[upstreams]]` entry of a toolport serving `root` (its own config: `inner_toml`,
/// written beside it), under `name`, with `extra` lines.
fn toolport_upstream(name: &str, root: &Path, inner_toml: &str, extra: &str) -> String {
    audited_upstream(name, root, inner_toml, None, extra)
}

/// [`toolport_upstream`], the upstream auditing its calls to `audit` when given.
fn audited_upstream(
    name: &str,
    root: &Path,
    inner_toml: &str,
    audit: Option<&Path>,
    extra: &str,
) -> String {
    std::fs::create_dir_all(root).unwrap();
    let inner_config = root.join(format!("{name}.toml"));
    std::fs::write(&inner_config, inner_toml).unwrap();
    let audit = audit
        .map(|log| format!(", \"--audit-log\", '{}'", log.display()))
        .unwrap_or_default();
    format!(
        "[[upstreams]]\nname = \"{name}\"\ncommand = '{}'\nargs = [\"--root\", '{}', \"--config\", '{}'{audit}]\nenv = {{ XDG_CONFIG_HOME = '{}' }}\n{extra}\n",
        bin(),
        root.display(),
        inner_config.display(),
        root.join(".no-config").display(),
    )
}

/// `toolport://upstreams`, parsed.
async fn upstream_status(client: &Client) -> Vec<Value> {
    let read = within(client.read_resource(ReadResourceRequestParams::new("toolport://upstreams")))
        .await
        .unwrap();
    let text = match &read.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    };
    serde_json::from_str::<Vec<Value>>(&text).unwrap()
}

/// The pid of the upstream toolport serving `root`, among `server`'s children.
fn upstream_pid(server: u32, root: &Path) -> Option<i32> {
    let root = root.display().to_string();
    child_with_arg(server, |arg| arg == root)
}

#[tokio::test]
async fn two_upstreams_share_one_list_and_every_call_is_audited_with_its_upstream() {
    let (_d, root) = tempdir();
    let (one, two) = (root.join("one"), root.join("two"));
    let toml = [
        toolport_upstream("one", &one, "", "allow_tools = [\"read_file\", \"write_file\"]\ndeny_tools = [\"write_file\"]\ntags = [\"mirror\"]"),
        toolport_upstream("two", &two, "", "prefix = \"conditional\"\nallow_tools = [\"list_directory\"]"),
    ]
    .concat();
    std::fs::write(one.join("a.txt"), "from one\n").unwrap();
    std::fs::write(two.join("b.txt"), "from two\n").unwrap();
    let (_pid, client, log) = audited_server(&root, &toml, TestClient::default()).await;
    until_listed(&client, &["one__read_file"]).await;
    until_listed(&client, &["two__list_directory"]).await;
    let listed = tool_names(&client).await;
    // toolport's own tools first, then each upstream's, prefixed; deny wins over allow, and
    // a conditional name that a built-in has is prefixed.
    assert!(listed.iter().any(|n| n == "read_file"));
    assert!(!listed.iter().any(|n| n == "one__write_file"), "{listed:?}");
    assert!(
        !listed.iter().any(|n| n.starts_with("one__list")),
        "{listed:?}"
    );
    let tools = within(client.list_all_tools()).await.unwrap();
    let mirrored = tools.iter().find(|t| t.name == "one__read_file").unwrap();
    assert_eq!(
        mirrored.input_schema.get("required"),
        Some(&json!(["path"])),
        "the upstream's schema as it gave it"
    );
    assert!(mirrored.output_schema.is_some());

    let read = ok(&call(&client, "one__read_file", json!({"path": "a.txt"})).await);
    assert_eq!(read["content"], "from one\n");
    let listing = call(&client, "two__list_directory", json!({"path": "."})).await;
    assert!(text(&listing).contains("b.txt"), "{}", text(&listing));
    ok(&call(&client, "read_file", json!({"path": "one/a.txt"})).await);
    // Arguments are checked against the upstream's schema before anything is sent.
    let bad = err(&call(&client, "one__read_file", json!({"paht": "a.txt"})).await);
    assert!(bad.contains("path"), "{bad}");

    eventually("four audit records", || audit_records(&log).len() >= 4).await;
    let by_tool: Vec<(String, Option<String>)> = audit_records(&log)
        .iter()
        .map(|r| {
            (
                r["tool"].as_str().unwrap().to_owned(),
                r["upstream"].as_str().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(
        by_tool,
        [
            ("one__read_file".into(), Some("one".into())),
            ("two__list_directory".into(), Some("two".into())),
            ("read_file".into(), None),
            ("one__read_file".into(), Some("one".into())),
        ]
    );
    // The upstream's tag applies to its tools (the filters and `[tools] tags` see it).
    let status = upstream_status(&client).await;
    assert_eq!(status[0]["state"], "ready");
    assert_eq!(status[0]["tools"], 1);
}

#[tokio::test]
async fn a_call_right_after_connecting_waits_for_the_upstream_that_is_starting() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    let toml = toolport_upstream("inner", &inner, "", "allow_tools = [\"path_info\"]");
    let client = connect_configured(&root, &toml, TestClient::default()).await;
    // No waiting for the listing: a one-shot client (the Inspector's command line) calls at once.
    ok(&call(&client, "inner__path_info", json!({"path": "."})).await);
    // A name no upstream can serve is answered at once, as unknown.
    let unknown = within(
        client.call_tool(
            rmcp::model::CallToolRequestParams::new("nobody__path_info")
                .with_arguments(serde_json::Map::new()),
        ),
    )
    .await;
    assert!(unknown.is_err(), "{unknown:?}");
}

#[tokio::test]
async fn list_wait_holds_a_listing_until_the_upstream_has_started() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    let toml = toolport_upstream(
        "inner",
        &inner,
        "",
        "allow_tools = [\"path_info\"]\nlist_wait = \"20s\"",
    );
    let client = connect_configured(&root, &toml, TestClient::default()).await;
    // The very first listing (a one-shot client lists, then calls) already has its tools.
    let listed = tool_names(&client).await;
    assert!(listed.iter().any(|n| n == "inner__path_info"), "{listed:?}");
}

#[tokio::test]
async fn an_upstream_that_hangs_or_exits_never_delays_toolport_or_another_upstream() {
    let (_d, root) = tempdir();
    let fine = root.join("fine");
    let toml = format!(
        "[[upstreams]]\nname = \"hangs\"\ncommand = \"sleep\"\nargs = [\"600\"]\nstart_timeout = \"10m\"\n\n\
         [[upstreams]]\nname = \"exits\"\ncommand = \"sh\"\nargs = [\"-c\", \"echo no database here >&2; exit 3\"]\n\n{}",
        toolport_upstream("fine", &fine, "", "allow_tools = [\"path_info\"]")
    );
    let test_client = TestClient::default();
    let mut changed = test_client.list_changed();
    // `initialize` and `tools/list` are answered at once, with toolport's own tools (the
    // test's time limit is far below the hanging upstream's start_timeout).
    let client = connect_configured(&root, &toml, test_client).await;
    ok(&call(&client, "path_info", json!({"path": "."})).await);
    // The working upstream's tools arrive, announced.
    within(changed.recv()).await.unwrap();
    until_listed(&client, &["fine__path_info"]).await;
    ok(&call(&client, "fine__path_info", json!({"path": "."})).await);
    let status = upstream_status(&client).await;
    let by_name = |name: &str| status.iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(by_name("hangs")["state"], "starting");
    let exits = by_name("exits");
    assert!(
        matches!(exits["state"].as_str(), Some("retrying" | "starting")),
        "{exits}"
    );
    // It is retried and says why it fails; its stderr (which may hold anything, a
    // connection string, a token) is for the operator's log, never for the client.
    let deadline = std::time::Instant::now() + crate::common::TIMEOUT;
    loop {
        let status = upstream_status(&client).await;
        let exits = status.iter().find(|s| s["name"] == "exits").unwrap();
        let error = exits["error"].as_str().unwrap_or_default();
        if exits["restarts"].as_u64() >= Some(1) && error.contains("exited") {
            assert!(!exits.to_string().contains("no database here"), "{exits}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{exits}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_upstream_killed_mid_call_fails_that_call_and_comes_back() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    let toml = toolport_upstream("inner", &inner, ALLOW_SHELLS, "");
    let (server, client, _log) = audited_server(&root, &toml, TestClient::default()).await;
    until_listed(&client, &["inner__execute_command"]).await;
    // A call in flight on the upstream: its command is running.
    let pidfile = inner.join("pid");
    let handle = start_long_command_of(&client, "inner__execute_command", &pidfile).await;
    let before = upstream_pid(server, &inner).expect("the upstream runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(before),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let answer = within(handle.await_response()).await.unwrap();
    let rmcp::model::ServerResult::CallToolResult(result) = answer else {
        panic!("not a tool result: {answer:?}");
    };
    let message = err(&result);
    assert!(message.contains("was lost during the call"), "{message}");
    // Restarted by itself: a new process, and its tools work again.
    eventually("the upstream is restarted", || {
        upstream_pid(server, &inner).is_some_and(|pid| pid != before)
    })
    .await;
    until_listed(&client, &["inner__path_info"]).await;
    let mut attempts = 0;
    loop {
        let result = call(&client, "inner__path_info", json!({"path": "."})).await;
        if result.is_error != Some(true) {
            break;
        }
        attempts += 1;
        assert!(attempts < 100, "{}", text(&result));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let status = upstream_status(&client).await;
    assert_eq!(status[0]["restarts"], 1, "{status:?}");
}

#[tokio::test]
async fn progress_and_cancellation_pass_through_both_ways() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    let inner_log = root.join("inner-audit.log");
    let toml = audited_upstream("inner", &inner, ALLOW_SHELLS, Some(&inner_log), "");
    let test_client = TestClient::default();
    let mut progress = test_client.progress();
    let client = connect_configured(&root, &toml, test_client).await;
    until_listed(&client, &["inner__execute_command"]).await;
    let out = ok(&call(
        &client,
        "inner__execute_command",
        json!({"command": "sh", "args": ["-c", "echo step one; sleep 1.5; echo step two"]}),
    )
    .await);
    assert_eq!(out["return_code"], 0);
    let first = within(progress.recv()).await.unwrap();
    assert_eq!(first.message.as_deref(), Some("step one"), "{first:?}");

    let pidfile = inner.join("pid");
    let handle = start_long_command_of(&client, "inner__execute_command", &pidfile).await;
    let pid = pids(&pidfile)[0];
    within(handle.cancel(Some("test".into()))).await.unwrap();
    eventually("the upstream's command is killed", || !alive(pid)).await;
    eventually("the upstream recorded the cancellation", || {
        audit_records(&inner_log)
            .iter()
            .any(|r| r["outcome"] == "cancelled")
    })
    .await;
}

#[tokio::test]
async fn a_call_the_user_declines_never_reaches_the_upstream() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    let inner_log = root.join("inner-audit.log");
    let toml = audited_upstream(
        "inner",
        &inner,
        "",
        Some(&inner_log),
        "confirm_tools = [\"path_info\"]",
    );
    let client = connect_configured(&root, &toml, TestClient::confirming(false)).await;
    until_listed(&client, &["inner__path_info"]).await;
    let refused = err(&call(&client, "inner__path_info", json!({"path": "."})).await);
    assert!(refused.contains("declined"), "{refused}");
    // A tool without confirmation reaches it: its audit log has that call only.
    ok(&call(&client, "inner__list_directory", json!({"path": "."})).await);
    eventually("the upstream recorded the allowed call", || {
        !audit_records(&inner_log).is_empty()
    })
    .await;
    let tools: Vec<Value> = audit_records(&inner_log)
        .iter()
        .map(|r| r["tool"].clone())
        .collect();
    assert_eq!(tools, [json!("list_directory")]);
}

#[tokio::test]
async fn an_upstreams_question_for_the_user_reaches_the_client() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    // The upstream asks before every `sh` command (its own policy).
    let toml = toolport_upstream("inner", &inner, "[exec]\nconfirm_rules = [\"touch\"]\n", "");
    let test_client = TestClient::confirming(true);
    let asked = test_client.asked.clone();
    let client = connect_configured(&root, &toml, test_client).await;
    until_listed(&client, &["inner__execute_command"]).await;
    let out = ok(&call(
        &client,
        "inner__execute_command",
        json!({"command": "touch", "args": ["made"]}),
    )
    .await);
    assert_eq!(out["return_code"], 0);
    assert!(inner.join("made").exists());
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("touch"), "{asked:?}");
}

#[tokio::test]
async fn an_upstreams_question_reaches_the_client_of_the_call_over_http() {
    use crate::common::http::{TOKEN, mcp_client, start};
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    let toml = toolport_upstream("inner", &inner, "[exec]\nconfirm_rules = [\"touch\"]\n", "");
    let config = config_file(&root, &toml);
    let server = start(&root, &["--config", config.to_str().unwrap()], Some(TOKEN)).await;
    let test_client = TestClient::confirming(true);
    let asked = test_client.asked.clone();
    let client = mcp_client(&server, TOKEN, test_client).await;
    // The question goes out on this call's own stream (the answer comes back in time).
    let out = ok(&call(
        &client,
        "inner__execute_command",
        json!({"command": "touch", "args": ["made-over-http"]}),
    )
    .await);
    assert_eq!(out["return_code"], 0);
    assert!(inner.join("made-over-http").exists());
    assert_eq!(asked.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn the_operators_selection_and_read_only_apply_to_upstream_tools() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    let toml = toolport_upstream("inner", &inner, "", "");
    let config = config_file(&root, &toml);
    // A name only an upstream will have is no start-up error.
    let client = connect_command(
        command(
            &root,
            &[
                "--config",
                config.to_str().unwrap(),
                "--disable-tool",
                "inner__path_info",
                "--read-only",
            ],
        ),
        TestClient::default(),
    )
    .await;
    ok(&call(&client, "inner__read_file", json!({"path": "inner.toml"})).await);
    let listed = tool_names(&client).await;
    assert!(
        !listed.iter().any(|n| n == "inner__path_info"),
        "{listed:?}"
    );
    // --read-only: only the upstream's tools that declare themselves read-only.
    assert!(
        !listed.iter().any(|n| n == "inner__write_file"),
        "{listed:?}"
    );
    assert!(
        !listed.iter().any(|n| n == "inner__execute_command"),
        "{listed:?}"
    );
    assert!(listed.iter().any(|n| n == "inner__grep"), "{listed:?}");
}

#[tokio::test]
async fn editing_the_config_starts_and_stops_only_what_changed() {
    let (_d, root) = tempdir();
    let (one, two) = (root.join("one"), root.join("two"));
    let first = toolport_upstream("one", &one, "", "allow_tools = [\"path_info\"]");
    let test_client = TestClient::default();
    let config = config_file(&root, &first);
    let transport = spawn_server(command(&root, &["--config", config.to_str().unwrap()]));
    let server = transport.id().unwrap();
    let client = within(test_client.serve(transport)).await.unwrap();
    until_listed(&client, &["one__path_info"]).await;
    let one_pid = upstream_pid(server, &one).unwrap();
    // Add an upstream: written whole (as an editor saves), then picked up by the file watch.
    let both = format!(
        "{first}{}",
        toolport_upstream("two", &two, "", "allow_tools = [\"path_info\"]")
    );
    std::fs::write(&config, both).unwrap();
    until_listed(&client, &["two__path_info"]).await;
    assert_eq!(
        upstream_pid(server, &one),
        Some(one_pid),
        "one was left alone"
    );
    // Remove the first: its tools go, its process goes.
    std::fs::write(
        &config,
        toolport_upstream("two", &two, "", "allow_tools = [\"path_info\"]"),
    )
    .unwrap();
    eventually("one's process is stopped", || !alive(one_pid)).await;
    let deadline = std::time::Instant::now() + crate::common::TIMEOUT;
    while tool_names(&client)
        .await
        .iter()
        .any(|n| n == "one__path_info")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "one's tools stay listed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // A config that does not load keeps the upstreams as they are.
    std::fs::write(&config, "[[upstreams]]\nname = \"broken\"\n").unwrap();
    ok(&call(&client, "two__path_info", json!({"path": "."})).await);
}

#[tokio::test]
async fn no_upstream_process_survives_toolport_killed_with_sigkill() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    let toml = format!(
        "{}[[upstreams]]\nname = \"hangs\"\ncommand = \"sleep\"\nargs = [\"600\"]\nstart_timeout = \"10m\"\n",
        toolport_upstream("inner", &inner, ALLOW_SHELLS, "")
    );
    let config = config_file(&root, &toml);
    let mut cmd = command(&root, &["--config", config.to_str().unwrap()]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let transport = spawn_server(cmd);
    let server = transport.id().unwrap();
    let client = within(TestClient::default().serve(transport))
        .await
        .unwrap();
    until_listed(&client, &["inner__execute_command"]).await;
    // A command of the upstream's own, too.
    let pidfile = inner.join("pid");
    let _handle = start_long_command_of(&client, "inner__execute_command", &pidfile).await;
    let mut doomed: Vec<i32> = children(server as i32);
    doomed.extend(pids(&pidfile));
    assert!(
        doomed.len() >= 4,
        "watchdog, two upstreams, a command: {doomed:?}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    eventually("every upstream process is gone", || {
        doomed.iter().all(|&pid| !alive(pid))
    })
    .await;
    drop(client);
}

#[tokio::test]
async fn the_cli_lists_and_calls_upstream_tools_and_reports_their_status() {
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    let toml = format!(
        "{}[[upstreams]]\nname = \"exits\"\ncommand = \"sh\"\nargs = [\"-c\", \"echo gone >&2\"]\n",
        toolport_upstream("inner", &inner, "", "allow_tools = [\"path_info\"]")
    );
    let config = config_file(&root, &toml);
    let config = config.to_str().unwrap();
    let output = |args: &[&str]| {
        let mut cmd = std::process::Command::new(bin());
        cmd.args(["--root", root.to_str().unwrap(), "--config", config])
            .args(args)
            .env("XDG_CONFIG_HOME", root.join(".no-config"))
            .current_dir(&root);
        cmd.output().unwrap()
    };
    let listed = output(&["tools", "--format", "openai"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "inner__path_info"),
        "{listed}"
    );
    // The filters see the upstream's category (default `upstream`) and tags.
    let filtered = output(&["tools", "--format", "mcp", "--category", "upstream"]);
    let filtered: Value = serde_json::from_slice(&filtered.stdout).unwrap();
    let names: Vec<&str> = filtered
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["inner__path_info"]);
    let called = output(&["call", "inner__path_info", "--args", "{\"path\": \".\"}"]);
    assert!(
        called.status.success(),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    let status = output(&["upstreams", "status", "--json"]);
    assert_eq!(status.status.code(), Some(1), "an upstream failed");
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status[0]["state"], "ready");
    assert_eq!(status[1]["state"], "retrying");
    // The operator's command line shows the upstream's last stderr lines.
    assert!(
        status[1]["stderr"].as_str().unwrap().contains("gone"),
        "{status}"
    );
}

#[tokio::test]
async fn an_upstreams_results_reach_every_client_whole_its_errors_too() {
    use crate::common::upstreams::{PIXEL_PNG, audited_server_as, shaped_server};
    use crate::common::{default_form, named};
    use rmcp::model::ContentBlock;

    let url = shaped_server().await;
    let (_d, root) = tempdir();
    let toml = format!("[[upstreams]]\nname = \"shaped\"\nurl = \"{url}\"\nprefix = \"never\"\n");
    // A client nobody catalogued (both forms), one that reads the text alone (Claude
    // Desktop) and one that reads `structuredContent` alone (Claude Code).
    for (client_name, reads_text) in [("mcp", true), ("claude-ai", true), ("claude-code", false)] {
        // The form by the client's name, as a user's server picks it.
        let (_pid, client, log) =
            audited_server_as(default_form, &root, &toml, named(client_name)).await;
        until_listed(&client, &["refuse", "summarise"]).await;

        // An `isError` result arrives as the server gave it: its text (no prefix of
        // toolport's), its image, its structured value, whose JSON is added after them (too
        // small for the text to be taken to carry it). For a client that reads the
        // structured value alone, the value moves into the text: else its model never sees
        // the message.
        let refused = call(&client, "refuse", json!({})).await;
        assert_eq!(refused.is_error, Some(true), "{client_name}: {refused:?}");
        let error_value = json!({"code": 429, "retry_after": 60});
        assert_eq!(
            refused.content[2].as_text().map(|t| t.text.clone()),
            Some(error_value.to_string()),
            "{client_name}: {refused:?}"
        );
        assert_eq!(
            refused.structured_content,
            reads_text.then_some(error_value),
            "{client_name}"
        );
        assert_eq!(text(&refused), "quota exceeded: try again in 60 s");
        assert!(
            matches!(&refused.content[1], ContentBlock::Image(i) if i.data == PIXEL_PNG),
            "{client_name}: {refused:?}"
        );

        // A structured value its text block does not carry reaches a client that reads the
        // text (as a JSON text block after the server's own); one that reads
        // `structuredContent` alone gets the result as given.
        let summarised = call(&client, "summarise", json!({})).await;
        assert_eq!(ok(&summarised), json!({"rows": [1, 2, 3]}), "{client_name}");
        let texts: Vec<&str> = summarised
            .content
            .iter()
            .filter_map(|b| b.as_text().map(|t| t.text.as_str()))
            .collect();
        if reads_text {
            assert_eq!(texts, ["3 rows", r#"{"rows":[1,2,3]}"#], "{client_name}");
        } else {
            assert_eq!(texts, ["3 rows"], "{client_name}");
        }

        // The audit says the refusal failed, and where.
        eventually("two audit records", || audit_records(&log).len() >= 2).await;
        let first = &audit_records(&log)[0];
        assert_eq!(first["tool"], "refuse");
        assert_eq!(first["upstream"], "shaped");
        assert_eq!(first["outcome"], "error", "{first}");
        std::fs::remove_file(&log).unwrap();
        drop(client);
    }
}

#[tokio::test]
async fn an_upstreams_secrets_never_reach_the_audit_log_even_when_a_reload_adds_it() {
    use crate::common::upstreams::shaped_server;

    const TOKEN: &str = "bearer-token-read-from-a-file-0123";
    const KEY: &str = "api-key-of-an-upstream-a-reload-added-4567";
    let url = shaped_server().await;
    let (_d, root) = tempdir();
    let token_file = root.join("shaped.token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let shaped = format!(
        "[[upstreams]]\nname = \"shaped\"\nurl = \"{url}\"\ntoken_file = '{}'\n",
        token_file.display()
    );
    let (_pid, client, log) = audited_server(&root, &shaped, TestClient::default()).await;
    until_listed(&client, &["shaped__refuse"]).await;
    // The token (read by the connection, never in the config) in a model's arguments.
    let refused = call(&client, "shaped__refuse", json!({"note": TOKEN})).await;
    assert_eq!(refused.is_error, Some(true));

    // A reload adds an upstream whose settings hold a key (a header under a secret name); the
    // model then passes the key on.
    let added = format!(
        "[[upstreams]]\nname = \"again\"\nurl = \"{url}\"\nheaders = {{ X-Api-Key = \"{KEY}\" }}\n"
    );
    config_file(&root, &format!("{shaped}{added}"));
    until_listed(&client, &["again__refuse"]).await;
    call(&client, "again__refuse", json!({"path": KEY})).await;

    eventually("two audit records", || audit_records(&log).len() >= 2).await;
    let written = std::fs::read_to_string(&log).unwrap();
    assert!(!written.contains(TOKEN), "{written}");
    assert!(!written.contains(KEY), "{written}");
    let records = audit_records(&log);
    assert_eq!(records[0]["args"]["note"], "[redacted]", "{written}");
    assert_eq!(records[1]["args"]["path"], "[redacted]", "{written}");
}

#[tokio::test]
async fn a_server_that_hangs_at_start_is_stopped_at_its_start_timeout_its_stderr_kept() {
    let (_d, root) = tempdir();
    // A server that asks on stderr (no newline after the question) and waits for an answer
    // that never comes.
    let toml = "[[upstreams]]\nname = \"asks\"\ncommand = \"sh\"\nargs = [\"-c\", \"printf 'Sign in first. Ok to proceed? (y) ' >&2; exec sleep 600\"]\nstart_timeout = \"1s\"\n";
    let config = config_file(&root, toml);
    let status = std::process::Command::new(bin())
        .args(["--root", root.to_str().unwrap(), "--config"])
        .arg(&config)
        .args(["upstreams", "status", "--json"])
        .env("XDG_CONFIG_HOME", root.join(".no-config"))
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(1));
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let error = status[0]["error"].as_str().unwrap();
    assert!(
        error.contains("within 1s (its `start_timeout`)"),
        "{status}"
    );
    assert!(
        status[0]["stderr"]
            .as_str()
            .is_some_and(|s| s.contains("Ok to proceed? (y)")),
        "{status}"
    );
}

#[tokio::test]
async fn an_answer_too_large_fails_its_call_at_once_and_the_server_stays_up() {
    // Over stdio: an answer over the 16 MiB toolport reads of one message is dropped unread;
    // its call fails at once saying why, where it used to wait for its `timeout` (set far
    // past the test's own here) and fail as "did not answer". One over `max_result_bytes`
    // is read and not passed on.
    let (_d, root) = tempdir();
    let inner = root.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::write(inner.join("big.txt"), "x".repeat(17_000_000)).unwrap();
    std::fs::write(inner.join("page.txt"), "y".repeat(70_000)).unwrap();
    std::fs::write(inner.join("small.txt"), "hello").unwrap();
    let toml = toolport_upstream(
        "inner",
        &inner,
        "[limits]\nread_max_bytes = 20000000\n",
        "timeout = \"600s\"\nmax_result_bytes = 65536",
    );
    let (pid, client, _log) = audited_server(&root, &toml, TestClient::default()).await;
    until_listed(&client, &["inner__read_file"]).await;
    let upstream = upstream_pid(pid, &inner);
    assert!(upstream.is_some());

    let big = call(&client, "inner__read_file", json!({"path": "big.txt"})).await;
    let message = err(&big);
    assert!(
        message.contains("more than the 16 MiB toolport reads of one message")
            && message.contains("Ask for less"),
        "{message}"
    );
    let page = call(&client, "inner__read_file", json!({"path": "page.txt"})).await;
    let message = err(&page);
    assert!(
        message
            .contains("more than the 64 KiB toolport passes on from it (its `max_result_bytes`)"),
        "{message}"
    );
    // The same connection answers the next call.
    let small = call(&client, "inner__read_file", json!({"path": "small.txt"})).await;
    assert_eq!(text(&small), "hello");
    assert_eq!(
        upstream_pid(pid, &inner),
        upstream,
        "the server was not restarted"
    );
}

#[tokio::test]
async fn an_answer_too_large_over_http_says_it_may_be_why() {
    use crate::common::upstreams::shaped_server;

    let url = shaped_server().await;
    let (_d, root) = tempdir();
    let toml = format!(
        "[[upstreams]]\nname = \"shaped\"\nurl = \"{url}\"\nprefix = \"never\"\nmax_result_bytes = 65536\n"
    );
    let (_pid, client, _log) = audited_server(&root, &toml, TestClient::default()).await;
    until_listed(&client, &["flood"]).await;

    let over_limit = call(&client, "flood", json!({"bytes": 70_000})).await;
    let message = err(&over_limit);
    assert!(message.contains("(its `max_result_bytes`)"), "{message}");
    // rmcp's HTTP client ends the answer's stream past 16 MiB, as a lost connection ends it.
    let over_all = call(&client, "flood", json!({"bytes": 17_000_000})).await;
    let message = err(&over_all);
    assert!(
        message.contains("or its answer was more than the 16 MiB toolport reads of one message"),
        "{message}"
    );
    let small = call(&client, "flood", json!({"bytes": 10})).await;
    assert_eq!(text(&small), "x".repeat(10));
}
