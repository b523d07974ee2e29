//! The HTTP+SSE transport of MCP 2024-11-05, a transport of its own (contract §5; issue 24):
//! the fallback when a server refuses streamable HTTP's `initialize` POST. GET the event
//! stream, wait for its `endpoint` event, then POST every message there; every reply comes back
//! on the GET stream, filed through the connection's inbox. The endpoint must be on the
//! configured origin (§9: headers never follow it elsewhere). The streamable-HTTP connection
//! that fell back hands it every message from then on.

use super::inbox::{Filing, Inbox};
use crate::net::runtime;
use crate::request::RequestError;
use crate::transport::sse;
use crate::util::{lock, redact};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, ACCEPT, CONTENT_TYPE};
use reqwest::Url;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::AbortHandle;

/// What the HTTP+SSE transport takes from the connection that falls back to it.
pub(super) struct Parts {
    pub(super) url: Url,
    pub(super) http: reqwest::Client,
    /// The configured headers (§9: only ever to the configured origin).
    pub(super) headers: HeaderMap,
    pub(super) timeout: Duration,
    pub(super) max_bytes: usize,
    pub(super) filing: Arc<Filing>,
    pub(super) closed: Arc<AtomicBool>,
    /// Quotes server text with every configured header value and token masked (§9).
    pub(super) quote: Box<dyn Fn(&str) -> String + Send + Sync>,
}

/// An open HTTP+SSE connection: where to POST, and the GET stream's task.
pub(super) struct LegacySse {
    parts: Parts,
    endpoint: Url,
    stream: Mutex<Option<AbortHandle>>,
}

impl LegacySse {
    /// GETs the stream and waits for its `endpoint` event. `first` says what the
    /// streamable-HTTP attempt got, for the failure text; None for a server configured as
    /// `type: "sse"`, which is spoken to this way from the start (§2).
    pub(super) async fn open(parts: Parts, first: Option<&str>) -> Result<Arc<LegacySse>, String> {
        // After a refused streamable attempt, what it got comes first.
        let lead = |what: String| match first {
            Some(f) => format!("{f}, and the legacy {what}"),
            None => what,
        };
        let req = parts
            .http
            .get(parts.url.clone())
            .headers(parts.headers.clone())
            .header(ACCEPT, "text/event-stream");
        let resp = match tokio::time::timeout(parts.timeout, req.send()).await {
            Err(_) => Err(format!(
                "no HTTP response from {} within {} ms",
                redact(&parts.url),
                parts.timeout.as_millis()
            )),
            Ok(Err(e)) => Err(format!(
                "{} ({})",
                crate::net::explain_reqwest(e),
                redact(&parts.url)
            )),
            Ok(Ok(r)) => Ok(r),
        }
        .map_err(|e| lead(format!("HTTP+SSE GET failed: {e}")))?;
        if !resp.status().is_success() || !super::is_sse(&resp) {
            return Err(lead(format!("HTTP+SSE GET got HTTP {}", resp.status())));
        }
        let (tx, rx) = tokio::sync::oneshot::channel::<String>();
        let filing = parts.filing.clone();
        let closed = parts.closed.clone();
        let max = parts.max_bytes;
        let task = runtime().spawn(async move {
            let mut tx = Some(tx);
            let events = sse::events(resp.bytes_stream(), max);
            let mut events = std::pin::pin!(events);
            let mut why = "the legacy HTTP+SSE event stream ended".to_string();
            while let Some(item) = events.next().await {
                let ev = match item {
                    Ok(ev) => ev,
                    Err(sse::SseError::Refused(e) | sse::SseError::Lost(e)) => {
                        why = format!("the legacy HTTP+SSE event stream failed: {e}");
                        break;
                    }
                };
                let Some(data) = ev.data else { continue };
                if ev.event.as_deref() == Some("endpoint") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(data);
                    }
                    continue;
                }
                for msg in sse::messages(&data) {
                    filing.file(Inbox::Message(msg, None)).await;
                }
            }
            if !closed.load(Ordering::Acquire) {
                filing.file(Inbox::FailAll(RequestError::Lost(why))).await;
            }
        });
        let endpoint = match tokio::time::timeout(parts.timeout, rx).await {
            Ok(Ok(e)) => e,
            _ => {
                task.abort();
                return Err(lead(format!(
                    "HTTP+SSE stream sent no `endpoint` event within {} ms",
                    parts.timeout.as_millis()
                )));
            }
        };
        let endpoint = match parts.url.join(endpoint.trim()) {
            Ok(e) => e,
            Err(e) => {
                task.abort();
                return Err(format!("the legacy `endpoint` event is not a URL: {e}"));
            }
        };
        if endpoint.origin() != parts.url.origin() {
            // The configured headers (secrets) would go to another host.
            task.abort();
            return Err(format!(
                "the legacy `endpoint` event names another origin ({}); refused",
                redact(&endpoint)
            ));
        }
        Ok(Arc::new(LegacySse {
            parts,
            endpoint,
            stream: Mutex::new(Some(task.abort_handle())),
        }))
    }

    /// POSTs one message to the endpoint; its reply comes on the stream.
    pub(super) async fn post(&self, body: &str) -> Result<(), String> {
        let req = self
            .parts
            .http
            .post(self.endpoint.clone())
            .headers(self.parts.headers.clone())
            .header(ACCEPT, super::protocol::ACCEPT_BOTH)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        let resp = match tokio::time::timeout(self.parts.timeout, req.send()).await {
            Err(_) => {
                return Err(format!(
                    "no HTTP response from {} within {} ms",
                    redact(&self.endpoint),
                    self.parts.timeout.as_millis()
                ))
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "{} ({})",
                    crate::net::explain_reqwest(e),
                    redact(&self.endpoint)
                ))
            }
            Ok(Ok(r)) => r,
        };
        if resp.status().is_success() {
            return Ok(());
        }
        let status = resp.status();
        let body = match tokio::time::timeout(Duration::from_secs(2), resp.bytes()).await {
            Ok(Ok(b)) if !b.is_empty() => {
                format!(": {}", (self.parts.quote)(&String::from_utf8_lossy(&b)))
            }
            _ => String::new(),
        };
        Err(format!("HTTP {status}{body}"))
    }

    /// Ends the stream (the connection is closing).
    pub(super) fn shutdown(&self) {
        if let Some(t) = lock(&self.stream).take() {
            t.abort();
        }
    }
}
