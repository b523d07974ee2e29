//! The library's insides as the coverage-guided fuzz targets reach them (`fuzz/`):
//! built only with the `fuzzing` feature, never in a shipped library. Each function runs one
//! piece of the library on bytes and returns what it made of them as plain data; the targets
//! hold the invariants (no panic, one path agreeing with its twin, the same verdict however the
//! bytes are split).

use serde_json::Value;
use std::time::Duration;

/// What the direct path's HTTP/1.1 reader made of a response: the final head (status, framing,
/// whether the connection may be reused), the decoded body, whether the body ended, the bytes
/// after it, and the error that stopped it.
#[derive(Debug, PartialEq)]
pub struct HttpOutcome {
    pub head: Option<(u16, String, bool)>,
    pub body: Vec<u8>,
    pub body_done: bool,
    pub left_over: usize,
    pub error: Option<String>,
}

/// Feeds `input` to the response reader in pieces of the sizes `cuts` gives (the rest at
/// once), then ends the connection.
pub fn http_response(input: &[u8], cuts: &[usize]) -> HttpOutcome {
    use crate::transport::http::{body::BodyDecoder, head::HeadReader};
    let mut out = HttpOutcome {
        head: None,
        body: Vec::new(),
        body_done: false,
        left_over: 0,
        error: None,
    };
    let mut heads = HeadReader::default();
    let mut body: Option<BodyDecoder> = None;
    let mut buf = Vec::new();
    let mut rest = input;
    let mut cuts = cuts.iter();
    while !rest.is_empty() {
        let n = cuts.next().map_or(rest.len(), |&c| c.clamp(1, rest.len()));
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        if body.is_none() {
            match heads.take(&mut buf) {
                Ok(None) => continue,
                Ok(Some(h)) => {
                    out.head = Some((h.status, format!("{:?}", h.framing), h.keep_alive));
                    body = Some(BodyDecoder::new(h.framing));
                }
                Err(e) => {
                    out.error = Some(e);
                    return out;
                }
            }
        }
        let Some(b) = body.as_mut() else { continue };
        if b.done() {
            break;
        }
        match b.decode(&buf, &mut out.body) {
            Ok(used) => {
                buf.drain(..used);
            }
            Err(e) => {
                out.error = Some(e);
                return out;
            }
        }
        if b.done() {
            break;
        }
    }
    match body.as_mut() {
        Some(b) => {
            if !b.done() {
                if let Err(e) = b.eof() {
                    out.error = Some(e);
                }
            }
            out.body_done = b.done();
        }
        // The connection ended mid-head: the same final judgement however the bytes came.
        None if !buf.is_empty() => {
            out.error = Some(heads.at_eof(&buf));
            return out;
        }
        None => {}
    }
    out.left_over = buf.len() + rest.len();
    out
}

/// One server-sent event.
#[derive(Debug, PartialEq)]
pub struct SseEvent {
    pub data: Option<String>,
    pub id: Option<String>,
    pub retry: Option<u64>,
    pub event: Option<String>,
}

/// The events of `input` (each capped at `max` bytes) fed in pieces of the sizes `cuts` gives,
/// and the error that stopped the stream.
pub fn sse(input: &[u8], max: usize, cuts: &[usize]) -> (Vec<SseEvent>, Option<String>) {
    let mut p = crate::transport::sse::EventParser::new(max);
    let mut events = Vec::new();
    let mut rest = input;
    let mut cuts = cuts.iter();
    let mut error = None;
    while !rest.is_empty() && error.is_none() {
        let n = cuts.next().map_or(rest.len(), |&c| c.clamp(1, rest.len()));
        error = p.feed(&rest[..n], &mut events).err();
        rest = &rest[n..];
    }
    let events = events
        .into_iter()
        .map(|e| SseEvent {
            data: e.data,
            id: e.id,
            retry: e.retry,
            event: e.event,
        })
        .collect();
    (events, error)
}

/// The JSON-RPC messages in an event's data (or a reply body).
pub fn messages(data: &str) -> Vec<String> {
    crate::transport::sse::messages(data)
}

