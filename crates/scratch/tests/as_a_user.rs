//! Runs the scratch program (src/main.rs: the library used as its docs show) and checks that it
//! did what it says: it exits 0 after printing each step and `ok`.

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Generous: the program builds a registry and makes three calls.
const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn the_library_works_as_its_docs_show() {
    let child = Command::new(env!("CARGO_BIN_EXE_toolport-tools-scratch"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the scratch program starts");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(TIMEOUT) {
        Ok(output) => output.expect("the scratch program's output"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("the scratch program did not finish within {TIMEOUT:?}");
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    for expected in [
        "OpenAI-form definitions:",
        "read_file: ",
        "shout: \"QUIET\"",
        "outside the roots: ",
    ] {
        assert!(stdout.contains(expected), "{expected:?} missing:\n{stdout}");
    }
    assert_eq!(stdout.lines().last(), Some("ok"), "{stdout}");
}
