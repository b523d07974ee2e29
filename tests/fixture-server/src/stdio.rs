//! stdio mode: newline-delimited JSON-RPC on stdin/stdout.
//!
//! The main thread reads stdin. Fast tools are answered inline (no thread
//! spawn); tools that block (elicitation, `slow`, server->client requests)
//! run on their own thread so many calls can be in flight at once. Responses
//! from the client to server-initiated requests are routed back to the waiting
//! thread through a pending map (id -> `mpsc::Sender`).

use crate::modern;
use crate::opts;
use crate::out::{send_error, Stdio, STDIO_PENDING};
use crate::proto::{self, Msg, State};
use crate::session::{self, log_message};
use crate::tools;
use crate::util::skip_ws;
use std::io::{self, BufRead};
use std::process;
use std::thread;
use std::time::Duration;

struct Server {
    state: State,
    buf: Vec<u8>,
    /// Set once stdout is closed (`--stdout-close-after-init`): every later
    /// input line is discarded unread.
    discard: bool,
}

impl Server {
    fn handle_line(&mut self, line: &[u8]) {
        let out = &Stdio;
        match proto::parse_message(line) {
            Msg::Request { method, id, params } => {
                log_message(&method, Some(&id), "request", params.as_ref());
                let blocking = if modern::is_modern(params.as_ref()) {
                    match modern::check_envelope(&method, params.as_ref()) {
                        Ok(()) => {
                            modern::request(out, &self.state, &mut self.buf, &method, id, params)
                        }
                        Err(e) => {
                            modern::send_rpc_error(out, &id, &e);
                            if let Some(ms) = opts()
                                .exit_after_refusal_ms
                                .filter(|_| method == "initialize")
                            {
                                // As an rmcp server's `main` does: the refusal written, nothing
                                // more read, the process gone a little later.
                                eprintln!("fixture: refused initialize; exiting in {ms} ms");
                                thread::sleep(Duration::from_millis(ms));
                                process::exit(1);
                            }
                            None
                        }
                    }
                } else {
                    proto::request(out, &self.state, &mut self.buf, &method, id, params, line)
                };
                if let Some(b) = blocking {
                    let id_copy = b.id.clone();
                    let spawned = thread::Builder::new()
                        .name(format!("tool-{}", b.name))
                        .spawn(move || tools::run(&Stdio, b));
                    if let Err(e) = spawned {
                        let msg = format!("spawn failed: {e}");
                        send_error(out, &mut self.buf, &id_copy, -32603, &msg);
                    }
                }
                if method == "tools/list" {
                    self.after_list();
                }
            }
            Msg::Notification { method, params } => {
                log_message(&method, None, "notification", params.as_ref());
                proto::notification(&self.state, &method, params);
            }
            Msg::Response(msg) => {
                log_message("", msg.get("id"), "response", None);
                STDIO_PENDING.route(msg);
            }
            Msg::Invalid(id) => send_error(out, &mut self.buf, &id, -32600, "Invalid Request"),
            Msg::Neither => eprintln!("fixture: message with neither method nor id"),
            Msg::Bad => eprintln!("fixture: bad line"),
        }
    }

    /// `--stdout-close-after-init` / `--close-stdin-after-init` act once the client has its
    /// tool list (closing earlier would make the client's connect fail instead).
    fn after_list(&mut self) {
        let o = opts();
        if o.stdout_close_after_init {
            // SAFETY: closing a descriptor we own; the main thread
            // writes nothing more because `discard` is set.
            unsafe { libc::close(1) };
            self.discard = true;
            eprintln!("fixture: closed stdout");
        }
        if o.close_stdin_after_init {
            // SAFETY: the main thread (us) is the only stdin reader,
            // and it never reads again.
            unsafe { libc::close(0) };
            eprintln!("fixture: closed stdin");
            sleep_forever();
        }
        if o.stop_reading_after_init {
            eprintln!("fixture: no longer reading stdin");
            sleep_forever();
        }
    }
}

pub fn sleep_forever() -> ! {
    loop {
        thread::sleep(Duration::from_secs(3600));
    }
}

/// stdin reached EOF (or failed): exit 0, unless told to linger.
fn stdin_ended(server: &Server) -> ! {
    if opts().ignore_stdin_eof || server.discard {
        sleep_forever();
    }
    #[cfg(unix)]
    if let Some(ms) = opts().stdout_outlives_exit_ms {
        use std::os::unix::process::CommandExt;
        // A `sleep` in its own process group keeps our stdout open: the client reads EOF only
        // after this process is gone (and reaped), and the group kill does not reach it.
        let spawned = process::Command::new("sleep")
            .arg(format!("{}.{:03}", ms / 1000, ms % 1000))
            .stdin(process::Stdio::null())
            .stderr(process::Stdio::null())
            .process_group(0)
            .spawn();
        if let Err(e) = spawned {
            eprintln!("fixture: cannot start sleep: {e}");
        }
    }
    process::exit(0);
}

pub fn run() -> ! {
    if let Some(path) = &opts().log {
        if let Err(e) = session::open_log(path) {
            eprintln!("fixture: cannot open log {path:?}: {e}");
            process::exit(2);
        }
    }
    let mut server = Server {
        state: State::default(),
        buf: Vec::with_capacity(4096),
        discard: false,
    };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut line: Vec<u8> = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => stdin_ended(&server),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("fixture: stdin error: {e}");
                stdin_ended(&server);
            }
        }
        if server.discard {
            continue;
        }
        let start = skip_ws(&line, 0);
        if start == line.len() {
            continue; // blank line
        }
        server.handle_line(&line[start..]);
        if line.capacity() > (1 << 20) {
            line = Vec::with_capacity(4096);
        }
    }
}
