//! Linux only: the stdout pipe is grown, so a large answer goes into it in one write.

use std::os::fd::OwnedFd;

/// How large the stdout pipe is made: a 1 MiB answer (read_file's default limit) then goes
/// into the pipe in one write, instead of sixteen 64 KiB rounds that each wait for the client
/// to read. 1 MiB is Linux's default `pipe-max-size` for unprivileged processes.
const STDOUT_PIPE_BYTES: i32 = 1 << 20;

/// Make the stdout pipe [`STDOUT_PIPE_BYTES`] large; a refusal (a lower limit, or the
/// user's pipe quota used up) keeps the kernel's size, which only costs speed.
pub(super) fn grow_pipe(fd: &OwnedFd) {
    use nix::fcntl::{FcntlArg, fcntl};
    if let Err(error) = fcntl(fd, FcntlArg::F_SETPIPE_SZ(STDOUT_PIPE_BYTES)) {
        tracing::debug!(%error, "the stdout pipe keeps its size");
    }
}
