//! Containment that `setsid` cannot escape, through the real binary: processes that left the
//! command's process group (`setsid`, a double-forking daemon, one that cleared its
//! environment) are gone after the command's timeout, its normal end, its cancellation and the
//! server's death — and a command's end never takes another running command's processes.

use std::path::Path;

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::common::process::{alive, eventually, pids, state};
use crate::common::*;

async fn connect_shells(root: &Path) -> Client {
    connect_configured(root, ALLOW_SHELLS, TestClient::default()).await
}

/// `sh -c SCRIPT` as an execute_command call's arguments.
fn shell(script: &str, timeout: u64) -> serde_json::Value {
    json!({"command": "sh", "args": ["-c", script], "timeout": timeout})
}

/// Gone from the process table: killed and reaped (by the server, the subreaper).
async fn gone(pid: i32, what: &str) {
    eventually(what, || state(pid).is_none()).await;
}

/// Wait until `file` holds a pid and return it.
async fn pid_in(file: &Path) -> i32 {
    eventually("the pid was written", || !pids(file).is_empty()).await;
    pids(file)[0]
}

#[tokio::test]
async fn a_setsid_child_dies_at_the_timeout() {
    let (_d, root) = tempdir();
    let client = connect_shells(&root).await;
    let file = root.join("pid");
    let script = format!("setsid sleep 303 & echo $! > {}; sleep 302", file.display());
    let out = ok(&call(&client, "execute_command", shell(&script, 1)).await);
    assert_eq!(out["timed_out"], json!(true));
    let escaped = pid_in(&file).await;
    gone(escaped, "the setsid child is killed and reaped").await;
}

#[tokio::test]
async fn a_double_forked_daemon_dies_when_the_command_ends() {
    let (_d, root) = tempdir();
    let client = connect_shells(&root).await;
    let file = root.join("pid");
    // The subshell starts a new session and exits at once: the daemon is an orphan while
    // the command still runs. The command waits until the daemon has written its pid.
    let script = format!(
        "(setsid sh -c 'echo $$ > {f}; exec sleep 304' &); while [ ! -s {f} ]; do sleep 0.01; done; echo started",
        f = file.display()
    );
    let out = ok(&call(&client, "execute_command", shell(&script, 30)).await);
    assert_eq!(out["return_code"], json!(0));
    let daemon = pid_in(&file).await;
    gone(daemon, "the daemon is killed and reaped").await;
}

#[tokio::test]
async fn a_setsid_child_dies_when_the_call_is_cancelled() {
    let (_d, root) = tempdir();
    let client = connect_shells(&root).await;
    let file = root.join("pid");
    let script = format!("setsid sleep 305 & echo $! > {}; wait", file.display());
    let handle = start_call(&client, "execute_command", shell(&script, 60)).await;
    let escaped = pid_in(&file).await;
    assert!(alive(escaped));
    within(handle.cancel(Some("test".into()))).await.unwrap();
    gone(
        escaped,
        "the setsid child is killed with the cancelled call",
    )
    .await;
}

#[tokio::test]
async fn a_child_that_cleared_its_environment_dies_with_the_last_command() {
    let (_d, root) = tempdir();
    let client = connect_shells(&root).await;
    let file = root.join("pid");
    let script = format!(
        "setsid env -i sleep 307 & echo $! > {}; echo started",
        file.display()
    );
    let out = ok(&call(&client, "execute_command", shell(&script, 30)).await);
    assert_eq!(out["return_code"], json!(0));
    let escaped = pid_in(&file).await;
    gone(escaped, "the unmarked escapee is killed").await;
}

#[tokio::test]
async fn one_commands_end_leaves_another_commands_daemon_alone() {
    let (_d, root) = tempdir();
    let client = connect_shells(&root).await;
    let file = root.join("pid");
    // A long command whose daemon is already an orphan (the server's child) while it runs.
    let script = format!(
        "(setsid sh -c 'echo $$ > {}; exec sleep 308' &); exec sleep 300",
        file.display()
    );
    let handle = start_call(&client, "execute_command", shell(&script, 60)).await;
    let daemon = pid_in(&file).await;
    // Other commands start and end meanwhile; their sweeps must not touch it.
    for _ in 0..3 {
        let out = ok(&call(&client, "execute_command", json!({"command": "true"})).await);
        assert_eq!(out["return_code"], json!(0));
    }
    assert!(
        alive(daemon),
        "another command's end killed a running command's daemon"
    );
    within(handle.cancel(Some("test".into()))).await.unwrap();
    gone(daemon, "the daemon dies with its own command").await;
}

#[tokio::test]
async fn a_killed_server_takes_the_escaped_processes_with_it() {
    let (_d, root) = tempdir();
    let (server, client) = connect_with_pid(&root, ALLOW_SHELLS).await;
    let file = root.join("pid");
    let script = format!("setsid sleep 306 & echo $! > {}; wait", file.display());
    let peer = client.peer().clone();
    let call_task = tokio::spawn(async move {
        let params = CallToolRequestParams::new("execute_command")
            .with_arguments(shell(&script, 60).as_object().cloned().unwrap());
        let _ = peer.call_tool(params).await;
    });
    let escaped = pid_in(&file).await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Reparented to init (or another subreaper) when the server died: the watchdog finds
    // it by its scope and kills it.
    eventually("the escaped process dies with the server", || {
        !alive(escaped)
    })
    .await;
    call_task.abort();
}
