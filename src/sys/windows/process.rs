//! Child processes on Windows: the child and everything it starts in a Job Object of its own,
//! which the system kills whole when its last handle closes (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE:
//! the handle is ours alone, so the tree dies with the host even when the host is killed);
//! started suspended and resumed only once it is in the job, so not even its first grandchild
//! can escape. A program is found through PATH and PATHEXT as a shell would, so that `npx` and
//! `uvx` (`.cmd` launchers) start; std's `Command` runs a `.cmd`/`.bat` through `cmd.exe` with
//! its arguments escaped for it (the BatBadBut fix, Rust 1.77), and refuses arguments it
//! cannot escape safely.
//!
//! There is no signal to ask a console program to stop (a Ctrl+Break needs a console shared
//! with the host): the ask is stdin's end of file, as on POSIX before SIGTERM, and
//! [`Stop::Ask`] then terminates the job as [`Stop::Kill`] does.

use super::pipe;
use crate::sys::types::{Exit, Stop};
use crate::sys::{Command, Spawned};
use std::ffi::OsString;
use std::io;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::os::windows::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, OpenThread, ResumeThread, TerminateProcess, WaitForSingleObject,
    CREATE_NO_WINDOW, CREATE_SUSPENDED, THREAD_SUSPEND_RESUME,
};

/// The exit code of processes we terminate (TerminateProcess and TerminateJobObject take one;
/// 1 is what Task Manager and `taskkill /f` use).
const TERMINATED: u32 = 1;

/// See [`crate::sys::Child`].
pub struct Child {
    child: std::process::Child,
    job: Job,
}

/// See [`crate::sys::ExitWatch`]: a second handle to the leader, waited on.
pub struct ExitWatch {
    process: OwnedHandle,
}

/// See [`crate::sys::Leftovers`]: the job, with whatever is still in it.
pub struct Leftovers {
    job: Job,
}

/// A Job Object that kills its processes when its (only) handle closes.
struct Job(OwnedHandle);

