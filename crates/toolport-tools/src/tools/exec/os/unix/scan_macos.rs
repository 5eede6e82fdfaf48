//! Finding a command's processes on macOS, where there is no child subreaper and no `/proc`:
//! every process of the machine is listed (`proc_listallpids`), those started since the
//! command began are kept (`proc_pidinfo`, one call each), and the scope of those is read
//! from their environment (`sysctl(KERN_PROCARGS2)`, [`super::procargs`]). A process that
//! left the command's group (`setsid`, a daemon's double fork) still carries the scope, so it
//! is found wherever it was reparented.
//!
//! What is not found: a process that cleared or replaced its environment (`env -i`, or
//! `TOOLPORT_SCOPE` rewritten), and one whose environment this user may not read (another
//! user's, after a set-user-ID program). Only built and type-checked here (no macOS machine):
//! the parser is tested on every system.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::procargs;

/// Every process id on the machine, but this one's.
pub(super) fn all_pids() -> Vec<i32> {
    // SAFETY: a null buffer asks for the number of processes.
    #[allow(unsafe_code)]
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    let Ok(count) = usize::try_from(count) else {
        return Vec::new();
    };
    // Room for processes started between the two calls.
    let mut pids = vec![0 as libc::pid_t; count + 64];
    let bytes = i32::try_from(std::mem::size_of_val(pids.as_slice())).unwrap_or(i32::MAX);
    // SAFETY: the buffer and its size in bytes describe `pids`.
    #[allow(unsafe_code)]
    let filled = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    let Ok(filled) = usize::try_from(filled) else {
        return Vec::new();
    };
    pids.truncate(filled.min(pids.len()));
    let own = i32::try_from(std::process::id()).unwrap_or(0);
    pids.retain(|pid| *pid > 0 && *pid != own);
    pids
}

/// When `pid` started; `None` when it is gone or cannot be inspected.
pub(super) fn start_time(pid: i32) -> Option<SystemTime> {
    // SAFETY: all-zero is a valid proc_bsdinfo (plain integers and byte arrays).
    #[allow(unsafe_code)]
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = i32::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: the buffer and its size describe `info`.
    #[allow(unsafe_code)]
    let got = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            std::ptr::from_mut(&mut info).cast(),
            size,
        )
    };
    if got != size {
        return None;
    }
    Some(
        UNIX_EPOCH
            + Duration::from_secs(info.pbi_start_tvsec)
            + Duration::from_micros(info.pbi_start_tvusec),
    )
}

/// The value of `var` in the environment of `pid`; `None` when it has none, is gone, or its
/// arguments cannot be read.
pub(super) fn env_var(pid: i32, var: &str) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; arg_max()];
    let mut len = buf.len();
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    // SAFETY: `mib` names the query; the buffer and `len` describe `buf`.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buf.as_mut_ptr().cast(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    procargs::env_var(&buf[..len.min(buf.len())], var).map(<[u8]>::to_vec)
}

/// The most bytes a process's arguments and environment take (`kern.argmax`).
fn arg_max() -> usize {
    /// macOS's usual value, if the query fails.
    const DEFAULT_ARG_MAX: usize = 1024 * 1024;
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>();
    let mut mib = [libc::CTL_KERN, libc::KERN_ARGMAX];
    // SAFETY: `mib` names the query; the buffer and `len` describe `value`.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            2,
            std::ptr::from_mut(&mut value).cast(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc == 0 {
        usize::try_from(value).unwrap_or(DEFAULT_ARG_MAX)
    } else {
        DEFAULT_ARG_MAX
    }
}
