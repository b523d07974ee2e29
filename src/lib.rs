//! toolnexus for C hosts: an MCP client (contract in `shared/docs/contract.md`; § marks are its
//! sections), shipped as a C ABI ([`ffi`]) over one small safe Rust API that the `toolnexus`
//! command uses too: [`Client`], the [`Resolver`] trait, and the [`pure`] functions.
//!
//! Arrows point one way, from the host down to the platform (`scripts/check-layers` fails the
//! tests on any import cycle among modules or files):
//! ffi → client → session → host → conn → transport (and `request`) → auth → net → config →
//! responder → mapping → json → util → sys, with `pure` beside `ffi` and `error` under all.
//! Protocol logic knows nothing of C; `unsafe` lives in [`ffi`] and `sys` only.
//!
//! | module | holds |
//! |---|---|
//! | `ffi/` | the exported `tn_*` functions, the panic guard, C strings, the C resolver, handles |
//! | `client/` | many servers from one config: order, isolation, names, collisions, statuses (§2–§3); `calling`: calls by name, cancel, resume; `async_calls`: the call pool (§7); `skills`: Skills across the servers (SEP-2640); for long-lived hosts: `servers` (each server's slot, the shared tool `index` swapped whole), `restart`, `refresh`, `watch` (what a connection tells the client), `events` (the host's event callback and its bounded queue); `resources`, `prompts` (resources, subscriptions, prompts, completions across the servers), `held`, `catalog` (their listings held, relisted and told) |
//! | `session/` | one server's MCP lifecycle (§3, §5, §6): the era policy (`era`) and probe (`probe`), the handshake (`legacy`), MCP 2026-07-28 (`modern`), one `tools/call` (`call`: timeouts, cancel), one MRTR round (`mrtr`), -32042 (`url_elicitation`), a failed call as an isError (`failure`), what a cancel ends (`call_state`), durable suspension (`suspend`), one server's skills (`skills`), a call as a task (`tasks`), result size and `outputSchema` checks (`trust`), the one pager (`list`), capabilities (`capabilities`), 2026-07-28's listen (`listen`), `resources`, `prompts`, `completion` |
//! | `host/` | the host's side: resolver and bounds, the one re-entrancy guard, a server's own requests answered inline (`server_requests`), a round's question (`question`), the browser step of a login (`login`), SEP-1034's defaults and checks (`defaults`) (§4, §8) |
//! | `conn/` | one connection's bookkeeping: ids, pending calls, progress, waking callers; `pause_clock`: call timers that pause while the host is asked (§4); `subscriptions`: listens acknowledged and replaced |
//! | `request` | what one request is, how long it may take, its reply and routing headers |
//! | `transport/` | how bytes move: `stdio`, `stderr` (every child's stderr, one thread), `sse` (the one SSE parser), `http/` (`protocol`: streamable HTTP written once; `transport`: `HttpTransport`, one connection; `async_client`, `async_reply`, `get_stream`, `inbox`: the async client and its reader thread; `direct/`: the direct HTTP/1.1 client, its pool, response heads (`head`) and bodies (`body`); `legacy_sse`: HTTP+SSE, a dialect of the same transport) |
//! | `auth/` | OAuth for remote servers (§8): what it works with (`flow`), discovery, registration and token requests (`endpoints`), the grants (`grants`), the loopback listener (`login`), the token store (`store`), DPoP proofs (`dpop`) |
//! | `net/` | the runtime, the shared reqwest clients, the one TLS configuration (`tls`), errors in words |
//! | `config/` | §2 config parsing, the `auth` key (`auth`), `${NAME}` expansion (`expand`) |
//! | `mapping/` | the pure MCP ↔ contract mapping: §10 (`elicitation`), names, listed tools, results, provider shapes, Skills entries and their verification (`skills`), resources and prompts as a host sees them (`resources`, `prompts`), RFC 6570 templates (`uri_template`) |
//! | `pure`, `responder` | the JSON-in/JSON-out functions; one-shot responders |
//! | `json/` | JSON text untouched (`mod`), canonical text (`canon`), JSON-RPC framing (`rpc`), byte scanning (`scan`) |
//! | `util/`, `error` | locks, library threads, cutting and masking text (`secrets`, §9), the timer; errors |
//! | `sys/` | the platform layer: the interface the transports call (`mod`: child trees, their pipes, the stderr poller; `net`: the direct path's sockets; `fs`: owner-only files), the POSIX implementation beneath it (`unix/`), the Windows one beside it (`windows/`) |
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

mod auth;
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
mod mapping;
mod net;
pub mod pure;
mod request;
mod responder;
mod session;
mod sys;
mod transport;
mod util;
mod versions;

pub use client::{Client, Done, EventCallback, Progress};
pub use error::{Error, ErrorKind, Result};
pub use responder::{
    answer as answer_responder, Resolver, ResolverReturn, Token as ResponderToken,
};
