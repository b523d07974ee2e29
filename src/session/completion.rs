//! `completion/complete` on one server (MCP completions, both eras): a prompt argument's or a
//! resource template variable's values, for pickers. No MRTR and no cache hints: a plain
//! request, answered with the server's `completion` object as sent. A server that did not
//! declare completions, or answers -32601, has none: an empty list, not an error (hosts call
//! this as the user types).

use super::Session;
use crate::conn::RequestError;
use crate::error::{Error, ErrorKind, Result};
use serde_json::Value;

/// What a server without completions completes to.
const NONE: &str = r#"{"values":[]}"#;

impl Session {
    /// `completion/complete` with `members` (`"ref":…,"argument":…,"context"?:…`, checked by
    /// the caller): the `completion` object's text.
    pub(crate) fn complete(&self, members: &str) -> Result<String> {
        let known = self.known_capabilities();
        if known
            .as_ref()
            .is_some_and(|c| c.get("completions").is_none())
        {
            return Ok(NONE.into());
        }
        match self.value("completion/complete", members, None) {
            Ok(v) => match v.get("completion") {
                Some(c @ Value::Object(_)) => Ok(crate::json::to_text(c)),
                _ => Err(Error::new(
                    ErrorKind::Server,
                    format!(
                        "server `{}`: completion/complete answered without a `completion` object",
                        self.spec.name
                    ),
                )),
            },
            Err(RequestError::Rpc(e)) if e.get("code").and_then(Value::as_i64) == Some(-32601) => {
                Ok(NONE.into())
            }
            Err(RequestError::Closed) => {
                Err(Error::new(ErrorKind::Closed, "the client is disconnected"))
            }
            Err(f) => {
                let kind = match f {
                    RequestError::Timeout(_) | RequestError::TimedOutTotal(_) => ErrorKind::Timeout,
                    _ => ErrorKind::Server,
                };
                Err(Error::new(
                    kind,
                    self.spec.secrets().mask(&format!(
                        "server `{}`: completion/complete failed: {}",
                        self.spec.name,
                        self.explain(&f)
                    )),
                ))
            }
        }
    }
}