/// Whether a connection's reader refuses `line` as a message (§5: skipped and counted).
pub fn refused_by_reader(line: &[u8]) -> bool {
    crate::json::rpc::line_kind(line) == crate::json::rpc::LineKind::Invalid
}

/// Whether the hot-path scanner takes `line` for a JSON object.
pub fn scanned_object(line: &[u8]) -> bool {
    crate::json::scan::top_level(line).is_some()
}

/// What the reader's validating pass notes of a line: the texts of its top-level `result` and
/// `error`, whether it must be parsed instead, and a common-shape result's `isError` and text
/// part literals. None when the line is refused.
pub type Noted = (
    Option<String>,
    Option<String>,
    bool,
    Option<(bool, Vec<String>)>,
);

pub fn scanned_members(line: &[u8]) -> Option<Noted> {
    let m = crate::json::scan::top_level(line)?.members;
    let text = |r: std::ops::Range<usize>| String::from_utf8_lossy(&line[r]).into_owned();
    Some((
        m.result().map(text),
        m.error().map(text),
        m.parse_instead,
        m.text_result
            .as_ref()
            .map(|t| (t.is_error, t.texts().map(text).collect())),
    ))
}

/// The scanner's members of a JSON object's text (key and value texts).
pub fn scanned_entries(text: &str) -> Option<Vec<(String, String)>> {
    crate::json::scan::entries(text).map(|v| {
        v.into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    })
}

/// A JSON string literal as the scanner decodes it.
pub fn scanned_string(raw: &str) -> Option<String> {
    crate::json::scan::decode_string(raw).map(|c| c.into_owned())
}

/// Whether `text` is already what serde_json writes (then it is passed on as it is).
pub fn canonical(text: &str) -> bool {
    crate::json::canon::canonical(text)
}

/// A value as the library writes JSON text.
pub fn to_text(v: &Value) -> String {
    crate::json::to_text(v)
}

/// The tools of a `tools/list` page (each name and its §0.1 rendering) and its cursor, read by
/// position (`fast`, None when the page is not canonical) or parsed into values.
pub type Page = (Vec<(Option<String>, Vec<u8>)>, Option<String>);

pub fn listing(line: &str, fast: bool) -> Option<Page> {
    let crate::mapping::listing::Page { tools, cursor, .. } = if fast {
        crate::mapping::listing::page(line)?
    } else {
        crate::mapping::listing::parsed_page(line).ok()?
    };
    let tools = tools
        .iter()
        .map(|t| {
            let mut out = Vec::new();
            t.write(&mut out, "s_t", "s", "t");
            (t.name().map(|n| n.into_owned()), out)
        })
        .collect();
    Some((tools, cursor))
}

/// A `tools/call` result shaped into a ToolResult (§1): from the value, or from the response
/// line on the borrowed fast path (None when that path declines).
pub fn shaped(result: &Value) -> String {
    crate::mapping::shape::tool_result(result)
}

pub fn shaped_line(line: &str) -> Option<String> {
    crate::mapping::shape::from_response(line).ok()
}

/// Parses a config (§2); what matters is that it returns.
pub fn config(text: &str) {
    let _ = crate::config::parse(text);
}

struct Accepting;

impl crate::responder::Resolver for Accepting {
    fn call(&self, _: &str, token: crate::responder::Token) -> crate::responder::ResolverReturn {
        let _ = crate::responder::answer(token, r#"{"ok":true,"data":{"a":1}}"#);
        crate::responder::ResolverReturn::Resolved
    }
}

/// Files one inbound line on a connection with a resolver that accepts (§4, §5).
pub fn inbound_line(line: &[u8]) {
    use std::sync::{Arc, OnceLock};
    static CONN: OnceLock<Arc<crate::conn::Conn>> = OnceLock::new();
    let conn = CONN.get_or_init(|| {
        crate::conn::Conn::new(Arc::new(crate::host::server_requests::Answering {
            live: Some(crate::host::Host {
                resolver: Arc::new(Accepting),
                elicitation_timeout: Duration::from_secs(5),
                owner: u64::MAX,
                active: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            }),
        }))
    });
    conn.on_line_carried(line, None);
}
