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

#[cfg(test)]
mod tests {
    use super::*;

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
