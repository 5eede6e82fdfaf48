//! Jobs through the real binary and rmcp's client: commands that outlive their call
//! (`yield_after`, `background`), followed with job_output, driven with job_input, ended with
//! job_kill, listed with job_list, owned by their session, bounded and cleaned up.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::process::{alive, eventually, pids, state};
use crate::common::*;

const SHELLS_AND_JOBS: &str = "[exec]\nallow_shells = true\n";

async fn connect_jobs(root: &Path, extra: &str) -> Client {
    connect_configured(
        root,
        &format!("{SHELLS_AND_JOBS}{extra}"),
        TestClient::default(),
    )
    .await
}

fn sh(script: &str, extra: Value) -> Value {
    let mut args = json!({"command": "sh", "args": ["-c", script]});
    if let (Some(a), Value::Object(e)) = (args.as_object_mut(), extra) {
        a.extend(e);
    }
    args
}

/// Follow a job to its end with job_output, concatenating what each answer adds.
async fn follow(client: &Client, job: &str) -> (Value, String, String) {
    let (mut out, mut err) = (String::new(), String::new());
    let (mut so, mut se) = (0, 0);
    within(async {
        loop {
            let r = ok(&call(
                client,
                "job_output",
                json!({"job_id": job, "stdout_offset": so, "stderr_offset": se, "wait": 5}),
            )
            .await);
            out.push_str(r["stdout"].as_str().unwrap());
            err.push_str(r["stderr"].as_str().unwrap());
            so = r["stdout_offset"].as_u64().unwrap();
            se = r["stderr_offset"].as_u64().unwrap();
            if r["running"] == json!(false) && r["more"] == json!(false) {
                return (r, out, err);
            }
        }
    })
    .await
}

/// Wait with job_output until the job has ended, and return that last answer (read from
/// offset 0).
async fn ended(client: &Client, job: &str) -> Value {
    within(async {
        loop {
            let r = ok(&call(client, "job_output", json!({"job_id": job, "wait": 5})).await);
            if r["running"] == json!(false) {
                return r;
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_command_past_yield_after_becomes_a_job_followed_to_its_end() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "").await;
    let script = "for i in 1 2 3 4 5; do echo line$i; echo err$i >&2; sleep 0.4; done; exit 3";
    let first = ok(&call(
        &client,
        "execute_command",
        sh(script, json!({"yield_after": 1})),
    )
    .await);
    let job = first["job_id"].as_str().expect("a job id").to_owned();
    assert_eq!(first["running"], json!(true));
    assert!(first["return_code"].is_null());
    assert!(
        first["stdout"].as_str().unwrap().starts_with("line1\n"),
        "{first}"
    );
    let (end, out, err) = follow(&client, &job).await;
    assert_eq!(end["return_code"], json!(3), "{end}");
    assert_eq!(end["running"], json!(false));
    // Offsets from 0: every byte once, in order, none skipped or repeated.
    assert_eq!(out, "line1\nline2\nline3\nline4\nline5\n");
    assert_eq!(err, "err1\nerr2\nerr3\nerr4\nerr5\n");
    assert_eq!(end["stdout_bytes"], json!(out.len()));
    // The whole output is in the files the result names.
    let file = end["stdout_file"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(file).unwrap(), out);
}

#[tokio::test]
async fn a_quick_command_keeps_todays_result() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "").await;
    let r = ok(&call(
        &client,
        "execute_command",
        json!({"command": "echo", "args": ["hi"]}),
    )
    .await);
    assert_eq!(r["stdout"], json!("hi\n"));
    assert_eq!(r["return_code"], json!(0));
    assert!(r.get("job_id").is_none(), "{r}");
    assert!(r.get("running").is_none(), "{r}");
}

#[tokio::test]
async fn background_returns_at_once_and_job_input_drives_cat() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "").await;
    let started = std::time::Instant::now();
    let r = ok(&call(
        &client,
        "execute_command",
        json!({"command": "cat", "background": true, "stdin_open": true}),
    )
    .await);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let job = r["job_id"].as_str().unwrap().to_owned();
    assert_eq!(r["running"], json!(true));
    ok(&call(
        &client,
        "job_input",
        json!({"job_id": job, "text": "hello\n"}),
    )
    .await);
    let out = ok(&call(&client, "job_output", json!({"job_id": job, "wait": 10})).await);
    assert_eq!(out["stdout"], json!("hello\n"), "{out}");
    assert_eq!(out["running"], json!(true));
    let closed = ok(&call(
        &client,
        "job_input",
        json!({"job_id": job, "text": "bye\n", "close": true}),
    )
    .await);
    assert_eq!(closed["closed"], json!(true));
    let (end, all, _) = follow(&client, &job).await;
    assert_eq!(all, "hello\nbye\n");
    assert_eq!(end["return_code"], json!(0));
    // Input to a job that has ended is refused, naming why.
    let refused = err(&call(&client, "job_input", json!({"job_id": job, "text": "x"})).await);
    assert!(refused.contains("has ended"), "{refused}");
}

