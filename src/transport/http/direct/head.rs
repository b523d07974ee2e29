//! HTTP/1.1 response heads as the direct path reads them (contract §5, RFC 9112): parsed by
//! `httparse` (hyper's own parser), interim heads dropped and counted, the framing of the body
//! that follows judged from the status and the headers. Pure byte handling, no I/O, so every
//! edge is unit-tested here and fuzzed (`fuzz/`); the body is [`super::body`].

/// The longest response head accepted, interim (1xx) heads before it included: a server sending
/// more is not speaking HTTP to us.
const MAX_HEAD: usize = 64 * 1024;

/// Interim (1xx) responses accepted before the final one (hyper and curl keep no count; a
/// server flooding them would otherwise keep a call busy for its whole timeout).
const MAX_INTERIM: usize = 32;

/// Headers in one head (hyper's default).
const MAX_HEADERS: usize = 100;

/// What the direct path needs of a response head.
#[derive(Debug, PartialEq)]
pub(crate) struct Head {
    pub(crate) status: u16,
    /// `Content-Type: text/event-stream`.
    pub(crate) sse: bool,
    pub(crate) framing: Framing,
    /// The connection may carry another request after this response.
    pub(crate) keep_alive: bool,
    /// `WWW-Authenticate` (a 401/403 starts authorization with it, §8).
    pub(crate) challenge: Option<String>,
    /// `DPoP-Nonce` (a DPoP server's 401 `use_dpop_nonce` names the nonce in it, RFC 9449 §9).
    pub(crate) dpop_nonce: Option<String>,
}

/// How the body's end is found (RFC 9112 §6.3).
#[derive(Debug, PartialEq, Clone, Copy)]
pub(crate) enum Framing {
    Length(usize),
    Chunked,
    /// Until the server closes the connection.
    Close,
}

/// Takes response heads from the front of a buffer as its bytes arrive: interim (1xx) heads
/// are dropped once parsed and counted, and the buffer is parsed only when a head can have
/// ended in it (a blank line arrived), so a head that trickles in costs one parse, not one per
/// read. Bytes that cannot start an HTTP/1.x response fail at once.
#[derive(Default)]
pub(crate) struct HeadReader {
    interim: usize,
    /// Bytes of interim heads dropped so far (they count against [`MAX_HEAD`]).
    interim_bytes: usize,
    /// How far the buffer was searched for a blank line.
    searched: usize,
    /// The buffer's length at the last parse of an incomplete head.
    parsed: usize,
}

/// An incomplete head is parsed again once this much more of it arrived (or its first line
/// ended), so a malformed head fails without waiting for a blank line, and a head that trickles
/// in a byte at a time costs at most 64 parses.
const REPARSE: usize = 1024;

impl HeadReader {
    /// The final head, once it is complete: drained from `buf` together with the interim
    /// heads before it. `Ok(None)` while incomplete.
    pub(crate) fn take(&mut self, buf: &mut Vec<u8>) -> Result<Option<Head>, String> {
        loop {
            // Empty lines before the status line are ignored (RFC 9112 §2.2, as httparse does).
            let start = buf
                .iter()
                .take_while(|b| matches!(b, b'\r' | b'\n'))
                .count();
            let prefix = &buf[start..buf.len().min(start + 5)];
            if !b"HTTP/".starts_with(prefix) {
                return Err(format!(
                    "the server did not answer in HTTP/1.x (its reply starts with {})",
                    shown(&buf[..buf.len().min(16)])
                ));
            }
            let from = self.searched.saturating_sub(2).max(start);
            let ended = blank_line(&buf[from..]);
            self.searched = buf.len();
            if !ended {
                if buf.len() + self.interim_bytes > MAX_HEAD {
                    return Err(format!(
                        "the response head is longer than {} KiB",
                        MAX_HEAD / 1024
                    ));
                }
                let first_line =
                    self.parsed == 0 && buf[start..].iter().any(|b| matches!(b, b'\r' | b'\n'));
                if first_line || buf.len() >= self.parsed + REPARSE {
                    // Partial is expected here; an error is the head's fault.
                    self.parsed = buf.len();
                    parse(buf)?;
                }
                return Ok(None);
            }
            let Some((head, used)) = parse(buf)? else {
                return Ok(None);
            };
            self.interim_bytes += used;
            if self.interim_bytes > MAX_HEAD {
                return Err(format!(
                    "the response head is longer than {} KiB",
                    MAX_HEAD / 1024
                ));
            }
            buf.drain(..used);
            self.searched = 0;
            self.parsed = 0;
            if let Parsed::Final(head) = head {
                return Ok(Some(head));
            }
            self.interim += 1;
            if self.interim > MAX_INTERIM {
                return Err(format!(
                    "the server sent more than {MAX_INTERIM} interim (1xx) responses"
                ));
            }
        }
    }
}

