//! `encode(bytea, format)` and `decode(text, format)` as PostgreSQL writes
//! and reads them, for the formats `hex`, `base64` and `escape`.
//!
//! DataFusion's functions of these names differ where a client sees it:
//! its base64 has no `=` padding (`aGVsbG8` for PostgreSQL's `aGVsbG8=`)
//! and no line break after every 76 characters, it rejects whitespace in
//! what it decodes, and it has no `escape` format. Written here rather
//! than with the `base64` crate: the line breaks, the whitespace and the
//! padding PostgreSQL accepts inside the data (`YQ==YQ==`), and its error
//! messages, are PostgreSQL's own.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::{PgError, pg_types, sqlstate};

pub fn functions() -> Vec<Arc<ScalarUDF>> {
    [Direction::Encode, Direction::Decode]
        .into_iter()
        .map(|direction| {
            Arc::new(ScalarUDF::new_from_impl(Coding {
                direction,
                signature: Signature::user_defined(Volatility::Immutable),
            }))
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Direction {
    Encode,
    Decode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Hex,
    Base64,
    Escape,
}

impl Format {
    fn named(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "hex" => Ok(Format::Hex),
            "base64" => Ok(Format::Base64),
            "escape" => Ok(Format::Escape),
            _ => Err(failure(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("unrecognized encoding: \"{name}\""),
            )),
        }
    }
}

fn failure(code: &str, message: String) -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(code, message)))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Coding {
    direction: Direction,
    signature: Signature,
}

impl ScalarUDFImpl for Coding {
    fn name(&self) -> &str {
        match self.direction {
            Direction::Encode => "encode",
            Direction::Decode => "decode",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [value, _] = arg_types else {
            return Err(DataFusionError::Plan(format!(
                "function {}() takes a value and a format name",
                self.name()
            )));
        };
        // A literal given to `encode` is bytea input (`'\\x41'` is one byte),
        // as PostgreSQL reads an unknown-typed literal as the argument's type.
        let value = match (self.direction, value) {
            (
                Direction::Encode,
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView,
            ) => DataType::Binary,
            _ => DataType::Utf8,
        };
        Ok(vec![value, DataType::Utf8])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.direction {
            Direction::Encode => DataType::Utf8,
            Direction::Decode => DataType::Binary,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args
            .args
            .iter()
            .all(|arg| matches!(arg, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let formats = datafusion::arrow::compute::cast(&arrays[1], &DataType::Utf8)?;
        let formats = formats.as_string::<i32>();
        let rows = arrays[0].len();
        let result: ArrayRef = match self.direction {
            Direction::Encode => {
                let bytes = match arrays[0].data_type() {
                    DataType::Binary => Arc::clone(&arrays[0]),
                    _ => bytea_of_text(&arrays[0])?,
                };
                let bytes = bytes.as_binary::<i32>();
                let mut out = StringBuilder::with_capacity(rows, 0);
                for row in 0..rows {
                    if bytes.is_null(row) || formats.is_null(row) {
                        out.append_null();
                        continue;
                    }
                    out.append_value(encode(bytes.value(row), Format::named(formats.value(row))?));
                }
                Arc::new(out.finish())
            }
            Direction::Decode => {
                let texts = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
                let texts = texts.as_string::<i32>();
                let mut out = BinaryBuilder::with_capacity(rows, 0);
                for row in 0..rows {
                    if texts.is_null(row) || formats.is_null(row) {
                        out.append_null();
                        continue;
                    }
                    out.append_value(decode(
                        texts.value(row),
                        Format::named(formats.value(row))?,
                    )?);
                }
                Arc::new(out.finish())
            }
        };
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&result, 0)?)
        } else {
            ColumnarValue::Array(result)
        })
    }
}

/// Text read as bytea input (`\x...` or the escape format), 22P02 when it
/// is neither.
fn bytea_of_text(texts: &ArrayRef) -> Result<ArrayRef> {
    let texts = datafusion::arrow::compute::cast(texts, &DataType::Utf8)?;
    let texts = texts.as_string::<i32>();
    let mut out = BinaryBuilder::with_capacity(texts.len(), 0);
    for text in texts.iter() {
        match text {
            None => out.append_null(),
            Some(text) => out.append_value(pg_types::bytea_input(text).ok_or_else(|| {
                failure(
                    sqlstate::INVALID_TEXT_REPRESENTATION,
                    "invalid input syntax for type bytea".to_owned(),
                )
            })?),
        }
    }
    Ok(Arc::new(out.finish()))
}

/// The standard base64 alphabet.
const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// PostgreSQL's base64 puts a line break after every 76 characters.
const BASE64_LINE: usize = 76;

fn encode(bytes: &[u8], format: Format) -> String {
    match format {
        Format::Hex => {
            let mut out = String::with_capacity(bytes.len() * 2);
            for byte in bytes {
                out.push_str(&format!("{byte:02x}"));
            }
            out
        }
        Format::Base64 => {
            let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4 + bytes.len() / 57);
            let mut line = 0;
            for chunk in bytes.chunks(3) {
                let word = chunk.iter().enumerate().fold(0u32, |word, (i, byte)| {
                    word | u32::from(*byte) << (16 - 8 * i)
                });
                for position in 0..4 {
                    if position <= chunk.len() {
                        out.push(BASE64[(word >> (18 - 6 * position) & 0x3f) as usize] as char);
                    } else {
                        out.push('=');
                    }
                }
                line += 4;
                // As PostgreSQL: a full line ends with a break, the last
                // one included, unless padding ended the data.
                if line >= BASE64_LINE && chunk.len() == 3 {
                    out.push('\n');
                    line = 0;
                }
            }
            out
        }
        Format::Escape => {
            let mut out = String::with_capacity(bytes.len());
            for byte in bytes {
                match byte {
                    b'\\' => out.push_str("\\\\"),
                    0 | 0x80.. => out.push_str(&format!("\\{byte:03o}")),
                    _ => out.push(*byte as char),
                }
            }
            out
        }
    }
}

