//! HTTP+SSE, the transport of MCP 2024-11-05 (contract §5), here a dialect of the one
//! [`HttpTransport`](super::transport::HttpTransport) (`Dialect::Legacy`), not a transport of its
//! own: the fallback when a server refuses streamable HTTP's `initialize` POST. GET the event
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
    /// The server's authorizer (§8): the GET and every POST carry its token, and a 401/403
    /// runs it as on streamable HTTP (a server of 2024-11-05 behind OAuth).
    pub(super) auth: Arc<crate::auth::Auth>,
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
        let url = parts.url.clone();
        let get = || {
            parts
                .http
                .get(url.clone())
                .headers(parts.headers.clone())
                .header(ACCEPT, "text/event-stream")
        };
        let resp = authorized(&parts, &url, "GET", None, get)
            .await
            .map_err(|e| lead(format!("HTTP+SSE GET failed: {}", e.explain(parts.timeout))))?;
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

    /// POSTs one message to the endpoint; its reply comes on the stream. `id`: the request's,
    /// whose timer a login pauses.
    pub(super) async fn post(&self, body: &str, id: Option<u64>) -> Result<(), RequestError> {
        let post = || {
            self.parts
                .http
                .post(self.endpoint.clone())
                .headers(self.parts.headers.clone())
                .header(ACCEPT, super::protocol::ACCEPT_BOTH)
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string())
        };
        let resp = authorized(&self.parts, &self.endpoint, "POST", id, post).await?;
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
        Err(RequestError::Lost(format!("HTTP {status}{body}")))
    }

    /// Ends the stream (the connection is closing).
    pub(super) fn shutdown(&self) {
        if let Some(t) = lock(&self.stream).take() {
            t.abort();
        }
    }
}

/// Sends the request `make` builds with the authorizer's headers for `method` and `url` (a new
/// DPoP proof each time), bounded by the timeout; a 401/403 runs authorization (§8) and sends
/// it again when a new token is in place (the timer of request `id` paused meanwhile). Any other
/// response is the caller's to status_verdict.
async fn authorized(
    parts: &Parts,
    url: &Url,
    method: &str,
    id: Option<u64>,
    make: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, RequestError> {
    let lost = RequestError::Lost;
    let mut rounds = crate::auth::Refusals::default();
    loop {
        parts.auth.before_send().await.map_err(RequestError::Auth)?;
        let sent_with = parts.auth.generation();
        let mut req = make();
        for (k, v) in parts.auth.authorization(method, url) {
            req = req.header(k, v);
        }
        let resp = match tokio::time::timeout(parts.timeout, req.send()).await {
            Err(_) => {
                return Err(lost(format!(
                    "no HTTP response from {} within {} ms",
                    redact(url),
                    parts.timeout.as_millis()
                )))
            }
            Ok(Err(e)) => {
                return Err(lost(format!(
                    "{} ({})",
                    crate::net::explain_reqwest(e),
                    redact(url)
                )))
            }
            Ok(Ok(r)) => r,
        };
        parts
            .auth
            .note_nonce(super::header_text(&resp, "dpop-nonce"));
        let status = resp.status().as_u16();
        if status != 401 && status != 403 {
            return Ok(resp);
        }
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let challenge = header(reqwest::header::WWW_AUTHENTICATE.as_str());
        let nonce = header("dpop-nonce");
        match parts
            .auth
            .on_denied(status, challenge, nonce, sent_with, &mut rounds, id)
            .await
        {
            crate::auth::Denied::Retry => continue,
            crate::auth::Denied::Fail(why) => return Err(RequestError::Auth(why)),
            crate::auth::Denied::Pass => return Ok(resp),
        }
    }
}
