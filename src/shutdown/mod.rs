//! When the server is told to stop: [`signal`] resolves on the operating system's stop
//! requests, and serving then cancels every call in flight (running commands are killed with
//! their process trees) before the process exits.
//!
//! What counts as a stop request differs per OS, so each has its own file:
//! - `unix.rs`: SIGINT (Ctrl-C) and SIGTERM (a client or supervisor stopping the server);
//! - `windows.rs`: the console's control events — Ctrl-C, Ctrl-Break, the console window
//!   closed, the user logging off, the system shutting down.

#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
pub(crate) use unix::signal;
#[cfg(windows)]
pub(crate) use windows::signal;
