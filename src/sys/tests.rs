//! The platform interface's own tests, the same on every platform (run on Linux, and
//! on Windows under Wine by scripts/test-windows.sh): a real child (the fixture server), its
//! pipes, the stderr poller, its exit, and its tree ended. The fixture is `TN_FIXTURE`, or the
//! one cargo builds beside this test binary (`cargo test --workspace` builds it).

#![allow(unsafe_code)]

use super::types::Idle;
use super::*;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn fixture() -> String {
    if let Ok(f) = std::env::var("TN_FIXTURE") {
        return f;
    }
    // target/<triple?>/debug/deps/toolnexus-….exe → target/<triple?>/debug/tn-fixture-server
    let exe = std::env::current_exe().unwrap();
    let dir: PathBuf = exe.parent().and_then(|d| d.parent()).unwrap().into();
    let f = dir.join(format!("tn-fixture-server{}", std::env::consts::EXE_SUFFIX));
    assert!(
        f.is_file(),
        "no fixture server at {} (build it: cargo build -p tn-fixture-server, or set TN_FIXTURE)",
        f.display()
    );
    f.to_string_lossy().into_owned()
}

fn start(args: &[&str]) -> Spawned {
    let program = fixture();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let env = vec![("TN_SYS_TEST".to_string(), "1".to_string())];
    spawn(&Command {
        program: &program,
        args: &args,
        env: &env,
        cwd: None,
    })
    .unwrap()
}

const INIT: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sys-test","version":"1"}}}"#;

fn send(s: &Spawned, line: &[u8]) {
    let never = AtomicBool::new(false);
    s.stdin
        .write_all(
            line,
            b"\n",
            Instant::now() + Duration::from_secs(30),
            &never,
        )
        .unwrap();
}

/// Reads stdout until a whole line has come; returns it.
fn line(out: &OutputPipe, buf: &mut Vec<u8>) -> String {
    loop {
        if let Some(i) = buf.iter().position(|b| *b == b'\n') {
            let l: Vec<u8> = buf.drain(..=i).collect();
            return String::from_utf8_lossy(&l).into_owned();
        }
        buf.reserve(4096);
        let n = out.read_appending(buf).unwrap();
        assert!(
            n > 0,
            "stdout ended before a line: {:?}",
            String::from_utf8_lossy(buf)
        );
    }
}

/// Whether process `pid` exists and has not ended, as the platform layer asks it.
fn pid_alive(pid: u32) -> bool {
    super::imp::process::running(pid)
}

#[test]
fn a_child_answers_ends_at_stdin_eof_and_is_reaped() {
    let s = start(&[]);
    send(&s, INIT);
    let mut buf = Vec::new();
    let reply = line(&s.stdout, &mut buf);
    assert!(reply.contains("\"serverInfo\""), "{reply}");
    assert_eq!(s.child.peek_exit(), None, "running");
    let Spawned {
        child, exit, stdin, ..
    } = s;
    drop(stdin); // the child's end of file: the fixture exits 0
    assert!(
        exit.wait(Duration::from_secs(20)),
        "exited after stdin's end"
    );
    assert_eq!(child.peek_exit(), Some(Exit::Code(0)));
    let (code, leftovers) = child.reap();
    assert_eq!(code, Some(Exit::Code(0)));
    leftovers.end();
}

#[test]
fn stderr_through_the_poller_and_the_exit_code() {
    let s = start(&["--exit-on-init", "7"]);
    let poller = Poller::new().unwrap();
    s.stderr.set_nonblocking().unwrap();
    poller.add(&s.stderr, 42).unwrap();
    send(&s, INIT);
    let mut text = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    'drain: while Instant::now() < deadline {
        let mut tokens = Vec::new();
        poller.wait(&mut tokens).unwrap();
        assert!(tokens.contains(&42), "{tokens:?}");
        loop {
            let mut chunk = [0u8; 1024];
            match s.stderr.read(&mut chunk) {
                Ok(0) => break 'drain,
                Ok(n) => text.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("stderr: {e}"),
            }
        }
    }
    poller.remove(&s.stderr);
    let text = String::from_utf8_lossy(&text);
    assert!(text.contains("fixture: refusing to initialize"), "{text:?}");
    assert!(s.exit.wait(Duration::from_secs(20)));
    let (code, leftovers) = s.child.reap();
    assert_eq!(code, Some(Exit::Code(7)));
    leftovers.end();
}