impl HeadReader {
    /// The connection ended before a whole head came: what is wrong with what did come (the
    /// parser's word when it has one), so a server that stops mid-head is told precisely.
    pub(crate) fn at_eof(&self, buf: &[u8]) -> String {
        match parse(buf) {
            Err(e) => e,
            _ => "the server closed the connection without an HTTP response".into(),
        }
    }
}

/// Whether `bytes` hold the end of a head: an empty line (CRLF CRLF, or bare LFs, which
/// httparse accepts as RFC 9112 §2.2 allows).
fn blank_line(bytes: &[u8]) -> bool {
    bytes
        .windows(2)
        .enumerate()
        .any(|(i, w)| w == b"\n\n" || (w == b"\n\r" && bytes.get(i + 2) == Some(&b'\n')))
}

enum Parsed {
    Interim,
    Final(Head),
}

/// Parses the head at the start of `buf`: `Ok(None)` while incomplete.
fn parse(buf: &[u8]) -> Result<Option<(Parsed, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let used = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(format!(
                "the response head has more than {MAX_HEADERS} headers"
            ))
        }
        Err(e) => {
            let line = buf.split(|&b| b == b'\n').next().unwrap_or(buf);
            return Err(format!(
                "a malformed HTTP response head ({e}; it starts {})",
                shown(&line[..line.len().min(80)])
            ));
        }
    };
    let (Some(status), Some(version)) = (resp.code, resp.version) else {
        return Ok(None);
    };
    match status {
        // httparse reads any three digits; RFC 9110 §15 has none below 100.
        0..=99 => {
            return Err(format!(
                "a malformed HTTP response head (status {status:03} is not a status code)"
            ))
        }
        101 => {
            return Err("the server switched protocols (HTTP 101), which was not asked for".into())
        }
        100..=199 => return Ok(Some((Parsed::Interim, used))),
        _ => {}
    }
    Ok(Some((
        Parsed::Final(head_of(status, version, resp.headers)?),
        used,
    )))
}

