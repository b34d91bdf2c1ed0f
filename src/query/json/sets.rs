//! The members of JSON objects as rows, and objects built from rows:
//!
//! * `pgaccel_json_members(doc, function, part)`: the keys (`part` =
//!   `'keys'`), values (`'values'`, each as `->` returns it) or values as
//!   text (`'text'`, as `->>` returns them) of an object, as a list. The
//!   planner (see `compat`) writes `jsonb_each(doc)` as the `unnest()` of
//!   the keys beside the `unnest()` of the values, which go in step, and
//!   `jsonb_object_keys(doc)` as the `unnest()` of the keys. `function`
//!   names the PostgreSQL function, for its type (`jsonb_*` or `json_*`)
//!   and its error over a document that is not an object (22023).
//! * `pgaccel_json_object_member(key, value)` and
//!   `pgaccel_json[b]_object_agg(list)`: `json_object_agg(k, v)` is planned
//!   as the object of `array_agg(pgaccel_json_object_member(to_json(k),
//!   to_json(v)))`, one list element per row so that keys and values stay
//!   paired whatever order the aggregate keeps.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListBuilder, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::{
    Kind, Mode, PG_TYPE_METADATA, Value, external, invalid_parameter, parse, parse_as, write_found,
    write_jsonb, write_string,
};

pub(crate) const MEMBERS: &str = "pgaccel_json_members";
pub(crate) const OBJECT_MEMBER: &str = "pgaccel_json_object_member";
pub(crate) const JSON_OBJECT_AGG: &str = "pgaccel_json_object_agg";
pub(crate) const JSONB_OBJECT_AGG: &str = "pgaccel_jsonb_object_agg";

/// Between a member's key and its value in [`OBJECT_MEMBER`]'s text: a
/// character no PostgreSQL text can hold.
const KEY_END: char = '\0';

/// The functions of this module, for the parent's registration.
pub(super) fn udfs() -> Vec<Arc<ScalarUDF>> {
    vec![
        Arc::new(ScalarUDF::new_from_impl(Members {
            signature: Signature::any(3, Volatility::Immutable),
        })),
        Arc::new(ScalarUDF::new_from_impl(ObjectMember {
            signature: Signature::any(2, Volatility::Immutable),
        })),
        Arc::new(ScalarUDF::new_from_impl(ObjectAgg {
            kind: Kind::Json,
            signature: Signature::any(1, Volatility::Immutable),
        })),
        Arc::new(ScalarUDF::new_from_impl(ObjectAgg {
            kind: Kind::Jsonb,
            signature: Signature::any(1, Volatility::Immutable),
        })),
    ]
}