#[tokio::test]
async fn job_kill_ends_the_whole_tree_and_reports_it() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "").await;
    let file = root.join("pids");
    let script = format!(
        "sleep 300 & echo $! >> {f}; setsid sleep 301 & echo $! >> {f}; wait",
        f = file.display()
    );
    let r = ok(&call(
        &client,
        "execute_command",
        sh(&script, json!({"background": true})),
    )
    .await);
    let job = r["job_id"].as_str().unwrap().to_owned();
    eventually("both pids written", || pids(&file).len() == 2).await;
    let killed = ok(&call(&client, "job_kill", json!({"job_id": job})).await);
    assert_eq!(killed["running"], json!(false));
    assert_eq!(killed["killed"], json!(true));
    assert!(killed["return_code"].is_null());
    for pid in pids(&file) {
        eventually("the job's processes are gone", || state(pid).is_none()).await;
    }
}

/// Two sessions of one server: HTTP with the test token.
async fn two_http_sessions(root: &Path) -> (crate::common::http::Server, Client, Client) {
    use crate::common::http::{TOKEN, mcp_client, start};
    let config = config_file(root, SHELLS_AND_JOBS);
    let server = start(root, &["--config", config.to_str().unwrap()], Some(TOKEN)).await;
    let a = mcp_client(&server, TOKEN, TestClient::default()).await;
    let b = mcp_client(&server, TOKEN, TestClient::default()).await;
    (server, a, b)
}

#[tokio::test]
async fn jobs_belong_to_their_session() {
    let (_d, root) = tempdir();
    let (_server, a, b) = two_http_sessions(&root).await;
    let file = root.join("pid");
    let script = format!("echo $$ > {}; exec sleep 300", file.display());
    let r = ok(&call(
        &a,
        "execute_command",
        sh(&script, json!({"background": true})),
    )
    .await);
    let job = r["job_id"].as_str().unwrap().to_owned();
    eventually("the job started", || !pids(&file).is_empty()).await;
    let pid = pids(&file)[0];
    let listed = ok(&call(&a, "job_list", json!({})).await);
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(
        ok(&call(&b, "job_list", json!({})).await)["jobs"],
        json!([])
    );
    for tool in ["job_output", "job_kill"] {
        let refused = err(&call(&b, tool, json!({"job_id": job})).await);
        assert!(
            refused.contains("no job") && refused.contains("it has no jobs"),
            "{refused}"
        );
    }
    // Still running: b could not kill it.
    let still = ok(&call(&a, "job_output", json!({"job_id": job})).await);
    assert_eq!(still["running"], json!(true));
    // Ending session a kills its job; session b goes on.
    within(a.cancel()).await.unwrap();
    eventually("the session's job is killed", || !alive(pid)).await;
    ok(&call(&b, "job_list", json!({})).await);
}

/// Start `args` as a background job and return its id.
async fn start(client: &Client, args: Value) -> String {
    let mut args = args;
    args["background"] = json!(true);
    let r = ok(&call(client, "execute_command", args).await);
    r["job_id"].as_str().expect("a job id").to_owned()
}

/// The ids job_list shows, oldest first.
async fn listed(client: &Client) -> Vec<String> {
    ok(&call(client, "job_list", json!({})).await)["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| job["job_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn max_jobs_refuses_the_next_while_that_many_run() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "max_jobs = 2\n").await;
    let sleep = json!({"command": "sleep", "args": ["300"]});
    let first = start(&client, sleep.clone()).await;
    start(&client, sleep.clone()).await;
    let refused = err(&call(
        &client,
        "execute_command",
        json!({"command": "sleep", "args": ["300"], "background": true}),
    )
    .await);
    assert_eq!(
        refused,
        "unavailable: 2 jobs are running (exec.max_jobs = 2); wait for one to end or end one with job_kill"
    );
    // A killed job runs no more: its place is free at once.
    ok(&call(&client, "job_kill", json!({"job_id": first})).await);
    start(&client, sleep).await;
}

