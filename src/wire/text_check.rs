//! Finds query text that is not UTF-8 before pgwire decodes it: pgwire reads
//! the strings of a message lossily (an invalid byte becomes U+FFFD), where
//! PostgreSQL refuses such a statement with 22021 and runs nothing. The
//! check follows the frames of the byte stream as it is read (untyped
//! startup-phase messages, then typed ones) and records, for each Query and
//! Parse message in order, whether its text was valid; the connection loop
//! takes one record per Query or Parse it receives.
//!
//! Written here because the check must see the bytes before the codec does,
//! and pgwire offers no hook between the two.

use std::collections::VecDeque;

/// The protocol version 3.0 code of a StartupMessage (after it, every
/// message has a type byte); minor versions (3.2) start typed messages too.
const PROTOCOL_3: u32 = 196_608;

#[derive(Debug, Default)]
pub struct TextCheck {
    /// Bytes of the header being read: length (and code, untyped), or type
    /// and length.
    header: Vec<u8>,
    typed: bool,
    /// The message being read.
    current: Option<Body>,
    /// For each Query and Parse message read, whether its text is UTF-8.
    verdicts: VecDeque<bool>,
}

#[derive(Debug)]
struct Body {
    kind: u8,
    remaining: usize,
    /// NUL-terminated strings still to check (Query: the text; Parse: the
    /// statement name and the text).
    strings: u8,
    text: Vec<u8>,
    valid: bool,
    /// A StartupMessage: the messages after it are typed.
    startup: bool,
}

impl TextCheck {
    /// Follows `bytes`, the next bytes read from the client.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match &mut self.current {
                Some(body) => {
                    let take = body.remaining.min(bytes.len());
                    body.read(&bytes[..take]);
                    body.remaining -= take;
                    bytes = &bytes[take..];
                    if body.remaining == 0 {
                        self.finish();
                    }
                }
                None => {
                    let need = if self.typed { 5 } else { 8 };
                    let take = (need - self.header.len()).min(bytes.len());
                    self.header.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if self.header.len() == need {
                        self.start();
                    }
                }
            }
        }
    }

    /// Whether the text of the next Query or Parse message received was
    /// UTF-8 (`true` when it was not followed, which cannot happen in step).
    pub fn next_verdict(&mut self) -> bool {
        self.verdicts.pop_front().unwrap_or(true)
    }

    fn start(&mut self) {
        let header = std::mem::take(&mut self.header);
        let word = |at: usize| {
            u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
        };
        let (kind, length, startup, consumed) = if self.typed {
            (header[0], word(1) as usize, false, 4)
        } else {
            (0, word(0) as usize, word(4) >> 16 == PROTOCOL_3 >> 16, 8)
        };
        let strings = match kind {
            b'Q' => 1,
            b'P' => 2,
            _ => 0,
        };
        // A length shorter than its header: nothing more to follow (the
        // codec refuses or reads it as empty).
        let body = Body {
            kind,
            remaining: length.saturating_sub(consumed),
            strings,
            text: Vec::new(),
            valid: true,
            startup,
        };
        self.current = Some(body);
        if self
            .current
            .as_ref()
            .is_some_and(|body| body.remaining == 0)
        {
            self.finish();
        }
    }

    fn finish(&mut self) {
        let Some(body) = self.current.take() else {
            return;
        };
        if body.startup {
            self.typed = true;
        }
        if matches!(body.kind, b'Q' | b'P') {
            // Text cut off before its NUL is judged as far as it went.
            let valid =
                body.valid && (body.strings == 0 || std::str::from_utf8(&body.text).is_ok());
            self.verdicts.push_back(valid);
        }
    }
}

impl Body {
    fn read(&mut self, mut bytes: &[u8]) {
        while self.strings > 0 && !bytes.is_empty() {
            match bytes.iter().position(|&b| b == 0) {
                Some(end) => {
                    self.text.extend_from_slice(&bytes[..end]);
                    self.valid &= std::str::from_utf8(&self.text).is_ok();
                    self.text.clear();
                    self.strings -= 1;
                    bytes = &bytes[end + 1..];
                }
                None => {
                    self.text.extend_from_slice(bytes);
                    bytes = &[];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut message = vec![kind];
        message.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        message.extend_from_slice(body);
        message
    }

    fn startup() -> Vec<u8> {
        let body = b"user\0me\0\0";
        let mut message = (body.len() as u32 + 8).to_be_bytes().to_vec();
        message.extend_from_slice(&PROTOCOL_3.to_be_bytes());
        message.extend_from_slice(body);
        message
    }

    fn ssl_request() -> Vec<u8> {
        let mut message = 8u32.to_be_bytes().to_vec();
        message.extend_from_slice(&80_877_103u32.to_be_bytes());
        message
    }

    #[test]
    fn queries_and_parses_are_judged_in_order_whatever_the_chunks() {
        let mut stream = ssl_request();
        stream.extend(startup());
        stream.extend(typed(b'p', b"secret\0"));
        stream.extend(typed(b'Q', b"SELECT '\xc3\xa9'\0"));
        stream.extend(typed(b'Q', b"SELECT '\xff'\0"));
        let mut parse = b"s1\0SELECT $1\0".to_vec();
        parse.extend_from_slice(&1i16.to_be_bytes());
        parse.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        stream.extend(typed(b'P', &parse));
        stream.extend(typed(b'P', b"\0SELECT '\xe9'\0\0\0"));
        // Binary data that is not UTF-8 is not text.
        stream.extend(typed(b'B', b"\0\0\0\0\0\x01\0\0\0\x01\xff\0\0"));
        stream.extend(typed(b'S', b""));
        for chunk in [1, 2, 3, 7, stream.len()] {
            let mut check = TextCheck::default();
            for piece in stream.chunks(chunk) {
                check.feed(piece);
            }
            let verdicts: Vec<bool> = std::iter::from_fn(|| check.verdicts.pop_front()).collect();
            assert_eq!(verdicts, [true, false, true, false], "chunks of {chunk}");
        }
    }

    #[test]
    fn a_startup_of_protocol_3_2_starts_typed_messages() {
        let mut startup = startup();
        startup[4..8].copy_from_slice(&(PROTOCOL_3 + 2).to_be_bytes());
        let mut check = TextCheck::default();
        check.feed(&startup);
        check.feed(&typed(b'Q', b"SELECT '\xff'\0"));
        assert!(!check.next_verdict());
    }

    #[test]
    fn a_short_length_does_not_stop_the_following() {
        let mut check = TextCheck::default();
        check.feed(&startup());
        let mut short = vec![b'Q'];
        short.extend_from_slice(&2u32.to_be_bytes());
        check.feed(&short);
        check.feed(&typed(b'Q', b"SELECT '\xff'\0"));
        assert!(check.next_verdict());
        assert!(!check.next_verdict());
        assert!(check.next_verdict(), "nothing more recorded");
    }
}
