//! How a `tools/call` that did not give a result is told to the host (contract §1, §3, §9): an
//! isError ToolResult naming server, tool and cause, secrets masked, the child's stderr tail
//! after a timeout; the server told of an abandoned request (§7); a hint when a dual-era
//! server refused the way of asking of the era it is spoken to in.

use super::{Era, Session};
use crate::conn::{Limits, RequestError};

impl Session {
    pub(super) fn fail(&self, remote: &str, why: &str) -> String {
        crate::mapping::shape::failure(&self.spec.secrets().mask(&format!(
            "server `{}`: tools/call `{remote}` failed: {why}",
            self.spec.name
        )))
    }

    pub(crate) fn cancelled(&self, remote: &str) -> String {
        crate::mapping::shape::failure(&format!(
            "server `{}`: tools/call `{remote}` was cancelled",
            self.spec.name
        ))
    }

    /// Tells the server that request `id` is abandoned (§7): the elicitations on its stream
    /// are answered cancel, then `notifications/cancelled`; on modern HTTP the response
    /// stream is closed instead.
    pub(super) fn abandon(&self, id: u64, reason: &str) {
        self.conn.close_carried(id);
        self.transport.abandon(id);
        if self.transport.cancels_by_closing() {
            return;
        }
        let mut params = format!(r#"{{"requestId":{id},"reason":"#);
        crate::json::rpc::push_json_string(&mut params, reason);
        params.push('}');
        let _ = self.conn.notify("notifications/cancelled", Some(&params));
    }

    pub(super) fn shape_failure(
        &self,
        remote: &str,
        e: RequestError,
        limits: Limits,
    ) -> Option<String> {
        let server = &self.spec.name;
        let text = match e {
            RequestError::Closed => return None,
            RequestError::Cancelled => {
                format!("server `{server}`: tools/call `{remote}` was cancelled")
            }
            RequestError::Timeout(id) => {
                self.abandon(
                    id,
                    &format!("timed out after {} ms", limits.idle.as_millis()),
                );
                format!(
                    "server `{server}`: tools/call `{remote}` timed out: no answer within {} ms{}",
                    limits.idle.as_millis(),
                    self.stderr_tail()
                )
            }
            RequestError::TimedOutTotal(id) => {
                self.abandon(id, "maxTotalTimeout reached");
                format!(
                    "server `{server}`: tools/call `{remote}` timed out: still running after maxTotalTimeout ({} ms)",
                    self.spec.max_total_timeout.as_millis()
                )
            }
            f => format!(
                "server `{server}`: tools/call `{remote}` failed: {}{}",
                self.explain(&f),
                self.era_hint(&f)
            ),
        };
        Some(crate::mapping::shape::failure(
            &self.spec.secrets().mask(&text),
        ))
    }

    /// What to do when a dual-era server refused a way of asking that only the other era has
    /// (docs/protocol-eras.md): its SDKs name MCP 2026-07-28 or `InputRequiredResult` in the refusal. The
    /// call is not sent again in the other era (that would run the tool twice); the host can
    /// choose the era for this server.
    fn era_hint(&self, f: &RequestError) -> String {
        let RequestError::Rpc(e) = f else {
            return String::new();
        };
        let text = crate::json::to_text(e);
        if !(text.contains(crate::versions::MODERN_VERSION) || text.contains("InputRequiredResult"))
        {
            return String::new();
        }
        match self.era {
            Era::Legacy => " (this server is spoken to in the handshake era, chosen so that push-style questions work; a tool that asks through MRTR needs MCP 2026-07-28: set \"protocol\": \"modern-first\" for this server)".into(),
            Era::Modern => " (this server is spoken to in MCP 2026-07-28, where a tool asks only through MRTR; a push-style question needs the handshake era: set \"protocol\": \"legacy\" for this server)".into(),
        }
    }

    /// "; stderr: …" when the child wrote something (§3), else "".
    fn stderr_tail(&self) -> String {
        let tail = self.transport.diagnostics();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr: {tail}")
        }
    }
}
