//! HTTP mode: MCP streamable HTTP (2025-11-25) on `/mcp`, one thread per
//! connection, HTTP/1.1 keep-alive.
//!
//! A POST's answer is `application/json`, unless something else has to go
//! out first (a server request tied to the call, a notification) or
//! `--sse-all` is given: then the answer is a `text/event-stream` (chunked,
//! a priming event first) that ends after the response. Server requests tied
//! to no client request go only on the standalone GET stream and are dropped
//! when none is open, as the TypeScript SDK's transport does.

use crate::modern::{self, RpcError};
use crate::net::{self, Stream};
use crate::opts;
use crate::out::error_line;
use crate::post::{Mode, PostOut, PostState};
use crate::proto::{self, Msg};
use crate::session::{self, log_request, EventStream, LogEntry, Session};
use crate::tools;
use crate::wire::{body_head, head, priming_chunk, read_body, read_head, sse_head, trim_nl, Req};
use serde_json::Value;
use std::cell::RefCell;
use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

const SUPPORTED_VERSIONS: &[&str] = &[
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
    "2024-10-07",
];

pub fn run(addr: &str) -> ! {
    if let Some(path) = &opts().log {
        if let Err(e) = session::open_log(path) {
            eprintln!("fixture: cannot open log {path:?}: {e}");
            process::exit(2);
        }
    }
    let tls = opts().tls.as_ref().map(|(cert, key)| {
        net::tls_config(cert, key).unwrap_or_else(|e| {
            eprintln!("fixture: TLS: {e}");
            process::exit(2);
        })
    });
    let listener = TcpListener::bind(addr).unwrap_or_else(|e| {
        eprintln!("fixture: cannot listen on {addr}: {e}");
        process::exit(2);
    });
    let local = listener.local_addr().unwrap_or_else(|e| {
        eprintln!("fixture: no local address: {e}");
        process::exit(2);
    });
    {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "listening on {scheme}://{local}/mcp").and_then(|()| out.flush());
    }
    for conn in listener.incoming() {
        let stream = conn.and_then(|sock| Stream::new(sock, tls.as_ref()));
        match stream {
            Ok(stream) => {
                let spawned = thread::Builder::new()
                    .name("conn".into())
                    .spawn(move || Conn::new(stream).serve());
                if let Err(e) = spawned {
                    eprintln!("fixture: spawn failed: {e}");
                }
            }
            Err(e) => eprintln!("fixture: accept: {e}"),
        }
    }
    process::exit(0)
}

// ---------------------------------------------------------------------------
// One connection
// ---------------------------------------------------------------------------

struct Conn {
    reader: BufReader<Stream>,
    req: Req,
    line: String,
    /// Response bytes.
    w: Vec<u8>,
    /// Message bytes.
    buf: Vec<u8>,
}

impl Conn {
    fn new(sock: Stream) -> Self {
        Conn {
            reader: BufReader::with_capacity(16 * 1024, sock),
            req: Req::default(),
            line: String::new(),
            w: Vec::with_capacity(4096),
            buf: Vec::with_capacity(4096),
        }
    }

    fn sock(&self) -> &Stream {
        self.reader.get_ref()
    }

    fn serve(mut self) {
        self.serve_requests();
        self.sock().close();
    }

