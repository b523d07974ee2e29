//! Streamable HTTP, the protocol as both HTTP clients speak it (contract §5, §6, §8),
//! written once and free of I/O: what one outbound message is ([`Post`]), the headers a POST
//! carries in each era ([`each_header`]), how a reply's status is judged ([`status_verdict`]), a reply's body
//! read into messages ([`ReplyBody`]), and what a stream that ended means ([`stream_end`]). The async
//! client (reqwest, [`super::async_client`]) and the direct HTTP/1.1 client ([`super::direct`])
//! only move the bytes and drive these.

use crate::request::RequestError;
use crate::transport::sse::{self, EventParser};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use std::time::Duration;

/// The protocol version of the modern era (§6).
use crate::versions::MODERN_VERSION;
/// The HTTP session header (the handshake era).
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
pub(super) const VERSION_HEADER: &str = "mcp-protocol-version";
pub(super) const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// One outbound POST, with what the connection knew of it.
pub(super) struct Post {
    pub(super) body: String,
    pub(super) id: Option<u64>,
    /// The `initialize` request (legacy era).
    pub(super) opens_session: bool,
    pub(super) method: Option<String>,
    pub(super) routing: Option<Box<crate::transport::Routing>>,
    /// The request's timeout (the call's, §7; else the server's): writing it ends by then
    /// (docs/http-and-tls.md), and a stream resumed after a `retry:` as long is not resumed.
    pub(super) timeout: Duration,
}

/// What a POST says of the session it is sent in.
pub(super) enum PostSession<'a> {
    /// MCP 2026-07-28: no session; the version, the method and the routing headers (§6).
    Modern,
    /// The handshake era: the session id and the negotiated version, once there are.
    Session {
        session: Option<&'a str>,
        version: Option<&'a str>,
    },
}

/// The headers of `post`, each handed to `put` as (lower-case name, value): the configured ones,
/// its authorization (§8: a bearer token, or a DPoP token and proof; both only ever go to the
/// server's origin, §9), `Accept` and `Content-Type`, and the era's (§5, §6). A configured
/// header the protocol sets itself is left out (the protocol's value wins). Handed out rather
/// than collected so that the direct client writes them straight into its request bytes: a
/// header map per request cost the direct path about 8 % of its CPU per call (bench/README.md).
pub(super) fn each_header(
    configured: &HeaderMap,
    authorization: &[(HeaderName, HeaderValue)],
    post: &Post,
    era: PostSession<'_>,
    put: &mut dyn FnMut(&str, &[u8]),
) -> Result<(), RequestError> {
    let mut own: Vec<(std::borrow::Cow<'static, str>, &[u8])> = Vec::with_capacity(8);
    for (k, v) in authorization {
        own.push((k.as_str().to_string().into(), v.as_bytes()));
    }
    own.push((ACCEPT.as_str().into(), ACCEPT_BOTH.as_bytes()));
    own.push((CONTENT_TYPE.as_str().into(), b"application/json"));
    match era {
        PostSession::Modern => {
            own.push((VERSION_HEADER.into(), MODERN_VERSION.as_bytes()));
            if let Some(m) = &post.method {
                own.push(("mcp-method".into(), header_safe(m)?));
            }
            if let Some(r) = &post.routing {
                if let Some(name) = &r.name {
                    own.push(("mcp-name".into(), header_safe(name)?));
                }
                for (k, v) in &r.params {
                    let name = HeaderName::from_bytes(format!("mcp-param-{k}").as_bytes())
                        .map_err(|_| RequestError::Lost(format!("`{k}` is not a header name")))?;
                    own.push((name.as_str().to_string().into(), header_safe(v)?));
                }
            }
        }
        PostSession::Session { session, version } => {
            if let Some(s) = session {
                own.push((SESSION_HEADER.into(), header_safe(s)?));
            }
            if let Some(v) = version {
                own.push((VERSION_HEADER.into(), header_safe(v)?));
            }
        }
    }
    for (k, v) in configured {
        if !own.iter().any(|(n, _)| n == k.as_str()) {
            put(k.as_str(), v.as_bytes());
        }
    }
    for (k, v) in &own {
        put(k, v);
    }
    Ok(())
}

/// `v`'s bytes when it may be a header value (what `HeaderValue::from_str` accepts: no control
/// character but tab), else the error a routing header's bad value gets.
fn header_safe(v: &str) -> Result<&[u8], RequestError> {
    if v.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f)) {
        Ok(v.as_bytes())
    } else {
        Err(RequestError::Lost(
            "a routing header value is not header-safe".into(),
        ))
    }
}

