//! Decodes the messages of PostgreSQL's `pgoutput` logical decoding plugin
//! (protocol version 1): what a replication slot streams for the tables of
//! a publication, in commit order, one transaction between `Begin` and
//! `Commit`.
//!
//! Written here because no maintained crate decodes it without also
//! bringing its own connection stack (the crates that stream replication
//! either hand these messages over as raw bytes, or pin a TLS provider and
//! a libpq build of their own). The format is small and fixed: see
//! "Logical Replication Message Formats" in PostgreSQL's documentation.
//! Every length is checked against the bytes present, so a truncated or
//! hostile message is an error, never a panic or a huge allocation.

use std::fmt;

/// A log sequence number: a byte position in the source's WAL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl fmt::Display for Lsn {
    /// PostgreSQL's `pg_lsn` text form, `16/B374D848`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

impl std::str::FromStr for Lsn {
    type Err = String;

    fn from_str(text: &str) -> Result<Lsn, String> {
        let (high, low) = text
            .split_once('/')
            .ok_or_else(|| format!("'{text}' is not an LSN (expected the form 16/B374D848)"))?;
        let part = |part: &str| {
            u32::from_str_radix(part, 16)
                .map_err(|_| format!("'{text}' is not an LSN (expected the form 16/B374D848)"))
        };
        Ok(Lsn((u64::from(part(high)?) << 32) | u64::from(part(low)?)))
    }
}

/// One `pgoutput` message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Begin {
        /// Where the transaction's commit record ends.
        final_lsn: Lsn,
        /// Microseconds since 2000-01-01 UTC.
        commit_time: i64,
        xid: u32,
    },
    Commit {
        lsn: Lsn,
        end_lsn: Lsn,
        commit_time: i64,
    },
    /// Sent before the first change of a relation in a session, and again
    /// after its definition changes.
    Relation(Relation),
    /// The name of a type a relation's column uses (non-builtin types).
    Type {
        oid: u32,
        namespace: String,
        name: String,
    },
    Origin {
        lsn: Lsn,
        name: String,
    },
    Insert {
        relation: u32,
        new: Tuple,
    },
    Update {
        relation: u32,
        /// The old key (when the key changed, or always with `REPLICA
        /// IDENTITY FULL`, then the whole old row).
        old: Option<Old>,
        new: Tuple,
    },
    Delete {
        relation: u32,
        old: Old,
    },
    Truncate {
        relations: Vec<u32>,
        cascade: bool,
        restart_identity: bool,
    },
    /// A `pg_logical_emit_message` message (with `messages 'true'`).
    Message {
        transactional: bool,
        lsn: Lsn,
        prefix: String,
        content: Vec<u8>,
    },
}

/// A table's definition as the stream describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    pub oid: u32,
    pub namespace: String,
    pub name: String,
    /// `relreplident`: `d` (primary key), `n` (nothing), `f` (full), `i`
    /// (an index).
    pub replica_identity: u8,
    pub columns: Vec<Column>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Part of the replica identity (the key the old row is sent by).
    pub key: bool,
    pub name: String,
    pub type_oid: u32,
    pub type_modifier: i32,
}

/// The old row of an update or a delete.
#[derive(Debug, Clone, PartialEq)]
pub enum Old {
    /// Only the replica identity's columns are set; the others are null.
    Key(Tuple),
    /// The whole row (`REPLICA IDENTITY FULL`).
    Full(Tuple),
}

impl Old {
    pub fn tuple(&self) -> &Tuple {
        match self {
            Old::Key(tuple) | Old::Full(tuple) => tuple,
        }
    }
}

/// One row's values, in the relation's column order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tuple(pub Vec<Datum>);

#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Null,
    /// A TOASTed value the update did not change: not sent, keep the old one.
    Unchanged,
    /// The value in the type's text output form.
    Text(Vec<u8>),
    /// The value in the type's binary send form (with `binary 'true'`).
    Binary(Vec<u8>),
}

