//! A real `redis-server` (Debian's package) for the tests and the bench: started on loopback on
//! a free port with its files in a temporary folder, never as a system service; stopped and
//! started again on the same port (a Redis outage and its return). Self-contained (the bench
//! `benches/replicas.rs` includes this file by path).
//!
//! CI installs the package (`.ci/run`, pinned) and sets `TOOLPORT_REQUIRE_REDIS=1`: then a
//! missing `redis-server` fails the test; locally a test without it says so and skips.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a start may take on a busy machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// `redis-server` on `PATH` (or `/usr/bin`), or `None` after saying why the test skips (a
/// panic in CI, which requires it).
pub(crate) fn redis_server() -> Option<PathBuf> {
    required_program("redis-server", "/usr/bin")
}

/// A Debian program the replica tests need, on `PATH` or in `dir`, or `None` after saying why
/// the test skips; with `TOOLPORT_REQUIRE_REDIS` (CI) a missing one fails the test.
pub(crate) fn required_program(name: &str, dir: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .chain([PathBuf::from(dir)])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("TOOLPORT_REQUIRE_REDIS").is_none(),
            "{name} is not installed: .ci/run installs it (apt, pinned)"
        );
        eprintln!("not run: {name} is not installed (apt-get install {name})");
    }
    found
}

/// A port free on loopback now (the OS picks it; the listener is closed before the server
/// binds it).
pub(crate) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A running `redis-server`.
pub(crate) struct Redis {
    program: PathBuf,
    child: Option<Child>,
    pub(crate) port: u16,
    dir: tempfile::TempDir,
}

impl Redis {
    /// Start one on a free port.
    pub(crate) async fn start(program: PathBuf) -> Self {
        let mut redis = Self {
            program,
            child: None,
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
        };
        redis.resume().await;
        redis
    }

    /// `redis://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stop it (SIGKILL: an outage, not a goodbye) and wait until it is gone.
    pub(crate) async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.unwrap();
        }
    }

    /// Start it again on the same port, empty (no persistence), once it accepts connections.
    pub(crate) async fn resume(&mut self) {
        let mut child = Command::new(&self.program)
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--logfile",
                "",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start redis-server");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(START_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("Ready to accept connections") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(ready, Ok(true), "redis-server did not start");
        // Keep reading its log, so a full pipe never blocks it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.child = Some(child);
    }
}
