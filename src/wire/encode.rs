//! Arrow results to PostgreSQL wire rows, text or binary.
//!
//! arrow-pg encodes the common types. This file adds the PostgreSQL types
//! that Arrow stores as Utf8 (`uuid`, `json`, `jsonb`, `varchar`, `bpchar`,
//! `name`, recorded in [`PG_TYPE_METADATA`]), which arrow-pg would report as
//! `text` and, for `uuid` and `jsonb`, encode wrongly in binary.

use std::error::Error;
use std::sync::Arc;

use arrow_pg::datatypes::field_into_pg_type;
use arrow_pg::encoder::encode_value;
use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use pgwire::api::Type;
use pgwire::api::portal::Format;
use pgwire::api::results::{DataRowEncoder, FieldInfo};
use pgwire::error::PgWireResult;
use pgwire::messages::data::DataRow;
use pgwire::types::ToSqlText;
use pgwire::types::format::FormatOptions;
use postgres_types::{IsNull, ToSql, to_sql_checked};

use crate::accelerator::PG_TYPE_METADATA;

/// The wire type of a result column.
pub fn pg_type(field: &Arc<Field>) -> PgWireResult<Type> {
    if let Some(special) = special_type(field) {
        return Ok(special);
    }
    field_into_pg_type(field)
}

fn special_type(field: &Field) -> Option<Type> {
    if !matches!(field.data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
        return None;
    }
    Some(match field.metadata().get(PG_TYPE_METADATA)?.as_str() {
        "uuid" => Type::UUID,
        "json" => Type::JSON,
        "jsonb" => Type::JSONB,
        "varchar" => Type::VARCHAR,
        "bpchar" => Type::BPCHAR,
        "name" => Type::NAME,
        _ => return None,
    })
}

/// Row descriptions for a result schema in the requested formats.
pub fn fields(schema: &Schema, format: &Format) -> PgWireResult<Vec<FieldInfo>> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(index, field)| {
            Ok(FieldInfo::new(
                field.name().clone(),
                None,
                None,
                pg_type(field)?,
                format.format_for(index),
            ))
        })
        .collect()
}

/// Encodes every row of `batch`.
pub fn rows(batch: &RecordBatch, fields: &Arc<Vec<FieldInfo>>) -> PgWireResult<Vec<DataRow>> {
    let schema = batch.schema();
    let mut encoder = DataRowEncoder::new(Arc::clone(fields));
    let mut rows = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        for (column, array) in batch.columns().iter().enumerate() {
            let pg_field = &fields[column];
            match special_type(schema.field(column)) {
                Some(_) => encode_text_backed(&mut encoder, array, row, pg_field)?,
                None => encode_value(&mut encoder, array, row, schema.field(column), pg_field)?,
            }
        }
        rows.push(encoder.take_row());
    }
    Ok(rows)
}

fn encode_text_backed(
    encoder: &mut DataRowEncoder,
    array: &Arc<dyn Array>,
    row: usize,
    field: &FieldInfo,
) -> PgWireResult<()> {
    let value = if array.is_null(row) {
        None
    } else {
        Some(TextBacked(string_value(array, row)))
    };
    encoder.encode_field_with_type_and_format(&value, field.datatype(), field.format(), field.format_options())
}

fn string_value(array: &Arc<dyn Array>, row: usize) -> String {
    match array.data_type() {
        DataType::LargeUtf8 => array.as_string::<i64>().value(row).to_owned(),
        DataType::Utf8View => array.as_string_view().value(row).to_owned(),
        _ => array.as_string::<i32>().value(row).to_owned(),
    }
}

/// A value stored as its PostgreSQL text form, encoded in binary by its type.
#[derive(Debug)]
struct TextBacked(String);

impl ToSql for TextBacked {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match *ty {
            Type::UUID => out.put_slice(uuid::Uuid::parse_str(&self.0)?.as_bytes()),
            Type::JSONB => {
                // jsonb's binary form is a version byte (1) and the JSON text.
                out.put_u8(1);
                out.put_slice(self.0.as_bytes());
            }
            _ => out.put_slice(self.0.as_bytes()),
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl ToSqlText for TextBacked {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _format_options: &FormatOptions,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.put_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
}
