//! HTTP/1.1 response bodies as the direct path decodes them (contract §5, RFC 9112): a small
//! strict decoder for the three framings the head named ([`super::head::Framing`]):
//! `Content-Length`, chunked (extensions and trailers bounded), until close. Pure byte
//! handling, no I/O, unit-tested here and fuzzed (`fuzz/`).

use super::head::Framing;

/// Bytes of chunk extensions in one body, all chunks together (hyper's limit): extensions carry
/// nothing we read.
const MAX_CHUNK_EXTENSIONS: usize = 16 * 1024;

/// Bytes of the trailer section of a chunked body.
const MAX_TRAILERS: usize = 64 * 1024;

/// Where a chunked body's decoder is (RFC 9112 §7.1, strictly: every line ends in CRLF, sizes
/// are hex digits only).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Chunk {
    /// Hex digits of the size (`digits` so far).
    Size {
        size: usize,
        digits: usize,
    },
    /// Spaces after the size, before `;` or CR.
    SizeSpace {
        size: usize,
    },
    /// A chunk extension, until CR.
    Extension {
        size: usize,
    },
    /// The LF after the size line's CR.
    SizeLf {
        size: usize,
    },
    Data(usize),
    DataCr,
    DataLf,
    /// The start of a trailer line, or of the empty line that ends the body.
    TrailerStart,
    TrailerLine,
    TrailerLf,
    EndLf,
}

/// Decodes a response body as its bytes arrive.
pub(crate) struct BodyDecoder {
    framing: Framing,
    left: usize,
    chunk: Chunk,
    extension_bytes: usize,
    trailer_bytes: usize,
    done: bool,
}

impl BodyDecoder {
    pub(crate) fn new(framing: Framing) -> BodyDecoder {
        let left = match framing {
            Framing::Length(n) => n,
            _ => 0,
        };
        BodyDecoder {
            framing,
            left,
            chunk: Chunk::Size { size: 0, digits: 0 },
            extension_bytes: 0,
            trailer_bytes: 0,
            done: matches!(framing, Framing::Length(0)),
        }
    }

    /// The whole body has been decoded (a close-delimited body ends with [`BodyDecoder::eof`]).
    pub(crate) fn done(&self) -> bool {
        self.done
    }

    /// The connection closed: Ok when that ends the body.
    pub(crate) fn eof(&mut self) -> Result<(), String> {
        if self.done || self.framing == Framing::Close {
            self.done = true;
            Ok(())
        } else {
            Err("the server closed the connection in the middle of the reply".into())
        }
    }

    /// Decodes what it can of `input` into `out`; returns the bytes consumed (less than all of
    /// `input` only once the body is done: the rest belongs to no response of ours).
    pub(crate) fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, String> {
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
        let bad = |what: &str| Err(format!("a malformed chunked body: {what}"));
        let mut i = 0;
        while i < input.len() && !self.done {
            let b = input[i];
            self.chunk = match self.chunk {
                Chunk::Size { size, digits } => match (b as char).to_digit(16) {
                    Some(d) => {
                        // Leading zeros are fine; a size past usize is not.
                        let Some(size) = size.checked_mul(16).map(|s| s | d as usize) else {
                            return bad("a chunk size is too large");
                        };
                        Chunk::Size {
                            size,
                            digits: digits + 1,
                        }
                    }
                    None if digits == 0 => return bad("a chunk size is not hexadecimal"),
                    None => match b {
                        b' ' | b'\t' => Chunk::SizeSpace { size },
                        b';' => Chunk::Extension { size },
                        b'\r' => Chunk::SizeLf { size },
                        _ => return bad("a chunk size is not hexadecimal"),
                    },
                },
                Chunk::SizeSpace { size } => match b {
                    b' ' | b'\t' => Chunk::SizeSpace { size },
                    b';' => Chunk::Extension { size },
                    b'\r' => Chunk::SizeLf { size },
                    _ => return bad("a chunk size is not hexadecimal"),
                },
                Chunk::Extension { size } => match b {
                    b'\r' => Chunk::SizeLf { size },
                    b'\n' => return bad("a line ends without CR"),
                    _ => {
                        self.extension_bytes += 1;
                        if self.extension_bytes > MAX_CHUNK_EXTENSIONS {
                            return bad("its chunk extensions are longer than 16 KiB");
                        }
                        Chunk::Extension { size }
                    }
                },
                Chunk::SizeLf { size } => match b {
                    b'\n' if size == 0 => Chunk::TrailerStart,
                    b'\n' => Chunk::Data(size),
                    _ => return bad("a line ends without LF"),
                },
                Chunk::Data(left) => {
                    let n = (input.len() - i).min(left);
                    out.extend_from_slice(&input[i..i + n]);
                    i += n;
                    self.chunk = if n == left {
                        Chunk::DataCr
                    } else {
                        Chunk::Data(left - n)
                    };
                    continue;
                }
                Chunk::DataCr => match b {
                    b'\r' => Chunk::DataLf,
                    _ => return bad("a chunk is longer than its size"),
                },
                Chunk::DataLf => match b {
                    b'\n' => Chunk::Size { size: 0, digits: 0 },
                    _ => return bad("a chunk is longer than its size"),
                },
                Chunk::TrailerStart => match b {
                    b'\r' => Chunk::EndLf,
                    b'\n' => return bad("a line ends without CR"),
                    _ => self.trailer_byte()?,
                },
                Chunk::TrailerLine => match b {
                    b'\r' => Chunk::TrailerLf,
                    b'\n' => return bad("a line ends without CR"),
                    _ => self.trailer_byte()?,
                },
                Chunk::TrailerLf => match b {
                    b'\n' => Chunk::TrailerStart,
                    _ => return bad("a line ends without LF"),
                },
                Chunk::EndLf => match b {
                    b'\n' => {
                        self.done = true;
                        Chunk::EndLf
                    }
                    _ => return bad("a line ends without LF"),
                },
            };
            i += 1;
        }
        Ok(i)
    }