    fn serve_requests(&mut self) {
        loop {
            match read_head(&mut self.reader, &mut self.req, &mut self.line) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    if e.kind() == io::ErrorKind::InvalidData {
                        self.simple(400, None, b"");
                    }
                    return;
                }
            }
            if self.req.expect_continue {
                let _ = self.sock().write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
            }
            if read_body(&mut self.reader, &mut self.req, &mut self.line).is_err() {
                return;
            }
            let keep = if self.req.path != "/mcp" {
                self.simple(404, None, b"");
                true
            } else {
                match self.req.method.as_str() {
                    "GET" | "DELETE" if self.modern_get() => {
                        self.log(None, None, None);
                        let body = br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Method not allowed."},"id":null}"#;
                        self.simple(405, Some("Allow: POST\r\n"), body);
                        true
                    }
                    "POST" => self.post(),
                    "GET" => self.get(),
                    "DELETE" => self.delete(),
                    _ => {
                        self.log(None, None, None);
                        self.simple(405, Some("Allow: GET, POST, DELETE\r\n"), b"");
                        true
                    }
                }
            };
            if !keep || self.req.close {
                return;
            }
            if self.req.body.capacity() > (1 << 20) {
                self.req.body = Vec::new();
            }
        }
    }

    fn write(&self, bytes: &[u8]) -> bool {
        let mut s = self.sock();
        s.write_all(bytes).is_ok()
    }

    /// A response with an optional extra header line and a body (JSON if not empty).
    fn simple(&mut self, code: u16, extra: Option<&str>, body: &[u8]) {
        let mut w = std::mem::take(&mut self.w);
        head(&mut w, code, None, self.req.close);
        if let Some(h) = extra {
            w.extend_from_slice(h.as_bytes());
        }
        body_head(
            &mut w,
            (!body.is_empty()).then_some("application/json"),
            body.len(),
        );
        w.extend_from_slice(body);
        self.write(&w);
        self.w = w;
    }

    /// An error response whose body is a JSON-RPC error.
    fn rpc_error(&mut self, code: u16, rpc_code: i64, message: &str) {
        let mut b = std::mem::take(&mut self.buf);
        error_line(&mut b, &Value::Null, rpc_code, message);
        self.simple(code, None, trim_nl(&b));
        self.buf = b;
    }

    fn log(&self, rpc: Option<&str>, id: Option<&Value>, kind: Option<&str>) {
        self.log_params(rpc, id, kind, None);
    }

    fn log_params(
        &self,
        rpc: Option<&str>,
        id: Option<&Value>,
        kind: Option<&str>,
        params: Option<&Value>,
    ) {
        let q = &self.req;
        log_request(&LogEntry {
            http: &q.method,
            rpc,
            id,
            kind,
            session: q.session.as_deref(),
            protocol_version: q.protocol.as_deref(),
            last_event_id: q.last_event_id.as_deref(),
            params,
            mcp_method: q.mcp_method.as_deref(),
            mcp_name: q.mcp_name.as_deref(),
        });
    }

    /// The session the request names: 400 without one, 404 for an unknown one.
    fn session(&mut self) -> Option<Arc<Session>> {
        let Some(id) = self.req.session.as_deref() else {
            self.rpc_error(
                400,
                -32000,
                "Bad Request: Mcp-Session-Id header is required",
            );
            return None;
        };
        match session::find(id) {
            Some(s) => Some(s),
            None => {
                self.rpc_error(404, -32001, "Session not found");
                None
            }
        }
    }

    fn post(&mut self) -> bool {
        let batch = self.req.body.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'[');
        let msg = proto::parse_message(&self.req.body);
        match &msg {
            Msg::Request { method, id, params } => {
                self.log_params(Some(method), Some(id), Some("request"), params.as_ref())
            }
            Msg::Notification { method, params } => {
                self.log_params(Some(method), None, Some("notification"), params.as_ref())
            }
            Msg::Response(m) => self.log(None, m.get("id"), Some("response")),
            Msg::Invalid(id) => self.log(None, Some(id), None),
            Msg::Neither | Msg::Bad => self.log(None, None, None),
        }
        if !(self.req.accept_json && self.req.accept_sse) {
            let m =
                "Not Acceptable: Client must accept both application/json and text/event-stream";
            self.rpc_error(406, -32000, m);
            return true;
        }
        if !self.req.json_body {
            let m = "Unsupported Media Type: Content-Type must be application/json";
            self.rpc_error(415, -32000, m);
            return true;
        }
        if self.modern_post(&msg) {
            return self.modern(msg);
        }
        let session = match &msg {
            Msg::Request { method, .. } if method == "initialize" => session::create(),
            Msg::Bad if batch => {
                self.rpc_error(400, -32600, "Invalid Request: batches are not supported");
                return true;
            }
            Msg::Bad => {
                self.rpc_error(400, -32700, "Parse error: Invalid JSON");
                return true;
            }
            _ => match self.session() {
                Some(s) => s,
                None => return true,
            },
        };
        if let Some(v) = self.req.protocol.as_deref() {
            if !SUPPORTED_VERSIONS.contains(&v) {
                let m = format!(
                    "Bad Request: Unsupported protocol version: {v} (supported versions: {})",
                    SUPPORTED_VERSIONS.join(", ")
                );
                self.rpc_error(400, -32000, &m);
                return true;
            }
        }
        match msg {
            Msg::Request { method, id, params } => self.call(&session, &method, id, params),
            Msg::Notification { method, params } => {
                proto::notification(&session.state, &method, params);
                self.simple(202, None, b"");
                true
            }
            Msg::Response(m) => {
                session.pending.route(m);
                self.simple(202, None, b"");
                true
            }
            Msg::Invalid(_) | Msg::Neither | Msg::Bad => {
                self.rpc_error(400, -32600, "Invalid Request");
                true
            }
        }
    }

    /// Serve a request on this POST; false when the connection must close.
    fn call(&mut self, session: &Session, method: &str, id: Value, params: Option<Value>) -> bool {
        let body = std::mem::take(&mut self.req.body);
        let keep = self.serve_request(session, false, |out, buf| {
            proto::request(out, &session.state, buf, method, id, params, &body)
        });
        self.req.body = body;
        keep
    }

    /// Answer on this POST with `f`'s answer (and its blocking tool's, if it hands one back).
    fn serve_request(
        &mut self,
        session: &Session,
        modern: bool,
        f: impl FnOnce(&PostOut, &mut Vec<u8>) -> Option<tools::Blocking>,
    ) -> bool {
        let out = PostOut {
            sock: self.reader.get_ref(),
            session,
            close: self.req.close,
            modern,
            st: RefCell::new(PostState {
                mode: Mode::Undecided,
                w: std::mem::take(&mut self.w),
                broken: false,
            }),
        };
        if let Some(b) = f(&out, &mut self.buf) {
            tools::run(&out, b);
        }
        let st = out.st.into_inner();
        self.w = st.w;
        if st.broken {
            return false;
        }
        if st.mode != Mode::Done {
            // No answer (a silent tool): hold the request open until the client leaves.
            let _ = self.reader.fill_buf();
            return false;
        }
        true
    }

    fn get(&mut self) -> bool {
        self.log(None, None, None);
        if !self.req.accept_sse {
            let m = "Not Acceptable: Client must accept text/event-stream";
            self.rpc_error(406, -32000, m);
            return true;
        }
        let Some(session) = self.session() else {
            return true;
        };
        if let Some(code) = opts().get_status {
            let allow = (code == 405).then_some("Allow: POST, DELETE\r\n");
            self.simple(code, allow, b"");
            return true;
        }
        let Ok(clone) = self.sock().try_clone() else {
            return false;
        };
        let stream = Arc::new(EventStream::new(clone));
        let mut w = std::mem::take(&mut self.w);
        sse_head(&mut w, Some(&session.id), false);
        priming_chunk(&mut w, session.next_event_id(), opts().get_retry);
        let attached = session.attach_get(&stream, &w);
        self.w = w;
        if !attached {
            let m = "Conflict: Only one SSE stream is allowed per session";
            self.rpc_error(409, -32000, m);
            return true;
        }
        self.hold_get(&session, &stream)
    }

    /// Wait while the standalone GET stream is open: until the client goes
    /// away, `--get-close-after-ms` passes, or the client sends its next request.
    fn hold_get(&mut self, session: &Session, stream: &Arc<EventStream>) -> bool {
        let deadline = opts()
            .get_close_after_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms));
        let keep = loop {
            let timeout = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => break true,
                },
                None => None,
            };
            if self.sock().set_read_timeout(timeout).is_err() {
                break false;
            }
            match self.reader.fill_buf() {
                Ok([]) => {
                    session.detach_get(stream);
                    stream.abandon();
                    return false;
                }
                Ok(_) => break true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    break true
                }
                Err(_) => break false,
            }
        };
        session.detach_get(stream);
        stream.end();
        keep && self.sock().set_read_timeout(None).is_ok()
    }

    /// A modern `subscriptions/listen` (`--live`): an event stream that starts with the
    /// acknowledgement and carries each list change, held until the client closes it.
    fn listen(&mut self, id: Value, params: Option<&Value>) -> bool {
        let filter = crate::live::Filter::honoured(params);
        let Ok(clone) = self.sock().try_clone() else {
            return false;
        };
        let stream = Arc::new(EventStream::new(clone));
        let mut w = std::mem::take(&mut self.w);
        w.clear();
        sse_head(&mut w, None, false);
        crate::wire::event_chunk(
            &mut w,
            crate::live::next_event_id(),
            &crate::live::acknowledgement(&id, &filter),
        );
        let ok = crate::live::add_listener(id, filter, stream.clone(), &w);
        self.w = w;
        if !ok {
            return false;
        }
        let _ = self.sock().set_read_timeout(None);
        loop {
            match self.reader.fill_buf() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                _ => break,
            }
        }
        crate::live::remove_listener(&stream);
        stream.abandon();
        false
    }

    fn delete(&mut self) -> bool {
        self.log(None, None, None);
        let Some(session) = self.session() else {
            return true;
        };
        session::remove(&session.id);
        self.simple(200, None, b"");
        true
    }

    // -----------------------------------------------------------------------
    // The modern era (`--modern`, `--dual`): stateless, no GET, header checks
    // -----------------------------------------------------------------------

    fn modern_header(&self) -> bool {
        self.req.protocol.as_deref() == Some(modern::VERSION)
    }

    /// A GET or DELETE answered 405: always with `--modern`, with `--dual` when it names
    /// the modern version.
    fn modern_get(&self) -> bool {
        opts().modern || (opts().dual && self.modern_header())
    }

    /// Whether a POST is served in the modern era.
    fn modern_post(&self, msg: &Msg) -> bool {
        let claims = match msg {
            Msg::Request { params, .. } | Msg::Notification { params, .. } => {
                modern::claim(params.as_ref()).is_some()
            }
            _ => false,
        };
        opts().modern || (opts().dual && (claims || self.modern_header()))
    }

    /// A JSON-RPC error (with the request's id) as an HTTP error.
    fn modern_error(&mut self, status: u16, id: &Value, e: &RpcError) -> bool {
        let line = e.line(id);
        self.simple(status, None, trim_nl(&line));
        true
    }

    /// The -32020 for headers that disagree with the body, if they do.
    fn header_mismatch(&self, method: &str, params: Option<&Value>) -> Option<RpcError> {
        let q = &self.req;
        let bad = |what: String, header: &str| {
            let m = format!("Bad Request: the request headers and body disagree: {what}");
            let data = serde_json::json!({"mismatch": {"header": header}});
            Some(RpcError::new(-32020, m, Some(data)))
        };
        match q.protocol.as_deref() {
            Some(modern::VERSION) => {}
            other => {
                let what = format!(
                    "the body envelope names protocol version {} but the MCP-Protocol-Version header is {}",
                    modern::VERSION,
                    other.unwrap_or("absent")
                );
                return bad(what, "MCP-Protocol-Version");
            }
        }
        if q.mcp_method.as_deref() != Some(method) {
            let what = format!(
                "the body names method {method} but the Mcp-Method header is {:?}",
                q.mcp_method
            );
            return bad(what, "Mcp-Method");
        }
        // SEP-2243: Mcp-Name repeats a tools/call's name and a resources/read's URI (and, with
        // --resources, a prompts/get's name).
        let named = match method {
            "tools/call" => Some("name"),
            "resources/read" => Some("uri"),
            "prompts/get" if opts().resources => Some("name"),
            _ => None,
        };
        if let Some(key) = named {
            let name = params.and_then(|p| p.get(key)).and_then(Value::as_str);
            if q.mcp_name.as_deref() != name {
                let what = format!(
                    "the body carries params.{key}={name:?} but the Mcp-Name header is {:?}",
                    q.mcp_name
                );
                return bad(what, "Mcp-Name");
            }
        }
        None
    }

    /// Serve a modern POST: no session; errors before dispatch are HTTP 400.
    fn modern(&mut self, msg: Msg) -> bool {
        if let Msg::Notification { method, params } = &msg {
            crate::resources::notified(method, params.as_ref()); // a cancelled fx://slow read
        }
        let (method, id, params) = match msg {
            Msg::Request { method, id, params } => (method, id, params),
            Msg::Notification { .. } | Msg::Response(_) => {
                self.simple(202, None, b"");
                return true;
            }
            Msg::Bad => {
                self.rpc_error(400, -32700, "Parse error: Invalid JSON");
                return true;
            }
            Msg::Invalid(_) | Msg::Neither => {
                self.rpc_error(400, -32600, "Invalid Request");
                return true;
            }
        };
        let p = params.as_ref();
        let claim = modern::claim(p);
        let early = if method != "initialize" && claim.is_none() && self.modern_header() {
            let m = format!(
                "Invalid params: the MCP-Protocol-Version header names protocol revision {}, but the request is missing the required per-request envelope key(s): _meta",
                modern::VERSION
            );
            let data = serde_json::json!({"envelope": {"missing": ["_meta"]}});
            Some(RpcError::new(-32602, m, Some(data)))
        } else if method == "initialize" || claim.and_then(Value::as_str) != Some(modern::VERSION) {
            modern::check_envelope(&method, p).err()
        } else {
            self.header_mismatch(&method, p)
                .or_else(|| modern::check_envelope(&method, p).err())
        };
        if let Some(e) = early {
            return self.modern_error(400, &id, &e);
        }
        if method == "subscriptions/listen" && crate::live::listen_enabled() {
            return self.listen(id, params.as_ref());
        }
        let session = session::ephemeral();
        self.serve_request(&session, true, |out, buf| {
            modern::request(out, &session.state, buf, &method, id, params)
        })
    }
}
