//! A server's tasks (docs/tasks.md): `tasks/list` of one connected server, where the server offers it
//! (MCP 2025-11-25 `capabilities.tasks.list`; SEP-2663 removed it from MCP 2026-07-28).

use super::Client;
use crate::error::{Error, ErrorKind, Result};

impl Client {
    /// `{"server":"<name>","tasks":[<Task as the server sent it>…]}`, every page followed; a
    /// server that is unknown, not connected or lists no tasks: `NotFound`, naming why.
    pub fn list_tasks(&self, name: &str) -> Result<String> {
        let session = self.connected(name)?;
        if crate::host::in_own_resolver(&session.conn) {
            return Err(Error::new(
                ErrorKind::Reentrant,
                format!("tasks/list to server `{name}` from inside its own inline resolver would deadlock"),
            ));
        }
        session.list_tasks()
    }
}
