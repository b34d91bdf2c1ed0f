//! `COPY ... TO STDOUT` rows in PostgreSQL's text, CSV and binary formats.
//!
//! Each value is first encoded as a result column would be (so text values
//! print exactly as in a query result, and binary values are the types'
//! send formats), then framed the way `COPY` frames it: escaped and
//! delimited for text, quoted for CSV, length-prefixed with a file header
//! for binary.

use bytes::{BufMut, Bytes, BytesMut};
use pgwire::messages::data::DataRow;

use crate::query::statement::{CopyFormat, CopyOptions};

/// The signature, flags and header extension length that start a binary
/// `COPY` stream.
pub fn binary_header() -> Bytes {
    let mut out = BytesMut::with_capacity(19);
    out.put_slice(b"PGCOPY\n\xff\r\n\0");
    out.put_i32(0);
    out.put_i32(0);
    out.freeze()
}

/// The field count of -1 that ends a binary `COPY` stream.
pub fn binary_trailer() -> Bytes {
    Bytes::from_static(&[0xff, 0xff])
}

/// The values of an encoded row: `None` for NULL.
fn values(row: &DataRow) -> Vec<Option<&[u8]>> {
    let mut data: &[u8] = &row.data;
    let mut values = Vec::with_capacity(row.field_count as usize);
    for _ in 0..row.field_count {
        let (length, rest) = data.split_at(4);
        let length = i32::from_be_bytes(length.try_into().expect("four bytes"));
        if length < 0 {
            values.push(None);
            data = rest;
        } else {
            let (value, rest) = rest.split_at(length as usize);
            values.push(Some(value));
            data = rest;
        }
    }
    values
}

/// How one `COPY` stream frames its rows.
pub struct CopyFraming<'a> {
    pub options: &'a CopyOptions,
    /// Columns always quoted in CSV, by position.
    pub forced: Vec<bool>,
}

impl<'a> CopyFraming<'a> {
    pub fn new(options: &'a CopyOptions, columns: &[String]) -> Self {
        let forced = columns
            .iter()
            .map(|column| {
                options.force_quote_all
                    || options
                        .force_quote
                        .as_ref()
                        .is_some_and(|forced| forced.contains(column))
            })
            .collect();
        CopyFraming { options, forced }
    }

    /// The header line (text and CSV with `HEADER`).
    pub fn header(&self, columns: &[String]) -> Option<Bytes> {
        if !self.options.header || self.options.format == CopyFormat::Binary {
            return None;
        }
        let values: Vec<Option<&[u8]>> = columns.iter().map(|c| Some(c.as_bytes())).collect();
        let forced = vec![false; columns.len()];
        Some(self.line(&values, &forced))
    }

    /// One row as `COPY` writes it.
    pub fn row(&self, row: &DataRow) -> Bytes {
        match self.options.format {
            CopyFormat::Binary => {
                let mut out = BytesMut::with_capacity(2 + row.data.len());
                out.put_i16(row.field_count);
                out.put_slice(&row.data);
                out.freeze()
            }
            _ => self.line(&values(row), &self.forced),
        }
    }

    fn line(&self, values: &[Option<&[u8]>], forced: &[bool]) -> Bytes {
        let mut out = BytesMut::new();
        let mut delimiter = [0u8; 4];
        let delimiter = self
            .options
            .delimiter
            .encode_utf8(&mut delimiter)
            .as_bytes();
        for (index, value) in values.iter().enumerate() {
            if index > 0 {
                out.put_slice(delimiter);
            }
            match (value, self.options.format) {
                (None, _) => out.put_slice(self.options.null.as_bytes()),
                (Some(value), CopyFormat::Csv) => {
                    self.csv_value(&mut out, value, forced.get(index).copied().unwrap_or(false))
                }
                (Some(value), _) => self.text_value(&mut out, value),
            }
        }
        out.put_u8(b'\n');
        out.freeze()
    }

    fn text_value(&self, out: &mut BytesMut, value: &[u8]) {
        let delimiter = self.options.delimiter;
        for &byte in value {
            match byte {
                b'\\' => out.put_slice(b"\\\\"),
                b'\n' => out.put_slice(b"\\n"),
                b'\r' => out.put_slice(b"\\r"),
                b'\t' => out.put_slice(b"\\t"),
                0x08 => out.put_slice(b"\\b"),
                0x0c => out.put_slice(b"\\f"),
                0x0b => out.put_slice(b"\\v"),
                byte if delimiter.is_ascii() && byte == delimiter as u8 => {
                    out.put_u8(b'\\');
                    out.put_u8(byte);
                }
                byte => out.put_u8(byte),
            }
        }
    }

    fn csv_value(&self, out: &mut BytesMut, value: &[u8], forced: bool) {
        let options = self.options;
        let (quote, escape) = (options.quote as u8, options.escape as u8);
        let delimiter = options.delimiter as u8;
        let needs_quotes = forced
            || value == options.null.as_bytes()
            || value == b"\\."
            || value
                .iter()
                .any(|&b| b == delimiter || b == quote || b == b'\n' || b == b'\r');
        if !needs_quotes {
            out.put_slice(value);
            return;
        }
        out.put_u8(quote);
        for &byte in value {
            if byte == quote || byte == escape {
                out.put_u8(escape);
            }
            out.put_u8(byte);
        }
        out.put_u8(quote);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::statement::CopyFormat;

    fn row(values: &[Option<&str>]) -> DataRow {
        let mut data = BytesMut::new();
        for value in values {
            match value {
                Some(text) => {
                    data.put_i32(text.len() as i32);
                    data.put_slice(text.as_bytes());
                }
                None => data.put_i32(-1),
            }
        }
        DataRow::new(data, values.len() as i16)
    }

    fn options(format: CopyFormat) -> CopyOptions {
        let csv = format == CopyFormat::Csv;
        CopyOptions {
            format,
            header: true,
            delimiter: if csv { ',' } else { '\t' },
            null: if csv { String::new() } else { "\\N".to_owned() },
            quote: '"',
            escape: '"',
            force_quote: None,
            force_quote_all: false,
        }
    }

    #[test]
    fn text_rows_escape_like_postgres() {
        let options = options(CopyFormat::Text);
        let framing = CopyFraming::new(&options, &["a".into(), "b".into()]);
        let line = framing.row(&row(&[Some("x\ty\\z\nw"), None]));
        assert_eq!(&line[..], b"x\\ty\\\\z\\nw\t\\N\n");
    }

    #[test]
    fn csv_rows_quote_like_postgres() {
        let mut options = options(CopyFormat::Csv);
        options.force_quote = Some(vec!["b".into()]);
        let columns = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let framing = CopyFraming::new(&options, &columns);
        assert_eq!(&framing.header(&columns).unwrap()[..], b"a,b,c\n");
        let line = framing.row(&row(&[Some("say \"hi\", ok"), Some("plain"), Some("")]));
        assert_eq!(&line[..], b"\"say \"\"hi\"\", ok\",\"plain\",\"\"\n");
        let line = framing.row(&row(&[None, None, Some("x")]));
        assert_eq!(&line[..], b",,x\n");
    }
}
