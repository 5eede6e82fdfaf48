//! The tool surface (`[tools] surface`): the search surface through rmcp's client against the
//! binary, with the official reference servers (server-everything, server-filesystem,
//! mcp-server-fetch; `common/reference.rs`) or toolport itself as upstreams. The search finds
//! and calls an upstream tool that is not listed; a session sees at most 15 tools; a call
//! through `call_tool` is audited exactly as a direct call, and confirmation and budgets
//! apply to it; `auto` picks per client; `tools/list_changed` still reaches the client; and
//! the search's quality on `tests/data/tool_search_requests.toml` (top-1, top-3, with floors).
//! The policy per principal through the search surface is in `oauth.rs` (it needs the
//! identity provider).

use std::path::Path;

use serde_json::{Value, json};
use tokio::process::Command;

use crate::common::process::eventually;
use crate::common::reference::{reference_upstreams, servers, site};
use crate::common::upstreams::audited_server_as;
use crate::common::{
    Client, TestClient, audit_records, bin, call, command, err, named, ok, tempdir, text,
    tool_names, within,
};

/// The tools served with the three reference servers behind toolport: its own 21,
/// server-everything's 14, server-filesystem's 14 and fetch.
const REFERENCE_CATALOG: usize = 50;

/// The binary as a user's server runs it: the surface follows the config (no
/// `TOOLPORT_SURFACE=full` of the other tests).
fn as_configured(root: &Path, args: &[&str]) -> Command {
    let mut cmd = command(root, args);
    cmd.env_remove("TOOLPORT_SURFACE");
    cmd
}

