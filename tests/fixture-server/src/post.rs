//! HTTP mode: the answer to one POST, as JSON or as an SSE stream.

use crate::net::Stream;
use crate::opts;
use crate::out::{request_line, Out};
use crate::session::{log_dropped, Session};
use crate::wire::{body_head, event_chunk, head, priming_chunk, sse_head, trim_nl, LAST_CHUNK};
use serde_json::Value;
use std::cell::RefCell;
use std::io::Write;
use std::sync::mpsc::Receiver;
use std::thread;
use std::time::Duration;

// ---------------------------------------------------------------------------
// The answer to one POST
// ---------------------------------------------------------------------------

#[derive(PartialEq, Eq)]
pub enum Mode {
    /// Nothing sent yet.
    Undecided,
    /// An event stream is open.
    Sse,
    /// The answer is complete.
    Done,
}

pub struct PostState {
    pub mode: Mode,
    pub w: Vec<u8>,
    pub broken: bool,
}

pub struct PostOut<'a> {
    pub sock: &'a Stream,
    pub session: &'a Session,
    pub close: bool,
    /// The modern era: no session header, no priming event, 400/404 for modern errors.
    pub modern: bool,
    pub st: RefCell<PostState>,
}

impl PostOut<'_> {
    fn sid(&self) -> Option<&str> {
        (!self.modern).then_some(self.session.id.as_str())
    }

    /// Write `st.w` (in `pieces` parts, 50 ms apart).
    fn flush(&self, st: &mut PostState, pieces: usize) {
        if st.broken {
            return;
        }
        let mut s = self.sock;
        let step = st.w.len().div_ceil(pieces).max(1);
        for (i, piece) in st.w.chunks(step).enumerate() {
            if i > 0 {
                thread::sleep(Duration::from_millis(50));
            }
            if s.write_all(piece).is_err() {
                st.broken = true;
                return;
            }
        }
    }

    /// Append the SSE head and priming event if the stream is not open yet.
    /// False when the answer is already complete.
    fn open_stream(&self, st: &mut PostState) -> bool {
        match st.mode {
            Mode::Done => false,
            Mode::Sse => true,
            Mode::Undecided => {
                sse_head(&mut st.w, self.sid(), self.close);
                if !self.modern {
                    priming_chunk(&mut st.w, self.session.next_event_id(), None);
                }
                st.mode = Mode::Sse;
                true
            }
        }
    }

    /// Events for each line of `lines` (each ending in '\n').
    fn events(&self, st: &mut PostState, lines: &[u8]) {
        for line in lines.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            event_chunk(&mut st.w, self.session.next_event_id(), line);
        }
    }

    /// Build the complete answer into `st.w`; false if there already was one.
    fn answer(&self, st: &mut PostState, line: &[u8]) -> bool {
        st.w.clear();
        if st.mode == Mode::Undecided && !opts().sse_all {
            let body = trim_nl(line);
            let status = if self.modern {
                crate::modern::http_status(body)
            } else {
                200
            };
            head(&mut st.w, status, self.sid(), self.close);
            body_head(&mut st.w, Some("application/json"), body.len());
            st.w.extend_from_slice(body);
        } else {
            if !self.open_stream(st) {
                eprintln!("fixture: a second answer to one request dropped");
                return false;
            }
            self.events(st, line);
            st.w.extend_from_slice(LAST_CHUNK);
        }
        st.mode = Mode::Done;
        true
    }
}

impl Out for PostOut<'_> {
    fn emit(&self, lines: &[u8]) {
        let st = &mut *self.st.borrow_mut();
        st.w.clear();
        if !self.open_stream(st) {
            eprintln!("fixture: a message after the answer dropped");
            return;
        }
        self.events(st, lines);
        self.flush(st, 1);
    }

    fn respond(&self, line: &[u8]) {
        let st = &mut *self.st.borrow_mut();
        if self.answer(st, line) {
            self.flush(st, 1);
        }
    }

    fn respond_in_pieces(&self, line: &[u8]) {
        let st = &mut *self.st.borrow_mut();
        if self.answer(st, line) {
            self.flush(st, 4);
        }
    }

    fn respond_truncated(&self, partial: &[u8]) {
        let st = &mut *self.st.borrow_mut();
        st.w.clear();
        if st.mode == Mode::Undecided && !opts().sse_all {
            head(&mut st.w, 200, self.sid(), self.close);
            body_head(&mut st.w, Some("application/json"), partial.len() + 64);
        } else {
            if !self.open_stream(st) {
                return;
            }
            st.w.extend_from_slice(format!("{:x}\r\n", partial.len() + 64).as_bytes());
        }
        st.w.extend_from_slice(partial);
        st.mode = Mode::Done;
        self.flush(st, 1);
    }

    fn request(&self, method: &str, params: Option<&Value>) -> Receiver<Value> {
        let (id, rx) = self.session.pending.register();
        let mut line = Vec::with_capacity(256);
        request_line(&mut line, id, method, params);
        let st = &mut *self.st.borrow_mut();
        st.w.clear();
        if self.open_stream(st) {
            self.events(st, &line);
            self.flush(st, 1);
        } else {
            self.session.pending.forget(id);
            log_dropped(method);
        }
        rx
    }

    fn unrelated_request(&self, method: &str, params: Option<&Value>) -> Option<Receiver<Value>> {
        self.session.unrelated_request(method, params)
    }
}