/// The framing and reuse of a final head (RFC 9112 §6.3, §9.3).
fn head_of(status: u16, version: u8, headers: &[httparse::Header<'_>]) -> Result<Head, String> {
    let mut head = Head {
        status,
        sse: false,
        framing: Framing::Close,
        keep_alive: version == 1,
        challenge: None,
        dpop_nonce: None,
    };
    let mut length: Option<usize> = None;
    let mut bad_length = false;
    // Every Transfer-Encoding header's codings, in order, as one list (an empty header still
    // says the body is transfer-coded).
    let mut codings: Vec<String> = Vec::new();
    let mut transfer_coded = false;
    for h in headers {
        let value = trim(h.value);
        let name = h.name;
        if name.eq_ignore_ascii_case("content-type") {
            // The media type itself, before any parameter.
            let media = value.split(|&b| b == b';').next().unwrap_or(b"");
            head.sse = trim(media).eq_ignore_ascii_case(b"text/event-stream");
        } else if name.eq_ignore_ascii_case("content-length") {
            // A list of identical values is one value (RFC 9110 §8.6).
            for v in value.split(|&b| b == b',') {
                match decimal(trim(v)) {
                    Some(n) if length.is_none_or(|l| l == n) => length = Some(n),
                    Some(_) => return Err("two different Content-Length headers".into()),
                    None => bad_length = true,
                }
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            transfer_coded = true;
            for c in value.split(|&b| b == b',') {
                let c = trim(c);
                if !c.is_empty() {
                    codings.push(String::from_utf8_lossy(c).to_ascii_lowercase());
                }
            }
        } else if name.eq_ignore_ascii_case("www-authenticate") {
            head.challenge = Some(String::from_utf8_lossy(value).into_owned());
        } else if name.eq_ignore_ascii_case("dpop-nonce") {
            head.dpop_nonce = Some(String::from_utf8_lossy(value).into_owned());
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(|&b| b == b',') {
                let token = trim(token);
                if token.eq_ignore_ascii_case(b"close") {
                    head.keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && version == 0 {
                    head.keep_alive = true;
                }
            }
        }
    }
    if matches!(status, 204 | 304) {
        // No body, whatever the headers say (RFC 9112 §6.3 rule 1).
        head.framing = Framing::Length(0);
        return Ok(head);
    }
    if transfer_coded {
        if version == 0 {
            // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
            return Err("an HTTP/1.0 response with Transfer-Encoding".into());
        }
        // Transfer-Encoding overrides Content-Length; both at once is a smuggling sign, so the
        // connection is not reused (RFC 9112 §6.3 rule 3).
        if length.is_some() || bad_length {
            head.keep_alive = false;
        }
        if codings.last().map(String::as_str) == Some("chunked") {
            if codings[..codings.len() - 1].iter().any(|c| c == "chunked") {
                return Err("chunked is applied twice in Transfer-Encoding".into());
            }
            head.framing = Framing::Chunked;
        } else {
            // A final coding other than chunked: the body ends when the server closes
            // (rule 4), and the connection is never reused.
            head.keep_alive = false;
            head.framing = Framing::Close;
        }
        return Ok(head);
    }
    if bad_length {
        return Err("a malformed Content-Length".into());
    }
    match length {
        Some(n) => head.framing = Framing::Length(n),
        None => {
            head.keep_alive = false;
            head.framing = Framing::Close;
        }
    }
    Ok(head)
}

fn trim(mut b: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = b {
        b = rest;
    }
    b
}

/// A decimal number of digits only (no sign, no space), as Content-Length is.
fn decimal(b: &[u8]) -> Option<usize> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    b.iter().try_fold(0usize, |n, &d| {
        n.checked_mul(10)?.checked_add(usize::from(d - b'0'))
    })
}

/// Bytes for an error message: printable ASCII as is, the rest escaped.
fn shown(b: &[u8]) -> String {
    let text: String = b.escape_ascii().to_string();
    format!("`{}`", crate::util::cut(&text, 80))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The final head of `text` and the bytes left after it.
    fn head(text: &str) -> (Head, usize) {
        let mut buf = text.as_bytes().to_vec();
        let h = HeadReader::default().take(&mut buf).unwrap().unwrap();
        (h, buf.len())
    }

    fn err(text: &[u8]) -> String {
        HeadReader::default()
            .take(&mut text.to_vec())
            .expect_err("refused")
    }

    fn incomplete(text: &[u8]) -> bool {
        HeadReader::default()
            .take(&mut text.to_vec())
            .unwrap()
            .is_none()
    }

    #[test]
    fn heads() {
        let (h, rest) = head(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{}",
        );
        assert_eq!(
            h,
            Head {
                status: 200,
                sse: false,
                framing: Framing::Length(12),
                keep_alive: true,
                challenge: None,
                dpop_nonce: None,
            }
        );
        assert_eq!(rest, 2);
        let (h, _) = head("HTTP/1.1 200 OK\r\ncontent-type: Text/Event-Stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n");
        assert!(h.sse && h.framing == Framing::Chunked && h.keep_alive);
        let (h, _) =
            head("HTTP/1.1 202 Accepted\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        assert!(!h.keep_alive && h.framing == Framing::Length(0));
        let (h, _) = head("HTTP/1.0 200 OK\r\n\r\n");
        assert!(!h.keep_alive && h.framing == Framing::Close);
        let (h, _) = head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n");
        assert!(h.keep_alive);
        let (h, rest) = head("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nX");
        assert_eq!((h.status, h.framing, rest), (204, Framing::Length(0), 1));
        assert!(incomplete(b"HTTP/1.1 200 OK\r\nA: b\r\n"));
        assert!(incomplete(b"HT"));
        let raw = b"HTTP/1.1 200 OK\r\nX-Odd: \xff\xfe\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(head(&String::from_utf8_lossy(raw)).0.status, 200);
        let (h, _) = head("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"x\"\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(h.challenge.as_deref(), Some("Bearer realm=\"x\""));
        let (h, _) = head("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: DPoP error=\"use_dpop_nonce\"\r\nDPoP-Nonce: n-1\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(h.dpop_nonce.as_deref(), Some("n-1"));
        let (h, _) = head("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n");
        assert_eq!(h.framing, Framing::Length(5));
    }

    /// Found in review: malformed heads that have no blank line yet fail at once too.
    #[test]
    fn malformed_heads_fail_before_a_blank_line() {
        assert!(err(b"HTTP/1.1 +20 OK\r\n").contains("malformed"));
        assert!(err(b"HTTP/1.1 200 OK\rContent-Length: 2\r\r{}").contains("malformed"));
        let mut long = b"HTTP/1.1 200 OK\r\nX: ok\r\n".to_vec();
        long.resize(long.len() + REPARSE, b'a');
        long.extend_from_slice(b"\x01\r\n");
        long.resize(long.len() + REPARSE, b'b');
        assert!(err(&long).contains("malformed"));
        // Empty lines before the status line are skipped.
        let (h, _) = head("\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(h.status, 200);
    }

    #[test]
    fn bare_lf_heads_are_read() {
        let (h, rest) = head("HTTP/1.1 200 OK\nContent-Length: 2\n\n{}");
        assert_eq!((h.status, h.framing, rest), (200, Framing::Length(2), 2));
        let (h, _) = head("HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\n{}");
        assert_eq!(h.framing, Framing::Length(2));
    }

    #[test]
    fn what_is_not_http_fails_at_once() {
        assert!(err(b"SSH-2.0-OpenSSH\r\n").contains("did not answer in HTTP/1.x"));
        // An HTTP/2 server's first frame (SETTINGS), and the client preface echoed.
        assert!(err(b"\x00\x00\x12\x04\x00").contains("HTTP/1.x"));
        assert!(err(b"PRI * HTTP/2.0\r\n").contains("HTTP/1.x"));
        assert!(err(b"HTTP/2 200\r\n\r\n").contains("malformed"));
        assert!(err(b"HTTP/1.1 +20 OK\r\n\r\n").contains("malformed"));
        assert!(err(b"HTTP/1.1 20 OK\r\n\r\n").contains("malformed"));
        // Found by fuzzing: three digits below 100 are no status code.
        assert!(err(b"HTTP/1.1 000 OK\r\n\r\n").contains("not a status code"));
        assert!(err(b"HTTP/1.1 099 OK\r\n\r\n").contains("not a status code"));
        assert!(err(b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n").contains("malformed"));
        assert!(
            err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\n\r\n").contains("malformed")
        );
        assert!(err(b"HTTP/1.1 101 Switching Protocols\r\n\r\n").contains("101"));
        assert!(err(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").contains("Content-Length"));
        assert!(err(b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n").contains("Content-Length"));
        assert!(
            err(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")
                .contains("two different")
        );
        // 64 KiB read byte by byte takes Miri minutes; the cap is one comparison.
        if !cfg!(miri) {
            let mut long = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
            long.resize(MAX_HEAD + 1, b'a');
            assert!(err(&long).contains("longer than 64 KiB"));
        }
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert!(err(&many).contains("more than 100 headers"));
    }

    #[test]
    fn no_body_for_204_and_304() {
        for s in [204, 304] {
            let (h, _) = head(&format!(
                "HTTP/1.1 {s} X\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
            ));
            assert_eq!(h.framing, Framing::Length(0));
        }
    }

    #[test]
    fn transfer_encoding_as_rfc_9112_says() {
        // Transfer-Encoding overrides Content-Length, and the connection is not reused.
        let (h, _) =
            head("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(h.framing == Framing::Chunked && !h.keep_alive);
        // A final coding other than chunked: read until close, never reuse.
        let (h, _) =
            head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n");
        assert!(h.framing == Framing::Close && !h.keep_alive);
        let (h, _) = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n");
        assert!(h.framing == Framing::Close && !h.keep_alive);
        // Several headers are one list.
        let (h, _) = head(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
        );
        assert_eq!(h.framing, Framing::Close);
        let (h, _) = head(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert!(h.framing == Framing::Chunked && h.keep_alive);
        let (h, _) = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip,, CHUNKED\r\n\r\n");
        assert_eq!(h.framing, Framing::Chunked);
        assert!(
            err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n")
                .contains("twice")
        );
        assert!(err(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").contains("1.0"));
        // A malformed length does not matter once Transfer-Encoding frames the body.
        let (h, _) =
            head("HTTP/1.1 200 OK\r\nContent-Length: x\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(h.framing == Framing::Chunked && !h.keep_alive);
    }

    #[test]
    fn interim_heads_are_dropped_and_counted() {
        let mut buf = Vec::new();
        let mut r = HeadReader::default();
        for _ in 0..MAX_INTERIM {
            buf.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        assert_eq!(r.take(&mut buf).unwrap(), None);
        assert!(buf.is_empty(), "each interim head is dropped once parsed");
        buf.extend_from_slice(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n");
        assert!(r
            .take(&mut buf)
            .unwrap_err()
            .contains("more than 32 interim"));
        // A head that trickles in is parsed once it can have ended.
        let mut r = HeadReader::default();
        let mut buf = Vec::new();
        let text = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        for (i, b) in text.iter().enumerate() {
            buf.push(*b);
            let got = r.take(&mut buf).unwrap();
            assert_eq!(got.is_some(), i == text.len() - 1, "byte {i}");
        }
    }

    #[test]
    fn an_empty_transfer_encoding_still_codes_the_body() {
        // Until close, no reuse.
        let (h, _) = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\nContent-Length: 2\r\n\r\n");
        assert!(h.framing == Framing::Close && !h.keep_alive);
        let (h, _) = head(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-streamy\r\nContent-Length: 0\r\n\r\n",
        );
        assert!(!h.sse);
    }
}
