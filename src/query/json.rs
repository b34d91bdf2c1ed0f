//! PostgreSQL's `json` and `jsonb`: their input, operators and the common
//! functions over them, as DataFusion scalar functions.
//!
//! DataFusion has no JSON type. pgaccel keeps both types as Arrow Utf8
//! whose field metadata names the PostgreSQL type under
//! [`PG_TYPE_METADATA`] (`"json"` or `"jsonb"`), so the wire layer reports
//! the right type OID. The functions here give that text the behaviour
//! PostgreSQL 16 gives the two types:
//!
//! * `json` keeps its text exactly as written; input only checks it. Its
//!   operators parse the text again on every call and return sub-documents
//!   as they appear in the input. Duplicate keys stay, and because
//!   PostgreSQL streams through the document, the last match wins.
//! * `jsonb` text is PostgreSQL's canonical form, which a `jsonb` value
//!   from a PostgreSQL source already has: object keys deduplicated (the
//!   last one wins) and sorted shorter first, then bytewise; `", "` between
//!   elements and `": "` after keys; numbers as `numeric` prints them (`1e2`
//!   is `100`, `1.50` stays `1.50`, `-0` is `0`); string escapes decoded and
//!   written again the way PostgreSQL writes them (`\u00e9` is `é`, `\/` is
//!   `/`, control characters are `\n` or `\u001f`).
//!
//! The parser is written by hand. serde_json is built here without its
//! `arbitrary_precision` and `preserve_order` features (and, Cargo features
//! being unified across the build, depending on another crate to enable them
//! would not be stable), so it would print `1.50` as `1.5`, round integers
//! beyond 64 bits through `f64`, and lose the key order and duplicate keys
//! that `json` keeps. The parser below keeps every number as its literal
//! text and every value's position in the input, and reports errors with
//! PostgreSQL's messages and details (`invalid input syntax for type json`,
//! `Token "x" is invalid.`).
//!
//! The functions, with the PostgreSQL syntax each stands for:
//!
//! | function | PostgreSQL | returns |
//! |---|---|---|
//! | `pgaccel_json(text)` | `text::json` | json |
//! | `pgaccel_jsonb(text)` | `text::jsonb` | jsonb |
//! | `pgaccel_json_get(doc, key or index)` | `doc -> key` | type of `doc` |
//! | `pgaccel_json_get_text(doc, key or index)` | `doc ->> key` | text |
//! | `pgaccel_json_path(doc, text[])` | `doc #> path` | type of `doc` |
//! | `pgaccel_json_path_text(doc, text[])` | `doc #>> path` | text |
//! | `pgaccel_jsonb_contains(a, b)` | `a @> b` | boolean |
//! | `pgaccel_jsonb_exists(doc, key)` | `doc ? key` | boolean |
//! | `json_typeof`, `jsonb_typeof` | same | text |
//! | `json_array_length`, `jsonb_array_length` | same | integer |
//! | `jsonb_build_object(k, v, ...)` | same | jsonb |
//! | `json_build_array`, `jsonb_build_array` | same | json, jsonb |
//! | `to_json`, `to_jsonb` | same | json, jsonb |
//! | `jsonb_pretty(jsonb)` | same | text |
//! | `json_extract_path[_text]`, `jsonb_extract_path[_text]` | same | json, jsonb, text |
//!
//! Which type a document argument has comes from its field metadata: an
//! argument marked `jsonb` is jsonb; one marked `json`, and plain text
//! without metadata, is json, read as the text it is (the choice that
//! changes nothing a client wrote). Functions named `jsonb_*` read their
//! argument as jsonb whatever it is, as PostgreSQL would cast it, and
//! `@>` and `?` are jsonb operators. Results of the operators that return
//! documents carry the metadata of their input's type; the other document
//! results carry the type in their name.
//!
//! A path (`#>`, `#>>`) is a list of strings (`make_array('a', '1')`) or
//! the text of a PostgreSQL array literal (`'{a,1}'`), the form a client
//! writes. Errors are [`PgError`]s with PostgreSQL's SQLSTATE, message and
//! detail, wrapped in [`DataFusionError::External`], where
//! `sqlstate::from_datafusion` finds them.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::Arc;

use chrono::{NaiveDateTime, NaiveTime, Offset, TimeZone, Timelike};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, BooleanBuilder, FixedSizeListArray, Float32Array,
    Float64Array, Int32Builder, Int64Array, LargeStringArray, StringArray, StringBuilder,
    StringViewArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Field, FieldRef, Int64Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use datafusion::arrow::temporal_conversions::{as_date, as_datetime, as_time};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::{DataFusionError, Result, ScalarValue, internal_err};
use datafusion::execution::FunctionRegistry;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, Volatility,
};

use super::error::PgError;
use super::sqlstate;
use crate::accelerator::PG_TYPE_METADATA;

mod edit;
mod set_path;
mod sets;

pub(crate) use sets::{JSON_OBJECT_AGG, JSONB_OBJECT_AGG, MEMBERS, OBJECT_MEMBER};

/// `\u0000` in a string that must be decoded (not in sqlstate.rs).
const UNTRANSLATABLE_CHARACTER: &str = "22P05";
/// A document nested deeper than [`MAX_DEPTH`].
const STATEMENT_TOO_COMPLEX: &str = "54001";

/// How deeply arrays and objects may nest. PostgreSQL's limit is its stack:
/// with the default `max_stack_depth` it refuses somewhere beyond 10,000
/// levels, depending on the type and what is nested. Here
/// nothing recurses over a document (parsing, lookups, containment,
/// writing and dropping keep their work on the heap), so this is only
/// PostgreSQL's refusal of absurd nesting.
const MAX_DEPTH: usize = 10_000;

/// PostgreSQL's largest `numeric` display scale (digits after the point).
const NUMERIC_MAX_SCALE: i64 = 16_383;
/// The largest power of ten whose digit `numeric` can hold: its weight, in
/// base-10000 digits, is at most 32767.
const NUMERIC_MAX_POWER: i64 = 131_071;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// `invalid input syntax for type json` with PostgreSQL's detail.
fn syntax_error(detail: impl Into<String>) -> PgError {
    PgError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        "invalid input syntax for type json",
    )
    .with_detail(detail)
}

fn invalid_token(token: &str) -> PgError {
    syntax_error(format!("Token \"{token}\" is invalid."))
}

fn numeric_overflow() -> PgError {
    PgError::new(
        sqlstate::NUMERIC_OUT_OF_RANGE,
        "value overflows numeric format",
    )
}

fn invalid_parameter(message: impl Into<String>) -> PgError {
    PgError::new(sqlstate::INVALID_PARAMETER_VALUE, message)
}

fn external(error: PgError) -> DataFusionError {
    DataFusionError::External(Box::new(error))
}

// ---------------------------------------------------------------------------
// Lexing
// ---------------------------------------------------------------------------

/// How a document is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `json` input and the `json` functions that only look at structure
    /// (`json_array_length`): `\u` escapes are checked for form only, so
    /// lone surrogates and `\u0000` pass, as they do in PostgreSQL. Strings
    /// are decoded on a best-effort basis and must not be shown.
    Validate,
    /// The `json` operators: strings are decoded, and lone surrogates and
    /// `\u0000` are errors, as when PostgreSQL's operators parse a `json`.
    Decode,
    /// `jsonb`: decoded, numbers converted to `numeric`, objects sorted and
    /// deduplicated.
    Jsonb,
}

#[derive(Debug, Clone, PartialEq)]
enum Token<'a> {
    ObjectStart,
    ObjectEnd,
    ArrayStart,
    ArrayEnd,
    Comma,
    Colon,
    String(Cow<'a, str>),
    /// A number as written; the lexer has checked its form.
    Number(&'a str),
    True,
    False,
    Null,
    End,
}

/// A token and the byte range it covers in the input.
struct Lexeme<'a> {
    token: Token<'a>,
    start: usize,
    end: usize,
}

/// PostgreSQL's JSON lexer: the same tokens and, for bad input, the same
/// error details.
struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    decode: bool,
}

/// The characters PostgreSQL counts as part of a word (`true`, or a bad
/// token such as `01x`), bytes of multibyte characters included.
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str, decode: bool) -> Self {
        Lexer {
            text,
            pos: 0,
            decode,
        }
    }

    fn next(&mut self) -> Result<Lexeme<'a>, PgError> {
        let bytes = self.text.as_bytes();
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(self.pos) {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&first) = bytes.get(start) else {
            return Ok(Lexeme {
                token: Token::End,
                start,
                end: start,
            });
        };
        let punctuation = match first {
            b'{' => Some(Token::ObjectStart),
            b'}' => Some(Token::ObjectEnd),
            b'[' => Some(Token::ArrayStart),
            b']' => Some(Token::ArrayEnd),
            b',' => Some(Token::Comma),
            b':' => Some(Token::Colon),
            _ => None,
        };
        let token = match (punctuation, first) {
            (Some(token), _) => {
                self.pos += 1;
                token
            }
            (None, b'"') => self.string()?,
            (None, b'-' | b'0'..=b'9') => self.number()?,
            (None, _) => self.word()?,
        };
        Ok(Lexeme {
            token,
            start,
            end: self.pos,
        })
    }

    /// A number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, and
    /// any letters or digits that follow make it all one invalid token.
    fn number(&mut self) -> Result<Token<'a>, PgError> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let digit = |pos: usize| bytes.get(pos).is_some_and(u8::is_ascii_digit);
        let digits_from = |mut pos: usize| {
            while digit(pos) {
                pos += 1;
            }
            pos
        };
        let mut pos = start;
        let mut valid = true;
        if bytes[pos] == b'-' {
            pos += 1;
        }
        if bytes.get(pos) == Some(&b'0') {
            pos += 1;
        } else if digit(pos) {
            pos = digits_from(pos);
        } else {
            valid = false;
        }
        if bytes.get(pos) == Some(&b'.') {
            pos += 1;
            if digit(pos) {
                pos = digits_from(pos);
            } else {
                valid = false;
            }
        }
        if let Some(b'e' | b'E') = bytes.get(pos) {
            pos += 1;
            if let Some(b'+' | b'-') = bytes.get(pos) {
                pos += 1;
            }
            if digit(pos) {
                pos = digits_from(pos);
            } else {
                valid = false;
            }
        }
        while bytes.get(pos).copied().is_some_and(is_word_byte) {
            pos += 1;
            valid = false;
        }
        self.pos = pos;
        let token = &self.text[start..pos];
        if valid {
            Ok(Token::Number(token))
        } else {
            Err(invalid_token(token))
        }
    }

    /// `true`, `false`, `null`, or an invalid token: the whole word, or the
    /// one character that cannot start a token.
    fn word(&mut self) -> Result<Token<'a>, PgError> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let mut end = start;
        while bytes.get(end).copied().is_some_and(is_word_byte) {
            end += 1;
        }
        if end == start {
            // Not a word character, so ASCII: a token of its own.
            self.pos = start + 1;
            return Err(invalid_token(&self.text[start..start + 1]));
        }
        self.pos = end;
        match &self.text[start..end] {
            "true" => Ok(Token::True),
            "false" => Ok(Token::False),
            "null" => Ok(Token::Null),
            other => Err(invalid_token(other)),
        }
    }

    /// A string, its escapes decoded (borrowed when it has none).
    fn string(&mut self) -> Result<Token<'a>, PgError> {
        let text = self.text;
        let bytes = text.as_bytes();
        let start = self.pos;
        let mut pos = start + 1;
        // Decoded text so far, from the first escape on; `run` is where the
        // text not yet copied into it starts.
        let mut decoded: Option<String> = None;
        let mut run = pos;
        // A high surrogate waiting for its low half (when decoding).
        let mut high: Option<u32> = None;
        let low_missing = || syntax_error("Unicode low surrogate must follow a high surrogate.");
        loop {
            let Some(&byte) = bytes.get(pos) else {
                return Err(invalid_token(&text[start..]));
            };
            match byte {
                b'"' => break,
                b'\\' => {
                    let out = decoded.get_or_insert_with(String::new);
                    out.push_str(&text[run..pos]);
                    let Some(&escape) = bytes.get(pos + 1) else {
                        return Err(invalid_token(&text[start..]));
                    };
                    if escape == b'u' {
                        let mut code = 0u32;
                        for offset in 2..6 {
                            match bytes.get(pos + offset) {
                                None => return Err(invalid_token(&text[start..])),
                                Some(&hex) if hex.is_ascii_hexdigit() => {
                                    code = code * 16 + char::from(hex).to_digit(16).unwrap_or(0);
                                }
                                Some(_) => {
                                    return Err(syntax_error(
                                        "\"\\u\" must be followed by four hexadecimal digits.",
                                    ));
                                }
                            }
                        }
                        pos += 6;
                        run = pos;
                        if !self.decode {
                            // Form only: the text is never shown.
                            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                            continue;
                        }
                        if (0xd800..0xdc00).contains(&code) {
                            if high.is_some() {
                                return Err(syntax_error(
                                    "Unicode high surrogate must not follow a high surrogate.",
                                ));
                            }
                            high = Some(code);
                            continue;
                        }
                        if (0xdc00..0xe000).contains(&code) {
                            let Some(first) = high.take() else {
                                return Err(low_missing());
                            };
                            code = 0x10000 + ((first - 0xd800) << 10) + (code - 0xdc00);
                        }
                        if high.is_some() {
                            return Err(low_missing());
                        }
                        if code == 0 {
                            return Err(PgError::new(
                                UNTRANSLATABLE_CHARACTER,
                                "unsupported Unicode escape sequence",
                            )
                            .with_detail("\\u0000 cannot be converted to text."));
                        }
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        continue;
                    }
                    if self.decode && high.is_some() {
                        return Err(low_missing());
                    }
                    let plain = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        _ => {
                            let shown = text[pos + 1..].chars().next().unwrap_or('\\');
                            return Err(syntax_error(format!(
                                "Escape sequence \"\\{shown}\" is invalid."
                            )));
                        }
                    };
                    out.push(plain);
                    pos += 2;
                    run = pos;
                }
                0..=0x1f => {
                    return Err(syntax_error(format!(
                        "Character with value 0x{byte:02x} must be escaped."
                    )));
                }
                _ => {
                    if self.decode && high.is_some() {
                        return Err(low_missing());
                    }
                    pos += 1;
                }
            }
        }
        if self.decode && high.is_some() {
            return Err(low_missing());
        }
        self.pos = pos + 1;
        Ok(Token::String(match decoded {
            None => Cow::Borrowed(&text[start + 1..pos]),
            Some(mut out) => {
                out.push_str(&text[run..pos]);
                Cow::Owned(out)
            }
        }))
    }
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// A JSON value; strings and numbers borrow from the input when they can.
#[derive(Debug)]
enum Value<'a> {
    Null,
    Bool(bool),
    /// The literal text, or in [`Mode::Jsonb`] the `numeric` text.
    Number(Cow<'a, str>),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// Members in input order, duplicates kept; in [`Mode::Jsonb`] sorted
    /// in jsonb's key order with one member per key.
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl Value<'_> {
    fn is_scalar(&self) -> bool {
        !matches!(self, Value::Array(_) | Value::Object(_))
    }

    /// What `json_typeof` calls it.
    fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

/// A value and the bytes of the input it was parsed from, for `json`
/// results, which are the input's own text.
#[derive(Debug)]
struct Node<'a> {
    value: Value<'a>,
    start: usize,
    end: usize,
}

impl<'a> Node<'a> {
    fn new(value: Value<'a>, start: usize, end: usize) -> Self {
        Node { value, start, end }
    }
}

/// Dropped without recursion, so that a deep document cannot exhaust the
/// stack: the children are moved to a heap stack, each dropped once its
/// own children are out.
impl Drop for Node<'_> {
    fn drop(&mut self) {
        fn take_children<'a>(value: &mut Value<'a>, into: &mut Vec<Node<'a>>) {
            match value {
                Value::Array(items) => into.append(items),
                Value::Object(members) => into.extend(members.drain(..).map(|(_, node)| node)),
                _ => {}
            }
        }
        let mut pending = Vec::new();
        take_children(&mut self.value, &mut pending);
        while let Some(mut node) = pending.pop() {
            take_children(&mut node.value, &mut pending);
        }
    }
}

/// What the parser expected where it found something else; chooses
/// PostgreSQL's error detail.
#[derive(Clone, Copy)]
enum Expected {
    Value,
    ObjectFirst,
    ObjectKey,
    Colon,
    ObjectNext,
    ArrayNext,
    End,
}

/// A container being parsed: what is read of it so far.
enum Open<'a> {
    Array {
        start: usize,
        items: Vec<Node<'a>>,
    },
    Object {
        start: usize,
        members: Vec<(Cow<'a, str>, Node<'a>)>,
        /// The key whose value is being parsed.
        key: Cow<'a, str>,
    },
}

/// PostgreSQL's JSON parser with one token of lookahead: the same grammar,
/// the same order of reading tokens, so the same error for bad input.
/// It keeps the open containers on a heap stack rather than recursing, so
/// deep documents cannot exhaust the thread's stack.
struct Parser<'a> {
    lexer: Lexer<'a>,
    current: Lexeme<'a>,
    mode: Mode,
    open: Vec<Open<'a>>,
}