/// Regression: a finished job held its `exec.max_jobs` place until its retention (10
/// minutes) passed, so two finished `true` jobs refused a third.
#[tokio::test]
async fn finished_jobs_leave_their_max_jobs_place_to_a_new_job() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "max_jobs = 2\n").await;
    let quick = json!({"command": "true"});
    for _ in 0..2 {
        let job = start(&client, quick.clone()).await;
        assert_eq!(ended(&client, &job).await["return_code"], json!(0));
    }
    let third = ok(&call(
        &client,
        "execute_command",
        json!({"command": "sleep", "args": ["300"], "background": true}),
    )
    .await);
    assert_eq!(third["still_running"], json!(true), "{third}");
    assert_eq!(listed(&client).await.len(), 3);
}

/// Finished jobs are bounded too: at most `exec.max_jobs` are kept, the one that ended first
/// is evicted with its files, and a lookup of it says "not found" cleanly.
#[tokio::test]
async fn finished_jobs_past_max_jobs_are_evicted_oldest_first_with_their_files() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "max_jobs = 2\n").await;
    let mut files = Vec::new();
    let mut ids = Vec::new();
    for n in 1..=3 {
        let job = start(&client, sh(&format!("echo {n}"), json!({}))).await;
        let end = ended(&client, &job).await;
        assert_eq!(end["stdout"], json!(format!("{n}\n")), "{end}");
        files.push(end["stdout_file"].as_str().unwrap().to_owned());
        ids.push(job);
    }
    assert_eq!(listed(&client).await, ids[1..]);
    let gone = err(&call(&client, "job_output", json!({"job_id": ids[0]})).await);
    assert!(
        gone.starts_with(&format!("not found: no job {:?} in this session", ids[0]))
            && gone.contains("at most 2 of them"),
        "{gone}"
    );
    eventually("the evicted job's output file is removed", || {
        !Path::new(&files[0]).exists()
    })
    .await;
    // The kept ones are whole.
    for (job, file) in ids[1..].iter().zip(&files[1..]) {
        let kept = ok(&call(&client, "job_output", json!({"job_id": job})).await);
        assert_eq!(kept["return_code"], json!(0));
        assert_eq!(
            std::fs::read_to_string(file).unwrap(),
            kept["stdout"].as_str().unwrap()
        );
    }
}

/// Regression: a yielded result said `running: true` but nothing plainly said the command was
/// still going. Now `still_running: true`, and the text a model reads (the rendered payload
/// and the summary beside structured content) says "still running as job_N; follow it with
/// job_output", for a background start and for a call past its `yield_after`.
#[tokio::test]
async fn a_yielded_result_says_it_is_still_running_in_every_form() {
    for form in ["text", "structured", "both"] {
        let (_d, root) = tempdir();
        let config = config_file(&root, SHELLS_AND_JOBS);
        let mut cmd = command(&root, &["--config", config.to_str().unwrap()]);
        cmd.env("TOOLPORT_PAYLOAD", form);
        let client = connect_command(cmd, TestClient::default()).await;
        for extra in [json!({"background": true}), json!({"yield_after": 1})] {
            let result = call(&client, "execute_command", sh("echo on; sleep 300", extra)).await;
            let r = ok(&result);
            let job = r["job_id"].as_str().expect("a job id");
            assert_eq!(r["still_running"], json!(true), "{form}: {r}");
            assert_eq!(r["running"], json!(true), "{form}: {r}");
            assert!(r["return_code"].is_null());
            let text = text(&result);
            assert!(
                text.contains(&format!(
                    "still running as {job}; follow it with job_output"
                )),
                "{form}: {text}"
            );
            ok(&call(&client, "job_kill", json!({"job_id": job})).await);
        }
    }
}

