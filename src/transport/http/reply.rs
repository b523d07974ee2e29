//! Reading a request's reply (contract §5): a JSON body, or an SSE stream whose messages are
//! filed as they come, resumed with GET + `Last-Event-ID` after the server's `retry:` when it
//! closes before the response (never in MCP 2026-07-28, which has no resumption, §6).

use super::inbox::Inbox;
use super::is_sse;
use super::streamable::HttpTransport;
use crate::net::explain_reqwest;
use crate::transport::sse::{self, SseError};
use futures_util::StreamExt;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often in a row a request's stream is resumed (GET + Last-Event-ID) without receiving an
/// event before the call fails (§5); the call's timeout bounds the whole as well.
const MAX_RESUMES: usize = 10;
/// The `retry:` a stream is resumed after when the server sent none.
const DEFAULT_RETRY: Duration = Duration::from_millis(1000);

/// Whether the message `text` is the response to our request `id`.
pub(super) fn answers(text: &str, id: u64) -> bool {
    crate::jsonrpc::line_kind(text.as_bytes()) == crate::jsonrpc::LineKind::Response(id)
}

impl HttpTransport {
    /// Reads the reply to request `id`: a JSON body, or an SSE stream resumed with
    /// `Last-Event-ID` when it closes before the response; `resumable` is the request's
    /// timeout where resuming is allowed (not in MCP 2026-07-28).
    pub(super) async fn read_reply(
        &self,
        resp: reqwest::Response,
        id: u64,
        resumable: Option<Duration>,
    ) -> Result<(), String> {
        if is_sse(&resp) {
            let Some(timeout) = resumable else {
                // MCP 2026-07-28 has no resumption, and a call is never re-sent (§6).
                let end = self.consume_sse(resp, Some(id)).await;
                if end.answered {
                    return Ok(());
                }
                if let Some(e) = end.refused {
                    return Err(format!("the event stream failed before the response: {e}"));
                }
                return Err(
                    "the response stream ended before the response (MCP 2026-07-28 has no resumption; the call is not sent again)"
                        .into(),
                );
            };
            return self.follow(Some(resp), id, None, None, timeout).await;
        }
        let bytes = self.read_body(resp).await?;
        let text = String::from_utf8_lossy(&bytes);
        if text.trim().is_empty() {
            return Err("the server sent an empty reply to a request".into());
        }
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
            return Err(format!(
                "the server's reply is not JSON ({e}): {}",
                self.quote(&text)
            ));
        }
        let mut answered = false;
        for msg in sse::messages(&text) {
            answered |= answers(&msg, id);
            self.file(Inbox::Message(msg, Some(id))).await;
        }
        if answered {
            Ok(())
        } else {
            Err(format!(
                "the server's reply does not answer the request: {}",
                self.quote(&text)
            ))
        }
    }

    pub(super) async fn read_body(&self, mut resp: reqwest::Response) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        loop {
            match tokio::time::timeout(self.timeout, resp.chunk()).await {
                Err(_) => {
                    return Err(format!(
                        "the reply body stalled for {} ms",
                        self.timeout.as_millis()
                    ))
                }
                Ok(Err(e)) => return Err(explain_reqwest(e)),
                Ok(Ok(None)) => return Ok(out),
                Ok(Ok(Some(chunk))) => {
                    if out.len() + chunk.len() > self.max_bytes {
                        return Err(format!(
                            "the reply is longer than maxMessageBytes ({} bytes)",
                            self.max_bytes
                        ));
                    }
                    out.extend_from_slice(&chunk);
                }
            }
        }
    }

    /// Reads a request's event stream from `first`, or, without it, from a resume after
    /// `last_id` (a stream the direct path read until it ended, with the `retry:` it saw),
    /// until its response (§5): a stream that closes before it is resumed with GET +
    /// `Last-Event-ID` (the last event id seen on any of its streams) after exactly the
    /// server's `retry:` (at most [`sse::MAX_RETRY`]), again and again while streams end
    /// empty, at most [`MAX_RESUMES`] times in a row; the request's `timeout` bounds it all, and
    /// a `retry:` as long as it fails the request at once (issue 22). A stream whose content is
    /// refused (an event past `maxMessageBytes`) is not resumed: it would bring the same again.
    pub(super) async fn follow(
        &self,
        mut first: Option<reqwest::Response>,
        id: u64,
        mut last_id: Option<String>,
        retry: Option<u64>,
        timeout: Duration,
    ) -> Result<(), String> {
        let mut asked = retry.is_some();
        let mut retry = retry.map_or(DEFAULT_RETRY, sse::retry_delay);
        let mut empty_resumes = 0;
        loop {
            if self.closed.load(Ordering::Acquire) {
                return Err("the connection is closed".into());
            }
            if let Some(resp) = first.take() {
                let end = self.consume_sse(resp, Some(id)).await;
                if end.answered {
                    return Ok(());
                }
                if self.closed.load(Ordering::Acquire) {
                    return Err("the connection is closed".into());
                }
                if let Some(e) = end.refused {
                    return Err(format!("the event stream failed before the response: {e}"));
                }
                if let Some(r) = end.retry {
                    retry = sse::retry_delay(r);
                    asked = true;
                }
                if end.last_id.is_some() {
                    last_id = end.last_id;
                    empty_resumes = 0;
                } else if last_id.is_some() {
                    empty_resumes += 1;
                }
                if last_id.is_none() {
                    return Err(match end.error {
                        Some(e) => format!("the event stream failed before the response: {e}"),
                        None => "the server closed the event stream before the response".into(),
                    });
                }
                if empty_resumes >= MAX_RESUMES {
                    return Err(format!(
                        "the event stream was resumed {MAX_RESUMES} times in a row without receiving anything"
                    ));
                }
            }
            // Waiting would time the call out, unless its clock stands still (an elicitation
            // it carried is outstanding).
            let paused = self.inbound.upgrade().is_some_and(|c| c.is_paused(id));
            if asked && retry >= timeout && !paused {
                return Err(format!(
                    "the server asked to wait {} ms before the event stream is resumed (`retry:`), as long as the request's timeout ({} ms); it is not resumed",
                    retry.as_millis(),
                    timeout.as_millis()
                ));
            }
            let Some(last) = last_id.as_deref() else {
                return Err("the server closed the event stream before the response".into());
            };
            tokio::time::sleep(retry).await;
            let resp = self.send_bounded(self.get_events(Some(last))).await?;
            if !resp.status().is_success() || !is_sse(&resp) {
                return Err(format!(
                    "resuming the event stream failed: HTTP {}{}",
                    resp.status(),
                    self.snippet(resp).await
                ));
            }
            first = Some(resp);
        }
    }

    /// Reads SSE events, filing each message (carried by `id`), until the response to `id`
    /// arrived or the stream ended.
    pub(super) async fn consume_sse(&self, resp: reqwest::Response, id: Option<u64>) -> StreamEnd {
        let mut end = StreamEnd::default();
        let events = sse::events(resp.bytes_stream(), self.max_bytes);
        let mut events = std::pin::pin!(events);
        while let Some(item) = events.next().await {
            let ev = match item {
                Ok(ev) => ev,
                Err(SseError::Lost(e)) => {
                    end.error = Some(e);
                    break;
                }
                Err(SseError::Refused(e)) => {
                    end.refused = Some(e);
                    break;
                }
            };
            if let Some(i) = ev.id {
                end.last_id = Some(i);
            }
            if let Some(r) = ev.retry {
                end.retry = Some(r);
            }
            let Some(data) = ev.data else { continue };
            for msg in sse::messages(&data) {
                end.delivered = true;
                let ours = id.is_some_and(|id| answers(&msg, id));
                self.file(Inbox::Message(msg, id)).await;
                if ours {
                    end.answered = true;
                }
            }
            if end.answered {
                break;
            }
        }
        end
    }
}

#[derive(Default)]
pub(super) struct StreamEnd {
    answered: bool,
    /// At least one message arrived.
    pub(super) delivered: bool,
    last_id: Option<String>,
    pub(super) retry: Option<u64>,
    error: Option<String>,
    /// What the stream carried was refused: it is not resumed.
    pub(super) refused: Option<String>,
}