/// `search_tools` with `query`: the names found, best first.
async fn search(client: &Client, query: &str) -> Vec<String> {
    found(client, query, 5)
        .await
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `search_tools` with `query` and `limit`: the definitions found.
async fn found(client: &Client, query: &str, limit: usize) -> Vec<Value> {
    let result = call(
        client,
        "search_tools",
        json!({"query": query, "limit": limit}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let answer: Value = serde_json::from_str(&text(&result)).unwrap();
    answer["tools"].as_array().unwrap().clone()
}

/// `call_tool` of `name` with `arguments`.
async fn call_tool(client: &Client, name: &str, arguments: Value) -> rmcp::model::CallToolResult {
    call(
        client,
        "call_tool",
        json!({"name": name, "arguments": arguments}),
    )
    .await
}

/// Search until `query` finds `name` first (upstreams start in the background).
async fn until_found(client: &Client, query: &str, name: &str) {
    let deadline = std::time::Instant::now() + crate::common::TIMEOUT;
    loop {
        if search(client, query)
            .await
            .first()
            .is_some_and(|n| n == name)
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{query:?} never found {name}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A record without what differs between two calls of the same tool with the same arguments
/// (when, how long, and through what).
fn comparable(record: &Value) -> Value {
    let mut record = record.clone();
    for key in ["ts", "duration_ms", "via"] {
        record.as_object_mut().unwrap().remove(key);
    }
    record
}

/// The three reference servers behind a toolport with `toml` (plus their entries), for a
/// client named `client`: the client, the audit log, the files folder, and the guards.
async fn with_reference_servers(
    toml: &str,
    client: TestClient,
) -> Option<(
    Client,
    std::path::PathBuf,
    std::path::PathBuf,
    tempfile::TempDir,
)> {
    let s = servers()?;
    let (dir, root) = tempdir();
    let files = root.join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("a.txt"), "reference file\n").unwrap();
    let toml = format!("{toml}\n{}", reference_upstreams(&s, &files, ""));
    let (_pid, client, log) = audited_server_as(as_configured, &root, &toml, client).await;
    Some((client, log, files, dir))
}

#[tokio::test]
async fn search_lists_few_tools_and_finds_and_calls_upstream_tools_not_listed() {
    let Some((client, log, files, _dir)) =
        with_reference_servers("[tools]\nsurface = \"search\"\n", TestClient::default()).await
    else {
        return;
    };
    // All three upstreams are up once each answers a search by its tool's name.
    until_found(&client, "everything__get-sum", "everything__get-sum").await;
    until_found(&client, "read_text_file", "read_text_file").await;
    until_found(&client, "fetch", "fetch").await;

    let names = tool_names(&client).await;
    assert!(names.len() <= 15, "{names:?}");
    assert_eq!(
        names,
        [
            "read_file",
            "grep",
            "glob",
            "edit_file",
            "execute_command",
            "search_tools",
            "call_tool"
        ]
    );

    // A plain request finds the upstream tool, with what it takes to call it.
    let hits = found(&client, "add two numbers together", 3).await;
    assert_eq!(hits[0]["name"], "everything__get-sum", "{hits:?}");
    assert_eq!(hits[0]["upstream"], "everything");
    assert!(
        hits[0]["inputSchema"]["properties"]["a"].is_object(),
        "{hits:?}"
    );
    assert!(hits[0]["description"].as_str().unwrap().contains("sum"));
    assert!(
        found(&client, "zebra choreography xylophone", 5)
            .await
            .is_empty()
    );

    // Called through call_tool, and directly (a tool not listed is still served).
    let through = call_tool(&client, "everything__get-sum", json!({"a": 2, "b": 3})).await;
    assert!(text(&through).contains('5'), "{through:?}");
    let direct = call(&client, "everything__get-sum", json!({"a": 2, "b": 3})).await;
    assert_eq!(through, direct);
    let read = call_tool(
        &client,
        "read_text_file",
        json!({"path": files.join("a.txt")}),
    )
    .await;
    assert!(text(&read).contains("reference file"), "{read:?}");
    let page = site().await;
    let fetched = call_tool(&client, "fetch", json!({"url": page})).await;
    assert!(
        text(&fetched).contains("read this page through toolport"),
        "{fetched:?}"
    );

    // The schema check, before anything is sent upstream.
    let wrong = err(&call_tool(&client, "everything__get-sum", json!({"a": "two"})).await);
    assert!(wrong.contains("b") && wrong.contains("a"), "{wrong}");
    // A name no tool has: a result the model can act on.
    let missing = err(&call_tool(&client, "no_such_tool", json!({})).await);
    assert!(missing.contains("search_tools"), "{missing}");
    let bad = err(&call(&client, "call_tool", json!({"arguments": {}})).await);
    assert!(bad.contains("needs \"name\""), "{bad}");

    // The record of the call through call_tool is the direct call's, plus where it came from.
    eventually("the calls' audit records", || {
        let records = audit_records(&log);
        ["read_text_file", "fetch", "no_such_tool"]
            .iter()
            .all(|tool| records.iter().any(|r| r["tool"] == *tool))
            && records
                .iter()
                .filter(|r| r["tool"] == "everything__get-sum")
                .count()
                >= 3
    })
    .await;
    let records = audit_records(&log);
    let sums: Vec<&Value> = records
        .iter()
        .filter(|r| r["tool"] == "everything__get-sum" && r["outcome"] == "ok")
        .collect();
    assert_eq!(sums.len(), 2, "{records:#?}");
    assert_eq!(sums[0]["via"], "call_tool");
    assert!(sums[1].get("via").is_none(), "{:?}", sums[1]);
    assert_eq!(comparable(sums[0]), comparable(sums[1]));
    assert_eq!(sums[0]["upstream"], "everything");
    assert!(
        records.iter().any(
            |r| r["tool"] == "search_tools" && r["args"]["query"] == "add two numbers together"
        )
    );
    assert!(
        records
            .iter()
            .any(|r| r["tool"] == "fetch" && r["via"] == "call_tool" && r["upstream"] == "fetch")
    );
    assert!(records.iter().any(|r| r["tool"] == "no_such_tool"
        && r["via"] == "call_tool"
        && r["outcome"] == "error"));
}

#[tokio::test]
async fn search_finds_the_tool_for_plain_requests() {
    #[derive(serde::Deserialize)]
    struct Requests {
        request: Vec<Request>,
    }
    #[derive(serde::Deserialize)]
    struct Request {
        text: String,
        tool: String,
        #[serde(default)]
        also: Vec<String>,
    }
    /// The floors: a change to the ranking that falls under them fails here. The figures
    /// themselves are printed, and BENCHMARKS.md quotes them.
    const TOP1_FLOOR: f64 = 0.70;
    const TOP3_FLOOR: f64 = 0.85;

    let data = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tool_search_requests.toml"),
    )
    .unwrap();
    let requests: Requests = toml::from_str(&data).unwrap();
    assert!(requests.request.len() >= 60, "at least 60 requests");
    let Some((client, _log, _files, _dir)) =
        with_reference_servers("[tools]\nsurface = \"search\"\n", TestClient::default()).await
    else {
        return;
    };
    until_found(&client, "everything__get-sum", "everything__get-sum").await;
    until_found(&client, "read_text_file", "read_text_file").await;
    until_found(&client, "fetch", "fetch").await;

    let (mut top1, mut top3) = (0, 0);
    let mut misses = Vec::new();
    let started = std::time::Instant::now();
    for request in &requests.request {
        let names = search(&client, &request.text).await;
        let right = |name: &String| *name == request.tool || request.also.contains(name);
        let rank = names.iter().position(right);
        match rank {
            Some(0) => {
                top1 += 1;
                top3 += 1;
            }
            Some(1 | 2) => top3 += 1,
            _ => {}
        }
        if rank != Some(0) {
            misses.push(format!(
                "{:?} -> {:?} (wanted {})",
                request.text,
                &names[..names.len().min(3)],
                request.tool
            ));
        }
    }
    let per_search = started.elapsed() / u32::try_from(requests.request.len()).unwrap();
    let n = requests.request.len() as f64;
    let (p1, p3) = (f64::from(top1) / n, f64::from(top3) / n);
    eprintln!(
        "tool search on {} requests over {} tools: top-1 {top1} ({:.0}%), top-3 {top3} ({:.0}%); {per_search:.2?} a search_tools round trip\nnot first:\n  {}",
        requests.request.len(),
        REFERENCE_CATALOG,
        p1 * 100.0,
        p3 * 100.0,
        misses.join("\n  ")
    );
    assert!(
        p1 >= TOP1_FLOOR && p3 >= TOP3_FLOOR,
        "top-1 {p1:.2} (floor {TOP1_FLOOR}), top-3 {p3:.2} (floor {TOP3_FLOOR})"
    );
}

/// A toolport upstream serving `root` (its 21 tools, prefixed `inner__`): with toolport's own,
/// 42 tools, past Cursor's 40 and the default `search_above`.
fn toolport_upstream(root: &Path) -> String {
    let inner = root.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::write(inner.join("inner.toml"), "").unwrap();
    format!(
        "[[upstreams]]\nname = \"inner\"\ncommand = '{}'\nargs = [\"--root\", '{}', \"--config\", '{}']\nenv = {{ XDG_CONFIG_HOME = '{}' }}\nlist_wait = \"30s\"\n",
        bin(),
        inner.display(),
        inner.join("inner.toml").display(),
        root.join(".no-config").display(),
    )
}

#[tokio::test]
async fn auto_picks_the_surface_by_the_clients_name_and_the_catalogs_size() {
    let (_d, root) = tempdir();
    let toml = format!(
        "[tools]\nsurface = \"auto\"\n\n{}",
        toolport_upstream(&root)
    );
    // (client, the surface it gets with 42 tools)
    for (name, search_surface) in [
        // Claude Code searches tools itself: the whole list, with its hints.
        ("claude-code", false),
        // Cursor degrades past about 40.
        ("cursor-vscode", true),
        // VS Code caps at 128: 42 fit.
        ("Visual Studio Code", false),
        // Any other client: past search_above (40).
        ("mcp", true),
    ] {
        let (_pid, client, _log) =
            audited_server_as(as_configured, &root, &toml, named(name)).await;
        let tools = within(client.list_all_tools()).await.unwrap();
        if search_surface {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            assert_eq!(names.len(), 7, "{name}: {names:?}");
            assert!(
                names.contains(&"search_tools") && names.contains(&"call_tool"),
                "{name}"
            );
        } else {
            assert_eq!(tools.len(), 42, "{name}");
            assert!(tools.iter().all(|t| t.name != "search_tools"), "{name}");
            let read_file = tools.iter().find(|t| t.name == "read_file").unwrap();
            let meta = serde_json::to_value(&read_file.meta).unwrap();
            assert_eq!(meta["anthropic/alwaysLoad"], true, "{name}");
        }
        within(client.cancel()).await.unwrap();
    }

    // A higher search_above keeps an unknown client on the whole list.
    let toml = format!("[tools]\nsearch_above = 60\n\n{}", toolport_upstream(&root));
    let (_pid, client, _log) = audited_server_as(as_configured, &root, &toml, named("mcp")).await;
    assert_eq!(tool_names(&client).await.len(), 42);
}

#[tokio::test]
async fn confirmation_and_budgets_apply_through_call_tool() {
    let (_d, root) = tempdir();
    let toml = "[tools]\nsurface = \"search\"\n\n[fs]\nwrite = \"confirm\"\n\n[limits]\nmax_calls_per_session = 3\n";
    // The user declines: nothing is written, the record says so.
    let (_pid, client, log) =
        audited_server_as(as_configured, &root, toml, TestClient::confirming(false)).await;
    assert!(!tool_names(&client).await.contains(&"write_file".to_owned()));
    let declined = call_tool(
        &client,
        "write_file",
        json!({"path": "new.txt", "content": "x"}),
    )
    .await;
    assert_eq!(declined.is_error, Some(true), "{declined:?}");
    assert!(!root.join("new.txt").exists());
    // Searches are not calls of a tool: they do not count against the budget.
    for _ in 0..5 {
        assert_eq!(search(&client, "write a file").await[0], "write_file");
    }
    ok(&call_tool(&client, "path_info", json!({"path": "."})).await);
    ok(&call_tool(&client, "path_info", json!({"path": "."})).await);
    let over = err(&call_tool(&client, "path_info", json!({"path": "."})).await);
    assert!(over.contains("limits.max_calls_per_session = 3"), "{over}");
    eventually("four records", || {
        audit_records(&log)
            .iter()
            .filter(|r| r["via"] == "call_tool")
            .count()
            >= 4
    })
    .await;
    let outcomes: Vec<Value> = audit_records(&log)
        .iter()
        .filter(|r| r["via"] == "call_tool")
        .map(|r| json!([r["tool"], r["outcome"]]))
        .collect();
    assert_eq!(
        outcomes,
        [
            json!(["write_file", "declined"]),
            json!(["path_info", "ok"]),
            json!(["path_info", "ok"]),
            json!(["path_info", "denied"]),
        ]
    );

    // The user confirms: written.
    let (_pid, client, _log) =
        audited_server_as(as_configured, &root, toml, TestClient::confirming(true)).await;
    ok(&call_tool(
        &client,
        "write_file",
        json!({"path": "new.txt", "content": "x"}),
    )
    .await);
    assert_eq!(std::fs::read_to_string(root.join("new.txt")).unwrap(), "x");
}

#[tokio::test]
async fn a_changed_catalog_reaches_a_search_session() {
    let (_d, root) = tempdir();
    let plugins = root.parent().unwrap().join(format!(
        "{}-plugins",
        root.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&plugins).unwrap();
    let toml = format!(
        "[tools]\nsurface = \"search\"\n\n[plugins]\ndirs = ['{}']\n",
        plugins.display()
    );
    let test_client = TestClient::default();
    let mut changed = test_client.list_changed();
    let (_pid, client, _log) = audited_server_as(as_configured, &root, &toml, test_client).await;
    assert!(
        search(&client, "count the words of a sentence")
            .await
            .is_empty()
    );

    let manifest = "[[tools]]\nname = \"word_count\"\ndescription = \"Count the words in a sentence.\"\n[tools.run]\ncommand = \"true\"\n";
    let staged = plugins.join("words.part");
    std::fs::write(&staged, manifest).unwrap();
    std::fs::rename(&staged, plugins.join("words.toml")).unwrap();
    within(changed.recv()).await.expect("tools/list_changed");
    assert_eq!(
        search(&client, "count the words of a sentence").await,
        ["word_count"]
    );
    // The listing itself is the same surface.
    assert_eq!(tool_names(&client).await.len(), 7);
}

#[tokio::test]
async fn a_served_tool_named_like_a_search_tool_does_not_shadow_it() {
    let (_d, root) = tempdir();
    let plugins = root.parent().unwrap().join(format!(
        "{}-plugins",
        root.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(
        plugins.join("shadow.toml"),
        "[[tools]]\nname = \"call_tool\"\ndescription = \"A plugin that takes the name.\"\n[tools.run]\ncommand = \"echo\"\nargs = [\"plugin ran\"]\n",
    )
    .unwrap();
    let toml = format!(
        "[tools]\nsurface = \"search\"\npinned = [\"read_file\", \"call_tool\"]\n\n[plugins]\ndirs = ['{}']\n",
        plugins.display()
    );
    let (_pid, client, _log) =
        audited_server_as(as_configured, &root, &toml, TestClient::default()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["read_file", "search_tools", "call_tool"]);
    let listed = tools.iter().find(|t| t.name == "call_tool").unwrap();
    assert!(
        listed
            .description
            .as_deref()
            .unwrap()
            .contains("search_tools"),
        "toolport's own"
    );
    // The plugin is still reached, through toolport's call_tool.
    let ran = call_tool(&client, "call_tool", json!({})).await;
    assert!(text(&ran).contains("plugin ran"), "{ran:?}");
}

#[tokio::test]
async fn bad_surface_settings_are_refused_with_what_is_allowed() {
    let (_d, root) = tempdir();
    for (toml, says) in [
        ("[tools]\nsurface = \"tiny\"\n", "surface"),
        ("[tools]\nsearch_above = 0\n", "tools.search_above"),
        ("[tools]\npinned = [\"no_such_tool\"]\n", "tools.pinned"),
    ] {
        let config = crate::common::config_file(&root, toml);
        let output = as_configured(&root, &["--config", config.to_str().unwrap(), "tools"])
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{toml}");
        assert!(stderr.contains(says), "{toml}: {stderr}");
    }
    let output = as_configured(&root, &["--surface", "all", "config"])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("full") && stderr.contains("search") && stderr.contains("auto"),
        "{stderr}"
    );
}

/// The size of a `tools/list` result as sent (compact JSON), and an estimate of its tokens:
/// bytes / 4, OpenAI's rule of thumb for English text (JSON with its quotes and braces runs
/// somewhat denser in tokens, so this errs low, the same way for both surfaces).
fn listing_size(tools: &[rmcp::model::Tool]) -> (usize, usize) {
    let bytes = serde_json::to_string(&json!({"tools": tools}))
        .unwrap()
        .len();
    (bytes, bytes / 4)
}

#[tokio::test]
async fn the_search_surface_lists_a_fraction_of_the_full_list() {
    let mut sizes = Vec::new();
    for surface in ["full", "search"] {
        let Some((client, _log, _files, _dir)) = with_reference_servers(
            &format!("[tools]\nsurface = \"{surface}\"\n"),
            TestClient::default(),
        )
        .await
        else {
            return;
        };
        until_found_anywhere(&client).await;
        let tools = within(client.list_all_tools()).await.unwrap();
        let (bytes, tokens) = listing_size(&tools);
        eprintln!(
            "tools/list, surface {surface}: {} tools, {bytes} bytes, ~{tokens} tokens (bytes/4)",
            tools.len()
        );
        sizes.push((tools.len(), bytes));
    }
    let [(full_tools, full_bytes), (search_tools, search_bytes)] = sizes[..] else {
        unreachable!()
    };
    assert_eq!(full_tools, REFERENCE_CATALOG);
    assert_eq!(search_tools, 7);
    assert!(
        search_bytes * 3 < full_bytes,
        "{search_bytes} vs {full_bytes}"
    );
}

/// Wait until the three reference servers' tools are all served (whatever the surface): the
/// search finds each by name.
async fn until_found_anywhere(client: &Client) {
    let deadline = std::time::Instant::now() + crate::common::TIMEOUT;
    loop {
        let names: Vec<String> = tool_names(client).await;
        let listed_all = names.len() == REFERENCE_CATALOG;
        let searched_all = names.contains(&"search_tools".to_owned())
            && search(client, "everything__get-sum")
                .await
                .first()
                .is_some_and(|n| n == "everything__get-sum")
            && search(client, "read_text_file")
                .await
                .first()
                .is_some_and(|n| n == "read_text_file")
            && search(client, "fetch")
                .await
                .first()
                .is_some_and(|n| n == "fetch");
        if listed_all || searched_all {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the reference servers never all started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_exports_mark_all_but_the_pinned_for_deferred_loading() {
    let (_d, root) = tempdir();
    let export = |format: &'static str| {
        let root = root.clone();
        async move {
            let output = as_configured(&root, &["tools", "--format", format, "--defer-loading"])
                .output()
                .await
                .unwrap();
            (
                output.status.code(),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }
    };
    let (code, stdout, _) = export("anthropic").await;
    assert_eq!(code, Some(0));
    let tools: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        tools[0],
        json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
    for tool in &tools[1..] {
        let pinned = ["read_file", "grep", "glob", "edit_file", "execute_command"]
            .contains(&tool["name"].as_str().unwrap());
        assert_eq!(tool.get("defer_loading").is_none(), pinned, "{tool}");
        assert!(tool["input_schema"].is_object());
    }
    let (code, stdout, _) = export("openai").await;
    assert_eq!(code, Some(0));
    let tools: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(tools[0], json!({"type": "tool_search"}));
    let fetch = tools.iter().find(|t| t["name"] == "fetch_url").unwrap();
    assert_eq!(fetch["type"], "function");
    assert_eq!(fetch["defer_loading"], true);
    assert!(
        fetch["parameters"].is_object() && fetch.get("function").is_none(),
        "the Responses API's flat form: {fetch}"
    );
    let (code, _, stderr) = export("mcp").await;
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--format openai or --format anthropic"),
        "{stderr}"
    );
}