    fn trailer_byte(&mut self) -> Result<Chunk, String> {
        self.trailer_bytes += 1;
        if self.trailer_bytes > MAX_TRAILERS {
            return Err(format!(
                "a malformed chunked body: its trailers are longer than {} KiB",
                MAX_TRAILERS / 1024
            ));
        }
        Ok(Chunk::TrailerLine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_bodies_stop_at_their_end() {
        let mut b = BodyDecoder::new(Framing::Length(5));
        let mut out = Vec::new();
        assert_eq!(b.decode(b"abc", &mut out).unwrap(), 3);
        assert!(!b.done());
        assert_eq!(b.decode(b"defHTTP", &mut out).unwrap(), 2);
        assert!(b.done());
        assert_eq!(out, b"abcde");
        assert!(BodyDecoder::new(Framing::Length(3)).eof().is_err());
    }

    fn dechunk(wire: &[u8]) -> Result<Vec<u8>, String> {
        let mut b = BodyDecoder::new(Framing::Chunked);
        let mut out = Vec::new();
        b.decode(wire, &mut out)?;
        if !b.done() {
            return Err("incomplete".into());
        }
        Ok(out)
    }

    #[test]
    fn chunked_bodies_decode_in_any_split() {
        let wire = b"5;ext=1\r\nhello\r\n1 \r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\nNEXT";
        for split in 0..wire.len() {
            let mut b = BodyDecoder::new(Framing::Chunked);
            let mut out = Vec::new();
            let mut used = b.decode(&wire[..split], &mut out).unwrap();
            assert_eq!(used, split.min(wire.len() - 4), "split {split}");
            used += b.decode(&wire[split..], &mut out).unwrap();
            assert!(b.done(), "split {split}");
            assert_eq!(out, b"hello world");
            assert_eq!(&wire[used..], b"NEXT");
        }
        assert!(BodyDecoder::new(Framing::Chunked).eof().is_err());
        let mut close = BodyDecoder::new(Framing::Close);
        let mut out = Vec::new();
        close.decode(b"xy", &mut out).unwrap();
        assert!(close.eof().is_ok() && close.done() && out == b"xy");
    }

    #[test]
    fn chunked_framing_is_strict() {
        assert_eq!(
            dechunk(b"0000000000000000005\r\nhello\r\n0\r\n\r\n").unwrap(),
            b"hello"
        );
        assert_eq!(
            dechunk(b"A\r\n0123456789\r\n0\r\n\r\n").unwrap(),
            b"0123456789"
        );
        for bad in [
            &b"zz\r\n"[..],
            b"+5\r\nhello\r\n0\r\n\r\n",
            b"-5\r\nhello\r\n0\r\n\r\n",
            b"0x5\r\nhello\r\n0\r\n\r\n",
            b"5\nhello\r\n0\r\n\r\n",
            b"5\r\nhello\n0\r\n\r\n",
            b"5\r\r\nhello\r\n0\r\n\r\n",
            b"5\r\nhello\r\n0\r\n\n",
            b"5\r\nhello\r\n0\r\nT: x\n\r\n",
            b"1\r\nab\r\n",
            b"\r\n",
            b"11111111111111111\r\n",
            b"5 x\r\n",
        ] {
            assert!(
                dechunk(bad).is_err_and(|e| e.contains("malformed chunked")),
                "{}",
                bad.escape_ascii()
            );
        }
        let mut long_ext = Vec::new();
        for _ in 0..5 {
            long_ext.extend_from_slice(b"1;");
            long_ext.resize(long_ext.len() + 4000, b'e');
            long_ext.extend_from_slice(b"\r\nx\r\n");
        }
        long_ext.extend_from_slice(b"0\r\n\r\n");
        assert!(dechunk(&long_ext).unwrap_err().contains("extensions"));
        let mut trailers = b"0\r\n".to_vec();
        for _ in 0..20 {
            trailers.extend_from_slice(b"T: ");
            trailers.resize(trailers.len() + 4000, b't');
            trailers.extend_from_slice(b"\r\n");
        }
        trailers.extend_from_slice(b"\r\n");
        assert!(dechunk(&trailers).unwrap_err().contains("trailers"));
    }
}