/// Whether the message `text` is the response to our request `id`.
pub(super) fn answers(text: &str, id: u64) -> bool {
    matches!(crate::json::rpc::line_kind(text.as_bytes()),
        crate::json::rpc::LineKind::Response(i, _) if i == id)
}

/// What the status of a POST's reply decides, before its body is read (§5, §6, §8).
#[derive(Debug, PartialEq)]
pub(super) enum StatusVerdict {
    /// A 2xx: read the body (an event stream, or JSON).
    Read,
    /// A 2xx to an answer or notification of ours: taken; its body is not ours to read.
    Taken,
    /// 401/403: authorization runs once the body is in (it may not be an authorization matter:
    /// then it is an error status like any other).
    Denied,
    /// The server no longer knows the session the request carried (a 404): the session above
    /// renews it and sends the request again.
    SessionExpired,
    /// Before any session, `initialize` refused with 400/404/405: perhaps an HTTP+SSE server.
    NotStreamable,
    /// A redirect (same origin only, §9: the async client follows it).
    Redirect,
    /// Any other status: the body is quoted in the failure; a modern server's body may carry the
    /// JSON-RPC answer (§6).
    Error,
}

/// What a POST was, for [`status_verdict`].
pub(super) struct Sent {
    /// A request of ours (an id), not an answer or notification.
    pub(super) request: bool,
    pub(super) opens_session: bool,
    /// Whether the era was still unknown (before the `initialize` POST was answered).
    pub(super) unknown: bool,
    pub(super) modern: bool,
    /// Whether it carried a session id.
    pub(super) had_session: bool,
}

/// Judges a reply's status (the rules both clients apply, once).
pub(super) fn status_verdict(status: u16, sent: &Sent) -> StatusVerdict {
    match status {
        200..=299 if !sent.request => StatusVerdict::Taken,
        200..=299 => StatusVerdict::Read,
        301 | 302 | 303 | 307 | 308 => StatusVerdict::Redirect,
        401 | 403 => StatusVerdict::Denied,
        400 | 404 | 405 if sent.opens_session && sent.unknown => StatusVerdict::NotStreamable,
        404 if !sent.modern && sent.had_session && !sent.opens_session => {
            StatusVerdict::SessionExpired
        }
        _ => StatusVerdict::Error,
    }
}

/// The failure text of an error status (`HTTP 500 Internal Server Error: <the body, quoted>`).
pub(super) fn status_error(status: u16, quoted_body: &str) -> String {
    let code = reqwest::StatusCode::from_u16(status)
        .map(|c| c.to_string())
        .unwrap_or_else(|_| status.to_string());
    if quoted_body.is_empty() {
        format!("HTTP {code}")
    } else {
        format!("HTTP {code}: {quoted_body}")
    }
}

/// A reply's body as it arrives, read into the messages it carries (§5): an event stream event
/// by event (each capped at `maxMessageBytes`), or a JSON body (one message or a batch) at its
/// end.
pub(super) struct ReplyBody {
    /// The request the reply answers.
    id: u64,
    sse: Option<EventParser>,
    json: Vec<u8>,
    max: usize,
    pub(super) answered: bool,
    /// The last event id and `retry:` the stream gave (for a resume, §5).
    pub(super) last_id: Option<String>,
    pub(super) retry: Option<u64>,
}

impl ReplyBody {
    pub(super) fn new(id: u64, sse: bool, max: usize) -> ReplyBody {
        ReplyBody {
            id,
            sse: sse.then(|| EventParser::new(max)),
            json: Vec::new(),
            max,
            answered: false,
            last_id: None,
            retry: None,
        }
    }

    pub(super) fn is_sse(&self) -> bool {
        self.sse.is_some()
    }

    /// Reads `bytes`; an event stream's messages are pushed to `out` as they complete. Err: what
    /// the body carried is refused (an event past `maxMessageBytes`, a JSON body past it, a
    /// field that is not text): a resume would bring the same again.
    pub(super) fn feed(&mut self, bytes: &[u8], out: &mut Vec<String>) -> Result<(), String> {
        let Some(parser) = self.sse.as_mut() else {
            self.json.extend_from_slice(bytes);
            if self.json.len() > self.max {
                return Err(format!(
                    "the reply is longer than maxMessageBytes ({} bytes)",
                    self.max
                ));
            }
            return Ok(());
        };
        let mut events = Vec::new();
        let fed = parser.feed(bytes, &mut events);
        for ev in events {
            if let Some(i) = ev.id {
                self.last_id = Some(i);
            }
            if let Some(r) = ev.retry {
                self.retry = Some(r);
            }
            let Some(data) = ev.data else { continue };
            for msg in sse::messages(&data) {
                self.answered |= answers(&msg, self.id);
                out.push(msg);
            }
        }
        fed
    }

