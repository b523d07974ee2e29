//! HTTP/1.1 as the direct path speaks it (contract §5, issue 18): a response head parsed from
//! bytes, and a body decoder for `Content-Length`, chunked and close-delimited bodies. Pure
//! byte handling, no I/O, so every edge is unit-tested here.

/// The longest response head accepted (a server sending more is not speaking HTTP to us).
const MAX_HEAD: usize = 64 * 1024;

/// What the direct path needs of a response head.
#[derive(Debug, PartialEq)]
pub(super) struct Head {
    pub(super) status: u16,
    /// `Content-Type: text/event-stream`.
    pub(super) sse: bool,
    pub(super) framing: Framing,
    /// The connection may carry another request after this response.
    pub(super) keep_alive: bool,
    /// `WWW-Authenticate` (a 401/403 starts authorization with it, §8).
    pub(super) challenge: Option<String>,
}

/// How the body's end is found.
#[derive(Debug, PartialEq, Clone, Copy)]
pub(super) enum Framing {
    Length(usize),
    Chunked,
    /// Until the server closes the connection.
    Close,
}

/// Parses the response head at the start of `buf`: `Ok(None)` while incomplete, else the head
/// and the bytes it took. Interim 1xx heads are skipped.
pub(super) fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut at = 0;
    loop {
        let rest = &buf[at..];
        let Some(end) = find(rest, b"\r\n\r\n") else {
            if rest.len() > MAX_HEAD {
                return Err(format!(
                    "the response head is longer than {} KiB",
                    MAX_HEAD / 1024
                ));
            }
            return Ok(None);
        };
        // Header values that are not UTF-8 are tolerated (as hyper does); none we read needs it.
        let text = String::from_utf8_lossy(&rest[..end]);
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or("");
        let status: u16 = match (version.starts_with("HTTP/1."), parts.next()) {
            (true, Some(code)) if code.len() == 3 => code
                .parse()
                .map_err(|_| format!("not an HTTP status line: {}", cut(status_line)))?,
            _ => return Err(format!("not an HTTP/1.x response: {}", cut(status_line))),
        };
        at += end + 4;
        if (100..200).contains(&status) && status != 101 {
            continue;
        }
        let mut head = Head {
            status,
            sse: false,
            framing: Framing::Close,
            keep_alive: version == "HTTP/1.1",
            challenge: None,
        };
        let mut length = None;
        let mut chunked = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                return Err(format!("a malformed response header: {}", cut(line)));
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-type") {
                head.sse = value.to_ascii_lowercase().starts_with("text/event-stream");
            } else if name.eq_ignore_ascii_case("content-length") {
                let n: usize = value
                    .bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| value.parse().ok())
                    .flatten()
                    .ok_or_else(|| format!("a malformed Content-Length: {}", cut(value)))?;
                if length.is_some_and(|l| l != n) {
                    return Err("two different Content-Length headers".into());
                }
                length = Some(n);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("chunked"));
            } else if name.eq_ignore_ascii_case("www-authenticate") {
                head.challenge = Some(value.to_string());
            } else if name.eq_ignore_ascii_case("connection") {
                for token in value.split(',') {
                    let token = token.trim();
                    if token.eq_ignore_ascii_case("close") {
                        head.keep_alive = false;
                    } else if token.eq_ignore_ascii_case("keep-alive") && version == "HTTP/1.0" {
                        head.keep_alive = true;
                    }
                }
            }
        }
        head.framing = if chunked {
            if length.is_some() {
                // Both: the length is ignored and the connection not reused (RFC 9112 §6.3).
                head.keep_alive = false;
            }
            Framing::Chunked
        } else if let Some(n) = length {
            Framing::Length(n)
        } else if matches!(status, 204 | 304) {
            Framing::Length(0)
        } else {
            head.keep_alive = false;
            Framing::Close
        };
        return Ok(Some((head, at)));
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn cut(s: &str) -> String {
    super::cut(s, 80)
}

/// Where a chunked body's decoder is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Chunk {
    /// Reading the size line (its bytes so far are in `line`).
    Size,
    Data(usize),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer lines after the last chunk, until an empty one.
    Trailer,
}

/// Decodes a response body as its bytes arrive.
pub(super) struct Body {
    framing: Framing,
    left: usize,
    chunk: Chunk,
    line: Vec<u8>,
    done: bool,
}

impl Body {
    pub(super) fn new(framing: Framing) -> Body {
        let left = match framing {
            Framing::Length(n) => n,
            _ => 0,
        };
        Body {
            framing,
            left,
            chunk: Chunk::Size,
            line: Vec::new(),
            done: matches!(framing, Framing::Length(0)),
        }
    }

    /// The whole body has been decoded (a close-delimited body ends with [`Body::eof`]).
    pub(super) fn done(&self) -> bool {
        self.done
    }

    /// The connection closed: Ok when that ends the body.
    pub(super) fn eof(&mut self) -> Result<(), String> {
        if self.done || self.framing == Framing::Close {
            self.done = true;
            Ok(())
        } else {
            Err("the server closed the connection in the middle of the reply".into())
        }
    }