impl Job {
    fn new() -> io::Result<Job> {
        // SAFETY: no attributes (not inheritable), no name; the result is checked.
        let h = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if h.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a handle just created and owned by nobody else.
        let job = Job(unsafe { OwnedHandle::from_raw_handle(h as RawHandle) });
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        // Kill on close; and a process that crashes dies at once rather than waiting in an
        // error-reporting dialog nobody sees.
        limits.BasicLimitInformation.LimitFlags =
            JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
        // SAFETY: `limits` is the structure this information class takes, its size given.
        let ok = unsafe {
            SetInformationJobObject(
                job.raw(),
                JobObjectExtendedLimitInformation,
                std::ptr::addr_of!(limits).cast(),
                std::mem::size_of_val(&limits) as u32,
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

    fn assign(&self, child: &std::process::Child) -> io::Result<()> {
        // SAFETY: both handles are open (the job is ours, the child unreaped).
        if unsafe { AssignProcessToJobObject(self.raw(), child.as_raw_handle() as HANDLE) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// How many of the job's processes have not ended.
    fn active(&self) -> u32 {
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: `info` is the structure this information class fills, its size given.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
                JobObjectBasicAccountingInformation,
                std::ptr::addr_of_mut!(info).cast(),
                std::mem::size_of_val(&info) as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            // Unknown: say one, so that the caller terminates the job to be sure.
            return 1;
        }
        info.ActiveProcesses
    }

    /// Terminates every process of the job; true when the call succeeded.
    fn terminate(&self) -> bool {
        // SAFETY: the job handle is open; terminating it affects only its own processes.
        unsafe { TerminateJobObject(self.raw(), TERMINATED) != 0 }
    }
}

pub fn spawn(command: &Command<'_>) -> io::Result<Spawned> {
    let (child_stdin, stdin, stdin_probe) = pipe::stdin_pipe()?;
    let (stdout, child_stdout) = pipe::output_pipe()?;
    let (stderr, child_stderr) = pipe::output_pipe()?;
    let job = Job::new()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create a job object: {e}")))?;
    let program = find_program(command);
    let mut cmd = std::process::Command::new(&program);
    cmd.args(command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::from(child_stdin))
        .stdout(Stdio::from(child_stdout))
        .stderr(Stdio::from(child_stderr))
        // Suspended until it is in the job; no console window of its own (a GUI host would
        // otherwise show one per server), yet a console for its own console children.
        .creation_flags(CREATE_SUSPENDED | CREATE_NO_WINDOW);
    if let Some(dir) = command.cwd {
        cmd.current_dir(dir);
    }
    let spawned = cmd.spawn();
    drop(cmd); // closes our copies of the child's ends
    let mut child = spawned?;
    if let Err(e) = job.assign(&child).and_then(|()| resume(child.id())) {
        // SAFETY: the child is ours and unreaped; it never ran (or is in the job).
        unsafe { TerminateProcess(child.as_raw_handle() as HANDLE, TERMINATED) };
        let _ = child.wait();
        return Err(io::Error::new(
            e.kind(),
            format!("cannot put the process in its job object: {e}"),
        ));
    }
    let exit = ExitWatch {
        process: child.as_handle().try_clone_to_owned()?,
    };
    Ok(Spawned {
        child: Child { child, job },
        exit,
        stdin,
        stdin_probe,
        stdout,
        stderr,
    })
}

/// Resumes the threads of the suspended process `pid` (it has one: its main thread).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of the system's threads; the result is checked.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snap == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just created and owned by nobody else.
    let snap = unsafe { OwnedHandle::from_raw_handle(snap as RawHandle) };
    let snap = snap.as_raw_handle() as HANDLE;
    let mut entry = THREADENTRY32 {
        dwSize: std::mem::size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    let mut resumed = 0;
    // SAFETY: `entry` is a THREADENTRY32 with its size set, as the walk requires.
    let mut more = unsafe { Thread32First(snap, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: opens one thread of our own child; the result is checked.
            let t = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !t.is_null() {
                // SAFETY: a handle just opened and owned by nobody else.
                let t = unsafe { OwnedHandle::from_raw_handle(t as RawHandle) };
                // SAFETY: resuming a thread we opened with THREAD_SUSPEND_RESUME.
                if unsafe { ResumeThread(t.as_raw_handle() as HANDLE) } != u32::MAX {
                    resumed += 1;
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snap, &mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other("its main thread was not found to resume"));
    }
    Ok(())
}

/// The program to start: a name without a path is looked up in the directories of PATH (the
/// child's, when the configuration sets one), trying it with each extension of PATHEXT unless
/// it has one of them already, as `cmd.exe` does; so `npx` finds `npx.cmd`. A relative path is
/// taken from the child's working directory (as on POSIX). Nothing found: the name as given,
/// for std to report.
fn find_program(command: &Command<'_>) -> PathBuf {
    let var = |name: &str| -> Option<OsString> {
        match command
            .env
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
        {
            Some((_, v)) => Some(v.into()),
            None => std::env::var_os(name),
        }
    };
    let pathext = var("PATHEXT")
        .and_then(|p| p.into_string().ok())
        .unwrap_or_else(|| ".COM;.EXE;.BAT;.CMD".into());
    let exts: Vec<&str> = pathext
        .split(';')
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .collect();
    let program = Path::new(command.program);
    let candidates = |base: &Path| -> Vec<PathBuf> {
        let has_ext = base
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| exts.iter().any(|x| x[1..].eq_ignore_ascii_case(e)));
        if has_ext {
            vec![base.to_path_buf()]
        } else {
            exts.iter()
                .map(|x| {
                    let mut s = base.as_os_str().to_owned();
                    s.push(x);
                    PathBuf::from(s)
                })
                .collect()
        }
    };
    let has_dir = command.program.contains(['/', '\\']) || program.is_absolute();
    if has_dir {
        let base = match command.cwd {
            Some(dir) if program.is_relative() => Path::new(dir).join(program),
            _ => program.to_path_buf(),
        };
        return candidates(&base)
            .into_iter()
            .find(|c| c.is_file())
            .unwrap_or(base);
    }
    if let Some(path) = var("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.as_os_str().is_empty() {
                continue;
            }
            if let Some(found) = candidates(&dir.join(program))
                .into_iter()
                .find(|c| c.is_file())
            {
                return found;
            }
        }
    }
    program.to_path_buf()
}

impl Child {
    pub fn peek_exit(&self) -> Option<Exit> {
        exit_of(self.child.as_raw_handle() as HANDLE)
    }

    /// Terminates the whole job, whichever `how` (see the module's note on asking).
    pub fn stop_tree(&self, how: Stop) -> bool {
        let _ = how;
        self.job.active() > 0 && self.job.terminate()
    }

    pub fn reap(mut self) -> (Option<Exit>, Leftovers) {
        let exit = self
            .child
            .wait()
            .ok()
            .and_then(|s| s.code())
            .map(Exit::Code);
        (exit, Leftovers { job: self.job })
    }
}

/// The exit of process `h` if it has ended (the handle keeps its id from being reused).
fn exit_of(h: HANDLE) -> Option<Exit> {
    // SAFETY: a zero-time wait on an open process handle.
    if unsafe { WaitForSingleObject(h, 0) } != WAIT_OBJECT_0 {
        return None;
    }
    let mut code = 0u32;
    // SAFETY: an open process handle and an out-pointer to a local.
    if unsafe { GetExitCodeProcess(h, &mut code) } == 0 {
        return None;
    }
    Some(Exit::Code(code as i32))
}

impl ExitWatch {
    /// Waits on the process handle itself: the wake-up is the exit.
    pub fn wait(&self, within: Duration) -> bool {
        let h = self.process.as_raw_handle() as HANDLE;
        // SAFETY: a bounded wait on an open process handle.
        unsafe { WaitForSingleObject(h, super::millis(within)) == WAIT_OBJECT_0 }
    }
}

impl Leftovers {
    /// What of the tree outlived its leader is terminated, and waited for (at most 500 ms;
    /// closing the job's handle then kills anything left in it anyway).
    pub fn end(self) {
        if self.job.active() == 0 {
            return;
        }
        self.job.terminate();
        let deadline = Instant::now() + Duration::from_millis(500);
        while self.job.active() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Whether process `pid` exists and has not ended. Tests ask it of a child's descendants.
#[cfg(test)]
pub fn running(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_TIMEOUT};
    use windows_sys::Win32::System::Threading::{
        OpenProcess, WaitForSingleObject, PROCESS_SYNCHRONIZE,
    };
    // SAFETY: opens a process by id for waiting only; the handle is closed below.
    let h = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid) };
    if h.is_null() {
        return false;
    }
    // SAFETY: a zero-time wait on the handle just opened, then its close.
    unsafe {
        let alive = WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
        CloseHandle(h);
        alive
    }
}