/// Parses a whole document.
fn parse(text: &str, mode: Mode) -> Result<Node<'_>, PgError> {
    let mut lexer = Lexer::new(text, mode != Mode::Validate);
    let current = lexer.next()?;
    Parser {
        lexer,
        current,
        mode,
        open: Vec::new(),
    }
    .document()
}

impl<'a> Parser<'a> {
    /// Moves to the next token, returning the current one.
    fn advance(&mut self) -> Result<Lexeme<'a>, PgError> {
        let next = self.lexer.next()?;
        Ok(std::mem::replace(&mut self.current, next))
    }

    fn unexpected(&self, expected: Expected) -> PgError {
        if self.current.token == Token::End {
            return syntax_error("The input string ended unexpectedly.");
        }
        let found = &self.lexer.text[self.current.start..self.current.end];
        let wanted = match expected {
            Expected::Value => "JSON value",
            Expected::ObjectFirst => "string or \"}\"",
            Expected::ObjectKey => "string",
            Expected::Colon => "\":\"",
            Expected::ObjectNext => "\",\" or \"}\"",
            Expected::ArrayNext => "\",\" or \"]\"",
            Expected::End => "end of input",
        };
        syntax_error(format!("Expected {wanted}, but found \"{found}\"."))
    }

    /// An object key and its colon; the value comes next.
    fn key(&mut self, expected: Expected) -> Result<Cow<'a, str>, PgError> {
        if !matches!(self.current.token, Token::String(_)) {
            return Err(self.unexpected(expected));
        }
        let Token::String(key) = self.advance()?.token else {
            unreachable!("the current token is a string");
        };
        if self.current.token != Token::Colon {
            return Err(self.unexpected(Expected::Colon));
        }
        self.advance()?;
        Ok(key)
    }

    /// Refuses a container deeper than [`MAX_DEPTH`], empty or not.
    fn check_depth(&self) -> Result<(), PgError> {
        if self.open.len() >= MAX_DEPTH {
            return Err(
                PgError::new(STATEMENT_TOO_COMPLEX, "stack depth limit exceeded").with_hint(
                    "Increase the configuration parameter \"max_stack_depth\" (currently \
                     2048kB), after ensuring the platform's stack depth limit is adequate.",
                ),
            );
        }
        Ok(())
    }

    fn document(mut self) -> Result<Node<'a>, PgError> {
        loop {
            // A value starts here: a scalar, or a container that is empty
            // or whose first element or member starts next.
            let start = self.current.start;
            let mut node = match self.current.token {
                Token::ObjectStart => {
                    self.check_depth()?;
                    self.advance()?;
                    if self.current.token == Token::ObjectEnd {
                        let close = self.advance()?;
                        Node::new(Value::Object(Vec::new()), start, close.end)
                    } else {
                        let key = self.key(Expected::ObjectFirst)?;
                        self.open.push(Open::Object {
                            start,
                            members: Vec::new(),
                            key,
                        });
                        continue;
                    }
                }
                Token::ArrayStart => {
                    self.check_depth()?;
                    self.advance()?;
                    if self.current.token == Token::ArrayEnd {
                        let close = self.advance()?;
                        Node::new(Value::Array(Vec::new()), start, close.end)
                    } else {
                        self.open.push(Open::Array {
                            start,
                            items: Vec::new(),
                        });
                        continue;
                    }
                }
                Token::String(_) | Token::Number(_) | Token::True | Token::False | Token::Null => {
                    self.scalar()?
                }
                _ => return Err(self.unexpected(Expected::Value)),
            };
            // A value is complete: it goes into the innermost open
            // container, which it may complete in turn.
            loop {
                let Some(open) = self.open.last_mut() else {
                    if self.current.token != Token::End {
                        return Err(self.unexpected(Expected::End));
                    }
                    return Ok(node);
                };
                match open {
                    Open::Array { items, .. } => items.push(node),
                    Open::Object { members, key, .. } => {
                        members.push((std::mem::take(key), node));
                    }
                }
                match (&self.current.token, self.open.last_mut()) {
                    (Token::Comma, Some(Open::Array { .. })) => {
                        self.advance()?;
                        break;
                    }
                    (Token::Comma, Some(Open::Object { .. })) => {
                        self.advance()?;
                        let next = self.key(Expected::ObjectKey)?;
                        if let Some(Open::Object { key, .. }) = self.open.last_mut() {
                            *key = next;
                        }
                        break;
                    }
                    (Token::ArrayEnd, Some(Open::Array { .. }))
                    | (Token::ObjectEnd, Some(Open::Object { .. })) => {
                        let close = self.advance()?;
                        node = match self.open.pop() {
                            Some(Open::Array { start, items }) => {
                                Node::new(Value::Array(items), start, close.end)
                            }
                            Some(Open::Object { start, members, .. }) => {
                                let members = if self.mode == Mode::Jsonb {
                                    jsonb_members(members)
                                } else {
                                    members
                                };
                                Node::new(Value::Object(members), start, close.end)
                            }
                            None => unreachable!("a container is open"),
                        };
                    }
                    (_, Some(Open::Array { .. })) => {
                        return Err(self.unexpected(Expected::ArrayNext));
                    }
                    (_, _) => return Err(self.unexpected(Expected::ObjectNext)),
                }
            }
        }
    }

    /// The scalar at the current token.
    fn scalar(&mut self) -> Result<Node<'a>, PgError> {
        let lexeme = self.advance()?;
        let value = match lexeme.token {
            Token::String(text) => Value::String(text),
            Token::Number(text) if self.mode == Mode::Jsonb => {
                let numeric = numeric_text(text)?;
                Value::Number(if numeric == text {
                    Cow::Borrowed(text)
                } else {
                    Cow::Owned(numeric)
                })
            }
            Token::Number(text) => Value::Number(Cow::Borrowed(text)),
            Token::True => Value::Bool(true),
            Token::False => Value::Bool(false),
            _ => Value::Null,
        };
        Ok(Node::new(value, lexeme.start, lexeme.end))
    }
}

/// The type of a document from its first token, which is all
/// `json_typeof` looks at.
fn first_token_type(text: &str) -> Result<&'static str, PgError> {
    let lexeme = Lexer::new(text, false).next()?;
    Ok(match lexeme.token {
        Token::ObjectStart => "object",
        Token::ArrayStart => "array",
        Token::String(_) => "string",
        Token::Number(_) => "number",
        Token::True | Token::False => "boolean",
        Token::Null => "null",
        Token::End => return Err(syntax_error("The input string ended unexpectedly.")),
        _ => {
            let found = &text[lexeme.start..lexeme.end];
            return Err(syntax_error(format!(
                "Expected JSON value, but found \"{found}\"."
            )));
        }
    })
}

// ---------------------------------------------------------------------------
// jsonb: key order, numbers, text
// ---------------------------------------------------------------------------

/// jsonb's key order: shorter keys first, then bytewise.
fn jsonb_key_order(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// An object's members as jsonb keeps them: sorted, the last of duplicate
/// keys kept.
fn jsonb_members<'a>(mut members: Vec<(Cow<'a, str>, Node<'a>)>) -> Vec<(Cow<'a, str>, Node<'a>)> {
    // Stable: duplicates stay in input order, so the last one is kept.
    members.sort_by(|a, b| jsonb_key_order(&a.0, &b.0));
    let mut kept: Vec<(Cow<'a, str>, Node<'a>)> = Vec::with_capacity(members.len());
    for member in members {
        match kept.last_mut() {
            Some(last) if last.0 == member.0 => *last = member,
            _ => kept.push(member),
        }
    }
    kept
}

/// The member of a jsonb object (sorted, unique keys) named `key`.
fn jsonb_member<'n, 'a>(
    members: &'n [(Cow<'a, str>, Node<'a>)],
    key: &str,
) -> Option<&'n Node<'a>> {
    members
        .binary_search_by(|(name, _)| jsonb_key_order(name, key))
        .ok()
        .map(|index| &members[index].1)
}

/// A number literal split into its parts; the exponent saturates.
struct NumberParts<'a> {
    negative: bool,
    integer: &'a str,
    fraction: &'a str,
    exponent: i64,
}

/// Splits a number literal whose form the lexer (or a float formatter)
/// has checked.
fn number_parts(literal: &str) -> NumberParts<'_> {
    let (negative, unsigned) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let exponent = exponent.map_or(0, |text| {
        let (sign, digits) = match text.as_bytes().first() {
            Some(b'-') => (-1, &text[1..]),
            Some(b'+') => (1, &text[1..]),
            _ => (1, text),
        };
        let magnitude = digits.bytes().fold(0i64, |value, digit| {
            value
                .saturating_mul(10)
                .saturating_add(i64::from(digit - b'0'))
        });
        sign * magnitude
    });
    NumberParts {
        negative,
        integer,
        fraction,
        exponent,
    }
}

/// A number literal as PostgreSQL's `numeric` prints it, which is what
/// jsonb stores: the exponent applied, as many decimals as the literal
/// implies (`1.50` → `1.50`, `1.50e1` → `15.0`, `1e2` → `100`,
/// `1e-3` → `0.001`), no negative zero. Fails as `numeric` does beyond
/// its range.
pub(crate) fn numeric_text(literal: &str) -> Result<String, PgError> {
    let parts = number_parts(literal);
    // PostgreSQL refuses such exponents outright.
    if parts.exponent.abs() >= i64::from(i32::MAX / 2) {
        return Err(numeric_overflow());
    }
    let digits: Vec<u8> = parts
        .integer
        .bytes()
        .chain(parts.fraction.bytes())
        .collect();
    let scale = (parts.fraction.len() as i64 - parts.exponent).max(0);
    if scale > NUMERIC_MAX_SCALE {
        return Err(numeric_overflow());
    }
    // Where the decimal point falls in `digits`.
    let point = parts.integer.len() as i64 + parts.exponent;
    let digit_at = |index: i64| {
        usize::try_from(index)
            .ok()
            .and_then(|index| digits.get(index))
            .map_or('0', |&digit| char::from(digit))
    };
    let mut out = String::new();
    match digits.iter().position(|&digit| digit != b'0') {
        None => out.push('0'),
        Some(first) => {
            if point - 1 - first as i64 > NUMERIC_MAX_POWER {
                return Err(numeric_overflow());
            }
            if parts.negative {
                out.push('-');
            }
            if point <= first as i64 {
                out.push('0');
            } else {
                (first as i64..point).for_each(|index| out.push(digit_at(index)));
            }
        }
    }
    if scale > 0 {
        out.push('.');
        (point..point + scale).for_each(|index| out.push(digit_at(index)));
    }
    Ok(out)
}

/// A number's value as sign, significant digits and the power of ten of
/// the first of them, so that `1`, `1.0` and `1e0` compare equal.
fn numeric_key(literal: &str) -> (bool, String, i64) {
    let parts = number_parts(literal);
    let digits: String = parts
        .integer
        .chars()
        .chain(parts.fraction.chars())
        .collect();
    let Some(first) = digits.find(|digit| digit != '0') else {
        return (false, String::new(), 0);
    };
    let last = digits.rfind(|digit| digit != '0').unwrap_or(first);
    let point = (parts.integer.len() as i64).saturating_add(parts.exponent);
    (
        parts.negative,
        digits[first..=last].to_owned(),
        point.saturating_sub(1 + first as i64),
    )
}

/// `text` as a JSON string, escaped as PostgreSQL escapes it.
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    let mut run = 0;
    for (index, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[run..index]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{byte:04x}");
        } else {
            out.push_str(escape);
        }
        run = index + 1;
    }
    out.push_str(&text[run..]);
    out.push('"');
}

/// A value in jsonb's text form.
fn write_jsonb(out: &mut String, value: &Value<'_>) {
    write_document(out, value, Layout::Jsonb);
}

/// A value as `jsonb_pretty` prints it: four spaces a level, every element
/// on a line of its own, empty containers as an opening and a closing line.
fn write_pretty(out: &mut String, value: &Value<'_>) {
    write_document(out, value, Layout::Pretty);
}

/// How a document is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// jsonb's output: `{"a": [1, 2]}`.
    Jsonb,
    /// `jsonb_pretty`'s.
    Pretty,
    /// Without blanks, as PostgreSQL's json functions that rebuild a
    /// document write it: `{"a":[1,2]}`.
    Compact,
}

/// Where the writer is in an open container.
enum Cursor<'v, 'a> {
    Array(std::slice::Iter<'v, Node<'a>>),
    Object(std::slice::Iter<'v, (Cow<'a, str>, Node<'a>)>),
}

/// Writes a value in `layout`, walking it with a heap stack of open
/// containers rather than recursing.
fn write_document(out: &mut String, root: &Value<'_>, layout: Layout) {
    let pretty = layout == Layout::Pretty;
    let (comma, colon) = match layout {
        Layout::Jsonb => (", ", ": "),
        Layout::Pretty => (",", ": "),
        Layout::Compact => (",", ":"),
    };
    let newline = |out: &mut String, level: usize| {
        out.push('\n');
        (0..level).for_each(|_| out.push_str("    "));
    };
    let mut open: Vec<(Cursor<'_, '_>, bool)> = Vec::new();
    let mut next = Some(root);
    loop {
        if let Some(value) = next.take() {
            match value {
                Value::Array(items) => {
                    out.push('[');
                    open.push((Cursor::Array(items.iter()), true));
                }
                Value::Object(members) => {
                    out.push('{');
                    open.push((Cursor::Object(members.iter()), true));
                }
                Value::Null => out.push_str("null"),
                Value::Bool(true) => out.push_str("true"),
                Value::Bool(false) => out.push_str("false"),
                Value::Number(number) => out.push_str(number),
                Value::String(text) => write_string(out, text),
            }
        }
        let level = open.len();
        let Some((cursor, first)) = open.last_mut() else {
            return;
        };
        let element = match cursor {
            Cursor::Array(items) => items.next().map(|item| (None, item)),
            Cursor::Object(members) => members.next().map(|(key, item)| (Some(key), item)),
        };
        match element {
            Some((key, item)) => {
                if !std::mem::take(first) {
                    out.push_str(comma);
                }
                if pretty {
                    newline(out, level);
                }
                if let Some(key) = key {
                    write_string(out, key);
                    out.push_str(colon);
                }
                next = Some(&item.value);
            }
            None => {
                if pretty {
                    newline(out, level - 1);
                }
                out.push(match cursor {
                    Cursor::Array(_) => ']',
                    Cursor::Object(_) => '}',
                });
                open.pop();
            }
        }
    }
}

/// Reads a document as `kind`: jsonb canonical, json decoded.
fn parse_as(text: &str, kind: Kind) -> Result<Node<'_>, PgError> {
    parse(
        text,
        match kind {
            Kind::Json => Mode::Decode,
            Kind::Jsonb => Mode::Jsonb,
        },
    )
}

// ---------------------------------------------------------------------------
// Lookups: ->, ->>, #>, #>>, @>, ?
// ---------------------------------------------------------------------------

/// One step of a path into a document.
#[derive(Debug, Clone, Copy)]
enum Step<'p> {
    /// `-> text`: a key of an object; arrays have none.
    Key(&'p str),
    /// `-> integer`: an element of an array, negative from the end; objects
    /// have none.
    Index(i64),
    /// An element of a `#>` path: a key of an object, or in an array an
    /// integer index.
    Element(&'p str),
}

/// A path element as an array index, as PostgreSQL reads it (`strtol`
/// into an `int`): leading white space and a sign allowed, nothing after
/// the digits.
fn path_index(text: &str) -> Option<i64> {
    let trimmed = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let magnitude: i64 = digits.parse().ok()?;
    let index = if negative { -magnitude } else { magnitude };
    i32::try_from(index).ok().map(i64::from)
}

/// Element `index` of an array, negative counting from the end.
fn element<'n, 'a>(items: &'n [Node<'a>], index: i64) -> Option<&'n Node<'a>> {
    let position = if index < 0 {
        items.len() as i64 + index
    } else {
        index
    };
    usize::try_from(position).ok().and_then(|at| items.get(at))
}

