//! jsonb's operators that edit a document or test a set of keys, as scalar
//! functions over jsonb text (see the parent module for how documents are
//! kept):
//!
//! | function | PostgreSQL | returns |
//! |---|---|---|
//! | `pgaccel_jsonb_delete(doc, key)` | `doc - 'key'`, `doc - 1`, `doc - '{a,b}'::text[]` | jsonb |
//! | `pgaccel_jsonb_concat(a, b)` | `a \|\| b` | jsonb |
//! | `pgaccel_jsonb_exists_any(doc, keys)` | `doc ?\| keys` | boolean |
//! | `pgaccel_jsonb_exists_all(doc, keys)` | `doc ?& keys` | boolean |
//!
//! The results are jsonb's canonical text: what is left of a canonical
//! document is canonical, and a merged object is read again as jsonb so
//! that its keys are sorted and the right-hand value of a duplicate key
//! wins, as in PostgreSQL.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::{
    Keys, Mode, Node, PG_TYPE_METADATA, Paths, PgError, Step, Texts, Value, arg, bool_result,
    invalid_parameter, jsonb_exists, key_type, parse, path_type, pg_type_name, text_result,
    text_type, write_jsonb, write_string,
};

pub(crate) const DELETE: &str = "pgaccel_jsonb_delete";
pub(crate) const CONCAT: &str = "pgaccel_jsonb_concat";
pub(crate) const EXISTS_ANY: &str = "pgaccel_jsonb_exists_any";
pub(crate) const EXISTS_ALL: &str = "pgaccel_jsonb_exists_all";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Edit {
    Delete,
    Concat,
    ExistsAny,
    ExistsAll,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonbEdit {
    edit: Edit,
    signature: Signature,
}

/// The functions of this module, for the parent's registration and its
/// operator planner.
pub(super) fn udfs() -> Vec<Arc<ScalarUDF>> {
    [Edit::Delete, Edit::Concat, Edit::ExistsAny, Edit::ExistsAll]
        .into_iter()
        .map(|edit| {
            Arc::new(ScalarUDF::new_from_impl(JsonbEdit {
                edit,
                signature: Signature::user_defined(Volatility::Immutable),
            }))
        })
        .collect()
}

impl ScalarUDFImpl for JsonbEdit {
    fn name(&self) -> &str {
        match self.edit {
            Edit::Delete => DELETE,
            Edit::Concat => CONCAT,
            Edit::ExistsAny => EXISTS_ANY,
            Edit::ExistsAll => EXISTS_ALL,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.edit {
            Edit::Delete | Edit::Concat => DataType::Utf8,
            Edit::ExistsAny | Edit::ExistsAll => DataType::Boolean,
        })
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let field = Field::new(self.name(), self.return_type(&[])?, true);
        Ok(Arc::new(match self.edit {
            Edit::Delete | Edit::Concat => {
                field.with_metadata([(PG_TYPE_METADATA.to_owned(), "jsonb".to_owned())].into())
            }
            Edit::ExistsAny | Edit::ExistsAll => field,
        }))
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let coerced = match (self.edit, arg_types) {
            // A key, an index (bigint) or a list of keys.
            (Edit::Delete, [doc, operand]) => {
                let operand = if operand.is_nested() {
                    path_type(operand)
                } else {
                    key_type(operand)
                };
                text_type(doc).zip(operand).map(|(a, b)| vec![a, b])
            }
            (Edit::Concat, [a, b]) => text_type(a).zip(text_type(b)).map(|(a, b)| vec![a, b]),
            (Edit::ExistsAny | Edit::ExistsAll, [doc, keys]) => {
                text_type(doc).zip(path_type(keys)).map(|(a, b)| vec![a, b])
            }
            _ => None,
        };
        coerced.ok_or_else(|| {
            let types: Vec<String> = arg_types.iter().map(pg_type_name).collect();
            DataFusionError::Plan(format!(
                "operator does not exist: {}({})",
                self.name(),
                types.join(", ")
            ))
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match self.edit {
            Edit::Delete => delete(&args),
            Edit::Concat => concat(&args),
            Edit::ExistsAny => exists_some(&args, false),
            Edit::ExistsAll => exists_some(&args, true),
        }
    }
}

/// `doc - key`, `doc - index` and `doc - keys`.
fn delete(args: &ScalarFunctionArgs) -> Result<ColumnarValue> {
    let docs = Texts::new(arg(args, 0)?)?;
    let operand = arg(args, 1)?;
    /// What is deleted, per row.
    enum Deleted<'a> {
        One(Keys<'a>),
        Many(Paths<'a>),
    }
    let deleted = if operand.data_type().is_nested() {
        Deleted::Many(Paths::new(operand)?)
    } else {
        Deleted::One(Keys::new(operand)?)
    };
    text_result(args, |row, out| {
        let Some(doc) = docs.get(row) else {
            return Ok(false);
        };
        let root = parse(doc, Mode::Jsonb)?;
        match &deleted {
            Deleted::One(keys) => match keys.get(row) {
                None => Ok(false),
                Some(Step::Index(index)) => {
                    delete_index(out, &root.value, index)?;
                    Ok(true)
                }
                Some(Step::Key(key) | Step::Element(key)) => {
                    delete_keys(out, &root.value, &[Some(key.into())])?;
                    Ok(true)
                }
            },
            Deleted::Many(paths) => match paths.get(row)? {
                None => Ok(false),
                Some(keys) => {
                    delete_keys(out, &root.value, &keys)?;
                    Ok(true)
                }
            },
        }
    })
}

/// The members of an object whose key is not one of `keys`, or the
/// elements of an array that are not one of them as a string; a scalar
/// has nothing to delete from. NULL keys match nothing.
fn delete_keys(
    out: &mut String,
    value: &Value<'_>,
    keys: &[Option<std::borrow::Cow<'_, str>>],
) -> Result<(), PgError> {
    let deleted = |key: &str| keys.iter().flatten().any(|wanted| wanted == key);
    match value {
        Value::Object(members) => write_object(
            out,
            members
                .iter()
                .filter(|(key, _)| !deleted(key))
                .map(|(key, node)| (key.as_ref(), node)),
        ),
        Value::Array(items) => write_array(
            out,
            items
                .iter()
                .filter(|item| !matches!(&item.value, Value::String(text) if deleted(text))),
        ),
        _ => return Err(invalid_parameter("cannot delete from scalar")),
    }
    Ok(())
}

/// An array without its element at `index` (from the end when negative;
/// an index past either end deletes nothing).
fn delete_index(out: &mut String, value: &Value<'_>, index: i64) -> Result<(), PgError> {
    match value {
        Value::Array(items) => {
            let length = items.len() as i64;
            let at = if index < 0 { index + length } else { index };
            write_array(
                out,
                items
                    .iter()
                    .enumerate()
                    .filter(|(position, _)| *position as i64 != at)
                    .map(|(_, item)| item),
            );
            Ok(())
        }
        Value::Object(_) => Err(invalid_parameter(
            "cannot delete from object using integer index",
        )),
        _ => Err(invalid_parameter("cannot delete from scalar")),
    }
}

/// `a || b`: two objects merge (the right one's value wins a shared key);
/// anything else is concatenated as arrays, a non-array value being an
/// array of itself.
fn concat(args: &ScalarFunctionArgs) -> Result<ColumnarValue> {
    let left = Texts::new(arg(args, 0)?)?;
    let right = Texts::new(arg(args, 1)?)?;
    text_result(args, |row, out| {
        let (Some(a), Some(b)) = (left.get(row), right.get(row)) else {
            return Ok(false);
        };
        let a = parse(a, Mode::Jsonb)?;
        let b = parse(b, Mode::Jsonb)?;
        match (&a.value, &b.value) {
            (Value::Object(first), Value::Object(second)) => {
                let mut merged = String::new();
                write_object(
                    &mut merged,
                    first
                        .iter()
                        .chain(second.iter())
                        .map(|(key, node)| (key.as_ref(), node)),
                );
                write_jsonb(out, &parse(&merged, Mode::Jsonb)?.value);
            }
            _ => write_array(out, elements(&a).chain(elements(&b))),
        }
        Ok(true)
    })
}

/// The elements an operand contributes to a concatenated array.
fn elements<'n, 'a>(node: &'n Node<'a>) -> Box<dyn Iterator<Item = &'n Node<'a>> + 'n> {
    match &node.value {
        Value::Array(items) => Box::new(items.iter()),
        _ => Box::new(std::iter::once(node)),
    }
}

fn write_object<'n, 'a: 'n>(
    out: &mut String,
    members: impl Iterator<Item = (&'n str, &'n Node<'a>)>,
) {
    out.push('{');
    for (index, (key, node)) in members.enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        write_string(out, key);
        out.push_str(": ");
        write_jsonb(out, &node.value);
    }
    out.push('}');
}

fn write_array<'n, 'a: 'n>(out: &mut String, items: impl Iterator<Item = &'n Node<'a>>) {
    out.push('[');
    for (index, node) in items.enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        write_jsonb(out, &node.value);
    }
    out.push(']');
}

/// `?|` (some key exists) and `?&` (every key exists); NULL keys are
/// skipped, so `?&` of none is true and `?|` of none false.
fn exists_some(args: &ScalarFunctionArgs, all: bool) -> Result<ColumnarValue> {
    let docs = Texts::new(arg(args, 0)?)?;
    let keys = Paths::new(arg(args, 1)?)?;
    bool_result(args, |row| {
        let Some(doc) = docs.get(row) else {
            return Ok(None);
        };
        let Some(keys) = keys.get(row)? else {
            return Ok(None);
        };
        let root = parse(doc, Mode::Jsonb)?;
        let mut present = keys
            .iter()
            .flatten()
            .map(|key| jsonb_exists(&root.value, key));
        Ok(Some(if all {
            present.all(|found| found)
        } else {
            present.any(|found| found)
        }))
    })
}
