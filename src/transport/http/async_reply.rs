//! Reading a request's reply on the async client (contract §5): a JSON body, or an SSE stream
//! whose messages are filed as they come, resumed with GET + `Last-Event-ID` after the server's
//! `retry:` when it closes before the response (never in MCP 2026-07-28, which has no
//! resumption, §6). The body is read by [`protocol::ReplyBody`], as on the direct client.

use super::inbox::Inbox;
use super::protocol::{self, ReplyBody, StreamEnd, DEFAULT_RETRY, MAX_RESUMES};
use super::transport::HttpTransport;
use crate::net::explain_reqwest;
use crate::transport::sse;
use futures_util::StreamExt;
use std::time::Duration;

/// How a read of one event stream ended.
#[derive(Default)]
pub(super) struct StreamRead {
    pub(super) answered: bool,
    /// At least one message arrived.
    pub(super) delivered: bool,
    pub(super) last_id: Option<String>,
    pub(super) retry: Option<u64>,
    /// How the stream broke, when it did.
    error: Option<String>,
    /// What the stream carried was refused: it is not resumed.
    refused: Option<String>,
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
        if super::is_sse(&resp) {
            let Some(timeout) = resumable else {
                let end = self.read_events(resp, Some(id)).await;
                if end.answered {
                    return Ok(());
                }
                if let Some(e) = end.refused {
                    return Err(format!("the event stream failed before the response: {e}"));
                }
                return match protocol::stream_end(true, None, None) {
                    StreamEnd::Fail(e) => Err(e),
                    StreamEnd::Resume => unreachable!("the modern era has no resumption"),
                };
            };
            return self.follow(Some(resp), id, None, None, timeout).await;
        }
        let bytes = self.read_body(resp).await?;
        let mut body = ReplyBody::new(id, false, self.max_bytes);
        body.feed(&bytes, &mut Vec::new())?;
        let (msgs, unanswered) = body.json_messages(&|t| self.quote(t))?;
        for msg in msgs {
            self.filing.file(Inbox::Message(msg, Some(id))).await;
        }
        unanswered.map_or(Ok(()), Err)
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
    /// `last_id` (a stream the direct client read until it ended, with the `retry:` it saw),
    /// until its response (§5): a stream that closes before it is resumed with GET +
    /// `Last-Event-ID` (the last event id seen on any of its streams) after exactly the
    /// server's `retry:` (at most [`sse::MAX_RETRY`]), again and again while streams end
    /// empty, at most [`MAX_RESUMES`] times in a row; the request's `timeout` bounds it all, and
    /// a `retry:` as long fails the request at once unless the call's clock stands still
    /// (docs/http-and-tls.md). A stream whose content is refused (an event past `maxMessageBytes`) is not
    /// resumed: it would bring the same again.
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
            if self.is_closed() {
                return Err("the connection is closed".into());
            }
            if let Some(resp) = first.take() {
                let end = self.read_events(resp, Some(id)).await;
                if end.answered {
                    return Ok(());
                }
                if self.is_closed() {
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
                if let StreamEnd::Fail(e) =
                    protocol::stream_end(false, last_id.as_deref(), end.error.as_deref())
                {
                    return Err(e);
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
            if !resp.status().is_success() || !super::is_sse(&resp) {
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
    pub(super) async fn read_events(&self, resp: reqwest::Response, id: Option<u64>) -> StreamRead {
        let mut end = StreamRead::default();
        // A stream that carries no request's answer (the standalone GET) is read the same way.
        let mut body = ReplyBody::new(id.unwrap_or(0), true, self.max_bytes);
        let mut chunks = resp.bytes_stream();
        let mut msgs = Vec::new();
        while let Some(chunk) = chunks.next().await {
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => {
                    end.error = Some(sse::root_cause(&e));
                    break;
                }
            };
            let fed = body.feed(&chunk, &mut msgs);
            for msg in msgs.drain(..) {
                end.delivered = true;
                self.filing.file(Inbox::Message(msg, id)).await;
            }
            end.answered = id.is_some() && body.answered;
            if let Err(e) = fed {
                end.refused = Some(e);
                break;
            }
            if end.answered {
                break;
            }
        }
        end.last_id = body.last_id;
        end.retry = body.retry;
        end
    }
}