/// The value `path` leads to. A `json` object may repeat a key; every
/// member with the key is followed and the last match in document order
/// wins, as PostgreSQL's streaming lookup has it. (jsonb objects have one
/// member a key.) A depth-first search on a heap stack that tries later
/// members first, so its first match is the last in the document.
fn lookup<'n, 'a>(root: &'n Node<'a>, path: &[Step<'_>]) -> Option<&'n Node<'a>> {
    let mut pending = vec![(root, 0)];
    while let Some((node, depth)) = pending.pop() {
        let Some(step) = path.get(depth) else {
            return Some(node);
        };
        match (&node.value, *step) {
            (Value::Object(members), Step::Key(key) | Step::Element(key)) => pending.extend(
                members
                    .iter()
                    .filter(|(name, _)| name == key)
                    .map(|(_, value)| (value, depth + 1)),
            ),
            (Value::Array(items), Step::Index(index)) => {
                pending.extend(element(items, index).map(|item| (item, depth + 1)));
            }
            (Value::Array(items), Step::Element(text)) => {
                let found = path_index(text).and_then(|index| element(items, index));
                pending.extend(found.map(|item| (item, depth + 1)));
            }
            _ => {}
        }
    }
    None
}

/// Writes what an operator returns for the value it found; false for SQL
/// NULL. `as_text` is `->>`/`#>>`: strings without quotes, JSON null as
/// NULL. A `json` value is its own text in the input; a `json` root scalar
/// reached by an empty path keeps the white space before it, as in
/// PostgreSQL.
fn write_found(
    out: &mut String,
    source: &str,
    node: &Node<'_>,
    kind: Kind,
    as_text: bool,
    root: bool,
) -> bool {
    match (&node.value, as_text) {
        (Value::String(text), true) => out.push_str(text),
        (Value::Null, true) => return false,
        (value, _) => match kind {
            Kind::Jsonb => write_jsonb(out, value),
            Kind::Json if root && value.is_scalar() => out.push_str(&source[..node.end]),
            Kind::Json => out.push_str(&source[node.start..node.end]),
        },
    }
    true
}

/// Answers `->`, `->>`, `#>`, `#>>` and the `*_extract_path*` functions for
/// one document; false for SQL NULL.
fn extract(
    out: &mut String,
    source: &str,
    kind: Kind,
    path: &[Step<'_>],
    as_text: bool,
) -> Result<bool, PgError> {
    let root = parse_as(source, kind)?;
    let found = match path {
        // PostgreSQL stores a jsonb scalar as an array of one element:
        // `->` 0 (or -1) finds the scalar itself.
        [Step::Index(0 | -1)] if matches!(kind, Kind::Jsonb) && root.value.is_scalar() => {
            Some(&root)
        }
        _ => lookup(&root, path),
    };
    Ok(match found {
        Some(node) => write_found(out, source, node, kind, as_text, path.is_empty()),
        None => false,
    })
}

/// Whether two scalars are equal as jsonb compares them: numbers by value.
fn scalars_equal(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Number(a), Value::Number(b)) => a == b || numeric_key(a) == numeric_key(b),
        _ => false,
    }
}

/// jsonb `@>`: whether `a` contains `b`. Objects contain objects whose
/// every key they have with a containing value; arrays contain arrays
/// whose every element some element of theirs contains; scalars only equal
/// scalars; and at the top level an array contains a scalar it has.
fn jsonb_contains(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Array(items), scalar) if scalar.is_scalar() => {
            items.iter().any(|item| scalars_equal(&item.value, scalar))
        }
        _ => contains_within(a, b),
    }
}

/// Where a containment test is in a pair of containers.
enum Containment<'v, 'a> {
    /// Every wanted member must be in `have` with a containing value;
    /// `next` is the member being checked.
    Objects {
        have: &'v [(Cow<'a, str>, Node<'a>)],
        want: &'v [(Cow<'a, str>, Node<'a>)],
        next: usize,
    },
    /// Every wanted element must be contained by some element of `have`;
    /// `candidate` is the element of `have` being tried for `wanted`.
    Arrays {
        have: &'v [Node<'a>],
        want: &'v [Node<'a>],
        wanted: usize,
        candidate: usize,
    },
}

/// Containment below the top level: objects contain objects, arrays
/// arrays, scalars equal scalars. Evaluated on a heap stack of the pairs
/// being compared rather than by recursion, so deep documents cannot
/// exhaust the thread's stack.
fn contains_within(a: &Value<'_>, b: &Value<'_>) -> bool {
    let mut stack: Vec<Containment<'_, '_>> = Vec::new();
    // The answer of the comparison that finished last, for its caller.
    let mut answer: Option<bool> = None;
    let mut compare = Some((a, b));
    loop {
        if let Some((a, b)) = compare.take() {
            match (a, b) {
                (Value::Object(have), Value::Object(want)) => stack.push(Containment::Objects {
                    have,
                    want,
                    next: 0,
                }),
                (Value::Array(have), Value::Array(want)) => stack.push(Containment::Arrays {
                    have,
                    want,
                    wanted: 0,
                    candidate: 0,
                }),
                (a, b) => answer = Some(a.is_scalar() && b.is_scalar() && scalars_equal(a, b)),
            }
        }
        let Some(frame) = stack.last_mut() else {
            return answer.unwrap_or(false);
        };
        let finished = match frame {
            Containment::Objects { have, want, next } => match answer.take() {
                Some(false) => Some(false),
                Some(true) => {
                    *next += 1;
                    None
                }
                None => None,
            }
            .or_else(|| match want.get(*next) {
                None => Some(true),
                Some((key, wanted)) => match jsonb_member(have, key) {
                    None => Some(false),
                    Some(found) => {
                        compare = Some((&found.value, &wanted.value));
                        None
                    }
                },
            }),
            Containment::Arrays {
                have,
                want,
                wanted,
                candidate,
            } => {
                match answer.take() {
                    Some(true) => {
                        *wanted += 1;
                        *candidate = 0;
                    }
                    Some(false) => *candidate += 1,
                    None => {}
                }
                match (want.get(*wanted), have.get(*candidate)) {
                    (None, _) => Some(true),
                    (Some(_), None) => Some(false),
                    (Some(wanted), Some(item)) => {
                        compare = Some((&item.value, &wanted.value));
                        None
                    }
                }
            }
        };
        if finished.is_some() {
            stack.pop();
            answer = finished;
        }
    }
}

/// jsonb `?`: whether `key` is a key of the object, a string element of
/// the array, or the string itself.
fn jsonb_exists(value: &Value<'_>, key: &str) -> bool {
    match value {
        Value::Object(members) => jsonb_member(members, key).is_some(),
        Value::Array(items) => items
            .iter()
            .any(|item| matches!(&item.value, Value::String(text) if text == key)),
        Value::String(text) => text == key,
        _ => false,
    }
}

/// The elements of a PostgreSQL array literal (`{a,"b c",NULL}`) as
/// `text[]` input reads them. More dimensions (`{{a},{b}}`) are flattened,
/// as the path operators flatten them.
pub(super) fn array_literal(text: &str) -> Result<Vec<Option<String>>, PgError> {
    let malformed = |detail: &str| {
        PgError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("malformed array literal: \"{text}\""),
        )
        .with_detail(detail)
    };
    let is_space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c');
    let mut chars = text.chars().peekable();
    let skip_spaces = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while chars.next_if(|&c| is_space(c)).is_some() {}
    };
    skip_spaces(&mut chars);
    if chars.next() != Some('{') {
        return Err(malformed(
            "Array value must start with \"{\" or dimension information.",
        ));
    }
    let end_of_input = || malformed("Unexpected end of input.");
    let mut elements = Vec::new();
    let mut depth = 1;
    while depth > 0 {
        skip_spaces(&mut chars);
        match chars.peek().copied() {
            None => return Err(end_of_input()),
            Some('{') => {
                chars.next();
                depth += 1;
                continue;
            }
            Some('}') => {
                chars.next();
                depth -= 1;
                if depth > 0 {
                    skip_spaces(&mut chars);
                    chars.next_if_eq(&',');
                }
                continue;
            }
            Some(',') => return Err(malformed("Unexpected \",\" character.")),
            Some('"') => {
                chars.next();
                let mut element = String::new();
                loop {
                    match chars.next() {
                        None => return Err(end_of_input()),
                        Some('"') => break,
                        Some('\\') => element.push(chars.next().ok_or_else(end_of_input)?),
                        Some(c) => element.push(c),
                    }
                }
                elements.push(Some(element));
            }
            Some(_) => {
                let mut element = String::new();
                // Length up to the last character that is not unescaped
                // white space, and whether any character was escaped.
                let mut kept = 0;
                let mut escaped = false;
                while let Some(c) = chars.next_if(|&c| !matches!(c, ',' | '}' | '{' | '"')) {
                    if c == '\\' {
                        element.push(chars.next().ok_or_else(end_of_input)?);
                        escaped = true;
                        kept = element.len();
                    } else {
                        element.push(c);
                        if !is_space(c) {
                            kept = element.len();
                        }
                    }
                }
                element.truncate(kept);
                let null = !escaped && element.eq_ignore_ascii_case("NULL");
                elements.push((!null).then_some(element));
            }
        }
        skip_spaces(&mut chars);
        match chars.peek() {
            Some(',') => {
                chars.next();
            }
            Some('}') => {}
            None => return Err(end_of_input()),
            Some(other) => {
                return Err(malformed(&format!("Unexpected \"{other}\" character.")));
            }
        }
    }
    skip_spaces(&mut chars);
    if chars.next().is_some() {
        return Err(malformed("Junk after closing right brace."));
    }
    Ok(elements)
}

// ---------------------------------------------------------------------------
// SQL values as JSON: to_json, json_build_array, jsonb_build_object
// ---------------------------------------------------------------------------

/// A `double precision` as PostgreSQL prints it: the shortest text that
/// reads back the same, in exponent form below 1e-4 and from 1e15 on.
fn float8_text(value: f64) -> String {
    if value.is_finite() {
        shortest_float_text(&format!("{value:e}"), 15)
    } else {
        non_finite_text(value.is_nan(), value > 0.0)
    }
}

/// A `real` as PostgreSQL prints it: exponent form from 1e6 on.
fn float4_text(value: f32) -> String {
    if value.is_finite() {
        shortest_float_text(&format!("{value:e}"), 6)
    } else {
        non_finite_text(value.is_nan(), value > 0.0)
    }
}

fn non_finite_text(nan: bool, positive: bool) -> String {
    match (nan, positive) {
        (true, _) => "NaN",
        (false, true) => "Infinity",
        (false, false) => "-Infinity",
    }
    .to_owned()
}

/// Rust's shortest round-trip digits (`{:e}`: `-1.25e-7`) laid out as
/// PostgreSQL lays them out: plain from 1e-4 up to 1e`fixed_below`,
/// otherwise `d.ddde+XX` with at least two exponent digits.
fn shortest_float_text(scientific: &str, fixed_below: i32) -> String {
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if (-4..fixed_below).contains(&exponent) {
        if exponent >= 0 {
            let whole = exponent as usize + 1;
            if digits.len() <= whole {
                out.push_str(&digits);
                (digits.len()..whole).for_each(|_| out.push('0'));
            } else {
                out.push_str(&digits[..whole]);
                out.push('.');
                out.push_str(&digits[whole..]);
            }
        } else {
            out.push_str("0.");
            (1..-exponent).for_each(|_| out.push('0'));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.unsigned_abs());
    }
    out
}

/// Microseconds after the second, as PostgreSQL prints them: none when
/// zero, without trailing zeros otherwise.
fn time_text(time: NaiveTime) -> String {
    let mut text = time.format("%H:%M:%S").to_string();
    let micros = time.nanosecond() / 1000;
    if micros > 0 {
        let fraction = format!("{micros:06}");
        text.push('.');
        text.push_str(fraction.trim_end_matches('0'));
    }
    text
}

fn datetime_text(datetime: NaiveDateTime) -> String {
    format!(
        "{}T{}",
        datetime.date().format("%Y-%m-%d"),
        time_text(datetime.time())
    )
}

/// A UTC offset as JSON dates show it: `+00:00`, `-03:30`.
fn offset_text(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let seconds = seconds.unsigned_abs();
    let mut text = format!("{sign}{:02}:{:02}", seconds / 3600, seconds / 60 % 60);
    if !seconds.is_multiple_of(60) {
        let _ = write!(text, ":{:02}", seconds % 60);
    }
    text
}

/// Dates, times and timestamps in the ISO 8601 form PostgreSQL's JSON
/// functions use (`2020-01-02T03:04:05.5`); a timestamp with a time zone
/// is shown in the zone of its Arrow type, with the offset.
fn temporal_text(array: &dyn Array, row: usize) -> Option<String> {
    let naive_datetime = |unit: &TimeUnit| match unit {
        TimeUnit::Second => as_datetime::<TimestampSecondType>(
            array.as_primitive::<TimestampSecondType>().value(row),
        ),
        TimeUnit::Millisecond => as_datetime::<TimestampMillisecondType>(
            array.as_primitive::<TimestampMillisecondType>().value(row),
        ),
        TimeUnit::Microsecond => as_datetime::<TimestampMicrosecondType>(
            array.as_primitive::<TimestampMicrosecondType>().value(row),
        ),
        TimeUnit::Nanosecond => as_datetime::<TimestampNanosecondType>(
            array.as_primitive::<TimestampNanosecondType>().value(row),
        ),
    };
    match array.data_type() {
        DataType::Date32 => {
            as_date::<Date32Type>(i64::from(array.as_primitive::<Date32Type>().value(row)))
                .map(|date| date.format("%Y-%m-%d").to_string())
        }
        DataType::Date64 => as_date::<Date64Type>(array.as_primitive::<Date64Type>().value(row))
            .map(|date| date.format("%Y-%m-%d").to_string()),
        DataType::Time32(TimeUnit::Second) => as_time::<Time32SecondType>(i64::from(
            array.as_primitive::<Time32SecondType>().value(row),
        ))
        .map(time_text),
        DataType::Time32(_) => as_time::<Time32MillisecondType>(i64::from(
            array.as_primitive::<Time32MillisecondType>().value(row),
        ))
        .map(time_text),
        DataType::Time64(TimeUnit::Microsecond) => as_time::<Time64MicrosecondType>(
            array.as_primitive::<Time64MicrosecondType>().value(row),
        )
        .map(time_text),
        DataType::Time64(_) => {
            as_time::<Time64NanosecondType>(array.as_primitive::<Time64NanosecondType>().value(row))
                .map(time_text)
        }
        DataType::Timestamp(unit, None) => naive_datetime(unit).map(datetime_text),
        DataType::Timestamp(unit, Some(zone)) => {
            let utc = naive_datetime(unit)?;
            let zone = Tz::from_str(zone).ok()?;
            let local = zone.from_utc_datetime(&utc);
            Some(format!(
                "{}{}",
                datetime_text(local.naive_local()),
                offset_text(local.offset().fix().local_minus_utc())
            ))
        }
        _ => None,
    }
}

