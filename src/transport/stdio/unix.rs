//! stdin and stdout on Unix (Linux and macOS): driven by the runtime's reactor when they are
//! a pipe or a Unix socket, tokio's blocking stdio otherwise.
//!
//! A pipe or a Unix socket is what MCP clients give a server they launch (Python and Rust
//! clients use pipes, Node's use socket pairs). Driven by the reactor, like any socket, a read
//! or write is one non-blocking syscall when epoll/kqueue says it is ready; tokio's own
//! `stdin()`/`stdout()` hand every read and write to a blocking-pool thread instead, which
//! costs two thread wake-ups per message. Anything else (a terminal, a regular file) keeps
//! tokio's blocking stdio, which works for all.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use tokio::net::unix::pipe;

use super::{BoxReader, BoxWriter};

#[cfg(target_os = "linux")]
use super::linux::grow_pipe;

/// Pipes cannot be resized on other Unixes (`F_SETPIPE_SZ` is Linux's): the kernel's size.
#[cfg(not(target_os = "linux"))]
fn grow_pipe(_fd: &OwnedFd) {}

/// The process's stdin, and what it is ("pipe", "unix socket" or "blocking").
pub(super) fn stdin() -> (BoxReader, &'static str) {
    driven(
        io::stdin().as_fd(),
        |fd| pipe::Receiver::from_owned_fd(fd).map(|rx| Box::new(rx) as BoxReader),
        |stream| Box::new(stream) as BoxReader,
        || Box::new(tokio::io::stdin()) as BoxReader,
    )
}

/// The process's stdout, and what it is ("pipe", "unix socket" or "blocking").
pub(super) fn stdout() -> (BoxWriter, &'static str) {
    driven(
        io::stdout().as_fd(),
        |fd| {
            grow_pipe(&fd);
            pipe::Sender::from_owned_fd(fd).map(|tx| Box::new(tx) as BoxWriter)
        },
        |stream| Box::new(stream) as BoxWriter,
        || Box::new(tokio::io::stdout()) as BoxWriter,
    )
}

/// `fd` as the reactor drives it (a pipe end or a Unix socket), else the `blocking` form;
/// with what it is, for the log. One body for stdin and stdout, which differ only in the
/// pipe type and the blocking fallback.
fn driven<T>(
    fd: BorrowedFd<'_>,
    pipe: impl FnOnce(OwnedFd) -> io::Result<T>,
    socket: impl FnOnce(tokio::net::UnixStream) -> T,
    blocking: impl FnOnce() -> T,
) -> (T, &'static str) {
    match pollable(fd) {
        Some(Pollable::Pipe(fd)) => match pipe(fd) {
            Ok(end) => (end, "pipe"),
            Err(_) => (blocking(), "blocking"),
        },
        Some(Pollable::Socket(stream)) => (socket(stream), "unix socket"),
        None => (blocking(), "blocking"),
    }
}

/// A stdio descriptor the reactor can drive.
enum Pollable {
    /// A duplicate of a pipe end (tokio's pipe types check the direction and set
    /// non-blocking mode).
    Pipe(OwnedFd),
    /// A Unix socket, already non-blocking and registered with the reactor.
    Socket(tokio::net::UnixStream),
}

/// What `fd` is, when the reactor can drive it: a pipe or a Unix socket. `None` for anything
/// else (a terminal, a regular file, a TCP socket) or on any error.
///
/// A descriptor that is also stderr (`2>&1`, or one socket for all three as inetd does)
/// stays blocking: non-blocking mode belongs to the open file, and the blocking writers of
/// stderr (logs, `eprintln!`) must never see EAGAIN.
fn pollable(fd: BorrowedFd<'_>) -> Option<Pollable> {
    use nix::sys::socket::{AddressFamily, SockaddrLike, SockaddrStorage, getsockname};
    use nix::sys::stat::{SFlag, fstat};
    if same_file(fd, io::stderr().as_fd()) {
        return None;
    }
    let kind = SFlag::from_bits_truncate(fstat(fd).ok()?.st_mode) & SFlag::S_IFMT;
    if kind == SFlag::S_IFIFO {
        return fd.try_clone_to_owned().ok().map(Pollable::Pipe);
    }
    if kind != SFlag::S_IFSOCK
        || getsockname::<SockaddrStorage>(fd.as_raw_fd())
            .ok()?
            .family()
            != Some(AddressFamily::Unix)
    {
        return None;
    }
    let stream = std::os::unix::net::UnixStream::from(fd.try_clone_to_owned().ok()?);
    stream.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(stream)
        .ok()
        .map(Pollable::Socket)
}

/// Whether two descriptors refer to the same file (device and inode).
fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    use nix::sys::stat::fstat;
    match (fstat(a), fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}
