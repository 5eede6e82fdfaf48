//! A Job Object with kill-on-close, and the start of a process inside it: the Win32 calls the
//! Windows engine rests on, each behind a small safe function (this file is the engine's only
//! `unsafe` on Windows).
//!
//! Why a job, and why suspended: Windows has no process groups that a kill reaches. A job
//! holds a process and everything it starts (children cannot leave it: breakaway is not
//! allowed), `TerminateJobObject` ends all of them at once, and with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` the kernel ends them when the last handle to the job
//! closes — also when the server is killed, since its handles close with it. A command is
//! created suspended, assigned to its job, then resumed, so not one instruction of it runs (and
//! no child of it starts) outside the job.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectExtendedLimitInformation, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, THREAD_SUSPEND_RESUME};

/// The exit code every process of a terminated job gets (the result says why it ended:
/// timed out or killed).
const TERMINATED_EXIT_CODE: u32 = 1;

/// A Job Object whose processes die when it is terminated or its handle closes.
#[derive(Debug)]
pub(super) struct Job(OwnedHandle);

impl Job {
    /// A new, unnamed job (its handle is not inherited by children) with kill-on-close, and
    /// no crash dialog for its processes (an unhandled exception ends the process instead of
    /// waiting for someone to click a Windows Error Reporting box).
    pub(super) fn new() -> io::Result<Self> {
        // SAFETY: null attributes and name are allowed (an unnamed job, default security).
        #[allow(unsafe_code)]
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new, valid handle that nothing else owns.
        #[allow(unsafe_code)]
        let job = Self(unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) });
        // SAFETY: all-zero is a valid value of this plain C struct (no limits set).
        #[allow(unsafe_code)]
        let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        info.BasicLimitInformation.LimitFlags =
            JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
        let size = u32::try_from(std::mem::size_of_val(&info)).unwrap_or(u32::MAX);
        // SAFETY: the pointer and size describe `info`, which outlives the call.
        #[allow(unsafe_code)]
        let ok = unsafe {
            SetInformationJobObject(
                job.raw(),
                JobObjectExtendedLimitInformation,
                std::ptr::from_ref(&info).cast(),
                size,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }

    fn raw(&self) -> HANDLE {
        self.0.as_raw_handle() as HANDLE
    }

    /// Put the (suspended) process `process` into the job.
    pub(super) fn assign(&self, process: RawHandle) -> io::Result<()> {
        // SAFETY: both handles are valid for the call; `process` belongs to a live `Child`.
        #[allow(unsafe_code)]
        let ok = unsafe { AssignProcessToJobObject(self.raw(), process as HANDLE) };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// End every process in the job now. An error means the job's processes could not be
    /// ended (it is logged; closing the handle still kills them).
    pub(super) fn terminate(&self) {
        // SAFETY: the handle is valid while `self` lives.
        #[allow(unsafe_code)]
        let ok = unsafe { TerminateJobObject(self.raw(), TERMINATED_EXIT_CODE) };
        if ok == 0 {
            tracing::warn!(
                error = %io::Error::last_os_error(),
                "could not terminate a command's job object"
            );
        }
    }
}

/// Resume every thread of the suspended process `pid` (a process created with
/// `CREATE_SUSPENDED` has exactly one: its main thread). Fails when none was resumed.
pub(super) fn resume_process(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of all threads; the handle is checked and owned below.
    #[allow(unsafe_code)]
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE || snapshot.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a valid handle that nothing else owns; closed when this goes.
    #[allow(unsafe_code)]
    let snapshot = unsafe { OwnedHandle::from_raw_handle(snapshot as RawHandle) };
    let raw = snapshot.as_raw_handle() as HANDLE;
    // SAFETY: all-zero is a valid THREADENTRY32; dwSize is set as the API requires.
    #[allow(unsafe_code)]
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = u32::try_from(std::mem::size_of::<THREADENTRY32>()).unwrap_or(u32::MAX);
    let mut resumed = 0usize;
    // SAFETY: `entry` is a valid, sized THREADENTRY32 for every call below.
    #[allow(unsafe_code)]
    let mut more = unsafe { Thread32First(raw, &raw mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: opening a thread by id; the handle is checked and owned below.
            #[allow(unsafe_code)]
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !thread.is_null() {
                // SAFETY: a valid handle that nothing else owns.
                #[allow(unsafe_code)]
                let thread = unsafe { OwnedHandle::from_raw_handle(thread as RawHandle) };
                // SAFETY: the handle has THREAD_SUSPEND_RESUME access.
                #[allow(unsafe_code)]
                let previous = unsafe { ResumeThread(thread.as_raw_handle() as HANDLE) };
                if previous != u32::MAX {
                    resumed += 1;
                }
            }
        }
        // SAFETY: as for Thread32First.
        #[allow(unsafe_code)]
        {
            more = unsafe { Thread32Next(raw, &raw mut entry) } != 0;
        }
    }
    if resumed == 0 {
        return Err(io::Error::other(
            "the command was created suspended but none of its threads could be resumed",
        ));
    }
    Ok(())
}