    /// A JSON body, complete: its messages (one, or a batch), and the failure when none of them
    /// answers the request; Err when it is empty or not JSON.
    pub(super) fn json_messages(
        &mut self,
        quote: &dyn Fn(&str) -> String,
    ) -> Result<(Vec<String>, Option<String>), String> {
        let text = String::from_utf8_lossy(&self.json).into_owned();
        if text.trim().is_empty() {
            return Err("the server sent an empty reply to a request".into());
        }
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&self.json) {
            return Err(format!(
                "the server's reply is not JSON ({e}): {}",
                quote(&text)
            ));
        }
        let msgs = sse::messages(&text);
        self.answered = msgs.iter().any(|m| answers(m, self.id));
        let unanswered = (!self.answered).then(|| {
            format!(
                "the server's reply does not answer the request: {}",
                quote(&text)
            )
        });
        Ok((msgs, unanswered))
    }

    /// The messages of an error status's body that answer the request (a modern server's way,
    /// §6); empty when none does.
    pub(super) fn answering_messages(&self) -> (Vec<String>, String) {
        let text = String::from_utf8_lossy(&self.json).into_owned();
        let msgs = sse::messages(&text)
            .into_iter()
            .filter(|m| answers(m, self.id))
            .collect();
        (msgs, text)
    }
}

/// What an event stream that ended before its response means (§5, §6).
pub(super) enum StreamEnd {
    /// Resumed with GET + `Last-Event-ID` (handshake era only).
    Resume,
    Fail(String),
}

/// A POST's event stream ended (`why`: how it broke, or None when the server closed it)
/// without the response.
pub(super) fn stream_end(modern: bool, last_id: Option<&str>, why: Option<&str>) -> StreamEnd {
    if modern {
        return StreamEnd::Fail(
            "the response stream ended before the response (MCP 2026-07-28 has no resumption; the call is not sent again)".into(),
        );
    }
    if last_id.is_some() {
        return StreamEnd::Resume;
    }
    StreamEnd::Fail(match why {
        Some(e) => format!("the event stream failed before the response: {e}"),
        None => "the server closed the event stream before the response".into(),
    })
}

/// How often in a row a request's stream is resumed (GET + Last-Event-ID) without receiving an
/// event before the call fails (§5); the call's timeout bounds the whole as well.
pub(super) const MAX_RESUMES: usize = 10;
/// The `retry:` a stream is resumed after when the server sent none.
pub(super) const DEFAULT_RETRY: Duration = Duration::from_millis(1000);

#[cfg(test)]
mod tests {
    use super::*;

    fn post(method: Option<&str>, routing: Option<crate::transport::Routing>) -> Post {
        Post {
            body: String::new(),
            id: Some(1),
            opens_session: false,
            method: method.map(str::to_string),
            routing: routing.map(Box::new),
            timeout: Duration::from_secs(1),
        }
    }

