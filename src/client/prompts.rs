//! Prompts and completions across a client's servers (c-api.md "Prompts"): every connected
//! server's prompts under host names ([`crate::mapping::prompts`]), a prompt got by its host
//! name from the server that lists it (a timeout and a cancel of its own through the `_ex`
//! form), and `completion/complete` on the server named.

use super::catalog::{self, List};
use super::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::session::CallCtl;
use serde_json::{Map, Value};
use std::time::Duration;

impl Client {
    /// `[{"name":<host name>,"server","prompt":<its name>,…,"arguments":[…]}]` sorted by host
    /// name: every connected server's prompts, all pages.
    pub fn list_prompts(&self) -> Result<String> {
        self.each_connected(|idx, s| catalog::get(&self.inner, idx, s, List::Prompts))?;
        Ok(catalog::rebuild_prompts(&self.inner).json.clone())
    }

    /// Gets the prompt of host name `name` with `args_json` (an object whose values are
    /// strings; numbers and booleans are sent as their JSON text): `{"description"?,
    /// "messages":[…]}`, every content block as the server sent it.
    pub fn get_prompt(&self, name: &str, args_json: Option<&str>) -> Result<String> {
        self.get_prompt_with(name, args_json, None, |_| {})
    }

    /// [`Client::get_prompt`] with its own `timeoutMs`, named by an id that
    /// [`Client::cancel_call`] ends.
    pub fn get_prompt_with(
        &self,
        name: &str,
        args_json: Option<&str>,
        timeout: Option<Duration>,
        on_id: impl FnOnce(u64),
    ) -> Result<String> {
        let args = arguments(args_json)?;
        let (server, remote) = self.prompt_named(name)?;
        let session = self.asked(&server, "prompts/get")?;
        self.cancellable(on_id, |state| {
            session.get_prompt(
                &remote,
                args.as_deref(),
                &CallCtl {
                    timeout,
                    state: Some(state),
                    ..CallCtl::PLAIN
                },
            )
        })
    }

    /// The server and the server's name of the prompt of host name `name`: from the last
    /// listing, else from a new one (a host may get a prompt it never listed).
    fn prompt_named(&self, name: &str) -> Result<(String, String)> {
        let find = |ix: &crate::mapping::prompts::PromptIndex| {
            ix.by_name
                .get(name)
                .map(|p| (self.inner.slots[p.server].name.clone(), p.remote.clone()))
        };
        if let Some(found) = find(&self.inner.prompt_index()) {
            return Ok(found);
        }
        self.list_prompts()?;
        find(&self.inner.prompt_index()).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("no prompt named `{}`", crate::util::quoted(name)),
            )
        })
    }

    /// `completion/complete` (c-api.md "Completions"): `request_json` is
    /// `{"server","ref":{"type":"ref/prompt","name"}|{"type":"ref/resource","uri"},
    /// "argument":{"name","value"},"context"?:{"arguments":{…}}}`; the server's `completion`
    /// object as sent (`{"values":[…],"total"?,"hasMore"?}`), `{"values":[]}` from a server
    /// without completions.
    pub fn complete(&self, request_json: &str) -> Result<String> {
        let v = crate::json::parse(request_json, "request_json")?;
        let Value::Object(req) = v else {
            return Err(Error::invalid_argument(
                "request_json must be a JSON object",
            ));
        };
        let Some(server) = req.get("server").and_then(Value::as_str) else {
            return Err(Error::invalid_argument(
                "request_json: `server` must be a string (the server's name in the config)",
            ));
        };
        let ok_ref = match req.get("ref") {
            Some(Value::Object(r)) => match r.get("type").and_then(Value::as_str) {
                Some("ref/prompt") => r.get("name").is_some_and(Value::is_string),
                Some("ref/resource") => r.get("uri").is_some_and(Value::is_string),
                _ => false,
            },
            _ => false,
        };
        if !ok_ref {
            return Err(Error::invalid_argument(
                "request_json: `ref` must be {\"type\":\"ref/prompt\",\"name\":…} or {\"type\":\"ref/resource\",\"uri\":…}",
            ));
        }
        let ok_arg = req.get("argument").is_some_and(|a| {
            a.get("name").is_some_and(Value::is_string)
                && a.get("value").is_some_and(Value::is_string)
        });
        if !ok_arg {
            return Err(Error::invalid_argument(
                "request_json: `argument` must be {\"name\":\"…\",\"value\":\"…\"}",
            ));
        }
        if let Some(c) = req.get("context") {
            let ok = c.is_object()
                && c.get("arguments").is_none_or(|a| {
                    a.as_object()
                        .is_some_and(|m| m.values().all(Value::is_string))
                });
            if !ok {
                return Err(Error::invalid_argument(
                    "request_json: `context` must be {\"arguments\":{\"<name>\":\"<value>\",…}}",
                ));
            }
        }
        let mut members = Map::new();
        for k in ["ref", "argument", "context"] {
            if let Some(v) = req.get(k) {
                members.insert(k.into(), v.clone());
            }
        }
        let text = crate::json::to_text(&Value::Object(members));
        let session = self.asked(server, "completion/complete")?;
        session.complete(&text[1..text.len() - 1])
    }
}

/// A prompt's arguments as the request's text: an object whose values are strings (numbers and
/// booleans become their JSON text); None for none.
fn arguments(args_json: Option<&str>) -> Result<Option<String>> {
    let Some(a) = args_json else { return Ok(None) };
    let Value::Object(m) = crate::json::parse(a, "args_json")? else {
        return Err(Error::invalid_argument(
            "args_json must be a JSON object of strings",
        ));
    };
    let mut out = Map::new();
    for (k, v) in m {
        let s = match v {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(Error::invalid_argument(format!(
                    "args_json: argument `{k}` must be a string (prompt arguments are strings)"
                )))
            }
        };
        out.insert(k, Value::String(s));
    }
    Ok(Some(crate::json::to_text(&Value::Object(out))))
}