fn decode(text: &str, format: Format) -> Result<Vec<u8>> {
    let invalid = |message: String| failure(sqlstate::INVALID_PARAMETER_VALUE, message);
    match format {
        Format::Hex => {
            let mut out = Vec::with_capacity(text.len() / 2);
            // Whitespace is skipped between pairs only: a pair's second digit
            // is whatever follows its first.
            let mut rest = text.chars();
            while let Some(c) = rest.next() {
                if matches!(c, ' ' | '\n' | '\t' | '\r') {
                    continue;
                }
                let digit = |c: char| {
                    c.to_digit(16)
                        .ok_or_else(|| invalid(format!("invalid hexadecimal digit: \"{c}\"")))
                };
                let high = digit(c)?;
                let Some(next) = rest.next() else {
                    return Err(invalid(
                        "invalid hexadecimal data: odd number of digits".to_owned(),
                    ));
                };
                out.push((high * 16 + digit(next)?) as u8);
            }
            Ok(out)
        }
        Format::Base64 => {
            let mut out = Vec::with_capacity(text.len() / 4 * 3);
            let (mut word, mut count, mut end) = (0u32, 0, 0);
            for c in text.chars() {
                if matches!(c, ' ' | '\t' | '\n' | '\r') {
                    continue;
                }
                let value = if c == '=' {
                    if end == 0 {
                        end = match count {
                            2 => 1,
                            3 => 2,
                            _ => {
                                return Err(invalid(
                                    "unexpected \"=\" while decoding base64 sequence".to_owned(),
                                ));
                            }
                        };
                    }
                    0
                } else {
                    BASE64
                        .iter()
                        .position(|symbol| u32::from(*symbol) == u32::from(c))
                        .ok_or_else(|| {
                            invalid(format!(
                                "invalid symbol \"{c}\" found while decoding base64 sequence"
                            ))
                        })? as u32
                };
                word = word << 6 | value;
                count += 1;
                if count == 4 {
                    out.push((word >> 16) as u8);
                    if end != 1 {
                        out.push((word >> 8) as u8);
                    }
                    if end == 0 {
                        out.push(word as u8);
                    }
                    (word, count) = (0, 0);
                }
            }
            if count != 0 {
                return Err(DataFusionError::External(Box::new(
                    PgError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        "invalid base64 end sequence",
                    )
                    .with_hint(
                        "Input data is missing padding, is truncated, or is otherwise corrupted.",
                    ),
                )));
            }
            Ok(out)
        }
        Format::Escape => pg_types::escaped_bytes(text).ok_or_else(|| {
            failure(
                sqlstate::INVALID_TEXT_REPRESENTATION,
                "invalid input syntax for type bytea".to_owned(),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::{Format, decode, encode};
    use crate::query::sqlstate;

    fn code(error: datafusion::common::DataFusionError) -> String {
        sqlstate::from_datafusion(error).code
    }

    #[test]
    fn base64_is_padded_and_broken_into_lines_of_76() {
        assert_eq!(encode(b"hello", Format::Base64), "aGVsbG8=");
        assert_eq!(encode(b"x", Format::Base64), "eA==");
        assert_eq!(encode(b"", Format::Base64), "");
        let full = encode(&[b'a'; 57], Format::Base64);
        assert_eq!(full.len(), 77);
        assert!(full.ends_with('\n'));
        let longer = encode(&[b'a'; 60], Format::Base64);
        assert_eq!(longer, format!("{}\nYWFh", "YWFh".repeat(19)));
    }

    #[test]
    fn base64_decodes_across_whitespace_and_padding() {
        assert_eq!(decode("aGVs\nbG8=", Format::Base64).unwrap(), b"hello");
        assert_eq!(decode("YQ==YQ==", Format::Base64).unwrap(), b"aa");
        for bad in ["aGVsbG8", "Y", "YQ="] {
            assert_eq!(
                code(decode(bad, Format::Base64).unwrap_err()),
                "22023",
                "{bad}"
            );
        }
        assert_eq!(code(decode("a=bc", Format::Base64).unwrap_err()), "22023");
        assert_eq!(code(decode("ab!c", Format::Base64).unwrap_err()), "22023");
    }

    #[test]
    fn hex_and_escape_as_postgres_writes_them() {
        assert_eq!(encode(b"\x00\xff", Format::Hex), "00ff");
        assert_eq!(decode("68 65\n6c", Format::Hex).unwrap(), b"hel");
        assert_eq!(code(decode("6 8", Format::Hex).unwrap_err()), "22023");
        assert_eq!(code(decode("6", Format::Hex).unwrap_err()), "22023");
        assert_eq!(
            encode(b"a\\b\x00\n\xff", Format::Escape),
            "a\\\\b\\000\n\\377"
        );
        assert_eq!(decode("a\\\\b\\001", Format::Escape).unwrap(), b"a\\b\x01");
        assert_eq!(code(decode("a\\x", Format::Escape).unwrap_err()), "22P02");
    }
}
