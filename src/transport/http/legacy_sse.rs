//! The HTTP+SSE transport of MCP 2024-11-05, the fallback when a server refuses streamable
//! HTTP's `initialize` POST (contract §5): GET the event stream, wait for its `endpoint` event,
//! then POST every message there; every reply comes back on the GET stream. The endpoint must
//! be on the configured origin (§9: headers never follow it elsewhere).

use super::inbox::Inbox;
use super::streamable::{HttpTransport, Mode};
use super::{is_sse, redact};
use crate::net::runtime;
use crate::request::RequestError;
use crate::transport::sse;
use crate::util::lock;
use futures_util::StreamExt;
use reqwest::header::ACCEPT;
use reqwest::Url;
use std::sync::atomic::Ordering;

impl HttpTransport {
    /// Legacy HTTP+SSE (2024-11-05): GET the stream, wait for its `endpoint` event, then POST
    /// every message there; every reply comes back on the GET stream. `first` says what the
    /// streamable-HTTP attempt got, for the failure text.
    pub(super) async fn open_legacy(&self, first: &str) -> Result<(), String> {
        let req = self
            .http
            .get(self.url.clone())
            .headers(self.headers.clone())
            .header(ACCEPT, "text/event-stream");
        let resp = self
            .send_bounded(req)
            .await
            .map_err(|e| format!("{first}, and the legacy HTTP+SSE fallback failed: {e}"))?;
        if !resp.status().is_success() || !is_sse(&resp) {
            return Err(format!(
                "{first}, and the legacy HTTP+SSE GET got HTTP {}",
                resp.status()
            ));
        }
        let (tx, rx) = tokio::sync::oneshot::channel::<String>();
        let me = self.me.upgrade().ok_or("the connection is closed")?;
        let task = runtime().spawn(async move {
            let mut tx = Some(tx);
            let events = sse::events(resp.bytes_stream(), me.max_bytes);
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
                    me.file(Inbox::Message(msg, None)).await;
                }
            }
            if !me.closed.load(Ordering::Acquire) {
                me.file(Inbox::FailAll(RequestError::Lost(why))).await;
            }
        });
        lock(&self.background).push(task.abort_handle());
        let endpoint = match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(e)) => e,
            _ => {
                return Err(format!(
                    "{first}; the legacy HTTP+SSE stream sent no `endpoint` event within {} ms",
                    self.timeout.as_millis()
                ))
            }
        };
        let endpoint = self
            .url
            .join(endpoint.trim())
            .map_err(|e| format!("the legacy `endpoint` event is not a URL: {e}"))?;
        if endpoint.origin() != self.url.origin() {
            // The configured headers (secrets) would go to another host.
            return Err(format!(
                "the legacy `endpoint` event names another origin ({}); refused",
                redact(&endpoint)
            ));
        }
        lock(&self.state).mode = Mode::Legacy(endpoint);
        Ok(())
    }

    pub(super) async fn post_legacy(&self, endpoint: Url, body: &str) -> Result<(), String> {
        let resp = self.send_bounded(self.post(endpoint, body, false)).await?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(format!(
                "HTTP {}{}",
                resp.status(),
                self.snippet(resp).await
            ))
        }
    }
}
