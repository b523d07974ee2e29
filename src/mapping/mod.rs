//! The mapping between MCP and the toolnexus contract, pure (contract §0.1, §1, §4, §10): the
//! elicitation bridge's tables ([`elicitation`]), tool names ([`naming`]), listed tools
//! ([`listing`]), results ([`shape`]), tools in a model provider's shape ([`adapters`]), and
//! Skills entries and their verification on read ([`skills`], SEP-2640), resources and prompts
//! as a host sees them ([`resources`], [`prompts`]), RFC 6570 templates ([`uri_template`]).
//! No I/O, nothing of C. (The live bridge's SEP-1034 defaults are the host's: `host::defaults`.)

pub(crate) mod adapters;
pub(crate) mod elicitation;
pub(crate) mod listing;
pub(crate) mod naming;
pub(crate) mod prompts;
pub(crate) mod resources;
pub(crate) mod shape;
pub(crate) mod skills;
pub(crate) mod uri_template;