/// Where a list row's elements are in the list's values.
enum Offsets<'a> {
    Small(&'a [i32]),
    Large(&'a [i64]),
    Fixed(&'a FixedSizeListArray),
}

impl Offsets<'_> {
    fn range(&self, row: usize) -> std::ops::Range<usize> {
        match self {
            Offsets::Small(offsets) => offsets[row] as usize..offsets[row + 1] as usize,
            Offsets::Large(offsets) => offsets[row] as usize..offsets[row + 1] as usize,
            Offsets::Fixed(list) => {
                let start = list.value_offset(row) as usize;
                start..start + list.value_length() as usize
            }
        }
    }
}

/// How one column of SQL values is written as JSON.
enum Writer<'a> {
    /// The Null type: every value is null.
    Null,
    Bool(&'a BooleanArray),
    /// Integers and decimals, bare as formatted.
    Number(ArrayFormatter<'a>),
    Float4(&'a Float32Array),
    Float8(&'a Float64Array),
    /// Text: quoted, or as is when it already is json or jsonb.
    Text {
        texts: Texts<'a>,
        json: bool,
    },
    Temporal,
    Binary,
    /// Arrays as `array_to_json` writes them: `[1,2]`.
    List {
        offsets: Offsets<'a>,
        values: Box<SqlColumn<'a>>,
    },
    /// Composite values as `row_to_json` writes them: `{"a":1,"b":2}`.
    Struct {
        names: Vec<&'a str>,
        columns: Vec<SqlColumn<'a>>,
    },
    /// Anything else: its text, quoted.
    Other(ArrayFormatter<'a>),
}

/// A column of SQL values and how to write them as JSON.
struct SqlColumn<'a> {
    array: &'a dyn Array,
    writer: Writer<'a>,
}

/// Whether `field` holds json or jsonb text.
fn is_json_field(field: &Field) -> bool {
    matches!(
        field.metadata().get(PG_TYPE_METADATA).map(String::as_str),
        Some("json" | "jsonb")
    )
}

impl<'a> SqlColumn<'a> {
    fn new(array: &'a dyn Array, field: &'a Field) -> Result<Self> {
        let options = FormatOptions::default();
        let writer = match array.data_type() {
            DataType::Null => Writer::Null,
            DataType::Boolean => Writer::Bool(array.as_boolean()),
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..) => Writer::Number(ArrayFormatter::try_new(array, &options)?),
            DataType::Float32 => Writer::Float4(array.as_primitive()),
            DataType::Float64 => Writer::Float8(array.as_primitive()),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Writer::Text {
                texts: Texts::of_array(array)?,
                json: is_json_field(field),
            },
            DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(..) => Writer::Temporal,
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => Writer::Binary,
            DataType::List(child) => {
                let list = array.as_list::<i32>();
                Writer::List {
                    offsets: Offsets::Small(list.value_offsets()),
                    values: Box::new(SqlColumn::new(list.values().as_ref(), child)?),
                }
            }
            DataType::LargeList(child) => {
                let list = array.as_list::<i64>();
                Writer::List {
                    offsets: Offsets::Large(list.value_offsets()),
                    values: Box::new(SqlColumn::new(list.values().as_ref(), child)?),
                }
            }
            DataType::FixedSizeList(child, _) => {
                let list = array.as_fixed_size_list();
                Writer::List {
                    offsets: Offsets::Fixed(list),
                    values: Box::new(SqlColumn::new(list.values().as_ref(), child)?),
                }
            }
            DataType::Struct(fields) => {
                let structs = array.as_struct();
                Writer::Struct {
                    names: fields.iter().map(|field| field.name().as_str()).collect(),
                    columns: structs
                        .columns()
                        .iter()
                        .zip(fields.iter())
                        .map(|(column, field)| SqlColumn::new(column.as_ref(), field))
                        .collect::<Result<_>>()?,
                }
            }
            _ => Writer::Other(ArrayFormatter::try_new(array, &options)?),
        };
        Ok(SqlColumn { array, writer })
    }

    fn is_null(&self, row: usize) -> bool {
        matches!(self.writer, Writer::Null) || self.array.is_null(row)
    }

    /// Value `row` as JSON.
    fn write(&self, row: usize, out: &mut String) -> Result<(), PgError> {
        if self.is_null(row) {
            out.push_str("null");
            return Ok(());
        }
        let formatted = |formatter: &ArrayFormatter<'_>, out: &mut String| {
            write!(out, "{}", formatter.value(row)).map_err(|_| {
                PgError::new(sqlstate::INTERNAL_ERROR, "cannot format a value as JSON")
            })
        };
        match &self.writer {
            Writer::Null => out.push_str("null"),
            Writer::Bool(values) => out.push_str(if values.value(row) { "true" } else { "false" }),
            Writer::Number(formatter) => formatted(formatter, out)?,
            Writer::Float4(values) => write_float(out, float4_text(values.value(row))),
            Writer::Float8(values) => write_float(out, float8_text(values.value(row))),
            Writer::Text { texts, json } => {
                let text = texts.get(row).unwrap_or_default();
                if *json {
                    out.push_str(text);
                } else {
                    write_string(out, text);
                }
            }
            Writer::Temporal => match temporal_text(self.array, row) {
                Some(text) => write_string(out, &text),
                None => out.push_str("null"),
            },
            Writer::Binary => {
                let bytes = match self.array.data_type() {
                    DataType::Binary => self.array.as_binary::<i32>().value(row),
                    DataType::LargeBinary => self.array.as_binary::<i64>().value(row),
                    DataType::BinaryView => self.array.as_binary_view().value(row),
                    _ => self.array.as_fixed_size_binary().value(row),
                };
                let mut text = String::with_capacity(2 + bytes.len() * 2);
                text.push_str("\\x");
                bytes.iter().for_each(|byte| {
                    let _ = write!(text, "{byte:02x}");
                });
                write_string(out, &text);
            }
            Writer::List { offsets, values } => {
                out.push('[');
                for (index, at) in offsets.range(row).enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    values.write(at, out)?;
                }
                out.push(']');
            }
            Writer::Struct { names, columns } => {
                out.push('{');
                for (index, (name, column)) in names.iter().zip(columns).enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_string(out, name);
                    out.push(':');
                    column.write(row, out)?;
                }
                out.push('}');
            }
            Writer::Other(formatter) => {
                let mut text = String::new();
                formatted(formatter, &mut text)?;
                write_string(out, &text);
            }
        }
        Ok(())
    }

    /// Value `row` as an object key: its text as a JSON string. Arrays,
    /// composites and json cannot be keys.
    fn write_key(&self, row: usize, out: &mut String) -> Result<(), PgError> {
        match &self.writer {
            Writer::Text { texts, json: false } => {
                write_string(out, texts.get(row).unwrap_or_default())
            }
            Writer::Text { json: true, .. } | Writer::List { .. } | Writer::Struct { .. } => {
                return Err(invalid_parameter(
                    "key value must be scalar, not array, composite, or json",
                ));
            }
            _ => {
                let mut text = String::new();
                self.write(row, &mut text)?;
                if text.starts_with('"') {
                    out.push_str(&text);
                } else {
                    write_string(out, &text);
                }
            }
        }
        Ok(())
    }
}

/// A float in JSON: a number, or the string `"NaN"`, `"Infinity"`.
fn write_float(out: &mut String, text: String) {
    if text.ends_with(|c: char| c.is_ascii_digit()) {
        out.push_str(&text);
    } else {
        write_string(out, &text);
    }
}

// ---------------------------------------------------------------------------
// Arrow arguments and results
// ---------------------------------------------------------------------------

/// A text argument, a column or a constant: Utf8, LargeUtf8 or Utf8View.
enum Texts<'a> {
    Constant(Option<&'a str>),
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl<'a> Texts<'a> {
    fn new(value: &'a ColumnarValue) -> Result<Self> {
        match value {
            ColumnarValue::Array(array) => Self::of_array(array.as_ref()),
            ColumnarValue::Scalar(
                ScalarValue::Utf8(text)
                | ScalarValue::LargeUtf8(text)
                | ScalarValue::Utf8View(text),
            ) => Ok(Texts::Constant(text.as_deref())),
            ColumnarValue::Scalar(ScalarValue::Null) => Ok(Texts::Constant(None)),
            ColumnarValue::Scalar(other) => {
                internal_err!("expected a text argument, got {}", other.data_type())
            }
        }
    }

    fn of_array(array: &'a dyn Array) -> Result<Self> {
        match array.data_type() {
            DataType::Utf8 => Ok(Texts::Utf8(array.as_string::<i32>())),
            DataType::LargeUtf8 => Ok(Texts::Large(array.as_string::<i64>())),
            DataType::Utf8View => Ok(Texts::View(array.as_string_view())),
            DataType::Null => Ok(Texts::Constant(None)),
            other => internal_err!("expected a text argument, got {other}"),
        }
    }

    fn get(&self, row: usize) -> Option<&'a str> {
        match self {
            Texts::Constant(text) => *text,
            Texts::Utf8(array) => array.is_valid(row).then(|| array.value(row)),
            Texts::Large(array) => array.is_valid(row).then(|| array.value(row)),
            Texts::View(array) => array.is_valid(row).then(|| array.value(row)),
        }
    }
}

/// The right operand of `->`/`->>`: keys (text) or indexes (bigint).
enum Keys<'a> {
    Text(Texts<'a>),
    Constant(Option<i64>),
    Indexes(&'a Int64Array),
}

impl<'a> Keys<'a> {
    fn new(value: &'a ColumnarValue) -> Result<Self> {
        match value {
            ColumnarValue::Scalar(ScalarValue::Int64(index)) => Ok(Keys::Constant(*index)),
            ColumnarValue::Array(array) if array.data_type() == &DataType::Int64 => {
                Ok(Keys::Indexes(array.as_primitive::<Int64Type>()))
            }
            other => Texts::new(other).map(Keys::Text),
        }
    }

    fn get(&self, row: usize) -> Option<Step<'a>> {
        match self {
            Keys::Text(texts) => texts.get(row).map(Step::Key),
            Keys::Constant(index) => index.map(Step::Index),
            Keys::Indexes(array) => array.is_valid(row).then(|| Step::Index(array.value(row))),
        }
    }
}

/// A `text[]` path: an Arrow list of strings, or the text of a PostgreSQL
/// array literal.
enum Paths<'a> {
    Literal(Texts<'a>),
    List {
        array: &'a dyn Array,
        offsets: Offsets<'a>,
        values: Texts<'a>,
        constant: bool,
    },
}

impl<'a> Paths<'a> {
    fn new(value: &'a ColumnarValue) -> Result<Self> {
        let (array, constant): (&'a dyn Array, bool) = match value {
            ColumnarValue::Array(array) => (array.as_ref(), false),
            ColumnarValue::Scalar(ScalarValue::List(list)) => (list.as_ref(), true),
            ColumnarValue::Scalar(ScalarValue::LargeList(list)) => (list.as_ref(), true),
            ColumnarValue::Scalar(ScalarValue::FixedSizeList(list)) => (list.as_ref(), true),
            ColumnarValue::Scalar(_) => return Texts::new(value).map(Paths::Literal),
        };
        let (offsets, values) = match array.data_type() {
            DataType::List(_) => {
                let list = array.as_list::<i32>();
                (Offsets::Small(list.value_offsets()), list.values())
            }
            DataType::LargeList(_) => {
                let list = array.as_list::<i64>();
                (Offsets::Large(list.value_offsets()), list.values())
            }
            DataType::FixedSizeList(..) => {
                let list = array.as_fixed_size_list();
                (Offsets::Fixed(list), list.values())
            }
            _ => return Texts::of_array(array).map(Paths::Literal),
        };
        Ok(Paths::List {
            array,
            offsets,
            values: Texts::of_array(values.as_ref())?,
            constant,
        })
    }

    /// Path `row`'s elements; `None` for a NULL path.
    fn get(&self, row: usize) -> Result<Option<Vec<Option<Cow<'a, str>>>>, PgError> {
        match self {
            Paths::Literal(texts) => texts
                .get(row)
                .map(|text| {
                    array_literal(text)
                        .map(|elements| elements.into_iter().map(|e| e.map(Cow::Owned)).collect())
                })
                .transpose(),
            Paths::List {
                array,
                offsets,
                values,
                constant,
            } => {
                let row = if *constant { 0 } else { row };
                if array.is_null(row) {
                    return Ok(None);
                }
                Ok(Some(
                    offsets
                        .range(row)
                        .map(|at| values.get(at).map(Cow::Borrowed))
                        .collect(),
                ))
            }
        }
    }
}

/// How many rows a call computes, and whether every argument is a
/// constant (then one row, returned as a scalar).
fn shape(args: &ScalarFunctionArgs) -> (usize, bool) {
    let constant = args
        .args
        .iter()
        .all(|arg| matches!(arg, ColumnarValue::Scalar(_)));
    (if constant { 1 } else { args.number_rows }, constant)
}

fn finish(array: ArrayRef, constant: bool) -> Result<ColumnarValue> {
    Ok(if constant {
        ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?)
    } else {
        ColumnarValue::Array(array)
    })
}

/// A text result, row by row: `row_value` writes the row's text into the
/// buffer and says whether it is not NULL.
fn text_result(
    args: &ScalarFunctionArgs,
    mut row_value: impl FnMut(usize, &mut String) -> Result<bool, PgError>,
) -> Result<ColumnarValue> {
    let (rows, constant) = shape(args);
    let mut builder = StringBuilder::with_capacity(rows, rows * 16);
    let mut buffer = String::new();
    for row in 0..rows {
        buffer.clear();
        if row_value(row, &mut buffer).map_err(external)? {
            builder.append_value(&buffer);
        } else {
            builder.append_null();
        }
    }
    finish(Arc::new(builder.finish()), constant)
}

fn bool_result(
    args: &ScalarFunctionArgs,
    mut row_value: impl FnMut(usize) -> Result<Option<bool>, PgError>,
) -> Result<ColumnarValue> {
    let (rows, constant) = shape(args);
    let mut builder = BooleanBuilder::with_capacity(rows);
    for row in 0..rows {
        builder.append_option(row_value(row).map_err(external)?);
    }
    finish(Arc::new(builder.finish()), constant)
}

fn int_result(
    args: &ScalarFunctionArgs,
    mut row_value: impl FnMut(usize) -> Result<Option<i32>, PgError>,
) -> Result<ColumnarValue> {
    let (rows, constant) = shape(args);
    let mut builder = Int32Builder::with_capacity(rows);
    for row in 0..rows {
        builder.append_option(row_value(row).map_err(external)?);
    }
    finish(Arc::new(builder.finish()), constant)
}

// ---------------------------------------------------------------------------
// The functions
// ---------------------------------------------------------------------------

/// A document type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Json,
    Jsonb,
}

impl Kind {
    /// The type of a document argument: jsonb when its metadata says so,
    /// json otherwise (json, or plain text).
    fn of(field: &Field) -> Kind {
        match field.metadata().get(PG_TYPE_METADATA).map(String::as_str) {
            Some("jsonb") => Kind::Jsonb,
            _ => Kind::Json,
        }
    }

    fn pg_type(self) -> &'static str {
        match self {
            Kind::Json => "json",
            Kind::Jsonb => "jsonb",
        }
    }
}

/// What a function computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Operation {
    /// `text::json`, `text::jsonb`.
    Input(Kind),
    /// `->` (`as_text`: `->>`).
    Get {
        as_text: bool,
    },
    /// `#>` (`as_text`: `#>>`).
    Path {
        as_text: bool,
    },
    /// `json_extract_path[_text]`, `jsonb_extract_path[_text]`.
    ExtractPath {
        kind: Kind,
        as_text: bool,
    },
    /// jsonb `@>`.
    Contains,
    /// jsonb `?`.
    Exists,
    Typeof(Kind),
    ArrayLength(Kind),
    /// `jsonb_build_object`, `json_build_object`, and the whole rows of
    /// `row_to_json` (given as name, value pairs).
    BuildObject(ObjectForm),
    BuildArray(Kind),
    To(Kind),
    Pretty,
}

/// How [`Operation::BuildObject`] writes its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ObjectForm {
    /// jsonb: `{"a": 1}`, keys sorted.
    Jsonb,
    /// `json_build_object`: `{"a" : 1, "b" : 2}`, keys as given.
    Json,
    /// A row, as `row_to_json` writes it: `{"a":1,"b":2}`.
    Row,
}

impl Operation {
    fn returns(self) -> DataType {
        match self {
            Operation::Contains | Operation::Exists => DataType::Boolean,
            Operation::ArrayLength(_) => DataType::Int32,
            _ => DataType::Utf8,
        }
    }

    /// The PostgreSQL type of the result when it is a document, given the
    /// first argument's field.
    fn pg_type(self, first: Option<&FieldRef>) -> Option<&'static str> {
        match self {
            Operation::Input(kind) | Operation::BuildArray(kind) | Operation::To(kind) => {
                Some(kind.pg_type())
            }
            Operation::ExtractPath {
                kind,
                as_text: false,
            } => Some(kind.pg_type()),
            Operation::BuildObject(ObjectForm::Jsonb) => Some("jsonb"),
            Operation::BuildObject(_) => Some("json"),
            Operation::Get { as_text: false } | Operation::Path { as_text: false } => {
                Some(first.map_or(Kind::Json, |field| Kind::of(field)).pg_type())
            }
            _ => None,
        }
    }
}

/// One of the functions: a name and what it computes.
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonFunction {
    name: &'static str,
    operation: Operation,
    signature: Signature,
}

impl JsonFunction {
    fn new(name: &'static str, operation: Operation) -> Self {
        let signature = match operation {
            Operation::BuildObject(_) | Operation::BuildArray(_) => Signature::one_of(
                vec![TypeSignature::Nullary, TypeSignature::VariadicAny],
                Volatility::Immutable,
            ),
            Operation::To(_) => Signature::any(1, Volatility::Immutable),
            _ => Signature::user_defined(Volatility::Immutable),
        };
        JsonFunction {
            name,
            operation,
            signature,
        }
    }
}

/// Every function of this module.
fn functions() -> Vec<JsonFunction> {
    use Kind::{Json, Jsonb};
    use Operation::*;
    vec![
        JsonFunction::new("pgaccel_json", Input(Json)),
        JsonFunction::new("pgaccel_jsonb", Input(Jsonb)),
        JsonFunction::new("pgaccel_json_get", Get { as_text: false }),
        JsonFunction::new("pgaccel_json_get_text", Get { as_text: true }),
        JsonFunction::new("pgaccel_json_path", Path { as_text: false }),
        JsonFunction::new("pgaccel_json_path_text", Path { as_text: true }),
        JsonFunction::new("pgaccel_jsonb_contains", Contains),
        JsonFunction::new("pgaccel_jsonb_exists", Exists),
        JsonFunction::new("json_typeof", Typeof(Json)),
        JsonFunction::new("jsonb_typeof", Typeof(Jsonb)),
        JsonFunction::new("json_array_length", ArrayLength(Json)),
        JsonFunction::new("jsonb_array_length", ArrayLength(Jsonb)),
        JsonFunction::new("jsonb_build_object", BuildObject(ObjectForm::Jsonb)),
        JsonFunction::new("json_build_object", BuildObject(ObjectForm::Json)),
        JsonFunction::new("pgaccel_row_to_json", BuildObject(ObjectForm::Row)),
        JsonFunction::new("json_build_array", BuildArray(Json)),
        JsonFunction::new("jsonb_build_array", BuildArray(Jsonb)),
        JsonFunction::new("to_json", To(Json)),
        JsonFunction::new("to_jsonb", To(Jsonb)),
        JsonFunction::new("jsonb_pretty", Pretty),
        JsonFunction::new(
            "json_extract_path",
            ExtractPath {
                kind: Json,
                as_text: false,
            },
        ),
        JsonFunction::new(
            "json_extract_path_text",
            ExtractPath {
                kind: Json,
                as_text: true,
            },
        ),
        JsonFunction::new(
            "jsonb_extract_path",
            ExtractPath {
                kind: Jsonb,
                as_text: false,
            },
        ),
        JsonFunction::new(
            "jsonb_extract_path_text",
            ExtractPath {
                kind: Jsonb,
                as_text: true,
            },
        ),
    ]
}

/// The function reading text as jsonb (`text::jsonb`).
pub fn jsonb_input() -> Arc<ScalarUDF> {
    let function = functions()
        .into_iter()
        .find(|f| f.name() == "pgaccel_jsonb")
        .expect("pgaccel_jsonb is one of this module's functions");
    Arc::new(ScalarUDF::new_from_impl(function))
}

