//! The functions that change a document at a path or drop its null
//! members:
//!
//! | function | returns |
//! |---|---|
//! | `jsonb_set(doc, path, value [, create_if_missing])` | jsonb |
//! | `jsonb_insert(doc, path, value [, insert_after])` | jsonb |
//! | `jsonb_strip_nulls(doc)` | jsonb |
//! | `json_strip_nulls(doc)` | json |
//!
//! They follow PostgreSQL's rules for a path that does not lead anywhere: a
//! missing last key is added (unless `create_if_missing` is false), a
//! missing key before it leaves the document as it is, an array index past
//! either end adds at that end, and a scalar on the way is kept.

use std::borrow::Cow;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::{
    Layout, Mode, PG_TYPE_METADATA, Paths, PgError, Texts, Value, arg, invalid_parameter, parse,
    path_type, pg_type_name, text_result, text_type, write_document, write_jsonb, write_string,
};
use crate::query::sqlstate;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Function {
    Set,
    Insert,
    StripNulls,
    JsonStripNulls,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PathFunction {
    function: Function,
    signature: Signature,
}

/// The functions of this module, for the parent's registration.
pub(super) fn udfs() -> Vec<Arc<ScalarUDF>> {
    [
        Function::Set,
        Function::Insert,
        Function::StripNulls,
        Function::JsonStripNulls,
    ]
    .into_iter()
    .map(|function| {
        Arc::new(ScalarUDF::new_from_impl(PathFunction {
            function,
            signature: Signature::user_defined(Volatility::Immutable),
        }))
    })
    .collect()
}

impl ScalarUDFImpl for PathFunction {
    fn name(&self) -> &str {
        match self.function {
            Function::Set => "jsonb_set",
            Function::Insert => "jsonb_insert",
            Function::StripNulls => "jsonb_strip_nulls",
            Function::JsonStripNulls => "json_strip_nulls",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let kind = match self.function {
            Function::JsonStripNulls => "json",
            _ => "jsonb",
        };
        Ok(Arc::new(
            Field::new(self.name(), DataType::Utf8, true)
                .with_metadata([(PG_TYPE_METADATA.to_owned(), kind.to_owned())].into()),
        ))
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let flag = |data_type: &DataType| {
            matches!(data_type, DataType::Boolean | DataType::Null).then_some(DataType::Boolean)
        };
        let coerced = match (self.function, arg_types) {
            (Function::Set | Function::Insert, [doc, path, value, rest @ ..])
                if rest.len() <= 1 =>
            {
                [text_type(doc), path_type(path), text_type(value)]
                    .into_iter()
                    .chain(rest.iter().map(flag))
                    .collect::<Option<Vec<_>>>()
            }
            (Function::StripNulls | Function::JsonStripNulls, [doc]) => {
                text_type(doc).map(|doc| vec![doc])
            }
            _ => None,
        };
        coerced.ok_or_else(|| {
            let types: Vec<String> = arg_types.iter().map(pg_type_name).collect();
            DataFusionError::External(Box::new(PgError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!(
                    "function {}({}) does not exist",
                    self.name(),
                    types.join(", ")
                ),
            )))
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match self.function {
            Function::Set | Function::Insert => set(&args, self.function == Function::Insert),
            Function::StripNulls => strip_nulls(&args, Mode::Jsonb),
            Function::JsonStripNulls => strip_nulls(&args, Mode::Decode),
        }
    }
}

/// What is done at the end of the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `jsonb_set`: replace, and add what is missing when `create`.
    Set { create: bool },
    /// `jsonb_insert`: add before or after an array element, or add a key
    /// that is not there yet.
    Insert { after: bool },
}

impl Op {
    fn adds(self) -> bool {
        !matches!(self, Op::Set { create: false })
    }
}

/// A boolean argument, per row; `true` when it is not given.
enum Flags<'a> {
    Constant(Option<bool>),
    Array(&'a datafusion::arrow::array::BooleanArray),
}

impl<'a> Flags<'a> {
    fn new(value: Option<&'a ColumnarValue>, default: bool) -> Result<Self> {
        match value {
            None => Ok(Flags::Constant(Some(default))),
            Some(ColumnarValue::Scalar(ScalarValue::Boolean(flag))) => Ok(Flags::Constant(*flag)),
            Some(ColumnarValue::Scalar(ScalarValue::Null)) => Ok(Flags::Constant(None)),
            Some(ColumnarValue::Array(array)) if array.data_type() == &DataType::Boolean => {
                Ok(Flags::Array(array.as_boolean()))
            }
            Some(other) => datafusion::common::internal_err!(
                "expected a boolean argument, got {}",
                other.data_type()
            ),
        }
    }

    fn get(&self, row: usize) -> Option<bool> {
        match self {
            Flags::Constant(flag) => *flag,
            Flags::Array(array) => array.is_valid(row).then(|| array.value(row)),
        }
    }
}

/// `jsonb_set` and `jsonb_insert`, strict in every argument as in
/// PostgreSQL.
fn set(args: &ScalarFunctionArgs, insert: bool) -> Result<ColumnarValue> {
    let docs = Texts::new(arg(args, 0)?)?;
    let paths = Paths::new(arg(args, 1)?)?;
    let values = Texts::new(arg(args, 2)?)?;
    let flags = Flags::new(args.args.get(3), !insert)?;
    let mut edited = String::new();
    text_result(args, |row, out| {
        let (Some(doc), Some(path), Some(value), Some(flag)) = (
            docs.get(row),
            paths.get(row)?,
            values.get(row),
            flags.get(row),
        ) else {
            return Ok(false);
        };
        let op = if insert {
            Op::Insert { after: flag }
        } else {
            Op::Set { create: flag }
        };
        let root = parse(doc, Mode::Jsonb)?;
        if root.value.is_scalar() {
            return Err(invalid_parameter("cannot set path in scalar"));
        }
        let empty = match &root.value {
            Value::Object(members) => members.is_empty(),
            Value::Array(items) => items.is_empty(),
            _ => false,
        };
        if path.is_empty() || (empty && op == (Op::Set { create: false })) {
            write_jsonb(out, &root.value);
            return Ok(true);
        }
        let value = parse(value, Mode::Jsonb)?;
        edited.clear();
        set_at(&mut edited, &root.value, &path, 0, &value.value, op)?;
        // Read again so that an added key takes its place in jsonb's order.
        write_jsonb(out, &parse(&edited, Mode::Jsonb)?.value);
        Ok(true)
    })
}

/// Writes `value` with `new` set at `path[level..]`. It recurses once per
/// path element, never deeper.
fn set_at(
    out: &mut String,
    value: &Value<'_>,
    path: &[Option<Cow<'_, str>>],
    level: usize,
    new: &Value<'_>,
    op: Op,
) -> Result<(), PgError> {
    let Some(step) = path[level].as_deref() else {
        return Err(PgError::new(
            sqlstate::NULL_VALUE_NOT_ALLOWED,
            format!("path element at position {} is null", level + 1),
        ));
    };
    let last = level + 1 == path.len();
    let mut first = true;
    let mut separate = |out: &mut String| {
        if !std::mem::take(&mut first) {
            out.push_str(", ");
        }
    };
    match value {
        Value::Object(members) => {
            out.push('{');
            let mut done = false;
            for (key, node) in members {
                separate(out);
                write_string(out, key);
                out.push_str(": ");
                if done || key != step {
                    write_jsonb(out, &node.value);
                    continue;
                }
                done = true;
                if !last {
                    set_at(out, &node.value, path, level + 1, new, op)?;
                } else if matches!(op, Op::Insert { .. }) {
                    return Err(invalid_parameter("cannot replace existing key")
                        .with_hint("Try using the function jsonb_set to replace key value."));
                } else {
                    write_jsonb(out, new);
                }
            }
            if !done && last && op.adds() {
                separate(out);
                write_string(out, step);
                out.push_str(": ");
                write_jsonb(out, new);
            }
            out.push('}');
        }
        Value::Array(items) => {
            let count = items.len() as i64;
            let index = path_index(step, level)?;
            // `None`: before the first element.
            let at = match index {
                index if index < 0 && -index > count => None,
                index if index < 0 => Some(count + index),
                index => Some(index),
            };
            out.push('[');
            let mut done = false;
            if (at.is_none() || count == 0) && last && op.adds() {
                separate(out);
                write_jsonb(out, new);
                done = true;
            }
            for (position, item) in items.iter().enumerate() {
                if Some(position as i64) != at {
                    separate(out);
                    write_jsonb(out, &item.value);
                    continue;
                }
                done = true;
                if !last {
                    separate(out);
                    set_at(out, &item.value, path, level + 1, new, op)?;
                    continue;
                }
                match op {
                    Op::Set { .. } => {
                        separate(out);
                        write_jsonb(out, new);
                    }
                    Op::Insert { after } => {
                        let (one, two) = if after {
                            (&item.value, new)
                        } else {
                            (new, &item.value)
                        };
                        separate(out);
                        write_jsonb(out, one);
                        separate(out);
                        write_jsonb(out, two);
                    }
                }
            }
            if !done && last && op.adds() {
                separate(out);
                write_jsonb(out, new);
            }
            out.push(']');
        }
        scalar => write_jsonb(out, scalar),
    }
    Ok(())
}

/// A path element that indexes an array: an `int4` as C's `strtol` reads it
/// (leading blanks and a sign, nothing after the digits).
fn path_index(step: &str, level: usize) -> Result<i64, PgError> {
    step.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c'])
        .parse::<i32>()
        .map(i64::from)
        .map_err(|_| {
            PgError::new(
                sqlstate::INVALID_TEXT_REPRESENTATION,
                format!(
                    "path element at position {} is not an integer: \"{step}\"",
                    level + 1
                ),
            )
        })
}

/// `json[b]_strip_nulls`: every object member whose value is null goes,
/// at any depth; null array elements stay. A `json` document keeps its
/// keys' order and duplicates, and is written without blanks, as
/// PostgreSQL writes it.
fn strip_nulls(args: &ScalarFunctionArgs, mode: Mode) -> Result<ColumnarValue> {
    let docs = Texts::new(arg(args, 0)?)?;
    text_result(args, |row, out| {
        let Some(doc) = docs.get(row) else {
            return Ok(false);
        };
        let mut root = parse(doc, mode)?;
        // A heap stack rather than recursion: documents may nest deeply.
        let mut open = vec![&mut root.value];
        while let Some(value) = open.pop() {
            match value {
                Value::Object(members) => {
                    members.retain(|(_, node)| !matches!(node.value, Value::Null));
                    open.extend(members.iter_mut().map(|(_, node)| &mut node.value));
                }
                Value::Array(items) => open.extend(items.iter_mut().map(|node| &mut node.value)),
                _ => {}
            }
        }
        let layout = if mode == Mode::Jsonb {
            Layout::Jsonb
        } else {
            Layout::Compact
        };
        write_document(out, &root.value, layout);
        Ok(true)
    })
}