    /// Decodes what it can of `input` into `out`; returns the bytes consumed (less than all of
    /// `input` only once the body is done: the rest belongs to no response of ours).
    pub(super) fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, String> {
        match self.framing {
            Framing::Close => {
                out.extend_from_slice(input);
                Ok(input.len())
            }
            Framing::Length(_) => {
                let n = input.len().min(self.left);
                out.extend_from_slice(&input[..n]);
                self.left -= n;
                self.done = self.left == 0;
                Ok(n)
            }
            Framing::Chunked => self.dechunk(input, out),
        }
    }

    fn dechunk(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, String> {
        let mut i = 0;
        while i < input.len() && !self.done {
            match self.chunk {
                Chunk::Size | Chunk::Trailer => {
                    let Some(nl) = input[i..].iter().position(|&b| b == b'\n') else {
                        self.line.extend_from_slice(&input[i..]);
                        if self.line.len() > 4096 {
                            return Err("a chunk-size line is too long".into());
                        }
                        return Ok(input.len());
                    };
                    self.line.extend_from_slice(&input[i..i + nl]);
                    i += nl + 1;
                    let line = std::mem::take(&mut self.line);
                    let line = line.strip_suffix(b"\r").unwrap_or(&line);
                    if self.chunk == Chunk::Trailer {
                        self.done = line.is_empty();
                        continue;
                    }
                    let hex = line.split(|&b| b == b';').next().unwrap_or(b"");
                    let hex = std::str::from_utf8(hex).unwrap_or("").trim();
                    let size = usize::from_str_radix(hex, 16)
                        .map_err(|_| "a malformed chunk size in the reply".to_string())?;
                    self.chunk = if size == 0 {
                        Chunk::Trailer
                    } else {
                        Chunk::Data(size)
                    };
                }
                Chunk::Data(left) => {
                    let n = (input.len() - i).min(left);
                    out.extend_from_slice(&input[i..i + n]);
                    i += n;
                    self.chunk = if n == left {
                        Chunk::DataEnd
                    } else {
                        Chunk::Data(left - n)
                    };
                }
                Chunk::DataEnd => {
                    match input[i] {
                        b'\r' => {}
                        b'\n' => self.chunk = Chunk::Size,
                        _ => return Err("a chunk is longer than its size".into()),
                    }
                    i += 1;
                }
            }
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> (Head, usize) {
        parse_head(text.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn heads() {
        let (h, n) = head(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{}",
        );
        assert_eq!(
            h,
            Head {
                status: 200,
                sse: false,
                framing: Framing::Length(12),
                keep_alive: true,
                challenge: None
            }
        );
        assert_eq!(n, 71);
        let (h, _) = head("HTTP/1.1 200 OK\r\ncontent-type: Text/Event-Stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n");
        assert!(h.sse && h.framing == Framing::Chunked && h.keep_alive);
        let (h, _) =
            head("HTTP/1.1 202 Accepted\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        assert!(!h.keep_alive && h.framing == Framing::Length(0));
        let (h, _) = head("HTTP/1.0 200 OK\r\n\r\n");
        assert!(!h.keep_alive && h.framing == Framing::Close);
        let (h, n) = head("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n");
        assert_eq!((h.status, h.framing, n), (204, Framing::Length(0), 52));
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nA: b\r\n").unwrap(), None);
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n").is_err());
        let (h, _) =
            head("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(h.framing == Framing::Chunked && !h.keep_alive);
        let raw = b"HTTP/1.1 200 OK\r\nX-Odd: \xff\xfe\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(parse_head(raw).unwrap().unwrap().0.status, 200);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n").is_err());
        assert!(parse_head(&vec![b'a'; MAX_HEAD + 1]).is_err());
    }

    #[test]
    fn length_bodies_stop_at_their_end() {
        let mut b = Body::new(Framing::Length(5));
        let mut out = Vec::new();
        assert_eq!(b.decode(b"abc", &mut out).unwrap(), 3);
        assert!(!b.done());
        assert_eq!(b.decode(b"defHTTP", &mut out).unwrap(), 2);
        assert!(b.done());
        assert_eq!(out, b"abcde");
        assert!(Body::new(Framing::Length(3)).eof().is_err());
    }

    #[test]
    fn chunked_bodies_decode_in_any_split() {
        let wire = b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\nNEXT";
        for split in 0..wire.len() {
            let mut b = Body::new(Framing::Chunked);
            let mut out = Vec::new();
            let mut used = b.decode(&wire[..split], &mut out).unwrap();
            assert_eq!(used, split.min(wire.len() - 4), "split {split}");
            used += b.decode(&wire[split..], &mut out).unwrap();
            assert!(b.done(), "split {split}");
            assert_eq!(out, b"hello world");
            assert_eq!(&wire[used..], b"NEXT");
        }
        let mut b = Body::new(Framing::Chunked);
        assert!(b.decode(b"zz\r\n", &mut Vec::new()).is_err());
        let mut b = Body::new(Framing::Chunked);
        assert!(b.decode(b"1\r\nab\r\n", &mut Vec::new()).is_err());
        assert!(Body::new(Framing::Chunked).eof().is_err());
        let mut close = Body::new(Framing::Close);
        let mut out = Vec::new();
        close.decode(b"xy", &mut out).unwrap();
        assert!(close.eof().is_ok() && close.done() && out == b"xy");
    }
}
