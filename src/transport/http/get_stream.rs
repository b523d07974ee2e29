//! The server's stream outside any call: in the handshake era the standalone GET stream of
//! streamable HTTP (contract §5), opened while connecting, before the first `tools/list`
//! (servers drop requests they send while none is open), awaited, and reconnected in the
//! background with backoff when it ends; in MCP 2026-07-28, which replaced it, the
//! `subscriptions/listen` POST whose reply is a long-lived event stream (docs/live-servers.md), kept the
//! same way.

use super::transport::HttpTransport;
use crate::net::runtime;
use crate::util::{jitter, lock};
use std::sync::Arc;
use std::time::Duration;

/// Backoff of the standalone GET stream (§5): from this floor, doubling, to the cap.
const GET_BACKOFF_FLOOR: Duration = Duration::from_millis(250);
const GET_BACKOFF_CAP: Duration = Duration::from_secs(30);

/// What the first GET of the standalone stream got (§5).
enum GetOpen {
    /// 200 with an event stream.
    Up(reqwest::Response),
    /// 405, or another 4xx: the server offers no stream; it is left alone.
    Refused,
    /// A network error or a 5xx: tried again later.
    Failed(String),
}

/// How opening a listen went.
pub(crate) enum ListenOpened {
    /// Its stream is up (its acknowledgement comes on it).
    Up,
    /// It could not be opened for now (a network error, a 5xx, a 401): its task tries again
    /// with backoff; the warning says so.
    Retrying(String),
    /// The server refused it: nothing runs for it.
    Refused(String),
}

impl HttpTransport {
    /// One GET for the standalone stream, bounded by the timeout.
    async fn open_get(&self) -> GetOpen {
        // With a token that is due, refresh it first (§8): the stream lives longer than it.
        if let Err(e) = self.auth.before_send().await {
            return GetOpen::Failed(e);
        }
        let resp = match self.send_bounded(self.get_events(None)).await {
            Ok(r) => r,
            Err(e) => return GetOpen::Failed(e),
        };
        let status = resp.status();
        if status.is_success() && super::is_sse(&resp) {
            GetOpen::Up(resp)
        } else if status.is_server_error() || status.as_u16() == 401 {
            // A 401 on a stream means a token that expired: tried again after the next
            // refresh, not given up.
            GetOpen::Failed(format!("HTTP {status}{}", self.snippet(resp).await))
        } else {
            GetOpen::Refused
        }
    }

    /// Opens the standalone GET stream and waits for the server's answer (§5: servers drop
    /// requests they send while none is open, so it is open before the first call). Then it
    /// runs in the background, reconnecting with backoff. Returns a warning for the status
    /// when the stream could not be opened for another reason than the server offering none.
    pub(super) async fn open_server_stream(self: Arc<Self>) -> Option<String> {
        let first = self.open_get().await;
        let warning = match &first {
            GetOpen::Failed(e) => Some(format!(
                "the standalone GET stream could not be opened ({e}); server messages outside a call may be lost until it reconnects"
            )),
            _ => None,
        };
        if let GetOpen::Refused = first {
            return None; // 405: the server offers no stream
        }
        let me = self.clone();
        let task = runtime().spawn(async move { me.run_get_stream(first).await });
        if let Some(old) = lock(&self.get_stream).replace(task.abort_handle()) {
            old.abort();
        }
        warning
    }

    /// Opens MCP 2026-07-28's `subscriptions/listen` (docs/live-servers.md): `body` is the
    /// whole request (the session built it; its id is the subscription's). The server's answer
    /// is awaited (bounded by the timeout), so that a change right after is not missed; then
    /// the stream is read in the background, opened again with backoff when it ends, until the
    /// server refuses it. Its notifications are filed as the GET stream's are. The listen it
    /// replaces keeps running until [`HttpTransport::end_replaced_listens`] (once the new one
    /// is acknowledged) or [`HttpTransport::restore_listen`] (it was not).
    pub(crate) fn open_listen(&self, body: String) -> ListenOpened {
        let Some(me) = self.me.upgrade() else {
            return ListenOpened::Refused("the connection is closing".into());
        };
        let first = runtime().block_on(me.post_listen(&body));
        let opened = match &first {
            GetOpen::Up(_) => ListenOpened::Up,
            GetOpen::Refused => {
                return ListenOpened::Refused("the server refused subscriptions/listen".into())
            }
            GetOpen::Failed(e) => ListenOpened::Retrying(format!(
                "the subscriptions/listen stream could not be opened ({e}); it is opened again with backoff, and changes may be missed until it is"
            )),
        };
        let task = runtime().spawn(async move { me.run_stream(first, Some(&body)).await });
        if let Some(old) = lock(&self.get_stream).replace(task.abort_handle()) {
            lock(&self.replaced_listens).push(old);
        }
        opened
    }