#[tokio::test]
async fn finished_jobs_are_removed_with_their_files_after_the_retention() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "job_retention = \"1s\"\n").await;
    let r = ok(&call(
        &client,
        "execute_command",
        sh("echo done", json!({"background": true})),
    )
    .await);
    let job = r["job_id"].as_str().unwrap().to_owned();
    let (end, out, _) = follow(&client, &job).await;
    assert_eq!(out, "done\n");
    let file = end["stdout_file"].as_str().unwrap().to_owned();
    assert!(Path::new(&file).exists());
    eventually("the job's files are removed", || !Path::new(&file).exists()).await;
    let gone = err(&call(&client, "job_output", json!({"job_id": job})).await);
    assert!(gone.contains("no job"), "{gone}");
}

#[tokio::test]
async fn ten_mib_of_output_is_capped_in_memory_and_whole_in_the_file() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "").await;
    let r = ok(&call(
        &client,
        "execute_command",
        sh(
            "head -c 10485760 /dev/zero | tr '\\0' a",
            json!({"background": true}),
        ),
    )
    .await);
    let job = r["job_id"].as_str().unwrap().to_owned();
    let end = ended(&client, &job).await;
    assert_eq!(end["stdout_bytes"], json!(10_485_760));
    // One answer holds at most the per-call size; the rest is waiting.
    assert!(end["stdout"].as_str().unwrap().len() <= 100 * 1024);
    assert_eq!(end["more"], json!(true));
    let file = end["stdout_file"].as_str().unwrap();
    assert_eq!(std::fs::metadata(file).unwrap().len(), 10_485_760);
}

#[tokio::test]
async fn bad_job_requests_say_what_is_allowed() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "").await;
    let unknown = err(&call(&client, "job_output", json!({"job_id": "job_999"})).await);
    assert!(unknown.contains("no job \"job_999\""), "{unknown}");
    let r = ok(&call(
        &client,
        "execute_command",
        sh("echo hi; sleep 300", json!({"background": true})),
    )
    .await);
    let job = r["job_id"].as_str().unwrap().to_owned();
    let past = err(&call(
        &client,
        "job_output",
        json!({"job_id": job, "stdout_offset": 1_000_000}),
    )
    .await);
    assert!(past.contains("past the end"), "{past}");
    let long = err(&call(
        &client,
        "job_output",
        json!({"job_id": job, "wait": 100_000}),
    )
    .await);
    assert!(long.contains("maximum of 120"), "{long}");
    let no_stdin = err(&call(&client, "job_input", json!({"job_id": job, "text": "x"})).await);
    assert!(no_stdin.contains("stdin_open"), "{no_stdin}");
    let too_long = err(&call(
        &client,
        "execute_command",
        json!({"command": "true", "yield_after": 100_000}),
    )
    .await);
    assert!(too_long.contains("yield_after"), "{too_long}");
}

#[tokio::test]
async fn a_killed_or_stopped_server_takes_its_jobs_with_it() {
    use nix::sys::signal::Signal;
    for signal in [Signal::SIGKILL, Signal::SIGTERM] {
        let (_d, root) = tempdir();
        let (server, client) = connect_with_pid(&root, SHELLS_AND_JOBS).await;
        let file = root.join("pid");
        let script = format!("echo $$ > {}; exec sleep 300", file.display());
        ok(&call(
            &client,
            "execute_command",
            sh(&script, json!({"background": true})),
        )
        .await);
        eventually("the job started", || !pids(&file).is_empty()).await;
        let pid = pids(&file)[0];
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(server as i32), signal).unwrap();
        eventually(&format!("the job dies with the server ({signal})"), || {
            !alive(pid)
        })
        .await;
        // The watchdog also removes the server's job directory.
        let dir = std::env::temp_dir().join(format!("toolport-jobs-{server}"));
        eventually(&format!("the job directory is removed ({signal})"), || {
            !dir.exists()
        })
        .await;
    }
}

#[tokio::test]
async fn a_command_that_never_became_a_job_leaves_no_files() {
    let (_d, root) = tempdir();
    let (server, client) = connect_with_pid(&root, SHELLS_AND_JOBS).await;
    // More than is kept in memory before a file is made.
    let r = ok(&call(
        &client,
        "execute_command",
        sh("head -c 300000 /dev/zero | tr '\\0' b", json!({})),
    )
    .await);
    assert_eq!(r["stdout_bytes"], json!(300_000));
    assert!(r.get("job_id").is_none());
    let dir = std::env::temp_dir().join(format!("toolport-jobs-{server}"));
    eventually("the spill file is removed", || {
        std::fs::read_dir(&dir).map_or(true, |entries| entries.count() == 0)
    })
    .await;
}

