//! toolnexus: an MCP client for C hosts (contract in `shared/docs/contract.md`).
//!
//! Protocol logic (bridge, naming, config, sessions) knows nothing of C; [`ffi`] is the only
//! place with raw pointers and `unsafe`.
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod adapters;
pub mod bridge;
pub mod client;
pub mod config;
pub mod conn;
pub mod error;
pub mod ffi;
#[cfg(test)]
mod fuzz;
pub mod json;
pub mod jsonrpc;
pub mod naming;
pub mod responder;
pub mod scan;
pub mod secrets;
pub mod sep1034;
pub mod session;
pub mod shape;
pub mod sys;
pub mod timer;
pub mod transport;