    /// The listens the current one replaced are ended (closing its stream is how a listen is
    /// cancelled over HTTP): the new one was acknowledged.
    pub(crate) fn end_replaced_listens(&self) {
        for old in std::mem::take(&mut *lock(&self.replaced_listens)) {
            old.abort();
        }
    }

    /// The current listen is ended and the one it replaced is current again (the new one was
    /// not acknowledged).
    pub(crate) fn restore_listen(&self) {
        let previous = lock(&self.replaced_listens).pop();
        if let Some(new) = std::mem::replace(&mut *lock(&self.get_stream), previous) {
            new.abort();
        }
    }

    /// Ends every `subscriptions/listen` stream held, if any; none is opened in their place.
    pub(crate) fn close_listen(&self) {
        if let Some(old) = lock(&self.get_stream).take() {
            old.abort();
        }
        self.end_replaced_listens();
    }

    /// One `subscriptions/listen` POST: an event stream is the subscription; a JSON answer (an
    /// error, or a server that ends it at once) or another 4xx is a refusal.
    async fn post_listen(&self, body: &str) -> GetOpen {
        if let Err(e) = self.auth.before_send().await {
            return GetOpen::Failed(e);
        }
        let post = super::protocol::Post {
            body: body.to_string(),
            id: None,
            opens_session: false,
            method: Some("subscriptions/listen".into()),
            routing: None,
            timeout: self.timeout,
        };
        let headers = match self.post_headers(&post, true) {
            Ok(h) => h,
            Err(e) => return GetOpen::Failed(e.explain(self.timeout)),
        };
        let req = self
            .http
            .post(self.url.clone())
            .headers(headers)
            .body(post.body);
        let resp = match self.send_bounded(req).await {
            Ok(r) => r,
            Err(e) => return GetOpen::Failed(e),
        };
        let status = resp.status();
        if status.is_success() && super::is_sse(&resp) {
            GetOpen::Up(resp)
        } else if status.is_server_error() || status.as_u16() == 401 {
            GetOpen::Failed(format!("HTTP {status}"))
        } else {
            GetOpen::Refused
        }
    }

    async fn run_get_stream(&self, first: GetOpen) {
        self.run_stream(first, None).await
    }

    /// The standalone stream's life (§5): read it; when it ends, reconnect after
    /// max(`retry:`, backoff) with jitter, the backoff doubling from 250 ms to 30 s and reset
    /// only by a stream that delivered a message; a server that refuses (4xx) is left alone.
    /// `listen`: the `subscriptions/listen` request that opens it again (MCP 2026-07-28), else a
    /// GET.
    async fn run_stream(&self, mut next: GetOpen, listen: Option<&str>) {
        let mut backoff = GET_BACKOFF_FLOOR;
        let mut retry = Duration::ZERO;
        while !self.is_closed() {
            match next {
                GetOpen::Up(resp) => {
                    let end = self.read_events(resp, None).await;
                    if let Some(r) = end.retry {
                        retry = crate::transport::sse::retry_delay(r);
                    }
                    if end.delivered {
                        backoff = GET_BACKOFF_FLOOR;
                    }
                }
                GetOpen::Refused => return,
                GetOpen::Failed(_) => {}
            }
            let base = retry.max(backoff);
            tokio::time::sleep(base + base.mul_f64(jitter() / 4.0)).await;
            backoff = (backoff * 2).min(GET_BACKOFF_CAP);
            if self.is_closed() {
                return;
            }
            next = match listen {
                Some(body) => self.post_listen(body).await,
                None => self.open_get().await,
            };
        }
    }
}
