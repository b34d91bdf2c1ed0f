//! Building catalog rows: a row is given by column name, every column it
//! does not name gets NULL (or the zero of its type where the column cannot
//! be NULL); and the catalog's array-like columns PostgreSQL keeps as
//! vectors and arrays (`int2vector`, `oidvector`, `aclitem[]`, `text[]`) are
//! read from the text form the shipped catalog stores them in.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, new_null_array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{Result, ScalarValue};

use crate::accelerator::PG_TYPE_METADATA;

/// Rows for `schema`, each a list of (column, value).
pub struct Rows {
    schema: SchemaRef,
    columns: Vec<Vec<ScalarValue>>,
}

impl Rows {
    pub fn new(schema: SchemaRef) -> Self {
        let columns = vec![Vec::new(); schema.fields().len()];
        Rows { schema, columns }
    }

    pub fn push(&mut self, values: &[(&str, ScalarValue)]) {
        for (index, field) in self.schema.fields().iter().enumerate() {
            let value = values
                .iter()
                .find(|(name, _)| *name == field.name())
                .map(|(_, value)| value.clone())
                .unwrap_or_else(|| default_value(field));
            self.columns[index].push(value);
        }
    }

    pub fn finish(self) -> Result<RecordBatch> {
        let arrays = self
            .columns
            .into_iter()
            .zip(self.schema.fields())
            .map(|(values, field)| column(values, field.data_type()))
            .collect::<Result<Vec<ArrayRef>>>()?;
        Ok(RecordBatch::try_new(self.schema, arrays)?)
    }
}

fn column(values: Vec<ScalarValue>, data_type: &DataType) -> Result<ArrayRef> {
    if values.is_empty() {
        return Ok(new_null_array(data_type, 0));
    }
    let values = values
        .into_iter()
        .map(|value| {
            if value.is_null() {
                ScalarValue::try_from(data_type)
            } else if value.data_type() != *data_type {
                value.cast_to(data_type)
            } else {
                Ok(value)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    ScalarValue::iter_to_array(values)
}

fn default_value(field: &Field) -> ScalarValue {
    let null = ScalarValue::try_from(field.data_type()).unwrap_or(ScalarValue::Null);
    if field.is_nullable() {
        return null;
    }
    match field.data_type() {
        DataType::Boolean => ScalarValue::Boolean(Some(false)),
        DataType::Utf8 => ScalarValue::Utf8(Some(String::new())),
        DataType::List(_) => null,
        other => ScalarValue::new_zero(other).unwrap_or(null),
    }
}

pub fn text(value: impl Into<String>) -> ScalarValue {
    ScalarValue::Utf8(Some(value.into()))
}

pub fn int(value: i32) -> ScalarValue {
    ScalarValue::Int32(Some(value))
}

pub fn small(value: i16) -> ScalarValue {
    ScalarValue::Int16(Some(value))
}

pub fn flag(value: bool) -> ScalarValue {
    ScalarValue::Boolean(Some(value))
}

/// A list value of `element` type.
pub fn list(values: Vec<ScalarValue>, element: &DataType) -> ScalarValue {
    let values: Vec<ScalarValue> = values
        .into_iter()
        .map(|value| match value {
            ScalarValue::Null => ScalarValue::try_from(element).unwrap_or(ScalarValue::Null),
            value => value,
        })
        .collect();
    ScalarValue::List(ScalarValue::new_list_nullable(&values, element))
}

/// How a catalog column's array-like values are kept.
#[derive(Debug, Clone, Copy)]
pub enum ArrayColumn {
    /// `int2vector`: space-separated in text, subscripts from 0.
    Int2Vector,
    /// `oidvector`: like `int2vector`, of OIDs.
    OidVector,
    Int2Array,
    OidArray,
    /// `text[]`, `aclitem[]`, `"char"[]`: PostgreSQL array literals.
    TextArray(&'static str),
}

impl ArrayColumn {
    fn element(self) -> DataType {
        match self {
            ArrayColumn::Int2Vector | ArrayColumn::Int2Array => DataType::Int16,
            ArrayColumn::OidVector | ArrayColumn::OidArray => DataType::Int32,
            ArrayColumn::TextArray(_) => DataType::Utf8,
        }
    }

    /// The PostgreSQL type name the wire layer reports.
    pub fn pg_type(self) -> &'static str {
        match self {
            ArrayColumn::Int2Vector => "int2vector",
            ArrayColumn::OidVector => "oidvector",
            ArrayColumn::Int2Array => "_int2",
            ArrayColumn::OidArray => "_oid",
            ArrayColumn::TextArray(pg_type) => pg_type,
        }
    }

    /// The field for such a column.
    pub fn field(self, name: &str) -> Field {
        let item = Arc::new(Field::new("item", self.element(), true));
        Field::new(name, DataType::List(item), true)
            .with_metadata([(PG_TYPE_METADATA.to_owned(), self.pg_type().to_owned())].into())
    }

    /// A value from its text form.
    pub fn parse(self, text: &str) -> ScalarValue {
        let items: Vec<String> = match self {
            ArrayColumn::Int2Vector | ArrayColumn::OidVector => {
                text.split_whitespace().map(str::to_owned).collect()
            }
            _ => array_items(text),
        };
        let element = self.element();
        let values = items
            .into_iter()
            .map(|item| {
                ScalarValue::Utf8(Some(item))
                    .cast_to(&element)
                    .or_else(|_| ScalarValue::try_from(&element))
                    .unwrap_or(ScalarValue::Null)
            })
            .collect();
        list(values, &element)
    }
}

/// The elements of a one-dimensional array literal (`{a,"b c"}`).
pub fn array_items(text: &str) -> Vec<String> {
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quoted => current.extend(chars.next()),
            '"' => quoted = !quoted,
            ',' if !quoted => items.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    if !inner.is_empty() {
        items.push(current);
    }
    items
}

/// `batch` with `columns` turned from their text form into lists.
pub fn with_arrays(batch: &RecordBatch, columns: &[(&str, ArrayColumn)]) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut arrays: Vec<ArrayRef> = batch.columns().to_vec();
    for (name, kind) in columns {
        let Ok(index) = schema.index_of(name) else {
            continue;
        };
        let source = batch.column(index);
        let values: Vec<ScalarValue> = (0..batch.num_rows())
            .map(|row| {
                if source.is_null(row) {
                    ScalarValue::try_from(&DataType::List(Arc::new(Field::new(
                        "item",
                        kind.element(),
                        true,
                    ))))
                    .unwrap_or(ScalarValue::Null)
                } else {
                    kind.parse(source.as_string::<i32>().value(row))
                }
            })
            .collect();
        let field = kind.field(name);
        arrays[index] = column(values, field.data_type())?;
        fields[index] = field;
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    Ok(RecordBatch::try_new(schema, arrays)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_and_arrays_parse_from_text() {
        assert_eq!(
            ArrayColumn::Int2Vector.parse("1 3"),
            list(
                vec![ScalarValue::Int16(Some(1)), ScalarValue::Int16(Some(3))],
                &DataType::Int16
            )
        );
        let acl = ArrayColumn::TextArray("_aclitem").parse("{postgres=UC/postgres,=U/postgres}");
        assert_eq!(
            acl,
            list(
                vec![text("postgres=UC/postgres"), text("=U/postgres")],
                &DataType::Utf8
            )
        );
        assert_eq!(array_items("{\"a,b\",c}"), ["a,b", "c"]);
        assert!(array_items("{}").is_empty());
    }
}