/// Registers every function of this module in `state`, replacing any of
/// the same name.
pub fn register(state: &mut SessionState) -> Result<()> {
    for function in functions() {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(function)))?;
    }
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(Elements {
        signature: datafusion::logical_expr::Signature::any(3, Volatility::Immutable),
    })))?;
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(AggregatedElement {
        signature: datafusion::logical_expr::Signature::any(2, Volatility::Immutable),
    })))?;
    for function in edit::udfs()
        .into_iter()
        .chain(sets::udfs())
        .chain(set_path::udfs())
    {
        state.register_udf(function)?;
    }
    for jsonb in [false, true] {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(AggregatedArray {
            jsonb,
            signature: datafusion::logical_expr::Signature::any(1, Volatility::Immutable),
        })))?;
    }
    Ok(())
}

/// `json_agg(x)` and `jsonb_agg(x)` are planned (see `compat`) as
/// `array_agg(to_json(x))` read by this function: the documents as one JSON
/// array, `[1, "a", null]` (`", "` between elements, as both of
/// PostgreSQL's aggregates write it); NULL over no rows.
pub const AGGREGATED_JSON: &str = "pgaccel_json_agg_array";
pub const AGGREGATED_JSONB: &str = "pgaccel_jsonb_agg_array";

/// `pgaccel_json_elements(doc, 'json' | 'jsonb', as_text)`: the elements of
/// a JSON array as a list, each as `->` (or, `as_text`, `->>`) returns it;
/// `json_array_elements(doc)` and its `jsonb_` and `_text` kin are planned
/// (see `compat`) as the `unnest()` of this list, read as `json` or `jsonb`
/// (an unnested element keeps no type of its own). A document that is not
/// an array is PostgreSQL's error (22023).
pub const ELEMENTS: &str = "pgaccel_json_elements";

#[derive(Debug, PartialEq, Eq, Hash)]
struct Elements {
    signature: datafusion::logical_expr::Signature,
}

