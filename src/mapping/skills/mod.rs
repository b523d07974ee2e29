//! Skills (SEP-2640), pure: whether a server offers them, its `skills/list` entries checked
//! ([`entry`]), a `resources/read` result's bytes and the verification on read ([`verify`]: the
//! size, then the SHA-256 digest, then for a `SKILL.md` its YAML frontmatter, read within limits
//! by [`frontmatter`], compared field by field with the entry's). No I/O: the session asks,
//! this decides.

mod entry;
mod frontmatter;
#[cfg(test)]
mod tests;
mod verify;

pub(crate) use entry::*;
pub(crate) use verify::*;

/// The extension's key in a server's `capabilities.extensions`.
pub(crate) const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
