//! HTTP mode: the wire. Request heads and bodies (Content-Length or
//! chunked), response heads, and SSE events as HTTP chunks.

use crate::net::Stream;
use std::io::{self, BufRead, BufReader, Read, Write};

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

#[derive(Default)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub content_length: usize,
    pub chunked: bool,
    pub accept_json: bool,
    pub accept_sse: bool,
    pub json_body: bool,
    pub session: Option<String>,
    pub protocol: Option<String>,
    pub last_event_id: Option<String>,
    /// `Mcp-Method` and `Mcp-Name` (decoded from `=?base64?…?=`), as sent.
    pub mcp_method: Option<String>,
    pub mcp_name: Option<String>,
    pub close: bool,
    pub expect_continue: bool,
    pub body: Vec<u8>,
}

/// Whether `hay` contains the ASCII-lowercase `needle`, ignoring ASCII case.
fn contains_ci(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

fn bad_input(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Read one line (without its CRLF) into `line`; false at EOF.
fn read_line(r: &mut BufReader<Stream>, line: &mut String) -> io::Result<bool> {
    line.clear();
    if r.by_ref().take(64 * 1024).read_line(line)? == 0 {
        return Ok(false);
    }
    if !line.ends_with('\n') {
        return Err(bad_input("line too long or cut"));
    }
    while line.ends_with(['\r', '\n']) {
        line.pop();
    }
    Ok(true)
}

/// A SEP-2243 header value: `=?base64?…?=` decoded (UTF-8), anything else as is.
fn header_value(v: &str) -> String {
    let Some(b64) = v
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    else {
        return v.to_owned();
    };
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::with_capacity(b64.len());
    for c in b64.bytes().take_while(|&c| c != b'=') {
        let d = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return v.to_owned(),
        };
        bits = (bits << 6) | u32::from(d);
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| v.to_owned())
}

pub fn read_head(r: &mut BufReader<Stream>, q: &mut Req, line: &mut String) -> io::Result<bool> {
    // Tolerate blank lines before a request line (RFC 9112 2.2).
    loop {
        if !read_line(r, line)? {
            return Ok(false);
        }
        if !line.is_empty() {
            break;
        }
    }
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad_input("bad request line"));
    };
    q.method.clear();
    q.method.push_str(method);
    q.path.clear();
    q.path.push_str(target.split('?').next().unwrap_or(""));
    q.close = version == "HTTP/1.0";
    q.content_length = 0;
    q.chunked = false;
    q.accept_json = false;
    q.accept_sse = false;
    q.json_body = false;
    q.session = None;
    q.protocol = None;
    q.last_event_id = None;
    q.mcp_method = None;
    q.mcp_name = None;
    q.expect_continue = false;
    loop {
        if !read_line(r, line)? {
            return Err(bad_input("eof in head"));
        }
        if line.is_empty() {
            return Ok(true);
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad_input("bad header"));
        };
        let value = value.trim();
        let is = |n: &str| name.eq_ignore_ascii_case(n);
        if is("content-length") {
            q.content_length = value.parse().map_err(|_| bad_input("bad length"))?;
        } else if is("transfer-encoding") {
            q.chunked = contains_ci(value, "chunked");
        } else if is("accept") {
            q.accept_json |= contains_ci(value, "application/json");
            q.accept_sse |= contains_ci(value, "text/event-stream");
        } else if is("content-type") {
            q.json_body = contains_ci(value, "application/json");
        } else if is("mcp-session-id") {
            q.session = Some(value.to_owned());
        } else if is("mcp-protocol-version") {
            q.protocol = Some(value.to_owned());
        } else if is("mcp-method") {
            q.mcp_method = Some(header_value(value));
        } else if is("mcp-name") {
            q.mcp_name = Some(header_value(value));
        } else if is("last-event-id") {
            q.last_event_id = Some(value.to_owned());
        } else if is("connection") {
            if contains_ci(value, "close") {
                q.close = true;
            } else if contains_ci(value, "keep-alive") {
                q.close = false;
            }
        } else if is("expect") {
            q.expect_continue = value.eq_ignore_ascii_case("100-continue");
        }
    }
}

pub fn read_body(r: &mut BufReader<Stream>, q: &mut Req, line: &mut String) -> io::Result<()> {
    q.body.clear();
    if !q.chunked {
        q.body.resize(q.content_length, 0);
        return r.read_exact(&mut q.body);
    }
    loop {
        if !read_line(r, line)? {
            return Err(bad_input("eof in chunked body"));
        }
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| bad_input("bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while read_line(r, line)? && !line.is_empty() {}
            return Ok(());
        }
        let start = q.body.len();
        q.body.resize(start + size, 0);
        r.read_exact(&mut q.body[start..])?;
        read_line(r, line)?;
    }
}

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        409 => "Conflict",
        415 => "Unsupported Media Type",
        _ => "Status",
    }
}

/// Status line and the headers every response has.
pub fn head(w: &mut Vec<u8>, code: u16, session: Option<&str>, close: bool) {
    w.clear();
    let _ = write!(w, "HTTP/1.1 {code} {}\r\n", reason(code));
    if let Some(id) = session {
        w.extend_from_slice(b"Mcp-Session-Id: ");
        w.extend_from_slice(id.as_bytes());
        w.extend_from_slice(b"\r\n");
    }
    if close {
        w.extend_from_slice(b"Connection: close\r\n");
    }
}

pub fn sse_head(w: &mut Vec<u8>, session: Option<&str>, close: bool) {
    head(w, 200, session, close);
    w.extend_from_slice(
        b"Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
}

/// Finish the head with a body of `len` bytes (content type if any).
pub fn body_head(w: &mut Vec<u8>, content_type: Option<&str>, len: usize) {
    if let Some(ct) = content_type {
        let _ = write!(w, "Content-Type: {ct}\r\n");
    }
    let _ = write!(w, "Content-Length: {len}\r\n\r\n");
}

pub fn trim_nl(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

// ---------------------------------------------------------------------------
// SSE over chunked transfer encoding
// ---------------------------------------------------------------------------

/// Append one HTTP chunk holding `event: message`, `id:` and `data:` (one line).
pub fn event_chunk(out: &mut Vec<u8>, event_id: u64, data: &[u8]) {
    let id_len = event_id.checked_ilog10().unwrap_or(0) as usize + 1;
    let len = "event: message\nid: ".len() + id_len + "\ndata: ".len() + data.len() + 2;
    let _ = write!(out, "{len:x}\r\nevent: message\nid: {event_id}\ndata: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n\r\n");
}

/// Append the priming event (an `id:`, an optional `retry:`, empty `data:`) as one chunk.
pub fn priming_chunk(out: &mut Vec<u8>, event_id: u64, retry: Option<u64>) {
    let mut ev = format!("id: {event_id}\n");
    if let Some(ms) = retry {
        ev.push_str(&format!("retry: {ms}\n"));
    }
    ev.push_str("data: \n\n");
    out.extend_from_slice(format!("{:x}\r\n{ev}\r\n", ev.len()).as_bytes());
}

pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";
