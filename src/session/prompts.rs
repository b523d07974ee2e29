//! Prompts on one server (MCP `prompts/*`, both eras): the list through the one pager
//! ([`super::list`]), and a get that may ask (MRTR in 2026-07-28, [`super::mrtr`]; a push
//! `elicitation/create` in the handshake era goes to the resolver as any), with `Mcp-Name`
//! carrying the prompt's name over 2026-07-28's HTTP.

use super::list::{WalkError, Walked};
use super::mrtr::Asking;
use super::{CallCtl, Session};
use crate::error::{ErrorKind, Result};

impl Session {
    /// Every `prompts/list` page.
    pub(crate) fn list_prompts(&self) -> std::result::Result<Walked, WalkError> {
        self.walk("prompts/list", "prompts")
    }

    /// `prompts/get` of the server's prompt `name` with `arguments` (a JSON object of strings,
    /// as text): `{"description"?,"messages":[…],"_meta"?}`, every content block as sent.
    pub(crate) fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&str>,
        ctl: &CallCtl<'_>,
    ) -> Result<String> {
        let mut members = String::from(r#""name":"#);
        crate::json::rpc::push_json_string(&mut members, name);
        if let Some(a) = arguments {
            members.push_str(r#","arguments":"#);
            members.push_str(a);
        }
        let what = format!("`{}`", crate::util::quoted(name));
        let a = Asking {
            method: "prompts/get",
            members: &members,
            name,
            what: &what,
            // An unknown prompt or a missing argument: -32602 in both eras (prompts.mdx).
            not_found: &[],
        };
        let v = self.ask_until_complete(&a, ctl)?;
        crate::mapping::prompts::get_result(&v)
            .map_err(|why| self.asked_failure(&a, ErrorKind::Server, &format!("failed: {why}")))
    }
}