    fn written(
        configured: &[(&str, &str)],
        auth: &[(&str, &str)],
        p: &Post,
        era: PostSession<'_>,
    ) -> Result<Vec<(String, String)>, RequestError> {
        let mut c = HeaderMap::new();
        for (k, v) in configured {
            c.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let a: Vec<_> = auth
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                )
            })
            .collect();
        let mut out = Vec::new();
        each_header(&c, &a, p, era, &mut |k, v| {
            out.push((k.to_string(), String::from_utf8(v.to_vec()).unwrap()))
        })?;
        out.sort();
        Ok(out)
    }

    #[test]
    fn the_protocol_s_headers_win_over_configured_ones_and_none_is_sent_twice() {
        let p = post(None, None);
        let era = PostSession::Session {
            session: Some("s-1"),
            version: Some("2025-11-25"),
        };
        let got = written(
            &[
                ("X-Api-Key", "k"),
                ("Accept", "text/html"),
                ("Mcp-Session-Id", "forged"),
                ("Authorization", "Bearer configured"),
            ],
            &[("authorization", "Bearer from-auth")],
            &p,
            era,
        )
        .unwrap();
        let want: Vec<(String, String)> = [
            ("accept", ACCEPT_BOTH),
            ("authorization", "Bearer from-auth"),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-session-id", "s-1"),
            ("x-api-key", "k"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
        // Without a token of ours, a configured Authorization goes as configured.
        let got = written(
            &[("Authorization", "Bearer configured")],
            &[],
            &p,
            PostSession::Modern,
        )
        .unwrap();
        assert!(got.contains(&("authorization".into(), "Bearer configured".into())));
        assert!(got.contains(&("mcp-protocol-version".into(), MODERN_VERSION.into())));
    }

    #[test]
    fn modern_routing_headers_are_checked() {
        let routing = crate::transport::Routing {
            name: Some("echo".into()),
            params: vec![("Region".into(), "eu".into())],
        };
        let got = written(
            &[],
            &[],
            &post(Some("tools/call"), Some(routing)),
            PostSession::Modern,
        )
        .unwrap();
        for h in [
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
            ("mcp-param-region", "eu"),
        ] {
            assert!(got.contains(&(h.0.into(), h.1.into())), "{h:?} in {got:?}");
        }
        let bad = crate::transport::Routing {
            name: Some("line\nbreak".into()),
            params: vec![],
        };
        assert!(written(&[], &[], &post(None, Some(bad)), PostSession::Modern).is_err());
        let bad_name = crate::transport::Routing {
            name: None,
            params: vec![("a b".into(), "v".into())],
        };
        let e = written(&[], &[], &post(None, Some(bad_name)), PostSession::Modern).unwrap_err();
        assert!(
            format!("{e:?}").contains("`a b` is not a header name"),
            "{e:?}"
        );
    }

    fn sent(request: bool, opens: bool, unknown: bool, modern: bool, had: bool) -> Sent {
        Sent {
            request,
            opens_session: opens,
            unknown,
            modern,
            had_session: had,
        }
    }

    #[test]
    fn statuses_are_judged_once_for_both_clients() {
        let call = sent(true, false, false, false, true);
        assert_eq!(status_verdict(200, &call), StatusVerdict::Read);
        assert_eq!(
            status_verdict(202, &sent(false, false, false, false, true)),
            StatusVerdict::Taken
        );
        assert_eq!(status_verdict(401, &call), StatusVerdict::Denied);
        assert_eq!(status_verdict(403, &call), StatusVerdict::Denied);
        assert_eq!(status_verdict(404, &call), StatusVerdict::SessionExpired);
        assert_eq!(
            status_verdict(404, &sent(true, false, false, true, false)),
            StatusVerdict::Error
        );
        assert_eq!(status_verdict(307, &call), StatusVerdict::Redirect);
        assert_eq!(
            status_verdict(405, &sent(true, true, true, false, false)),
            StatusVerdict::NotStreamable
        );
        assert_eq!(
            status_verdict(400, &sent(true, true, false, false, false)),
            StatusVerdict::Error
        );
        assert_eq!(status_verdict(500, &call), StatusVerdict::Error);
        assert_eq!(status_error(503, ""), "HTTP 503 Service Unavailable");
        assert_eq!(status_error(599, "x"), "HTTP 599 <unknown status code>: x");
    }

    #[test]
    fn bodies_read_into_messages() {
        let mut b = ReplyBody::new(3, true, 1 << 10);
        let mut out = Vec::new();
        b.feed(
            b"id: e1\nretry: 250\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n",
            &mut out,
        )
        .unwrap();
        assert!(!b.answered && out.len() == 1);
        assert_eq!((b.last_id.as_deref(), b.retry), (Some("e1"), Some(250)));
        b.feed(
            b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n",
            &mut out,
        )
        .unwrap();
        assert!(b.answered && out.len() == 2);
        let mut j = ReplyBody::new(3, false, 1 << 10);
        j.feed(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &mut out)
            .unwrap();
        let (msgs, unanswered) = j.json_messages(&|t| t.to_string()).unwrap();
        assert!(msgs.len() == 1 && unanswered.is_none());
        let mut e = ReplyBody::new(3, false, 1 << 10);
        e.feed(b" ", &mut out).unwrap();
        assert!(e
            .json_messages(&|t| t.to_string())
            .unwrap_err()
            .contains("empty reply"));
        let mut n = ReplyBody::new(3, false, 1 << 10);
        n.feed(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}", &mut out)
            .unwrap();
        assert!(n
            .json_messages(&|t| t.to_string())
            .unwrap()
            .1
            .unwrap()
            .contains("does not answer"));
        let mut big = ReplyBody::new(3, false, 4);
        assert!(big
            .feed(b"12345", &mut out)
            .unwrap_err()
            .contains("maxMessageBytes"));
    }
}
