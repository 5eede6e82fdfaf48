//! A real `haproxy` (Debian's package) in front of servers on loopback: started with the
//! backend it is given, on a free port, with its configuration in a temporary folder, never as
//! a system service. Self-contained (the bench `benches/replicas_throughput.rs` includes this
//! file by path). `redis.rs` finds the program (`required_program`).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// How long a start may take on a busy machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running haproxy.
pub(crate) struct Haproxy {
    _child: Child,
    /// `http://127.0.0.1:PORT`
    pub(crate) url: String,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// `program` with one frontend on a free loopback port and one backend, `backend` (its
    /// lines, servers included); returns once it accepts connections.
    pub(crate) async fn start(program: &Path, backend: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = format!(
            "global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n  timeout check 5s\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n{backend}"
        );
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let child = Command::new(program)
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start haproxy");
        // Listening once a connection is accepted (haproxy prints no ready line).
        let listening = tokio::time::timeout(START_TIMEOUT, async {
            while tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_err()
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(listening.is_ok(), "haproxy did not start listening");
        Self {
            _child: child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }
}
