//! The platform interface's own tests on POSIX (Linux and macOS), written against
//! `sys` alone (real child processes, POSIX shell commands); `tests.rs` holds the ones every
//! platform runs against the fixture server.

use super::*;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn sh(script: &str) -> Spawned {
    let args = ["-c".to_string(), script.to_string()];
    spawn(&Command {
        program: "sh",
        args: &args,
        env: &[("TN_SYS_TEST".into(), "yes".into())],
        cwd: Some("/"),
    })
    .expect("spawn sh")
}

/// Everything `pipe` says until end of file.
fn read_all(pipe: &OutputPipe) -> String {
    let mut buf = Vec::with_capacity(4096);
    while pipe.read_appending(&mut buf).unwrap() > 0 {
        buf.reserve(4096);
    }
    String::from_utf8(buf).unwrap()
}

#[test]
fn exit_is_peeked_without_reaping_then_reaped() {
    let s = sh("echo \"$TN_SYS_TEST $(pwd)\"; exit 3");
    assert_eq!(read_all(&s.stdout), "yes /\n", "env and cwd as configured");
    assert!(s.exit.wait(Duration::from_secs(10)), "the exit is seen");
    // Peeking does not reap: the same answer twice, and the leader is still there to reap.
    assert_eq!(s.child.peek_exit(), Some(Exit::Code(3)));
    assert_eq!(s.child.peek_exit(), Some(Exit::Code(3)));
    let (exit, leftovers) = s.child.reap();
    assert_eq!(exit, Some(Exit::Code(3)));
    leftovers.end();
}

#[test]
fn the_exit_wakes_the_wait_at_once() {
    let s = sh("sleep 0.3");
    assert_eq!(s.child.peek_exit(), None);
    assert!(!s.exit.wait(Duration::from_millis(50)), "not yet");
    let t0 = Instant::now();
    assert!(s.exit.wait(Duration::from_secs(20)));
    // Generous: a loaded machine; what matters is that it is not the 20 s bound.
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    s.child.reap().1.end();
}

#[test]
fn stop_tree_asks_then_kills() {
    // The shell ignores SIGTERM; its child `sleep` does not.
    let s = sh("trap '' TERM; sleep 30; sleep 30");
    std::thread::sleep(Duration::from_millis(200));
    assert!(s.child.stop_tree(Stop::Ask));
    assert!(!s.exit.wait(Duration::from_millis(300)), "SIGTERM ignored");
    assert!(s.child.stop_tree(Stop::Kill));
    assert!(s.exit.wait(Duration::from_secs(10)));
    let (exit, leftovers) = s.child.reap();
    #[cfg(unix)]
    assert_eq!(exit, Some(Exit::Signal(libc::SIGKILL)));
    leftovers.end();
}

#[test]
fn stdin_writes_are_bounded_and_never_break_the_pipe() {
    // A child that never reads: the pipe fills, the write gives up at its deadline.
    let s = sh("sleep 30");
    let big = vec![b'x'; 1 << 20];
    let never = AtomicBool::new(false);
    let t0 = Instant::now();
    let e = s
        .stdin
        .write_all(
            &big,
            b"\n",
            Instant::now() + Duration::from_millis(200),
            &never,
        )
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert!(
        s.stdin_probe.unread_bytes().unwrap() > 0,
        "the pipe holds what was written"
    );
    // Given up: no wait at all.
    let closing = AtomicBool::new(true);
    let t0 = Instant::now();
    let e = s
        .stdin
        .write_all(
            &big,
            b"",
            Instant::now() + Duration::from_secs(30),
            &closing,
        )
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(s.child.stop_tree(Stop::Kill));
    assert!(s.exit.wait(Duration::from_secs(10)));
    s.child.reap().1.end();
    // A child that is gone: the pipe still has a reader (the probe), so a write is not a
    // broken pipe (no EPIPE, no SIGPIPE), and what was written stays unread.
    let s = sh("exit 0");
    assert!(s.exit.wait(Duration::from_secs(10)));
    s.stdin
        .write_all(
            b"late",
            b"\n",
            Instant::now() + Duration::from_secs(5),
            &never,
        )
        .expect("a write after the child died");
    assert_eq!(s.stdin_probe.unread_bytes().unwrap(), 5);
    s.child.reap().1.end();
}

#[test]
fn the_poller_reports_data_and_the_end_level_triggered() {
    let s = sh("printf 'one two' >&2; sleep 0.2; printf ' three' >&2");
    let poller = Poller::new().unwrap();
    s.stderr.set_nonblocking().unwrap();
    poller.add(&s.stderr, 7).unwrap();
    let mut got = Vec::new();
    let mut tokens = Vec::new();
    let mut woken_with_data_left = false;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "the end never came: {got:?}");
        tokens.clear();
        poller.wait(&mut tokens).unwrap();
        assert!(tokens.iter().all(|t| *t == 7), "{tokens:?}");
        // Three bytes a wake-up: level-triggered, the rest is reported again.
        let mut buf = [0u8; 3];
        match s.stderr.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if n == 3 && got.len() < 7 {
                    woken_with_data_left = true;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(String::from_utf8(got).unwrap(), "one two three");
    assert!(woken_with_data_left);
    poller.remove(&s.stderr);
    assert!(s.exit.wait(Duration::from_secs(10)));
    s.child.reap().1.end();
}

#[test]
fn a_missing_program_is_an_error() {
    let e = spawn(&Command {
        program: "/nonexistent/prog",
        args: &[],
        env: &[],
        cwd: None,
    })
    .err()
    .expect("no such program");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
}

#[test]
fn owner_only_files() {
    let dir = std::env::temp_dir().join(format!("tn-sys-fs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("secret");
    fs::open_owner_only(
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true),
        &path,
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
