//! One streamable-HTTP server connection (contract §5): what both of its HTTP clients (the
//! async one, [`super::async_client`], and the direct one, [`super::direct`]) read and write:
//! where the server is, its headers and authorizer (§8, built by the session and handed down),
//! the session the server gave and the era (§6), the inbox to the reader thread, and the work
//! in flight. Starting one is [`connect`].

use super::direct::pool::DirectPath;
use super::inbox::{Filing, Reader};
use super::legacy_sse::LegacySse;
use super::protocol::{self, Post};
use crate::request::RequestError;
use crate::transport::Inbound;
use crate::util::lock;
use crate::util::secrets::Secrets;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::Url;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use tokio::task::AbortHandle;

/// Which protocol the connection speaks.
pub(super) enum Dialect {
    /// MCP 2026-07-28: no session, the modern headers, no resumption (§6).
    Modern,
    /// Before the initialize POST has been answered.
    Unknown,
    /// Streamable HTTP in the handshake era.
    Streamable,
    /// The HTTP+SSE transport of 2024-11-05 ([`HttpTransport::legacy`]).
    Legacy,
}

pub(super) struct State {
    pub(super) session: Option<String>,
    pub(super) version: Option<String>,
    pub(super) mode: Dialect,
    /// How many sessions the server has given us; a request remembers the one it was sent on
    /// (so concurrent 404s renew it once).
    pub(super) generation: u64,
}

/// A streamable-HTTP server connection (or, after the fallback, the legacy HTTP+SSE one).
pub(crate) struct HttpTransport {
    pub(super) me: Weak<HttpTransport>,
    /// Where inbound messages and failures go (the connection above).
    pub(super) inbound: Weak<dyn Inbound>,
    pub(super) url: Url,
    pub(super) http: reqwest::Client,
    pub(super) headers: HeaderMap,
    /// Authorization (§8): the bearer token, and what to do on 401/403.
    pub(super) auth: Arc<crate::auth::Auth>,
    pub(super) timeout: Duration,
    pub(super) max_bytes: usize,
    /// Configured header values, masked in every server text we quote (§9).
    secrets: Secrets,
    pub(super) filing: Arc<Filing>,
    pub(super) state: Mutex<State>,
    /// The async client's requests in flight: giving one up aborts its task.
    pub(super) tasks: Mutex<HashMap<u64, AbortHandle>>,
    /// The standalone GET stream's task (replaced when the session is renewed).
    pub(super) get_stream: Mutex<Option<AbortHandle>>,
    /// MCP 2026-07-28: listens the current one replaced, kept until it is acknowledged.
    pub(super) replaced_listens: Mutex<Vec<AbortHandle>>,
    pub(super) closed: Arc<AtomicBool>,
    /// The reader thread, and what tells that it ended (its sender is dropped when it does):
    /// disconnect waits on that rather than polling (§3).
    pub(super) reader: Mutex<Option<Reader>>,
    /// The direct client's connections, for HTTP(S) without a proxy (docs/http-and-tls.md).
    pub(super) direct: Option<DirectPath>,
    /// The HTTP+SSE transport, once the server turned out to speak only that.
    pub(super) legacy: OnceLock<Arc<LegacySse>>,
}

/// `url` checked to be an http or https URL (`url` of a remote server's config entry, §2).
pub(crate) fn parse_url(url: &str) -> Result<Url, String> {
    let url = Url::parse(url).map_err(|e| format!("`url` is not a valid URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`url` must be http or https, got `{}`",
            url.scheme()
        ));
    }
    Ok(url)
}

/// A remote server as the session hands it to the transport: where it is, its configured
/// headers and network settings, the HTTP client for those, and the authorizer the session
/// built for it (§8).
pub(crate) struct Remote<'a> {
    pub(crate) server: &'a str,
    pub(crate) url: Url,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) net: &'a crate::config::NetSpec,
    pub(crate) http: reqwest::Client,
    pub(crate) auth: Arc<crate::auth::Auth>,
    /// `type: "sse"` (§2): HTTP+SSE from the start.
    pub(crate) sse: bool,
}

/// A remote server's bounds: the phase timeout, the cap on one inbound message
/// (`maxMessageBytes`), and how long an idle kept-alive connection is kept.
pub(crate) struct Bounds {
    pub(crate) timeout: Duration,
    pub(crate) max_bytes: usize,
    pub(crate) pool_idle: Duration,
}

