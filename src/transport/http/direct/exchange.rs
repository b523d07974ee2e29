//! One request on the direct path (contract §5), from its write to the end of its reply: its
//! socket, what was read of the reply, and what the async path needs to take it over.

use super::body;
use super::head::{Head, HeadReader};
use super::socket::Sock;
use crate::transport::http::protocol::{self, Post};

/// One request on the direct path, from its write to the end of its reply.
pub(crate) struct Exchange {
    pub(crate) sock: Sock,
    pub(crate) buf: Vec<u8>,
    /// Takes the head (and the interim heads before it) from `buf`.
    pub(crate) heads: HeadReader,
    pub(crate) head: Option<Head>,
    /// The body's framing (length, chunked, until close).
    pub(crate) framing: Option<body::BodyDecoder>,
    /// The body read into messages, as the async client reads it ([`protocol::ReplyBody`]).
    pub(crate) reply: Option<protocol::ReplyBody>,
    /// Decoded body bytes, between the framing and the reading.
    pub(crate) decoded: Vec<u8>,
    /// What the async path needs to take over.
    pub(crate) post: Post,
    pub(crate) modern: bool,
    /// The session the request was sent on, and whether it had one (a 404 then means the
    /// session expired, §5).
    pub(crate) generation: u64,
    pub(crate) had_session: bool,
    /// The token generation the request carried (§8).
    pub(crate) sent_with: u64,
    /// A 401/403's challenge and DPoP nonce, once its body is in (authorization runs then, §8).
    pub(crate) denied: Option<(Option<String>, Option<String>)>,
}

impl Exchange {
    /// The response to the request has arrived.
    pub(crate) fn answered(&self) -> bool {
        self.reply.as_ref().is_some_and(|r| r.answered)
    }
}