/// A message that does not decode, with what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed pgoutput message: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one message (the payload of one XLogData, or one row of
/// `pg_logical_slot_get_binary_changes`).
pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
    let mut reader = Reader { bytes, at: 0 };
    let tag = reader.u8()?;
    let message = match tag {
        b'B' => Message::Begin {
            final_lsn: Lsn(reader.u64()?),
            commit_time: reader.i64()?,
            xid: reader.u32()?,
        },
        b'C' => {
            let _flags = reader.u8()?;
            Message::Commit {
                lsn: Lsn(reader.u64()?),
                end_lsn: Lsn(reader.u64()?),
                commit_time: reader.i64()?,
            }
        }
        b'O' => Message::Origin {
            lsn: Lsn(reader.u64()?),
            name: reader.string()?,
        },
        b'R' => {
            let oid = reader.u32()?;
            let namespace = reader.string()?;
            let name = reader.string()?;
            let replica_identity = reader.u8()?;
            let count = reader.u16()?;
            let mut columns = Vec::with_capacity(usize::from(count).min(reader.remaining()));
            for _ in 0..count {
                columns.push(Column {
                    key: reader.u8()? & 1 == 1,
                    name: reader.string()?,
                    type_oid: reader.u32()?,
                    type_modifier: reader.i32()?,
                });
            }
            Message::Relation(Relation {
                oid,
                namespace,
                name,
                replica_identity,
                columns,
            })
        }
        b'Y' => Message::Type {
            oid: reader.u32()?,
            namespace: reader.string()?,
            name: reader.string()?,
        },
        b'I' => {
            let relation = reader.u32()?;
            reader.expect(b'N', "an insert's new tuple")?;
            Message::Insert {
                relation,
                new: reader.tuple()?,
            }
        }
        b'U' => {
            let relation = reader.u32()?;
            let old = match reader.u8()? {
                b'K' => Some(Old::Key(reader.tuple()?)),
                b'O' => Some(Old::Full(reader.tuple()?)),
                b'N' => None,
                other => return Err(unexpected(other, "K, O or N in an update")),
            };
            if old.is_some() {
                reader.expect(b'N', "an update's new tuple")?;
            }
            Message::Update {
                relation,
                old,
                new: reader.tuple()?,
            }
        }
        b'D' => {
            let relation = reader.u32()?;
            let old = match reader.u8()? {
                b'K' => Old::Key(reader.tuple()?),
                b'O' => Old::Full(reader.tuple()?),
                other => return Err(unexpected(other, "K or O in a delete")),
            };
            Message::Delete { relation, old }
        }
        b'T' => {
            let count = reader.u32()?;
            let options = reader.u8()?;
            let mut relations = Vec::with_capacity((count as usize).min(reader.remaining() / 4));
            for _ in 0..count {
                relations.push(reader.u32()?);
            }
            Message::Truncate {
                relations,
                cascade: options & 1 != 0,
                restart_identity: options & 2 != 0,
            }
        }
        b'M' => {
            let transactional = reader.u8()? & 1 == 1;
            let lsn = Lsn(reader.u64()?);
            let prefix = reader.string()?;
            let length = reader.u32()? as usize;
            Message::Message {
                transactional,
                lsn,
                prefix,
                content: reader.take(length)?.to_vec(),
            }
        }
        other => return Err(unexpected(other, "a pgoutput message type")),
    };
    if reader.remaining() != 0 {
        return Err(DecodeError(format!(
            "{} bytes left after a '{}' message",
            reader.remaining(),
            char::from(tag)
        )));
    }
    Ok(message)
}

fn unexpected(byte: u8, expected: &str) -> DecodeError {
    DecodeError(format!(
        "byte {:?} where {expected} was expected",
        char::from(byte)
    ))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, length: usize) -> Result<&'a [u8], DecodeError> {
        if length > self.remaining() {
            return Err(DecodeError(format!(
                "{length} bytes expected at offset {}, {} present",
                self.at,
                self.remaining()
            )));
        }
        let taken = &self.bytes[self.at..self.at + length];
        self.at += length;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        Ok(self.take(N)?.try_into().expect("N bytes taken"))
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), DecodeError> {
        match self.u8()? {
            found if found == byte => Ok(()),
            found => Err(unexpected(found, what)),
        }
    }

    /// A NUL-terminated string.
    fn string(&mut self) -> Result<String, DecodeError> {
        let rest = &self.bytes[self.at..];
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| DecodeError(format!("unterminated string at offset {}", self.at)))?;
        let text = String::from_utf8(rest[..end].to_vec())
            .map_err(|_| DecodeError(format!("a string at offset {} is not UTF-8", self.at)))?;
        self.at += end + 1;
        Ok(text)
    }

    fn tuple(&mut self) -> Result<Tuple, DecodeError> {
        let count = self.u16()?;
        let mut values = Vec::with_capacity(usize::from(count).min(self.remaining()));
        for _ in 0..count {
            values.push(match self.u8()? {
                b'n' => Datum::Null,
                b'u' => Datum::Unchanged,
                kind @ (b't' | b'b') => {
                    let length = self.u32()? as usize;
                    let value = self.take(length)?.to_vec();
                    if kind == b't' {
                        Datum::Text(value)
                    } else {
                        Datum::Binary(value)
                    }
                }
                other => return Err(unexpected(other, "n, u, t or b in a tuple")),
            });
        }
        Ok(Tuple(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsns_read_and_print_as_postgres_does() {
        let lsn: Lsn = "16/B374D848".parse().unwrap();
        assert_eq!(lsn, Lsn(0x16_B374_D848));
        assert_eq!(lsn.to_string(), "16/B374D848");
        assert_eq!(Lsn(0).to_string(), "0/0");
        assert!("16".parse::<Lsn>().is_err());
        assert!("x/1".parse::<Lsn>().is_err());
    }

    #[test]
    fn every_truncation_of_a_message_is_an_error() {
        let mut update = vec![b'U', 0, 0, 0, 7, b'K', 0, 2, b't', 0, 0, 0, 1, b'1', b'n'];
        update.extend_from_slice(&[b'N', 0, 2, b't', 0, 0, 0, 1, b'2', b'u']);
        assert_eq!(
            decode(&update).unwrap(),
            Message::Update {
                relation: 7,
                old: Some(Old::Key(Tuple(vec![
                    Datum::Text(b"1".to_vec()),
                    Datum::Null
                ]))),
                new: Tuple(vec![Datum::Text(b"2".to_vec()), Datum::Unchanged]),
            }
        );
        for end in 0..update.len() {
            assert!(decode(&update[..end]).is_err(), "{end} bytes decoded");
        }
        let mut longer = update.clone();
        longer.push(0);
        assert!(decode(&longer).unwrap_err().0.contains("1 bytes left"));
        // A length far beyond the message is refused, not allocated.
        let huge = [b'I', 0, 0, 0, 1, b'N', 0, 1, b't', 0xFF, 0xFF, 0xFF, 0xFF];
        assert!(
            decode(&huge)
                .unwrap_err()
                .0
                .contains("4294967295 bytes expected")
        );
        assert!(
            decode(b"Z")
                .unwrap_err()
                .0
                .contains("pgoutput message type")
        );
    }
}
