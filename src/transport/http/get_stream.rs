//! The standalone GET stream of streamable HTTP (contract §5): opened while connecting, before
//! the first `tools/list` (servers drop requests they send while none is open), awaited, and
//! reconnected in the background with backoff when it ends.

use super::state::HttpTransport;
use crate::net::runtime;
use crate::util::lock;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Backoff of the standalone GET stream (§5): from this floor, doubling, to the cap.
const GET_BACKOFF_FLOOR: Duration = Duration::from_millis(250);
const GET_BACKOFF_CAP: Duration = Duration::from_secs(30);

/// A pseudo-random fraction in [0, 1) for backoff jitter (no need for a real generator).
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// What the first GET of the standalone stream got (§5).
enum GetOpen {
    /// 200 with an event stream.
    Up(reqwest::Response),
    /// 405, or another 4xx: the server offers no stream; it is left alone.
    Refused,
    /// A network error or a 5xx: tried again later.
    Failed(String),
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

    /// The standalone stream's life (§5): read it; when it ends, reconnect after
    /// max(`retry:`, backoff) with jitter, the backoff doubling from 250 ms to 30 s and reset
    /// only by a stream that delivered a message; a server that refuses (4xx) is left alone.
    async fn run_get_stream(&self, mut next: GetOpen) {
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
            next = self.open_get().await;
        }
    }
}
