//! SSE helpers around the `sse-stream` parser: a cap on one event's size (so a server cannot
//! make us buffer an endless event), and turning an event's data into JSON-RPC messages.

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::value::RawValue;

/// Counts the bytes of the event being received (since the last blank line); CR, LF and CRLF
/// all end a line, as in the SSE grammar.
#[derive(Default)]
pub struct EventCap {
    line_len: usize,
    event_len: usize,
    last: u8,
}

impl EventCap {
    /// Feeds a chunk; Err once the current event is longer than `max` bytes.
    pub fn feed(&mut self, chunk: &[u8], max: usize) -> Result<(), String> {
        for &b in chunk {
            match b {
                b'\n' if self.last == b'\r' => {}
                b'\n' | b'\r' => {
                    if self.line_len == 0 {
                        self.event_len = 0; // a blank line ends the event
                    }
                    self.line_len = 0;
                }
                _ => {
                    self.line_len += 1;
                    self.event_len += 1;
                }
            }
            self.last = b;
            if self.event_len > max {
                return Err(format!(
                    "an event is longer than maxMessageBytes ({max} bytes)"
                ));
            }
        }
        Ok(())
    }
}

/// The innermost cause of an error ("Connection reset by peer (os error 104)" rather than
/// "error decoding response body"): what a person needs to know.
pub fn root_cause(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

/// Why a capped byte stream ended early.
#[derive(Debug)]
pub struct StreamError(pub String);

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StreamError {}

/// `stream` with each event capped at `max` bytes; the first error ends it.
pub fn capped<S, E>(stream: S, max: usize) -> impl Stream<Item = Result<Bytes, StreamError>>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::error::Error,
{
    let mut cap = EventCap::default();
    let mut failed = false;
    stream
        .map(move |item| {
            if failed {
                return None;
            }
            let r = match item {
                Ok(chunk) => cap.feed(&chunk, max).map(|_| chunk).map_err(StreamError),
                Err(e) => Err(StreamError(root_cause(&e))),
            };
            failed = r.is_err();
            Some(r)
        })
        .take_while(|x| std::future::ready(x.is_some()))
        .filter_map(std::future::ready)
}

/// The JSON-RPC messages in some JSON text (an event's data, a reply body): one object, or a
/// batch array of them, each as its own text. Text that is not JSON, and items that are not
/// objects, are skipped.
pub fn messages(data: &str) -> Vec<String> {
    let data = data.trim();
    if data.starts_with('[') {
        return match serde_json::from_str::<Vec<&RawValue>>(data) {
            Ok(items) => items
                .into_iter()
                .map(RawValue::get)
                .filter(|t| readable(t))
                .map(str::to_string)
                .collect(),
            Err(_) => Vec::new(),
        };
    }
    if readable(data) {
        vec![data.to_string()]
    } else {
        Vec::new()
    }
}

/// Whether the connection's reader will take `text` as a message (the same check it applies).
fn readable(text: &str) -> bool {
    crate::jsonrpc::line_kind(text.as_bytes()) != crate::jsonrpc::LineKind::Invalid
}

/// One server-sent event as the direct path reads it (§5).
#[derive(Debug, Default, PartialEq)]
pub struct Event {
    pub data: Option<String>,
    pub id: Option<String>,
    pub retry: Option<u64>,
}

/// The SSE grammar over bytes as they arrive, for the direct path (the async paths use
/// `sse-stream`): CR, LF or CRLF end a line, a blank line ends an event, `:` starts a comment,
/// and one event is capped at `max` bytes.
pub struct EventParser {
    line: Vec<u8>,
    event: Event,
    seen: bool,
    last_cr: bool,
    cap: EventCap,
    max: usize,
    /// Still at the stream's start, where a byte-order mark is skipped.
    at_start: bool,
}

impl EventParser {
    pub fn new(max: usize) -> EventParser {
        EventParser {
            line: Vec::new(),
            event: Event::default(),
            seen: false,
            last_cr: false,
            cap: EventCap::default(),
            max,
            at_start: true,
        }
    }

    /// Feeds bytes; each completed event is pushed to `out`. A line that is not UTF-8 is an
    /// error (the stream is not SSE).
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        self.cap.feed(bytes, self.max)?;
        for &b in bytes {
            let after_cr = std::mem::replace(&mut self.last_cr, b == b'\r');
            match b {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => self.end_line(out)?,
                _ => self.line.push(b),
            }
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<Event>) -> Result<(), String> {
        let mut line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.at_start) && line.starts_with(b"\xef\xbb\xbf") {
            line.drain(..3);
        }
        if line.is_empty() {
            if std::mem::take(&mut self.seen) {
                out.push(std::mem::take(&mut self.event));
            }
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let line = match String::from_utf8(line) {
            Ok(l) => l,
            // Only the fields we read must be text; anything else is ignored, as SSE says.
            Err(e) => {
                let raw = e.as_bytes();
                let name = raw.split(|&b| b == b':').next().unwrap_or(raw);
                if matches!(name, b"data" | b"id" | b"retry" | b"event") {
                    return Err("an event is not UTF-8 text".into());
                }
                return Ok(());
            }
        };
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (&*line, ""),
        };
        match field {
            "data" => {
                // A second data line is joined with LF.
                match &mut self.event.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => self.event.data = Some(value.to_string()),
                }
                self.seen = true;
            }
            "id" if !value.contains('\0') => {
                self.event.id = Some(value.to_string());
                self.seen = true;
            }
            "retry" if value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    self.event.retry = Some(ms);
                    self.seen = true;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_parse_in_any_split() {
        let wire = b": comment\r\nid: 7\r\nretry: 250\r\ndata: {\"a\":\r\ndata:1}\r\n\r\ndata: x\n\nid: 8\rdata\r\r";
        for split in 0..wire.len() {
            let mut p = EventParser::new(1 << 20);
            let mut out = Vec::new();
            p.feed(&wire[..split], &mut out).unwrap();
            p.feed(&wire[split..], &mut out).unwrap();
            assert_eq!(
                out,
                vec![
                    Event {
                        data: Some("{\"a\":\n1}".into()),
                        id: Some("7".into()),
                        retry: Some(250)
                    },
                    Event {
                        data: Some("x".into()),
                        ..Event::default()
                    },
                    Event {
                        data: Some(String::new()),
                        id: Some("8".into()),
                        retry: None
                    },
                ],
                "split {split}"
            );
        }
        let mut p = EventParser::new(8);
        assert!(p.feed(b"data: 123456789", &mut Vec::new()).is_err());
        let mut p = EventParser::new(1 << 20);
        assert!(p.feed(b"data: \xff\xfe\n\n", &mut Vec::new()).is_err());
        let mut p = EventParser::new(1 << 20);
        let mut out = Vec::new();
        p.feed(b"\xef\xbb\xbfdata: a\nx-\xff: y\nretry: +5\n\n", &mut out)
            .unwrap();
        assert_eq!(
            out,
            vec![Event {
                data: Some("a".into()),
                ..Event::default()
            }]
        );
    }

    #[test]
    fn cap_counts_one_event() {
        let mut c = EventCap::default();
        assert!(c.feed(b"data: 123456\r\n\r\ndata: 1234", 12).is_ok());
        assert!(c.feed(b"5678", 12).is_err());
        let mut c = EventCap::default();
        assert!(c.feed(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", 8).is_ok());
    }

    /// Found by fuzzing: a lone surrogate escape in a key passed a lenient check here but not the
    /// reader's strict one; both now apply the same check.
    #[test]
    fn lone_surrogates_are_not_messages() {
        assert!(messages(r#"{"a\ud800":1}"#).is_empty());
        assert!(messages(r#"[{"a\ud800":1},{"b":2}]"#) == vec![r#"{"b":2}"#.to_string()]);
    }

    #[test]
    fn batches_and_junk() {
        assert_eq!(messages(r#"[{"a":1},2,{"b":2}]"#).len(), 2);
        assert!(messages("nope").is_empty());
    }
}
