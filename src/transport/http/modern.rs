//! MCP 2026-07-28 over streamable HTTP (contract §6): no session and no standalone stream;
//! every POST carries `MCP-Protocol-Version`, `Mcp-Method`, and for a `tools/call` `Mcp-Name`
//! and the `Mcp-Param-*` headers the session computed; an error status whose body answers the
//! request is that answer (a 400 with -32022 is how a modern server refuses a version); a
//! response stream that ends early fails the call, which is never sent again.

use super::inbox::Inbox;
use super::reply::answers;
use super::streamable::{HttpTransport, Post};
use crate::request::RequestError;
use crate::transport::sse;
use reqwest::header::{HeaderName, HeaderValue};

/// The protocol version of the modern era (§6).
pub(crate) const MODERN_VERSION: &str = "2026-07-28";

impl HttpTransport {
    /// The POST of a modern message with its headers.
    fn modern_post(&self, out: &Post) -> Result<reqwest::RequestBuilder, RequestError> {
        let mut req = self
            .post(self.url.clone(), &out.body, false)
            .header("mcp-protocol-version", MODERN_VERSION);
        if let Some(m) = &out.method {
            req = req.header("mcp-method", m.as_str());
        }
        if let Some(r) = &out.routing {
            if let Some(name) = &r.name {
                req = req.header("mcp-name", header_value(name)?);
            }
            for (k, v) in &r.params {
                let name = HeaderName::from_bytes(format!("mcp-param-{k}").as_bytes())
                    .map_err(|_| RequestError::Lost(format!("`{k}` is not a header name")))?;
                req = req.header(name, header_value(v)?);
            }
        }
        Ok(req)
    }

    pub(super) async fn deliver_modern(&self, out: &Post) -> Result<(), RequestError> {
        let mut rounds = crate::auth::Rounds::default();
        let resp = loop {
            self.auth.before_send().await.map_err(RequestError::Auth)?;
            let sent_with = self.auth.generation();
            let resp = self
                .send_bounded(self.modern_post(out)?)
                .await
                .map_err(RequestError::Lost)?;
            if self.denied(&resp, sent_with, &mut rounds, out.id).await? {
                // §6: a 401/403 runs authorization (§8) first, then the request again.
                continue;
            }
            break resp;
        };
        let status = resp.status();
        let Some(id) = out.id else {
            return if status.is_success() {
                Ok(())
            } else {
                Err(RequestError::Lost(format!(
                    "HTTP {status}{}",
                    self.snippet(resp).await
                )))
            };
        };
        if status.is_success() {
            return self
                .read_reply(resp, id, None)
                .await
                .map_err(RequestError::Lost);
        }
        // A modern server answers errors with an HTTP status and a JSON-RPC body (§6).
        let body = self.read_body(resp).await.unwrap_or_default();
        let text = String::from_utf8_lossy(&body);
        let mut answered = false;
        for msg in sse::messages(&text) {
            if answers(&msg, id) {
                answered = true;
                self.file(Inbox::Message(msg, Some(id))).await;
            }
        }
        if answered {
            Ok(())
        } else {
            Err(RequestError::Lost(format!(
                "HTTP {status}{}",
                if text.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", self.quote(&text))
                }
            )))
        }
    }
}

pub(super) fn header_value(v: &str) -> Result<HeaderValue, RequestError> {
    HeaderValue::from_str(v)
        .map_err(|_| RequestError::Lost("a routing header value is not header-safe".into()))
}