/// Starts a connection to a remote server; messages flow once the session sends `initialize`.
pub(crate) fn connect(
    remote: Remote<'_>,
    bounds: Bounds,
    inbound: &Arc<dyn Inbound>,
) -> Result<Arc<HttpTransport>, String> {
    let Remote {
        server,
        url,
        headers,
        net,
        http,
        auth,
        sse,
    } = remote;
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("`headers.{k}` is not a valid HTTP header name"))?;
        // Never echo the value: it came from ${ENV} and may be a secret.
        let mut value = HeaderValue::from_str(v)
            .map_err(|_| format!("the value of `headers.{k}` is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    let direct = DirectPath::for_url(&url, net, bounds.pool_idle);
    let (filing, reader) = super::inbox::start(server, inbound)?;
    let t = Arc::new_cyclic(|me| HttpTransport {
        me: me.clone(),
        inbound: Arc::downgrade(inbound),
        url,
        http,
        headers: map,
        auth,
        timeout: bounds.timeout,
        max_bytes: bounds.max_bytes,
        secrets: Secrets::of_headers(headers),
        filing: Arc::new(filing),
        state: Mutex::new(State {
            session: None,
            version: None,
            mode: Dialect::Unknown,
            generation: 0,
        }),
        tasks: Mutex::new(HashMap::new()),
        get_stream: Mutex::new(None),
        replaced_listens: Mutex::new(Vec::new()),
        closed: Arc::new(AtomicBool::new(false)),
        reader: Mutex::new(Some(reader)),
        direct,
        legacy: OnceLock::new(),
    });
    if sse {
        // `type: "sse"` (§2): the event stream and its `endpoint` now, no streamable attempt.
        match crate::net::runtime().block_on(LegacySse::open(t.legacy_parts(), None)) {
            Ok(legacy) => {
                let _ = t.legacy.set(legacy);
            }
            Err(e) => {
                // Its reader thread ends with it.
                crate::transport::Transport::shutdown(&*t, Duration::ZERO);
                return Err(e);
            }
        }
        lock(&t.state).mode = Dialect::Legacy;
    }
    Ok(t)
}

impl HttpTransport {
    /// `text` cut to its first bytes with every configured header value masked (§9).
    pub(super) fn quote(&self, text: &str) -> String {
        crate::util::quoted(&self.auth.mask(&self.secrets.mask(text.trim())))
    }

    /// The headers of POST `post` in the current era and session (§5, §6, §8), one builder
    /// for both clients ([`protocol::each_header`]), each handed to `put`; `modern` as the
    /// request's route decided.
    pub(super) fn each_post_header(
        &self,
        post: &Post,
        modern: bool,
        put: &mut dyn FnMut(&str, &[u8]),
    ) -> Result<(), RequestError> {
        let authorization = self.auth.authorization("POST", &self.url);
        if modern {
            return protocol::each_header(
                &self.headers,
                &authorization,
                post,
                protocol::PostSession::Modern,
                put,
            );
        }
        let st = lock(&self.state);
        let era = protocol::PostSession::Session {
            session: if post.opens_session {
                None
            } else {
                st.session.as_deref()
            },
            version: if post.opens_session {
                None
            } else {
                st.version.as_deref()
            },
        };
        protocol::each_header(&self.headers, &authorization, post, era, put)
    }

    /// [`HttpTransport::each_post_header`] as a header map (the async client's).
    pub(super) fn post_headers(
        &self,
        post: &Post,
        modern: bool,
    ) -> Result<HeaderMap, RequestError> {
        let mut h = HeaderMap::with_capacity(self.headers.len() + 8);
        self.each_post_header(post, modern, &mut |k, v| {
            // Both were checked on the way in: each name is a header name, each value safe.
            if let (Ok(k), Ok(v)) = (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_bytes(v),
            ) {
                h.append(k, v);
            }
        })?;
        Ok(h)
    }

    /// The configured headers and the authorization of a `method` request to the server's URL
    /// (§8; a DPoP proof is made for it), for a GET or a DELETE, plus the session's when there
    /// is one.
    pub(super) fn session_headers(&self, method: &str) -> HeaderMap {
        let mut h = self.headers.clone();
        for (k, v) in self.auth.authorization(method, &self.url) {
            h.insert(k, v);
        }
        let st = lock(&self.state);
        if let Some(s) = st
            .session
            .as_deref()
            .and_then(|s| HeaderValue::from_str(s).ok())
        {
            h.insert(protocol::SESSION_HEADER, s);
        }
        if let Some(v) = st
            .version
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            h.insert(protocol::VERSION_HEADER, v);
        }
        h
    }

    /// Remembers request `id`'s task, so that giving the request up aborts it.
    pub(super) fn track(&self, id: u64, task: &tokio::task::JoinHandle<()>) {
        lock(&self.tasks).insert(id, task.abort_handle());
        if task.is_finished() {
            lock(&self.tasks).remove(&id);
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }
}