#[tokio::test]
async fn the_output_file_stops_at_its_cap_and_says_so() {
    let (_d, root) = tempdir();
    let client = connect_jobs(&root, "job_output_max_bytes = 1048576\n").await;
    let r = ok(&call(
        &client,
        "execute_command",
        sh(
            "head -c 3145728 /dev/zero | tr '\\0' c",
            json!({"background": true}),
        ),
    )
    .await);
    let job = r["job_id"].as_str().unwrap().to_owned();
    let end = ended(&client, &job).await;
    assert_eq!(
        end["stdout_bytes"],
        json!(3_145_728),
        "all bytes are counted"
    );
    let file = end["stdout_file"].as_str().unwrap();
    assert_eq!(std::fs::metadata(file).unwrap().len(), 1_048_576);
    assert!(
        end["output_note"]
            .as_str()
            .unwrap()
            .contains("exec.job_output_max_bytes"),
        "{end}"
    );
}

#[tokio::test]
async fn a_jobs_output_is_linked_and_readable_as_a_resource_by_its_session_only() {
    use rmcp::model::{ContentBlock, ReadResourceRequestParams, ResourceContents};
    let (_d, root) = tempdir();
    let (_server, a, b) = two_http_sessions(&root).await;
    let result = call(
        &a,
        "execute_command",
        sh(
            "echo one; echo two >&2; sleep 300",
            json!({"yield_after": 1}),
        ),
    )
    .await;
    let links: Vec<String> = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ResourceLink(link) => Some(link.uri.clone()),
            _ => None,
        })
        .collect();
    let job = ok(&result)["job_id"].as_str().unwrap().to_owned();
    assert_eq!(
        links,
        [
            format!("toolport://jobs/{job}/stdout"),
            format!("toolport://jobs/{job}/stderr")
        ]
    );
    let stdout = within(a.read_resource(ReadResourceRequestParams::new(&links[0])))
        .await
        .unwrap();
    match &stdout.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => assert_eq!(text, "one\n"),
        other => panic!("not text: {other:?}"),
    }
    let refused = within(b.read_resource(ReadResourceRequestParams::new(&links[0])))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("no job"), "{refused}");
    ok(&call(&a, "job_kill", json!({"job_id": job})).await);
}

#[tokio::test]
async fn progress_flows_while_job_output_waits() {
    let (_d, root) = tempdir();
    let test_client = TestClient::default();
    let mut progress = test_client.progress();
    let client = connect_configured(&root, SHELLS_AND_JOBS, test_client).await;
    let r = ok(&call(
        &client,
        "execute_command",
        sh(
            "echo waiting; sleep 2.5; echo done",
            json!({"background": true}),
        ),
    )
    .await);
    let job = r["job_id"].as_str().unwrap().to_owned();
    // The job may not have written "waiting\n" yet: wait for it first.
    let first_line = ok(&call(
        &client,
        "job_output",
        json!({"job_id": job, "stdout_offset": 0, "wait": 30}),
    )
    .await);
    assert!(
        first_line["stdout"]
            .as_str()
            .unwrap()
            .starts_with("waiting\n"),
        "{first_line}"
    );
    // Past "waiting\n": the call waits for "done", reporting progress each second.
    let out = ok(&call(
        &client,
        "job_output",
        json!({"job_id": job, "stdout_offset": 8, "wait": 30}),
    )
    .await);
    assert!(out["stdout"].as_str().unwrap().starts_with("done"), "{out}");
    let first = within(progress.recv()).await.unwrap();
    assert_eq!(first.message.as_deref(), Some("waiting"), "{first:?}");
}

#[tokio::test]
async fn the_watchdog_cleans_up_for_the_server_it_was_given() {
    // A server killed before its watchdog got going: the watchdog must still know whose job
    // directory to remove (its parent is init by then), so the server passes its pid.
    let server = "4000000001";
    let dir = std::env::temp_dir().join(format!("toolport-jobs-{server}"));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("job_1.stdout"), "x").unwrap();
    let mut watchdog = tokio::process::Command::new(bin())
        .args(["__watchdog", server])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // End of its input: the server is gone.
    drop(watchdog.stdin.take());
    let status = within(watchdog.wait()).await.unwrap();
    assert!(status.success());
    assert!(
        !dir.exists(),
        "the job directory of server {server} is left"
    );
}