impl ScalarUDFImpl for Elements {
    fn name(&self) -> &str {
        ELEMENTS
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::new_list(DataType::Utf8, true))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let constant = |index: usize| match args.args.get(index) {
            Some(ColumnarValue::Scalar(value)) => value.clone(),
            _ => ScalarValue::Null,
        };
        let kind = match constant(1).try_as_str().flatten() {
            Some("jsonb") => Kind::Jsonb,
            _ => Kind::Json,
        };
        let as_text = matches!(constant(2), ScalarValue::Boolean(Some(true)));
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let documents = cast(&arrays[0], &DataType::Utf8)?;
        let documents = documents.as_string::<i32>();
        let mut out = datafusion::arrow::array::ListBuilder::new(StringBuilder::new());
        let function = match (kind, as_text) {
            (Kind::Json, false) => "json_array_elements",
            (Kind::Json, true) => "json_array_elements_text",
            (Kind::Jsonb, false) => "jsonb_array_elements",
            (Kind::Jsonb, true) => "jsonb_array_elements_text",
        };
        for document in documents.iter() {
            let Some(document) = document else {
                out.append(false);
                continue;
            };
            let root = parse_as(document, kind).map_err(external)?;
            let Value::Array(items) = &root.value else {
                let what = if root.value.is_scalar() {
                    "a scalar"
                } else {
                    "an object"
                };
                return Err(external(invalid_parameter(match kind {
                    Kind::Jsonb => format!("cannot extract elements from {what}"),
                    Kind::Json if root.value.is_scalar() => {
                        format!("cannot call {function} on a scalar")
                    }
                    Kind::Json => format!("cannot call {function} on a non-array"),
                })));
            };
            for item in items {
                let mut text = String::new();
                if write_found(&mut text, document, item, kind, as_text, false) {
                    out.values().append_value(text);
                } else {
                    out.values().append_null();
                }
            }
            out.append(true);
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

/// `pgaccel_json_agg_element(to_json(x), x)`: an element of `json_agg(x)`.
/// PostgreSQL's `json_agg` writes a line break before every element but
/// the first when `x` is an array or a row (`[[1,2], \n [3]]`), NULL ones
/// excepted, so such an element carries it, for [`AggregatedArray`] to
/// drop from the first.
pub const AGGREGATED_ELEMENT: &str = "pgaccel_json_agg_element";
const STRUCTURED_BREAK: &str = "\n ";
/// Marks a whole row written as a JSON object (`row_to_json(t)`), which
/// `json_agg(t)` breaks lines before as it does before any row.
const ROW_METADATA: &str = "pgaccel.row";

#[derive(Debug, PartialEq, Eq, Hash)]
struct AggregatedElement {
    signature: datafusion::logical_expr::Signature,
}

impl ScalarUDFImpl for AggregatedElement {
    fn name(&self) -> &str {
        AGGREGATED_ELEMENT
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let documents = cast(&arrays[0], &DataType::Utf8)?;
        let documents = documents.as_string::<i32>();
        let structured = matches!(
            arrays[1].data_type(),
            DataType::List(_)
                | DataType::LargeList(_)
                | DataType::FixedSizeList(..)
                | DataType::Struct(_)
        ) || args
            .arg_fields
            .get(1)
            .is_some_and(|field| field.metadata().contains_key(ROW_METADATA));
        let mut out = StringBuilder::with_capacity(documents.len(), 0);
        for document in documents.iter() {
            match document {
                Some(document) if structured => {
                    out.append_value(format!("{STRUCTURED_BREAK}{document}"))
                }
                document => out.append_option(document),
            }
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AggregatedArray {
    jsonb: bool,
    signature: datafusion::logical_expr::Signature,
}

impl ScalarUDFImpl for AggregatedArray {
    fn name(&self) -> &str {
        if self.jsonb {
            AGGREGATED_JSONB
        } else {
            AGGREGATED_JSON
        }
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let pg_type = if self.jsonb { "jsonb" } else { "json" };
        Ok(Arc::new(
            Field::new(self.name(), DataType::Utf8, true)
                .with_metadata([(PG_TYPE_METADATA.to_owned(), pg_type.to_owned())].into()),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let lists = cast(&arrays[0], &DataType::new_list(DataType::Utf8, true))?;
        let lists = lists.as_list::<i32>();
        let mut out = StringBuilder::with_capacity(lists.len(), 0);
        for list in lists.iter() {
            let Some(list) = list else {
                out.append_null();
                continue;
            };
            let documents = list.as_string::<i32>();
            let mut text = String::from("[");
            for (index, document) in documents.iter().enumerate() {
                let document = document.unwrap_or("null");
                if index > 0 {
                    text.push_str(", ");
                    text.push_str(document);
                } else {
                    text.push_str(document.strip_prefix(STRUCTURED_BREAK).unwrap_or(document));
                }
            }
            text.push(']');
            out.append_value(text);
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

/// The type a text argument is read as: strings as they are (so their
/// metadata stays), NULL as text.
fn text_type(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Some(data_type.clone()),
        DataType::Null => Some(DataType::Utf8),
        DataType::Dictionary(_, values) => text_type(values),
        _ => None,
    }
}

/// The right operand of `->`: text, or an integer read as bigint.
fn key_type(data_type: &DataType) -> Option<DataType> {
    if data_type.is_integer() {
        return Some(DataType::Int64);
    }
    text_type(data_type)
}

/// A path: a list of strings (other elements cast to text) or text.
fn path_type(data_type: &DataType) -> Option<DataType> {
    let text_list = || DataType::new_list(DataType::Utf8, true);
    match data_type {
        DataType::List(child) | DataType::LargeList(child) | DataType::FixedSizeList(child, _) => {
            Some(match child.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => {
                    data_type.clone()
                }
                _ => text_list(),
            })
        }
        other => text_type(other),
    }
}

/// The PostgreSQL name of an argument type, for "function does not exist".
/// PostgreSQL's error for a function called with argument types it has no
/// version for (42883 once mapped): `function name(t1, t2) does not exist`.
pub(crate) fn no_such_function(name: &str, arg_types: &[DataType]) -> DataFusionError {
    let types: Vec<String> = arg_types.iter().map(pg_type_name).collect();
    DataFusionError::Plan(format!(
        "function {name}({}) does not exist",
        types.join(", ")
    ))
}

pub(crate) fn pg_type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text".to_owned(),
        DataType::Null => "unknown".to_owned(),
        DataType::Boolean => "boolean".to_owned(),
        DataType::Int16 => "smallint".to_owned(),
        DataType::Int32 => "integer".to_owned(),
        DataType::Int64 => "bigint".to_owned(),
        DataType::Float32 => "real".to_owned(),
        DataType::Float64 => "double precision".to_owned(),
        DataType::Decimal128(..) | DataType::Decimal256(..) => "numeric".to_owned(),
        DataType::Date32 => "date".to_owned(),
        DataType::Timestamp(_, None) => "timestamp without time zone".to_owned(),
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone".to_owned(),
        DataType::Interval(_) => "interval".to_owned(),
        DataType::List(child) | DataType::LargeList(child) => {
            format!("{}[]", pg_type_name(child.data_type()))
        }
        other => other.to_string(),
    }
}

impl ScalarUDFImpl for JsonFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.operation.returns())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let field = Field::new(self.name, self.operation.returns(), true);
        let mut metadata = std::collections::HashMap::new();
        if let Some(pg_type) = self.operation.pg_type(args.arg_fields.first()) {
            metadata.insert(PG_TYPE_METADATA.to_owned(), pg_type.to_owned());
        }
        if self.operation == Operation::BuildObject(ObjectForm::Row) {
            metadata.insert(ROW_METADATA.to_owned(), "true".to_owned());
        }
        Ok(Arc::new(field.with_metadata(metadata)))
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let coerced = match (self.operation, arg_types) {
            (
                Operation::Input(_)
                | Operation::Typeof(_)
                | Operation::ArrayLength(_)
                | Operation::Pretty,
                [doc],
            ) => text_type(doc).map(|doc| vec![doc]),
            (Operation::Get { .. }, [doc, key]) => {
                text_type(doc).zip(key_type(key)).map(|(a, b)| vec![a, b])
            }
            (Operation::Path { .. }, [doc, path]) => {
                text_type(doc).zip(path_type(path)).map(|(a, b)| vec![a, b])
            }
            (Operation::Contains | Operation::Exists, [a, b]) => {
                text_type(a).zip(text_type(b)).map(|(a, b)| vec![a, b])
            }
            (Operation::ExtractPath { .. }, [doc, path @ ..]) if !path.is_empty() => {
                std::iter::once(text_type(doc))
                    .chain(path.iter().map(path_type))
                    .collect()
            }
            _ => None,
        };
        // DataFusion reports a failed coercion as an execution error with
        // this message inside; it keeps only the text.
        coerced.ok_or_else(|| no_such_function(self.name, arg_types))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match self.operation {
            Operation::Input(kind) => input(&args, kind),
            Operation::Get { as_text } => get(&args, as_text),
            Operation::Path { as_text } => path(&args, as_text),
            Operation::ExtractPath { kind, as_text } => extract_path(&args, kind, as_text),
            Operation::Contains => contains(&args),
            Operation::Exists => exists(&args),
            Operation::Typeof(kind) => type_of(&args, kind),
            Operation::ArrayLength(kind) => array_length(&args, kind),
            Operation::BuildObject(_) | Operation::BuildArray(_) | Operation::To(_) => {
                build(&args, self.operation)
            }
            Operation::Pretty => pretty(&args),
        }
    }
}

/// The argument `index`, checked to exist.
fn arg(args: &ScalarFunctionArgs, index: usize) -> Result<&ColumnarValue> {
    match args.args.get(index) {
        Some(value) => Ok(value),
        None => internal_err!("missing argument {}", index + 1),
    }
}

/// The type of document argument `index`.
fn kind_of(args: &ScalarFunctionArgs, index: usize) -> Kind {
    args.arg_fields
        .get(index)
        .map_or(Kind::Json, |field| Kind::of(field))
}

/// `text::json` keeps the text once it is valid; `text::jsonb` gives the
/// canonical text.
fn input(args: &ScalarFunctionArgs, kind: Kind) -> Result<ColumnarValue> {
    let texts = Texts::new(arg(args, 0)?)?;
    text_result(args, |row, out| {
        let Some(text) = texts.get(row) else {
            return Ok(false);
        };
        match kind {
            Kind::Json => {
                parse(text, Mode::Validate)?;
                out.push_str(text);
            }
            Kind::Jsonb => write_jsonb(out, &parse(text, Mode::Jsonb)?.value),
        }
        Ok(true)
    })
}

/// `->` and `->>`.
fn get(args: &ScalarFunctionArgs, as_text: bool) -> Result<ColumnarValue> {
    let kind = kind_of(args, 0);
    let docs = Texts::new(arg(args, 0)?)?;
    let keys = Keys::new(arg(args, 1)?)?;
    text_result(args, |row, out| {
        let (Some(doc), Some(step)) = (docs.get(row), keys.get(row)) else {
            return Ok(false);
        };
        extract(out, doc, kind, &[step], as_text)
    })
}

/// Steps of a `#>` path; `None` when an element is NULL (no match).
fn steps<'p>(elements: &'p [Option<Cow<'_, str>>]) -> Option<Vec<Step<'p>>> {
    elements
        .iter()
        .map(|element| element.as_deref().map(Step::Element))
        .collect()
}

/// `#>` and `#>>`.
fn path(args: &ScalarFunctionArgs, as_text: bool) -> Result<ColumnarValue> {
    let kind = kind_of(args, 0);
    let docs = Texts::new(arg(args, 0)?)?;
    let paths = Paths::new(arg(args, 1)?)?;
    text_result(args, |row, out| {
        let Some(doc) = docs.get(row) else {
            return Ok(false);
        };
        let Some(elements) = paths.get(row)? else {
            return Ok(false);
        };
        let Some(path) = steps(&elements) else {
            return Ok(false);
        };
        extract(out, doc, kind, &path, as_text)
    })
}

/// `json_extract_path(doc, VARIADIC path)` and its kin: the path is the
/// remaining arguments (a list argument contributes its elements).
fn extract_path(args: &ScalarFunctionArgs, kind: Kind, as_text: bool) -> Result<ColumnarValue> {
    let docs = Texts::new(arg(args, 0)?)?;
    /// An argument after the document: one path element, or a list of
    /// them (`VARIADIC ARRAY[...]`).
    enum Part<'a> {
        Element(Texts<'a>),
        Elements(Paths<'a>),
    }
    let parts = args
        .args
        .iter()
        .skip(1)
        .map(|value| match value {
            ColumnarValue::Scalar(
                ScalarValue::List(_) | ScalarValue::LargeList(_) | ScalarValue::FixedSizeList(_),
            ) => Paths::new(value).map(Part::Elements),
            ColumnarValue::Array(array) if array.data_type().is_nested() => {
                Paths::new(value).map(Part::Elements)
            }
            _ => Texts::new(value).map(Part::Element),
        })
        .collect::<Result<Vec<_>>>()?;
    text_result(args, |row, out| {
        let Some(doc) = docs.get(row) else {
            return Ok(false);
        };
        let mut elements: Vec<Option<Cow<'_, str>>> = Vec::with_capacity(parts.len());
        for part in &parts {
            match part {
                Part::Element(texts) => elements.push(texts.get(row).map(Cow::Borrowed)),
                Part::Elements(list) => match list.get(row)? {
                    Some(list) => elements.extend(list),
                    None => return Ok(false),
                },
            }
        }
        let Some(path) = steps(&elements) else {
            return Ok(false);
        };
        extract(out, doc, kind, &path, as_text)
    })
}

/// jsonb `@>`.
fn contains(args: &ScalarFunctionArgs) -> Result<ColumnarValue> {
    let left = Texts::new(arg(args, 0)?)?;
    let right = Texts::new(arg(args, 1)?)?;
    bool_result(args, |row| {
        let (Some(a), Some(b)) = (left.get(row), right.get(row)) else {
            return Ok(None);
        };
        let a = parse(a, Mode::Jsonb)?;
        let b = parse(b, Mode::Jsonb)?;
        Ok(Some(jsonb_contains(&a.value, &b.value)))
    })
}

/// jsonb `?`.
fn exists(args: &ScalarFunctionArgs) -> Result<ColumnarValue> {
    let docs = Texts::new(arg(args, 0)?)?;
    let keys = Texts::new(arg(args, 1)?)?;
    bool_result(args, |row| {
        let (Some(doc), Some(key)) = (docs.get(row), keys.get(row)) else {
            return Ok(None);
        };
        Ok(Some(jsonb_exists(&parse(doc, Mode::Jsonb)?.value, key)))
    })
}

/// `json_typeof` looks at the first token only, as PostgreSQL does; so does
/// `jsonb_typeof` of a value already jsonb, which is valid. Other text is
/// read as jsonb first.
fn type_of(args: &ScalarFunctionArgs, kind: Kind) -> Result<ColumnarValue> {
    let docs = Texts::new(arg(args, 0)?)?;
    let checked = kind == Kind::Json || kind_of(args, 0) == Kind::Jsonb;
    text_result(args, |row, out| {
        let Some(doc) = docs.get(row) else {
            return Ok(false);
        };
        out.push_str(if checked {
            first_token_type(doc)?
        } else {
            parse(doc, Mode::Jsonb)?.value.type_name()
        });
        Ok(true)
    })
}

/// `json_array_length`, `jsonb_array_length`.
fn array_length(args: &ScalarFunctionArgs, kind: Kind) -> Result<ColumnarValue> {
    let docs = Texts::new(arg(args, 0)?)?;
    let mode = match kind {
        Kind::Json => Mode::Validate,
        Kind::Jsonb => Mode::Jsonb,
    };
    int_result(args, |row| {
        let Some(doc) = docs.get(row) else {
            return Ok(None);
        };
        match &parse(doc, mode)?.value {
            Value::Array(items) => Ok(Some(i32::try_from(items.len()).unwrap_or(i32::MAX))),
            Value::Object(_) => Err(invalid_parameter("cannot get array length of a non-array")),
            _ => Err(invalid_parameter("cannot get array length of a scalar")),
        }
    })
}

/// `jsonb_pretty`.
fn pretty(args: &ScalarFunctionArgs) -> Result<ColumnarValue> {
    let docs = Texts::new(arg(args, 0)?)?;
    text_result(args, |row, out| {
        let Some(doc) = docs.get(row) else {
            return Ok(false);
        };
        write_pretty(out, &parse(doc, Mode::Jsonb)?.value);
        Ok(true)
    })
}

/// An argument as an array (a constant as one row), dictionaries decoded
/// and half floats widened so [`SqlColumn`] sees plain types.
fn value_array(value: &ColumnarValue) -> Result<(ArrayRef, bool)> {
    let (array, constant) = match value {
        ColumnarValue::Array(array) => (Arc::clone(array), false),
        ColumnarValue::Scalar(scalar) => (scalar.to_array_of_size(1)?, true),
    };
    let array = match array.data_type() {
        DataType::Dictionary(_, values) => cast(&array, values)?,
        DataType::Float16 => cast(&array, &DataType::Float32)?,
        _ => array,
    };
    Ok((array, constant))
}

/// `to_json`, `to_jsonb`, `json_build_array`, `jsonb_build_array`,
/// `jsonb_build_object`. The json text is written as PostgreSQL's json
/// functions write it; the jsonb ones read it back as jsonb, which sorts
/// keys, drops duplicates and turns numbers into `numeric` (floats too:
/// `1e+21` becomes `1000000000000000000000`, as in PostgreSQL).
fn build(args: &ScalarFunctionArgs, operation: Operation) -> Result<ColumnarValue> {
    let arrays = args
        .args
        .iter()
        .map(value_array)
        .collect::<Result<Vec<_>>>()?;
    let columns = arrays
        .iter()
        .zip(&args.arg_fields)
        .map(|((array, _), field)| SqlColumn::new(array.as_ref(), field))
        .collect::<Result<Vec<_>>>()?;
    let row_of = |index: usize, row: usize| if arrays[index].1 { 0 } else { row };
    text_result(args, |row, out| {
        let mut json = String::new();
        let kind = match operation {
            Operation::To(kind) => {
                let Some(column) = columns.first() else {
                    return Ok(false);
                };
                if column.is_null(row_of(0, row)) {
                    return Ok(false);
                }
                column.write(row_of(0, row), &mut json)?;
                kind
            }
            Operation::BuildArray(kind) => {
                json.push('[');
                for (index, column) in columns.iter().enumerate() {
                    if index > 0 {
                        json.push_str(", ");
                    }
                    column.write(row_of(index, row), &mut json)?;
                }
                json.push(']');
                kind
            }
            _ => {
                let (form, comma, colon, name) = match operation {
                    Operation::BuildObject(ObjectForm::Json) => {
                        (Kind::Json, ", ", " : ", "json_build_object")
                    }
                    Operation::BuildObject(ObjectForm::Row) => {
                        (Kind::Json, ",", ":", "row_to_json")
                    }
                    _ => (Kind::Jsonb, ", ", ": ", "jsonb_build_object"),
                };
                if columns.len() % 2 != 0 {
                    return Err(invalid_parameter(
                        "argument list must have even number of elements",
                    )
                    .with_hint(format!(
                        "The arguments of {name}() must consist of alternating keys and values."
                    )));
                }
                json.push('{');
                for (pair, columns) in columns.chunks(2).enumerate() {
                    let (key, value) = (2 * pair, 2 * pair + 1);
                    if pair > 0 {
                        json.push_str(comma);
                    }
                    if columns[0].is_null(row_of(key, row)) {
                        return Err(if form == Kind::Jsonb {
                            invalid_parameter(format!("argument {}: key must not be null", key + 1))
                        } else {
                            invalid_parameter(format!("argument {} cannot be null", key + 1))
                                .with_hint("Object keys should be text.")
                        });
                    }
                    columns[0].write_key(row_of(key, row), &mut json)?;
                    json.push_str(colon);
                    columns[1].write(row_of(value, row), &mut json)?;
                }
                json.push('}');
                form
            }
        };
        match kind {
            Kind::Json => out.push_str(&json),
            Kind::Jsonb => write_jsonb(out, &parse(&json, Mode::Jsonb)?.value),
        }
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    //! Expected values are what PostgreSQL printed for the same expression
    //! (`'...'::json -> 'a'` is `pgaccel_json_get(pgaccel_json('...'), 'a')`
    //! here). The server at hand was PostgreSQL 15.20; its JSON code is
    //! PostgreSQL 16's for everything tested.

    use std::collections::HashMap;

    use datafusion::arrow::array::{RecordBatch, StringArray};
    use datafusion::arrow::datatypes::Schema;
    use datafusion::arrow::util::display::array_value_to_string;
    use datafusion::datasource::MemTable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;
    use crate::query::sqlstate::from_datafusion;

    /// A context with these functions, reading decimals as pgaccel does.
    fn context() -> SessionContext {
        let mut config = SessionConfig::new();
        config.options_mut().sql_parser.parse_float_as_decimal = true;
        let mut state = SessionContext::new_with_config(config).state();
        register(&mut state).expect("register");
        SessionContext::new_with_state(state)
    }

    /// `SELECT expression`: its one value as text, `None` for NULL.
    async fn value(expression: &str) -> Result<Option<String>> {
        let batches = context()
            .sql(&format!("SELECT {expression}"))
            .await?
            .collect()
            .await?;
        let batch = batches.first().expect("one batch");
        let column = batch.column(0);
        Ok((!column.is_null(0)).then(|| array_value_to_string(column, 0).expect("text")))
    }

    /// The PostgreSQL error `SELECT expression` fails with.
    async fn error(expression: &str) -> PgError {
        match value(expression).await {
            Ok(value) => panic!("{expression} gave {value:?}, not an error"),
            Err(error) => from_datafusion(error),
        }
    }

    /// Checks each expression's value.
    async fn check(cases: &[(&str, Option<&str>)]) {
        for (expression, expected) in cases {
            let got = value(expression)
                .await
                .unwrap_or_else(|e| panic!("{expression}: {e}"));
            assert_eq!(got.as_deref(), *expected, "{expression}");
        }
    }

    /// Checks each expression's error: SQLSTATE, message, detail.
    async fn check_errors(cases: &[(&str, &str, &str, Option<&str>)]) {
        for (expression, code, message, detail) in cases {
            let error = error(expression).await;
            assert_eq!(error.code, *code, "{expression}: {error:?}");
            assert_eq!(error.message, *message, "{expression}");
            assert_eq!(error.detail.as_deref(), *detail, "{expression}");
        }
    }

    #[tokio::test]
    async fn json_input_keeps_the_text() {
        check(&[
            (r#"pgaccel_json(' {"a" : 1 } ')"#, Some(r#" {"a" : 1 } "#)),
            (
                r#"pgaccel_json('{"b":1,"a":2,"aa":3,"a":4}')"#,
                Some(r#"{"b":1,"a":2,"aa":3,"a":4}"#),
            ),
            (
                "pgaccel_json('[1.0, 1e2, -0, -0.0, 1.50, 1e3]')",
                Some("[1.0, 1e2, -0, -0.0, 1.50, 1e3]"),
            ),
            (
                r#"pgaccel_json('"a\u0041\u00e9\ud83d\ude00\n\t"')"#,
                Some(r#""a\u0041\u00e9\ud83d\ude00\n\t""#),
            ),
            // json input checks escapes for form only.
            (r#"pgaccel_json('"\u0000"')"#, Some(r#""\u0000""#)),
            (r#"pgaccel_json('"\ud800"')"#, Some(r#""\ud800""#)),
            (r#"pgaccel_json('"\ude00"')"#, Some(r#""\ude00""#)),
            ("pgaccel_json(NULL)", None),
        ])
        .await;
    }

    #[tokio::test]
    async fn jsonb_input_is_canonical() {
        check(&[
            (
                r#"pgaccel_jsonb('{"b":1,"a":2,"aa":3,"a":4}')"#,
                Some(r#"{"a": 4, "b": 1, "aa": 3}"#),
            ),
            (r#"pgaccel_jsonb(' {"a" : 1 } ')"#, Some(r#"{"a": 1}"#)),
            (
                "pgaccel_jsonb('[1.0, 1e2, -0, -0.0, 1.50, 1e3, 1E+2, 1.5e1, 1.50e1, 1e-3, 0e10, -0e-2, 12345678901234567890123]')",
                Some(
                    "[1.0, 100, 0, 0.0, 1.50, 1000, 100, 15, 15.0, 0.001, 0, 0.00, 12345678901234567890123]",
                ),
            ),
            (
                r#"pgaccel_jsonb('"a\u0041\u00e9\ud83d\ude00\n\t\"\/\\\b\f\r\u001f\u007f"')"#,
                Some("\"aAé😀\\n\\t\\\"/\\\\\\b\\f\\r\\u001f\u{7f}\""),
            ),
            (
                r#"pgaccel_jsonb('{"a": {"c": [true, false, null], "b": {}}, "": []}')"#,
                Some(r#"{"": [], "a": {"b": {}, "c": [true, false, null]}}"#),
            ),
            ("pgaccel_jsonb(NULL)", None),
            // Keys sort by their length in bytes, then bytewise.
            (
                r#"pgaccel_jsonb('{"a\"b": 1, "é": 2, "z": 3}')"#,
                Some(r#"{"z": 3, "é": 2, "a\"b": 1}"#),
            ),
            // Every text type is read.
            (
                r#"pgaccel_jsonb(arrow_cast('{"b":1,"a":2}', 'LargeUtf8'))"#,
                Some(r#"{"a": 2, "b": 1}"#),
            ),
            (
                r#"pgaccel_jsonb(arrow_cast('{"b":1,"a":2}', 'Utf8View'))"#,
                Some(r#"{"a": 2, "b": 1}"#),
            ),
        ])
        .await;
    }

    #[tokio::test]
    async fn input_errors_are_postgres_errors() {
        let syntax = "invalid input syntax for type json";
        let invalid = sqlstate::INVALID_TEXT_REPRESENTATION;
        check_errors(&[
            (
                "pgaccel_json('01')",
                invalid,
                syntax,
                Some("Token \"01\" is invalid."),
            ),
            (
                "pgaccel_json('1.')",
                invalid,
                syntax,
                Some("Token \"1.\" is invalid."),
            ),
            (
                "pgaccel_json('.5')",
                invalid,
                syntax,
                Some("Token \".\" is invalid."),
            ),
            (
                "pgaccel_json('+1')",
                invalid,
                syntax,
                Some("Token \"+\" is invalid."),
            ),
            (
                "pgaccel_json('1e')",
                invalid,
                syntax,
                Some("Token \"1e\" is invalid."),
            ),
            (
                "pgaccel_json('NaN')",
                invalid,
                syntax,
                Some("Token \"NaN\" is invalid."),
            ),
            (
                "pgaccel_jsonb('Infinity')",
                invalid,
                syntax,
                Some("Token \"Infinity\" is invalid."),
            ),
            (
                "pgaccel_json('tru')",
                invalid,
                syntax,
                Some("Token \"tru\" is invalid."),
            ),
            (
                "pgaccel_json('')",
                invalid,
                syntax,
                Some("The input string ended unexpectedly."),
            ),
            (
                "pgaccel_json('   ')",
                invalid,
                syntax,
                Some("The input string ended unexpectedly."),
            ),
            (
                r#"pgaccel_json('{"a":1')"#,
                invalid,
                syntax,
                Some("The input string ended unexpectedly."),
            ),
            (
                r#"pgaccel_json('{"a":1,}')"#,
                invalid,
                syntax,
                Some("Expected string, but found \"}\"."),
            ),
            (
                "pgaccel_json('[1,]')",
                invalid,
                syntax,
                Some("Expected JSON value, but found \"]\"."),
            ),
            (
                r#"pgaccel_json('{"a"}')"#,
                invalid,
                syntax,
                Some("Expected \":\", but found \"}\"."),
            ),
            (
                "pgaccel_json('{1:2}')",
                invalid,
                syntax,
                Some("Expected string or \"}\", but found \"1\"."),
            ),
            (
                "pgaccel_json('[1 2]')",
                invalid,
                syntax,
                Some("Expected \",\" or \"]\", but found \"2\"."),
            ),
            (
                r#"pgaccel_json('{"a":1 "b":2}')"#,
                invalid,
                syntax,
                Some("Expected \",\" or \"}\", but found \"\"b\"\"."),
            ),
            (
                "pgaccel_json('true false')",
                invalid,
                syntax,
                Some("Expected end of input, but found \"false\"."),
            ),
            (
                r#"pgaccel_json('{"a":1} x')"#,
                invalid,
                syntax,
                Some("Token \"x\" is invalid."),
            ),
            (
                r#"pgaccel_json('"abc')"#,
                invalid,
                syntax,
                Some("Token \"\"abc\" is invalid."),
            ),
            (
                "pgaccel_json('\"a\tb\"')",
                invalid,
                syntax,
                Some("Character with value 0x09 must be escaped."),
            ),
            (
                r#"pgaccel_json('"\x"')"#,
                invalid,
                syntax,
                Some("Escape sequence \"\\x\" is invalid."),
            ),
            (
                r#"pgaccel_json('"\u12"')"#,
                invalid,
                syntax,
                Some("\"\\u\" must be followed by four hexadecimal digits."),
            ),
            (
                r#"pgaccel_jsonb('"\ud800"')"#,
                invalid,
                syntax,
                Some("Unicode low surrogate must follow a high surrogate."),
            ),
            (
                r#"pgaccel_jsonb('"\ud800\ud800"')"#,
                invalid,
                syntax,
                Some("Unicode high surrogate must not follow a high surrogate."),
            ),
            (
                r#"pgaccel_jsonb('"\u0000"')"#,
                UNTRANSLATABLE_CHARACTER,
                "unsupported Unicode escape sequence",
                Some("\\u0000 cannot be converted to text."),
            ),
            (
                "pgaccel_jsonb('1e131072')",
                sqlstate::NUMERIC_OUT_OF_RANGE,
                "value overflows numeric format",
                None,
            ),
            (
                "pgaccel_jsonb('1e-16384')",
                sqlstate::NUMERIC_OUT_OF_RANGE,
                "value overflows numeric format",
                None,
            ),
            (
                "pgaccel_jsonb('1.5000e-16381')",
                sqlstate::NUMERIC_OUT_OF_RANGE,
                "value overflows numeric format",
                None,
            ),
            (
                "pgaccel_jsonb('1e99999999999')",
                sqlstate::NUMERIC_OUT_OF_RANGE,
                "value overflows numeric format",
                None,
            ),
        ])
        .await;
    }

    #[test]
    fn numeric_limits() {
        assert_eq!(numeric_text("1e131071").map(|t| t.len()), Ok(131_072));
        assert_eq!(numeric_text("1e-16383").map(|t| t.len()), Ok(16_385));
        assert_eq!(numeric_text("0e200000").as_deref(), Ok("0"));
        assert_eq!(
            numeric_text("0e-3").as_deref(),
            Ok("0.000"),
            "zero keeps its scale"
        );
        assert_eq!(numeric_text("-1.25e1").as_deref(), Ok("-12.5"));
        assert_eq!(numeric_text("123.456e-5").as_deref(), Ok("0.00123456"));
        assert_eq!(numeric_text("0.5e1").as_deref(), Ok("5"));
        assert!(numeric_text("0e-16384").is_err());
        assert_eq!(numeric_key("1.0"), numeric_key("1"));
        assert_eq!(numeric_key("100.00"), numeric_key("1e2"));
        assert_ne!(numeric_key("-1"), numeric_key("1"));
        assert_eq!(numeric_key("-0.0"), numeric_key("0"));
    }

    #[tokio::test]
    async fn get_follows_postgres() {
        let doc = r#"'{"a": {"b" :  [1, 2 ] } , "c":3}'"#;
        check(&[
            (
                &format!("pgaccel_json_get(pgaccel_json({doc}), 'a')"),
                Some(r#"{"b" :  [1, 2 ] }"#),
            ),
            (
                &format!("pgaccel_json_get(pgaccel_jsonb({doc}), 'a')"),
                Some(r#"{"b": [1, 2]}"#),
            ),
            (&format!("pgaccel_json_get({doc}, 'c')"), Some("3")),
            (
                r#"pgaccel_json_get(pgaccel_json('{"a":1,"a":2}'), 'a')"#,
                Some("2"),
            ),
            (
                r#"pgaccel_json_get_text(pgaccel_json('{"a":"x","a":null}'), 'a')"#,
                None,
            ),
            (
                r#"pgaccel_json_get(pgaccel_json('{"a":"x\u00e9\n"}'), 'a')"#,
                Some(r#""x\u00e9\n""#),
            ),
            (
                r#"pgaccel_json_get_text(pgaccel_json('{"a":"x\u00e9\n"}'), 'a')"#,
                Some("xé\n"),
            ),
            (
                r#"pgaccel_json_get_text(pgaccel_jsonb('{"a":"x\u00e9\n"}'), 'a')"#,
                Some("xé\n"),
            ),
            (
                r#"pgaccel_json_get(pgaccel_json('{"a":null}'), 'a')"#,
                Some("null"),
            ),
            (
                r#"pgaccel_json_get_text(pgaccel_json('{"a":null}'), 'a')"#,
                None,
            ),
            (
                r#"pgaccel_json_get_text(pgaccel_jsonb('{"a":null}'), 'a')"#,
                None,
            ),
            ("pgaccel_json_get(pgaccel_json('[1,2,3]'), 0)", Some("1")),
            ("pgaccel_json_get(pgaccel_json('[1,2,3]'), -1)", Some("3")),
            ("pgaccel_json_get(pgaccel_json('[1,2,3]'), -3)", Some("1")),
            ("pgaccel_json_get(pgaccel_json('[1,2,3]'), -4)", None),
            ("pgaccel_json_get(pgaccel_json('[1,2,3]'), 3)", None),
            ("pgaccel_json_get(pgaccel_jsonb('[1,2,3]'), -1)", Some("3")),
            ("pgaccel_json_get(pgaccel_json('[1,2,3]'), '1')", None),
            ("pgaccel_json_get(pgaccel_jsonb('[1,2,3]'), '1')", None),
            (r#"pgaccel_json_get(pgaccel_jsonb('{"a":1}'), 0)"#, None),
            (
                r#"pgaccel_json_get_text(pgaccel_jsonb('{"a": "b"}'), 'a')"#,
                Some("b"),
            ),
            (r#"pgaccel_json_get(pgaccel_json('{"1":5}'), 1)"#, None),
            (r#"pgaccel_json_get(pgaccel_json('"abc"'), 'a')"#, None),
            (
                "pgaccel_json_get(pgaccel_json(' [ 1 , 2 ] '), -1)",
                Some("2"),
            ),
            (
                "pgaccel_json_get(pgaccel_json('[1, [2,  3] ]'), 1)",
                Some("[2,  3]"),
            ),
            (
                "pgaccel_json_get_text(pgaccel_json('[1, [2,  3] ]'), 1)",
                Some("[2,  3]"),
            ),
            (
                r#"pgaccel_json_get_text(pgaccel_jsonb('[1, {"b":1.50}]'), 1)"#,
                Some(r#"{"b": 1.50}"#),
            ),
            (
                "pgaccel_json_get_text(pgaccel_json('[1, true]'), 1)",
                Some("true"),
            ),
            (
                r#"pgaccel_json_get_text(pgaccel_json('{"a":1.50e1}'), 'a')"#,
                Some("1.50e1"),
            ),
            (
                r#"pgaccel_json_get_text(pgaccel_jsonb('{"a":1.50e1}'), 'a')"#,
                Some("15.0"),
            ),
            (r#"pgaccel_json_get(pgaccel_json('{"a":1}'), NULL)"#, None),
            (r#"pgaccel_json_get(pgaccel_json('{"":1}'), '')"#, Some("1")),
            (
                "pgaccel_json_get_text(pgaccel_jsonb('[98765432109876543210987654321]'), 0)",
                Some("98765432109876543210987654321"),
            ),
        ])
        .await;
        // The json operators decode every string of the document.
        check_errors(&[
            (
                r#"pgaccel_json_get(pgaccel_json('{"a":"\ud800", "b":1}'), 'b')"#,
                sqlstate::INVALID_TEXT_REPRESENTATION,
                "invalid input syntax for type json",
                Some("Unicode low surrogate must follow a high surrogate."),
            ),
            (
                r#"pgaccel_json_get_text(pgaccel_json('{"a":"\u0000"}'), 'a')"#,
                UNTRANSLATABLE_CHARACTER,
                "unsupported Unicode escape sequence",
                Some("\\u0000 cannot be converted to text."),
            ),
        ])
        .await;
    }

    #[tokio::test]
    async fn paths_follow_postgres() {
        let doc = r#"'{"a": {"b" :  [1, {"c": "x"} ] }}'"#;
        let json = format!("pgaccel_json({doc})");
        let jsonb = format!("pgaccel_jsonb({doc})");
        check(&[
            (&format!("pgaccel_json_path({json}, '{{a,b,1}}')"), Some(r#"{"c": "x"}"#)),
            (&format!("pgaccel_json_path({json}, '{{a,b,-1,c}}')"), Some(r#""x""#)),
            (&format!("pgaccel_json_path({jsonb}, make_array('a','b','-1','c'))"), Some(r#""x""#)),
            (&format!("pgaccel_json_path_text({jsonb}, '{{a,b,-1,c}}')"), Some("x")),
            (&format!("pgaccel_json_path_text({json}, '{{a,b,1,c}}')"), Some("x")),
            (&format!("pgaccel_json_path({json}, '{{a,b,x}}')"), None),
            (&format!("pgaccel_json_path({json}, '{{a,b,01}}')"), Some(r#"{"c": "x"}"#)),
            (&format!("pgaccel_json_path({jsonb}, '{{a,b,\" 1\"}}')"), Some(r#"{"c": "x"}"#)),
            (&format!("pgaccel_json_path({jsonb}, '{{a,b,\"1 \"}}')"), None),
            (&format!("pgaccel_json_path({jsonb}, '{{a,b,+1}}')"), Some(r#"{"c": "x"}"#)),
            (&format!("pgaccel_json_path({jsonb}, '{{a,b,99999999999}}')"), None),
            (&format!("pgaccel_json_path({jsonb}, '{{{{a}},{{b}}}}')"), Some(r#"[1, {"c": "x"}]"#)),
            ("pgaccel_json_path(pgaccel_json(' {\"a\" : 1 } '), '{}')", Some(r#"{"a" : 1 }"#)),
            ("pgaccel_json_path(pgaccel_jsonb(' {\"a\" : 1 } '), '{}')", Some(r#"{"a": 1}"#)),
            // A root scalar keeps the white space before it.
            ("pgaccel_json_path_text(pgaccel_json(' 5 '), '{}')", Some(" 5")),
            ("pgaccel_json_path(pgaccel_json(' \"x\" '), '{}')", Some(" \"x\"")),
            ("pgaccel_json_path_text(pgaccel_json(' \"x\" '), '{}')", Some("x")),
            ("pgaccel_json_path_text(pgaccel_json(' null '), '{}')", None),
            ("pgaccel_json_path(pgaccel_json(' null '), '{}')", Some(" null")),
            (r#"pgaccel_json_path(pgaccel_jsonb('{"a":1}'), '{a,NULL}')"#, None),
            (r#"pgaccel_json_path(pgaccel_json('{"a":1}'), make_array('a', NULL))"#, None),
            (r#"pgaccel_json_path(pgaccel_jsonb('{"NULL":1}'), '{"NULL"}')"#, Some("1")),
            (r#"pgaccel_json_path(pgaccel_jsonb('{"a b":1}'), '{ a b }')"#, Some("1")),
            (r#"pgaccel_json_path(pgaccel_jsonb('{"a,b":1}'), '{a\,b}')"#, Some("1")),
            (r#"pgaccel_json_path(pgaccel_jsonb('{"a":1}'), NULL)"#, None),
            // Duplicate keys in json: every match is followed, the last wins.
            (r#"pgaccel_json_path(pgaccel_json('{"a":{"b":1},"a":{"c":2}}'), '{a,b}')"#, Some("1")),
            (r#"pgaccel_json_path(pgaccel_json('{"a":{"b":1},"a":{"b":2}}'), '{a,b}')"#, Some("2")),
            (r#"pgaccel_json_path(pgaccel_json('{"a":{"b":1},"a":5}'), '{a,b}')"#, Some("1")),
            (r#"pgaccel_json_path_text(pgaccel_json('{"a":{"b":"x"},"a":{"b":null}}'), '{a,b}')"#, None),
            (r#"json_extract_path('{"a": {"b" :  [1, 2 ] }}', 'a', 'b')"#, Some("[1, 2 ]")),
            (r#"json_extract_path_text('{"a": {"b" :  [1, "z" ] }}', 'a', 'b', '1')"#, Some("z")),
            (r#"jsonb_extract_path('{"a": {"b" :  [1, 2 ] }}', 'a', 'b')"#, Some("[1, 2]")),
            (r#"jsonb_extract_path_text('{"a": {"b" :  [1, 2 ] }}', 'a', 'b')"#, Some("[1, 2]")),
            (r#"jsonb_extract_path_text('{"a": {"b" :  [1, 2 ] }}', 'a', NULL)"#, None),
            (r#"json_extract_path('{"a": {"b" :  [1, 2 ] }}', make_array('a', 'b'))"#, Some("[1, 2 ]")),
        ])
        .await;
        check_errors(&[
            (
                r#"pgaccel_json_path(pgaccel_jsonb('{"a":1}'), 'a')"#,
                sqlstate::INVALID_TEXT_REPRESENTATION,
                "malformed array literal: \"a\"",
                Some("Array value must start with \"{\" or dimension information."),
            ),
            (
                r#"pgaccel_json_path(pgaccel_jsonb('{"a":1}'), '{a} x')"#,
                sqlstate::INVALID_TEXT_REPRESENTATION,
                "malformed array literal: \"{a} x\"",
                Some("Junk after closing right brace."),
            ),
            (
                r#"pgaccel_json_path(pgaccel_jsonb('{"a":1}'), '{a')"#,
                sqlstate::INVALID_TEXT_REPRESENTATION,
                "malformed array literal: \"{a\"",
                Some("Unexpected end of input."),
            ),
        ])
        .await;
    }

    #[tokio::test]
    async fn containment_and_existence() {
        let cases: &[(&str, &str, Option<bool>)] = &[
            (
                r#"{"a":1,"b":[1,2,{"c":3}]}"#,
                r#"{"b":[{"c":3}]}"#,
                Some(true),
            ),
            (r#"{"a":1,"b":[1,2,{"c":3}]}"#, r#"{"b":[{}]}"#, Some(true)),
            (
                r#"{"a":1,"b":[1,2,{"c":3}]}"#,
                r#"{"b":[2,1,1]}"#,
                Some(true),
            ),
            (r#"{"a":1,"b":[1,2,{"c":3}]}"#, r#"{"b":2}"#, Some(false)),
            (r#"{"a":1}"#, "{}", Some(true)),
            (r#"{"a":1}"#, "[]", Some(false)),
            ("[]", "{}", Some(false)),
            ("[1,2]", "1", Some(true)),
            ("1", "[1]", Some(false)),
            ("1.0", "1", Some(true)),
            ("1e2", "100.00", Some(true)),
            ("[1,[2,3]]", "[[2]]", Some(true)),
            ("[1,[2,3]]", "[2]", Some(false)),
            ("[[1,2]]", "[1]", Some(false)),
            (r#"[{"a":1,"b":2}]"#, r#"[{"a":1}]"#, Some(true)),
            (r#"[{"a":1,"b":2}]"#, r#"{"a":1}"#, Some(false)),
            (r#"{"a":[1,2]}"#, r#"{"a":1}"#, Some(false)),
            (r#"{"a":null}"#, r#"{"a":null}"#, Some(true)),
            ("[null]", "null", Some(true)),
            ("[1,2]", "[1,2,3]", Some(false)),
            (r#"{"a":"1"}"#, r#"{"a":1}"#, Some(false)),
            ("[{}]", "[[]]", Some(false)),
            ("[[]]", "[]", Some(true)),
        ];
        for (a, b, expected) in cases {
            let expression = format!("pgaccel_jsonb_contains('{a}', '{b}')");
            let got = value(&expression).await.expect("contains");
            let expected = expected.map(|b| b.to_string());
            assert_eq!(got, expected, "{a} @> {b}");
        }
        check(&[
            (r#"pgaccel_jsonb_contains('{"a":1}', NULL)"#, None),
            (
                r#"pgaccel_jsonb_exists('{"a":1,"b":2}', 'a')"#,
                Some("true"),
            ),
            (
                r#"pgaccel_jsonb_exists('{"a":1,"b":2}', 'c')"#,
                Some("false"),
            ),
            (r#"pgaccel_jsonb_exists('["a","b"]', 'a')"#, Some("true")),
            ("pgaccel_jsonb_exists('[1,2]', '1')", Some("false")),
            (r#"pgaccel_jsonb_exists('"a"', 'a')"#, Some("true")),
            (
                r#"pgaccel_jsonb_exists('{"b":{"a":1}}', 'a')"#,
                Some("false"),
            ),
            ("pgaccel_jsonb_exists('null', 'a')", Some("false")),
            (r#"pgaccel_jsonb_exists('{"a":1}', NULL)"#, None),
        ])
        .await;
    }

    #[tokio::test]
    async fn typeof_length_pretty() {
        check(&[
            (r#"json_typeof(' {"a" : 1 } ')"#, Some("object")),
            ("json_typeof('[]')", Some("array")),
            (r#"json_typeof('"x"')"#, Some("string")),
            ("json_typeof('1.5')", Some("number")),
            ("jsonb_typeof('false')", Some("boolean")),
            ("jsonb_typeof(pgaccel_jsonb('null'))", Some("null")),
            ("json_typeof(NULL)", None),
            (r#"json_typeof('{"a":"\ud800"}')"#, Some("object")),
            (r#"json_array_length('[1,[2,3],{"a":4}]')"#, Some("3")),
            ("json_array_length('[]')", Some("0")),
            (r#"jsonb_array_length('[1,[2,3],{"a":4}]')"#, Some("3")),
            (r#"json_array_length('["\u0000"]')"#, Some("1")),
            ("json_array_length(NULL)", None),
            (
                r#"jsonb_pretty('{"a": 1, "b": [1, {"c": []}, {}], "d": {"e": null}}')"#,
                Some(
                    "{\n    \"a\": 1,\n    \"b\": [\n        1,\n        {\n            \"c\": [\n            ]\n        },\n        {\n        }\n    ],\n    \"d\": {\n        \"e\": null\n    }\n}",
                ),
            ),
            ("jsonb_pretty('[]')", Some("[\n]")),
            ("jsonb_pretty('[[]]')", Some("[\n    [\n    ]\n]")),
            ("jsonb_pretty('5')", Some("5")),
            (r#"jsonb_pretty('"x"')"#, Some("\"x\"")),
        ])
        .await;
        let parameter = sqlstate::INVALID_PARAMETER_VALUE;
        check_errors(&[
            (
                r#"json_array_length('{"a":1}')"#,
                parameter,
                "cannot get array length of a non-array",
                None,
            ),
            (
                "json_array_length('1')",
                parameter,
                "cannot get array length of a scalar",
                None,
            ),
            (
                r#"jsonb_array_length('{"a":1}')"#,
                parameter,
                "cannot get array length of a non-array",
                None,
            ),
            (
                "jsonb_array_length('1')",
                parameter,
                "cannot get array length of a scalar",
                None,
            ),
            (
                r#"jsonb_typeof('{"a":')"#,
                sqlstate::INVALID_TEXT_REPRESENTATION,
                "invalid input syntax for type json",
                Some("The input string ended unexpectedly."),
            ),
        ])
        .await;
    }

    #[tokio::test]
    async fn building_json() {
        check(&[
            (
                "jsonb_build_object('b', 1, 'a', 'x', 'aa', NULL, 'a', true)",
                Some(r#"{"a": true, "b": 1, "aa": null}"#),
            ),
            ("jsonb_build_object()", Some("{}")),
            ("json_build_array()", Some("[]")),
            ("jsonb_build_array()", Some("[]")),
            ("jsonb_build_object(1, 2)", Some(r#"{"1": 2}"#)),
            ("jsonb_build_object(1.50, 2.50)", Some(r#"{"1.50": 2.50}"#)),
            ("jsonb_build_object(true, 2)", Some(r#"{"true": 2}"#)),
            (
                r#"jsonb_build_object('a', pgaccel_jsonb('{"x":1}'), 'b', pgaccel_json('{"y" : 2}'), 'c', '{"z":3}')"#,
                Some(r#"{"a": {"x": 1}, "b": {"y": 2}, "c": "{\"z\":3}"}"#),
            ),
            (
                r#"json_build_array(1, 'a', NULL, true, 1.50, pgaccel_json('{"y" : 2}'), pgaccel_jsonb('[1,2]'), CAST('2.5' AS DOUBLE), 'x"y')"#,
                Some(r#"[1, "a", null, true, 1.50, {"y" : 2}, [1, 2], 2.5, "x\"y"]"#),
            ),
            (
                r#"jsonb_build_array(1, 'a', NULL, true, 1.50, pgaccel_json('{"y" : 2}'), pgaccel_jsonb('[1,2]'), CAST('2.5' AS DOUBLE), 'x"y')"#,
                Some(r#"[1, "a", null, true, 1.50, {"y": 2}, [1, 2], 2.5, "x\"y"]"#),
            ),
            ("json_build_array(make_array(1,2), make_array('a','b'))", Some(r#"[[1,2], ["a","b"]]"#)),
            ("jsonb_build_array(make_array(1,2), make_array('a','b'))", Some(r#"[[1, 2], ["a", "b"]]"#)),
            ("json_build_array(make_array(NULL,'x'))", Some(r#"[[null,"x"]]"#)),
            (
                "json_build_array(CAST('1e2' AS DOUBLE), CAST('1e21' AS DOUBLE), CAST('1e-5' AS DOUBLE), CAST('NaN' AS DOUBLE), CAST('Infinity' AS DOUBLE), CAST('0.1' AS REAL), CAST('123456789012345678' AS DOUBLE))",
                Some(r#"[100, 1e+21, 1e-05, "NaN", "Infinity", 0.1, 1.2345678901234568e+17]"#),
            ),
            (
                "jsonb_build_array(CAST('1e2' AS DOUBLE), CAST('1e21' AS DOUBLE), CAST('1e-5' AS DOUBLE), CAST('NaN' AS DOUBLE), CAST('Infinity' AS DOUBLE), CAST('-0.0' AS DOUBLE))",
                Some(r#"[100, 1000000000000000000000, 0.00001, "NaN", "Infinity", 0]"#),
            ),
            (
                "json_build_array(CAST('1234567' AS REAL), CAST('123456' AS REAL), CAST('0.00001' AS REAL), CAST('3.4028235e38' AS REAL))",
                Some("[1.234567e+06, 123456, 1e-05, 3.4028235e+38]"),
            ),
            (
                "json_build_array(CAST('123456789012345' AS DOUBLE), CAST('1234567890123456' AS DOUBLE), CAST('0.0001' AS DOUBLE), CAST('-1.5' AS DOUBLE), CAST('5e-324' AS DOUBLE))",
                Some("[123456789012345, 1.234567890123456e+15, 0.0001, -1.5, 5e-324]"),
            ),
            (
                "jsonb_build_array(CAST('123456789012345678' AS DOUBLE), CAST('1.23456789012345678' AS DOUBLE), CAST('1234567' AS REAL))",
                Some("[123456789012345680, 1.2345678901234567, 1234567]"),
            ),
            (
                "json_build_array(DATE '2020-01-02', TIMESTAMP '2020-01-02 03:04:05.5', arrow_cast(TIMESTAMP '2020-01-02 03:04:05', 'Timestamp(Microsecond, Some(\"UTC\"))'), TIME '12:00:01.25')",
                Some(r#"["2020-01-02", "2020-01-02T03:04:05.5", "2020-01-02T03:04:05+00:00", "12:00:01.25"]"#),
            ),
            (
                "json_build_array(chr(10) || chr(9) || chr(1), 'é/')",
                Some(r#"["\n\t\u0001", "é/"]"#),
            ),
            ("to_json(1)", Some("1")),
            ("to_json(1.50)", Some("1.50")),
            (r#"to_json('a"b')"#, Some(r#""a\"b""#)),
            ("to_json(CAST(NULL AS VARCHAR))", None),
            ("to_json(NULL)", None),
            ("to_json(true)", Some("true")),
            ("to_jsonb(1.50)", Some("1.50")),
            ("to_json(CAST('-0.0' AS DOUBLE))", Some("-0")),
            ("to_jsonb(CAST('1e21' AS DOUBLE))", Some("1000000000000000000000")),
            (r#"to_jsonb(pgaccel_json('{"a" : 1}'))"#, Some(r#"{"a": 1}"#)),
            (r#"to_json(pgaccel_json('{"a" : 1}'))"#, Some(r#"{"a" : 1}"#)),
            (r#"to_json(pgaccel_jsonb('{"a" : 1}'))"#, Some(r#"{"a": 1}"#)),
            ("to_json(CAST(12345678901234567890 AS DECIMAL(20,0)))", Some("12345678901234567890")),
            ("to_json(TIMESTAMP '2020-01-02 03:04:05.123456')", Some(r#""2020-01-02T03:04:05.123456""#)),
            ("to_json(make_array(1, 2))", Some("[1,2]")),
            ("to_jsonb(make_array('a', 'b'))", Some(r#"["a", "b"]"#)),
            ("to_json(make_array('a', 'b'))", Some(r#"["a","b"]"#)),
            (r"to_json(CAST(X'0102ff' AS BYTEA))", Some(r#""\\x0102ff""#)),
            (
                "to_json(named_struct('f1', 1, 'f2', 'x'))",
                Some(r#"{"f1":1,"f2":"x"}"#),
            ),
            (
                "to_jsonb(named_struct('f1', 1, 'f2', 'x'))",
                Some(r#"{"f1": 1, "f2": "x"}"#),
            ),
            (
                "json_build_array(named_struct('f1', 1, 'f2', 'x', 'f3', make_array(1, 2)))",
                Some(r#"[{"f1":1,"f2":"x","f3":[1,2]}]"#),
            ),
            ("to_jsonb(DATE '2020-01-02')", Some(r#""2020-01-02""#)),
            ("jsonb_build_object(DATE '2020-01-02', 1)", Some(r#"{"2020-01-02": 1}"#)),
            ("jsonb_build_object('a', CAST('1.0' AS DOUBLE))", Some(r#"{"a": 1}"#)),
        ])
        .await;
        let parameter = sqlstate::INVALID_PARAMETER_VALUE;
        check_errors(&[
            (
                "jsonb_build_object('a')",
                parameter,
                "argument list must have even number of elements",
                None,
            ),
            (
                "jsonb_build_object(NULL, 1)",
                parameter,
                "argument 1: key must not be null",
                None,
            ),
            (
                "jsonb_build_object('a', 1, NULL, 2)",
                parameter,
                "argument 3: key must not be null",
                None,
            ),
            (
                r#"jsonb_build_object(pgaccel_json('{"a":1}'), 1)"#,
                parameter,
                "key value must be scalar, not array, composite, or json",
                None,
            ),
        ])
        .await;
    }

    #[test]
    fn float_text_matches_postgres() {
        assert_eq!(float8_text(100.0), "100");
        assert_eq!(float8_text(1e21), "1e+21");
        assert_eq!(float8_text(1e-5), "1e-05");
        assert_eq!(float8_text(1.5e300), "1.5e+300");
        assert_eq!(float8_text(-0.0), "-0");
        assert_eq!(float8_text(0.0), "0");
        assert_eq!(float8_text(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(float4_text(0.1), "0.1");
        assert_eq!(float4_text(1_234_567.0), "1.234567e+06");
    }

    #[test]
    fn array_literals() {
        let parsed =
            array_literal(r#" { a , "b c" , NULL, "NULL", \N\ULL, {d} } "#).expect("parse");
        assert_eq!(
            parsed,
            vec![
                Some("a".to_owned()),
                Some("b c".to_owned()),
                None,
                Some("NULL".to_owned()),
                Some("NULL".to_owned()),
                Some("d".to_owned()),
            ]
        );
        assert_eq!(
            array_literal("{}").expect("empty"),
            Vec::<Option<String>>::new()
        );
        assert!(array_literal("{a,,b}").is_err());
    }

    #[test]
    fn deep_documents_are_refused_not_overflowed() {
        // Parsing, lookups, containment, writing and dropping all keep their
        // work on the heap: the deepest document allowed is handled on a
        // test thread's small stack, in a debug build. (Not pretty printed:
        // its indentation alone would be hundreds of megabytes.)
        let arrays = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let objects = format!("{}1{}", "{\"a\": ".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
        for (deep, step, steps) in [(&arrays, "0", MAX_DEPTH - 1), (&objects, "a", MAX_DEPTH)] {
            let node = parse(deep, Mode::Jsonb).expect("as deep as allowed");
            let mut out = String::new();
            write_jsonb(&mut out, &node.value);
            assert_eq!(&out, deep);
            assert!(jsonb_contains(&node.value, &node.value));
            let path = vec![Step::Element(step); steps];
            assert!(lookup(&node, &path).is_some());
        }
        let deeper = format!("[{arrays}]");
        let error = parse(&deeper, Mode::Validate).expect_err("too deep");
        assert_eq!(error.code, STATEMENT_TOO_COMPLEX);
        assert_eq!(error.message, "stack depth limit exceeded");
    }

    #[tokio::test]
    async fn result_types_follow_the_input() {
        let jsonb_field = Field::new("doc", DataType::Utf8, true).with_metadata(HashMap::from([(
            PG_TYPE_METADATA.to_owned(),
            "jsonb".to_owned(),
        )]));
        let json_field = Field::new("raw", DataType::Utf8View, true).with_metadata(HashMap::from(
            [(PG_TYPE_METADATA.to_owned(), "json".to_owned())],
        ));
        let schema = Arc::new(Schema::new(vec![jsonb_field, json_field]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from(vec![
                    Some(r#"{"a": [1, 2], "b": "x"}"#),
                    None,
                    Some(r#"{"a": {"c": 1.50}}"#),
                ])),
                Arc::new(StringViewArray::from(vec![
                    Some(r#"{"a" : [1,2]}"#),
                    Some("[1]"),
                    None,
                ])),
            ],
        )
        .expect("batch");
        let ctx = context();
        let table = MemTable::try_new(schema, vec![vec![batch]]).expect("table");
        ctx.register_table("docs", Arc::new(table))
            .expect("register");
        let frame = ctx
            .sql(
                "SELECT pgaccel_json_get(doc, 'a') AS a, pgaccel_json_get(raw, 'a') AS b, \
                 pgaccel_json_get_text(doc, 'b') AS c, pgaccel_json_path(raw, '{a,0}') AS d, \
                 pgaccel_json_get(LOWER(doc), 'a') AS e, jsonb_typeof(doc) AS f, \
                 pgaccel_jsonb_contains(doc, '{\"a\":[2]}') AS g, pgaccel_json('[1]') AS h, \
                 jsonb_build_object('k', doc) AS i, json_build_array(raw) AS j FROM docs",
            )
            .await
            .expect("plan");
        let pg_types: Vec<Option<String>> = frame
            .schema()
            .fields()
            .iter()
            .map(|field| field.metadata().get(PG_TYPE_METADATA).cloned())
            .collect();
        let expected = [
            Some("jsonb"),
            Some("json"),
            None,
            Some("json"),
            Some("json"),
            None,
            None,
            Some("json"),
            Some("jsonb"),
            Some("json"),
        ];
        assert_eq!(
            pg_types,
            expected.map(|t| t.map(str::to_owned)).to_vec(),
            "metadata"
        );
        let batches = frame.collect().await.expect("run");
        let rows: Vec<Vec<String>> = (0..3)
            .map(|row| {
                batches[0]
                    .columns()
                    .iter()
                    .map(|column| array_value_to_string(column, row).expect("text"))
                    .collect()
            })
            .collect();
        assert_eq!(
            rows[0],
            [
                "[1, 2]",
                "[1,2]",
                "x",
                "1",
                "[1, 2]",
                "object",
                "true",
                "[1]",
                r#"{"k": {"a": [1, 2], "b": "x"}}"#,
                r#"[{"a" : [1,2]}]"#,
            ]
        );
        assert_eq!(rows[1][0], "", "NULL document");
        assert_eq!(rows[1][1], "", "no key in an array");
        assert_eq!(rows[1][8], r#"{"k": null}"#);
        assert_eq!(rows[2][0], r#"{"c": 1.50}"#);
        assert_eq!(rows[2][9], "[null]");
    }

    #[tokio::test]
    async fn wrong_arguments_are_refused() {
        let error = error("json_typeof(1)").await;
        assert!(
            error
                .message
                .contains("function json_typeof(bigint) does not exist"),
            "{error:?}"
        );
    }
}

/// The JSON operators (`->`, `->>`, `#>`, `#>>`, `@>`, `?`) on json and
/// jsonb text, as calls of this module's functions. `@>` between arrays is
/// left to DataFusion's array containment.
#[derive(Debug, Default)]
pub struct JsonOperators;

impl datafusion::logical_expr::planner::ExprPlanner for JsonOperators {
    fn plan_binary_op(
        &self,
        expr: datafusion::logical_expr::planner::RawBinaryExpr,
        schema: &datafusion::common::DFSchema,
    ) -> Result<
        datafusion::logical_expr::planner::PlannerResult<
            datafusion::logical_expr::planner::RawBinaryExpr,
        >,
    > {
        use datafusion::logical_expr::planner::PlannerResult;
        use datafusion::logical_expr::{ExprSchemable, expr::ScalarFunction};
        use datafusion::sql::sqlparser::ast::BinaryOperator;
        let is_jsonb = |side: &datafusion::logical_expr::Expr| {
            side.to_field(schema).is_ok_and(|(_, field)| {
                field.metadata().get(PG_TYPE_METADATA).map(String::as_str) == Some("jsonb")
            })
        };
        // A string literal with no type of its own takes the other
        // operand's, as PostgreSQL's `unknown` does.
        let untyped = |side: &datafusion::logical_expr::Expr| {
            matches!(
                side,
                datafusion::logical_expr::Expr::Literal(
                    ScalarValue::Utf8(_) | ScalarValue::Null,
                    _
                )
            )
        };
        let is_text = |side: &datafusion::logical_expr::Expr| {
            matches!(
                side.get_type(schema),
                Ok(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
            )
        };
        // `@>` and `<@` between arrays (an untyped literal beside an array
        // is one) are the array operators'.
        let is_list = |side: &datafusion::logical_expr::Expr| {
            matches!(
                side.get_type(schema),
                Ok(DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..))
            )
        };
        let jsonb_operands = !is_list(&expr.left) && !is_list(&expr.right);
        let (jsonb_left, jsonb_right) = (is_jsonb(&expr.left), is_jsonb(&expr.right));
        // PostgreSQL has no `jsonb - jsonb`; the delete function would read
        // the right document as a key and answer with the left one unchanged.
        if expr.op == BinaryOperator::Minus && jsonb_left && jsonb_right {
            return Err(datafusion::common::DataFusionError::External(Box::new(
                PgError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    "operator does not exist: jsonb - jsonb",
                ),
            )));
        }
        let edit = match expr.op {
            BinaryOperator::Minus if jsonb_left => Some(edit::DELETE),
            BinaryOperator::StringConcat
                if (jsonb_left && (jsonb_right || untyped(&expr.right)))
                    || (jsonb_right && untyped(&expr.left)) =>
            {
                Some(edit::CONCAT)
            }
            BinaryOperator::QuestionPipe => Some(edit::EXISTS_ANY),
            BinaryOperator::QuestionAnd => Some(edit::EXISTS_ALL),
            _ => None,
        };
        if let Some(function) = edit {
            let udf = edit::udfs()
                .into_iter()
                .find(|f| f.name() == function)
                .ok_or_else(|| {
                    datafusion::common::DataFusionError::Internal(format!("no function {function}"))
                })?;
            return Ok(PlannerResult::Planned(
                datafusion::logical_expr::Expr::ScalarFunction(ScalarFunction::new_udf(
                    udf,
                    vec![expr.left, expr.right],
                )),
            ));
        }
        // `j || text` (text concatenation in PostgreSQL, whose result is
        // hard to foresee here) and `j #- path` are refused, never read as
        // something else.
        if jsonb_left
            && matches!(
                expr.op,
                BinaryOperator::StringConcat | BinaryOperator::HashMinus
            )
        {
            return Err(datafusion::common::DataFusionError::External(Box::new(
                PgError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    format!("the jsonb operator {} is not supported", expr.op),
                ),
            )));
        }
        // `a <@ b` is `b @> a`.
        if expr.op == BinaryOperator::ArrowAt && jsonb_operands && is_text(&expr.right) {
            let udf = functions()
                .into_iter()
                .find(|f| f.name() == "pgaccel_jsonb_contains")
                .map(|f| Arc::new(ScalarUDF::new_from_impl(f)))
                .ok_or_else(|| {
                    datafusion::common::DataFusionError::Internal(
                        "no function pgaccel_jsonb_contains".to_owned(),
                    )
                })?;
            return Ok(PlannerResult::Planned(
                datafusion::logical_expr::Expr::ScalarFunction(ScalarFunction::new_udf(
                    udf,
                    vec![expr.right, expr.left],
                )),
            ));
        }
        let function = match expr.op {
            BinaryOperator::Arrow => "pgaccel_json_get",
            BinaryOperator::LongArrow => "pgaccel_json_get_text",
            BinaryOperator::HashArrow => "pgaccel_json_path",
            BinaryOperator::HashLongArrow => "pgaccel_json_path_text",
            BinaryOperator::Question => "pgaccel_jsonb_exists",
            BinaryOperator::AtArrow => {
                if !jsonb_operands || !is_text(&expr.left) {
                    return Ok(PlannerResult::Original(expr));
                }
                "pgaccel_jsonb_contains"
            }
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let udf = functions()
            .into_iter()
            .find(|f| f.name() == function)
            .map(|f| Arc::new(ScalarUDF::new_from_impl(f)))
            .ok_or_else(|| {
                datafusion::common::DataFusionError::Internal(format!("no function {function}"))
            })?;
        Ok(PlannerResult::Planned(
            datafusion::logical_expr::Expr::ScalarFunction(ScalarFunction::new_udf(
                udf,
                vec![expr.left, expr.right],
            )),
        ))
    }
}
