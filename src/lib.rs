//! toolnexus for C hosts: an MCP client (contract in `shared/docs/contract.md`; § marks are its
//! sections), shipped as a C ABI ([`ffi`]) over one small safe Rust API that the `toolnexus`
//! command uses too: [`Client`], the [`Resolver`] trait, and the [`pure`] functions.
//!
//! Arrows point one way: ffi → client → session → conn → transport → sys. Protocol logic
//! knows nothing of C; `unsafe` lives in [`ffi`] and `sys` only.
//!
//! | module | holds |
//! |---|---|
//! | `ffi/` | the exported `tn_*` functions, the panic guard, C strings, the C resolver |
//! | `client/` | many servers from one config: order, isolation, names, collisions, statuses (§2–§3); `calling`: calls by name, async, cancel, resume |
//! | `listing` | the tools a server listed, kept as their text when it is already canonical JSON, and their §0.1 objects |
//! | `session/` | one server's MCP lifecycle (§3, §5, §6): start and era (`probe`), the handshake (`legacy`), MCP 2026-07-28 (`modern`), list, a call's rounds (`rounds`: MRTR, -32042, timeouts), durable suspension (`suspend`) |
//! | `calls` | calls the host controls: asynchronous calls, cancel, their threads (§7) |
//! | `conn` | one connection's bookkeeping: ids, pending calls, progress, waking callers; `request`: what one request is and how long it may take |
//! | `live_bridge` | server requests on a live connection: the resolver inline, SEP-1034 (§4) |
//! | `clock` | call timers that pause while the host is asked (§4) |
//! | `auth/` | OAuth for remote servers (§8): config (`spec`), what it works with (`flow`), discovery and token requests (`requests`), the grants (`grants`), the resolver's login (`login`), the token store (`store`) |
//! | `transport/` | how bytes move: `stdio`, `stderr` (every child's stderr, one thread), `http/` (shared clients, `streamable`, `reply`, `modern`, `server_stream`, `legacy_sse`, `inbox`: the reader thread; the direct path: `direct`, `direct_reply`, `pool`, `tls`, `wire`), `sse` |
//! | `sys/` | the platform calls: pipes, process groups, signals; `net`: the direct path's sockets |
//! | `bridge`, `sep1034`, `responder` | the §10 mapping, SEP-1034 defaults/checks, one-shot responders |
//! | `pure`, `adapters` | the JSON-in/JSON-out functions; tools in a provider's shape |
//! | `config`, `secrets` | §2 config parsing, `${ENV}` headers; masking secrets in quoted text (§9) |
//! | `naming`, `shape`, `jsonrpc`, `scan`, `json`, `timer`, `error` | names (§0.1), results (§1), framing, byte scanning, JSON text, timers, errors |
//! | `canon` | whether JSON text is already what serde_json would write (then it is passed on as it is), and where its outer members are |
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

mod adapters;
mod auth;
mod bridge;
mod canon;
mod client;
mod config;
mod conn;
mod error;
pub mod ffi;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod host;
mod json;
mod jsonrpc;
mod listing;
mod naming;
mod net;
pub mod pure;
mod request;
mod responder;
mod scan;
mod sep1034;
mod session;
mod shape;
mod sys;
mod transport;
mod util;

pub use client::{Client, Done, Progress};
pub use error::{Error, ErrorKind, Result};
pub use responder::{
    answer as answer_responder, Resolver, ResolverReturn, Token as ResponderToken,
};