#[test]
fn the_whole_tree_is_ended_even_when_the_child_ignores_stdin_eof() {
    let s = start(&["--ignore-stdin-eof", "--ignore-sigterm"]);
    send(&s, INIT);
    let mut buf = Vec::new();
    line(&s.stdout, &mut buf);
    send(
        &s,
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"spawn_child","arguments":{}}}"#,
    );
    let reply = line(&s.stdout, &mut buf);
    let grandchild: u32 = reply
        .split("\"text\":\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {reply}"));
    assert!(pid_alive(grandchild), "grandchild {grandchild} running");
    let Spawned {
        child, exit, stdin, ..
    } = s;
    drop(stdin);
    assert!(
        !exit.wait(Duration::from_millis(500)),
        "it ignores its stdin's end"
    );
    assert!(child.stop_tree(Stop::Ask) || child.stop_tree(Stop::Kill));
    if !exit.wait(Duration::from_secs(2)) {
        child.stop_tree(Stop::Kill); // POSIX: it ignores SIGTERM
    }
    assert!(exit.wait(Duration::from_secs(20)), "killed");
    let (code, leftovers) = child.reap();
    assert!(code.is_some());
    leftovers.end();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pid_alive(grandchild) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !pid_alive(grandchild),
        "the grandchild died with its server"
    );
}

#[test]
fn a_write_to_a_child_that_stops_reading_is_bounded() {
    let s = start(&["--stop-reading-after-init"]);
    send(&s, INIT);
    let mut buf = Vec::new();
    line(&s.stdout, &mut buf);
    send(&s, br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    line(&s.stdout, &mut buf);
    // What the child has not read: a line that fits in the pipe, waiting there.
    let small = vec![b' '; 1000];
    send(&s, &small);
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.stdin_probe.unread_bytes().unwrap() < 1001 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        s.stdin_probe.unread_bytes().unwrap(),
        1001,
        "bytes wait in the pipe"
    );
    let big = vec![b'x'; 4 << 20];
    let never = AtomicBool::new(false);
    let t0 = Instant::now();
    let e = s
        .stdin
        .write_all(
            &big,
            b"\n",
            Instant::now() + Duration::from_millis(300),
            &never,
        )
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let given_up = AtomicBool::new(true);
    let e = s
        .stdin
        .write_all(
            &big,
            b"\n",
            Instant::now() + Duration::from_secs(60),
            &given_up,
        )
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    assert!(s.child.stop_tree(Stop::Kill));
    assert!(s.exit.wait(Duration::from_secs(20)));
    let (_, leftovers) = s.child.reap();
    leftovers.end();
}

#[test]
fn sockets_send_wait_and_peek_at_an_idle_connection() {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let sock = net::start_connect(&addr).unwrap();
    let (mut server, _) = l.accept().unwrap();
    assert!(net::finish_connect(&sock, Duration::from_secs(10)).unwrap());
    assert_eq!(net::peek_idle(&sock), Idle::Quiet, "nothing sent yet");
    assert!(!net::wait(&sock, false, Duration::from_millis(50)).unwrap());
    assert!(
        net::wait(&sock, true, Duration::from_secs(5)).unwrap(),
        "writable"
    );
    assert_eq!(net::send(&sock, b"ping").unwrap(), 4);
    let mut got = [0u8; 4];
    server.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ping");
    server.write_all(b"x").unwrap();
    assert!(
        net::wait(&sock, false, Duration::from_secs(5)).unwrap(),
        "readable"
    );
    assert_eq!(net::peek_idle(&sock), Idle::Data);
    assert_eq!(net::peek_idle(&sock), Idle::Data, "a peek consumes nothing");
    let mut one = [0u8; 1];
    (&sock).read_exact(&mut one).unwrap(); // blocking again after the peek
    drop(server);
    let deadline = Instant::now() + Duration::from_secs(5);
    while net::peek_idle(&sock) != Idle::Closed && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(net::peek_idle(&sock), Idle::Closed, "the server closed it");
    // A send buffer that fills: WouldBlock, never a block (the peer reads nothing).
    let sock = net::start_connect(&addr).unwrap();
    let (_quiet_server, _) = l.accept().unwrap();
    assert!(net::finish_connect(&sock, Duration::from_secs(10)).unwrap());
    let chunk = vec![0u8; 64 * 1024];
    let t0 = Instant::now();
    let mut blocked = false;
    for _ in 0..4096 {
        match net::send(&sock, &chunk) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                blocked = true;
                break;
            }
            Err(e) => panic!("send: {e}"),
        }
    }
    assert!(blocked, "the send buffer filled (256 MiB sent?)");
    assert!(t0.elapsed() < Duration::from_secs(20));
}