/// A constant text argument.
fn constant_text(args: &ScalarFunctionArgs, index: usize) -> Option<String> {
    match args.args.get(index) {
        Some(ColumnarValue::Scalar(value)) => value.try_as_str().flatten().map(str::to_owned),
        _ => None,
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Members {
    signature: Signature,
}

/// What [`Members`] lists of each member.
#[derive(Clone, Copy)]
enum Part {
    Keys,
    Values,
    Texts,
}

impl ScalarUDFImpl for Members {
    fn name(&self) -> &str {
        MEMBERS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::new_list(DataType::Utf8, true))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let function = constant_text(&args, 1).unwrap_or_default();
        let kind = if function.starts_with("jsonb") {
            Kind::Jsonb
        } else {
            Kind::Json
        };
        let part = match constant_text(&args, 2).as_deref() {
            Some("keys") => Part::Keys,
            Some("text") => Part::Texts,
            _ => Part::Values,
        };
        let (arrays, scalar) = crate::query::functions::argument_arrays(&args)?;
        let documents = cast(&arrays[0], &DataType::Utf8)?;
        let documents = documents.as_string::<i32>();
        let mut out = ListBuilder::new(StringBuilder::new());
        let mut text = String::new();
        for document in documents.iter() {
            let Some(document) = document else {
                out.append(false);
                continue;
            };
            let root = parse_as(document, kind).map_err(external)?;
            let Value::Object(members) = &root.value else {
                return Err(external(not_an_object(&function, kind, &root.value)));
            };
            for (key, node) in members {
                match part {
                    Part::Keys => out.values().append_value(key),
                    Part::Values | Part::Texts => {
                        text.clear();
                        let as_text = matches!(part, Part::Texts);
                        if write_found(&mut text, document, node, kind, as_text, false) {
                            out.values().append_value(&text);
                        } else {
                            out.values().append_null();
                        }
                    }
                }
            }
            out.append(true);
        }
        crate::query::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

/// PostgreSQL's error for a document that is not an object.
fn not_an_object(function: &str, kind: Kind, value: &Value<'_>) -> super::PgError {
    let array = matches!(value, Value::Array(_));
    invalid_parameter(if function.ends_with("object_keys") {
        let what = if array { "an array" } else { "a scalar" };
        format!("cannot call {function} on {what}")
    } else {
        match (kind, array) {
            (Kind::Jsonb, _) => format!("cannot call {function} on a non-object"),
            (Kind::Json, true) => "cannot deconstruct an array as an object".to_owned(),
            (Kind::Json, false) => "cannot deconstruct a scalar".to_owned(),
        }
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ObjectMember {
    signature: Signature,
}

impl ScalarUDFImpl for ObjectMember {
    fn name(&self) -> &str {
        OBJECT_MEMBER
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = crate::query::functions::argument_arrays(&args)?;
        let keys = cast(&arrays[0], &DataType::Utf8)?;
        let keys = keys.as_string::<i32>();
        let values = cast(&arrays[1], &DataType::Utf8)?;
        let values = values.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(keys.len(), 0);
        let mut text = String::new();
        for (key, value) in keys.iter().zip(values.iter()) {
            let Some(key) = key else {
                return Err(external(invalid_parameter("field name must not be null")));
            };
            text.clear();
            // A string key is its text; any other JSON scalar its literal.
            match &parse(key, Mode::Decode).map_err(external)?.value {
                Value::String(decoded) => text.push_str(decoded),
                _ => text.push_str(key.trim()),
            }
            text.push(KEY_END);
            text.push_str(value.unwrap_or("null"));
            out.append_value(&text);
        }
        crate::query::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ObjectAgg {
    kind: Kind,
    signature: Signature,
}

impl ScalarUDFImpl for ObjectAgg {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Json => JSON_OBJECT_AGG,
            Kind::Jsonb => JSONB_OBJECT_AGG,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(
            Field::new(self.name(), DataType::Utf8, true).with_metadata(
                [(PG_TYPE_METADATA.to_owned(), self.kind.pg_type().to_owned())].into(),
            ),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = crate::query::functions::argument_arrays(&args)?;
        let lists = cast(&arrays[0], &DataType::new_list(DataType::Utf8, true))?;
        let lists = lists.as_list::<i32>();
        let mut out = StringBuilder::with_capacity(lists.len(), 0);
        for list in lists.iter() {
            let Some(list) = list else {
                out.append_null();
                continue;
            };
            let members = list.as_string::<i32>();
            // json_object_agg's own layout: `{ "a" : 1, "b" : 2 }`.
            let mut text = String::from(match self.kind {
                Kind::Json => "{ ",
                Kind::Jsonb => "{",
            });
            for (index, member) in members.iter().flatten().enumerate() {
                let (key, value) = member.split_once(KEY_END).unwrap_or((member, "null"));
                if index > 0 {
                    text.push_str(", ");
                }
                write_string(&mut text, key);
                text.push_str(match self.kind {
                    Kind::Json => " : ",
                    Kind::Jsonb => ": ",
                });
                text.push_str(value);
            }
            match self.kind {
                Kind::Json => {
                    text.push_str(" }");
                    out.append_value(&text);
                }
                // Read again as jsonb: keys sorted, the last of a duplicate
                // key kept.
                Kind::Jsonb => {
                    text.push('}');
                    let mut canonical = String::new();
                    write_jsonb(
                        &mut canonical,
                        &parse(&text, Mode::Jsonb).map_err(external)?.value,
                    );
                    out.append_value(&canonical);
                }
            }
        }
        crate::query::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}
