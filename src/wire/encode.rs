//! Arrow results to PostgreSQL wire rows, text or binary.
//!
//! arrow-pg encodes the common types. This file adds the PostgreSQL types
//! that Arrow stores as Utf8 (`uuid`, `json`, `jsonb`, `varchar`, `bpchar`,
//! `name`, `inet`, `void`, recorded in [`PG_TYPE_METADATA`]), which arrow-pg
//! would report as `text` and, for `uuid` and `jsonb`, encode wrongly in
//! binary; and it prints floats, dates, timestamps, times, intervals and
//! bytea in text the way the session's settings say ([`Output`]).

use std::error::Error;
use std::sync::Arc;

use arrow_pg::datatypes::field_into_pg_type;
use arrow_pg::encoder::encode_value;
use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, Schema};
use datafusion::common::ScalarValue;
use pgwire::api::Type;
use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo};
use pgwire::error::PgWireResult;
use pgwire::messages::data::DataRow;
use pgwire::types::ToSqlText;
use pgwire::types::format::FormatOptions;
use postgres_types::{IsNull, ToSql, to_sql_checked};

use super::{forwarded, numeric};
use crate::accelerator::{PG_TYPE_METADATA, REGTYPE_OID_METADATA, TYPMOD_METADATA};
use crate::query::display_name;
use crate::query::forward::FORWARDED_OID_METADATA;
use crate::query::origins::{ATTNUM_METADATA, TABLE_OID_METADATA};
use crate::query::settings::Output;
use crate::query::text;

/// The wire type of a result column.
pub fn pg_type(field: &Arc<Field>) -> PgWireResult<Type> {
    if let Some(special) = special_type(field) {
        return Ok(special);
    }
    field_into_pg_type(field)
}

fn special_type(field: &Field) -> Option<Type> {
    if let Some(forwarded) = forwarded_type(field) {
        return Some(forwarded);
    }
    if let DataType::List(_) = field.data_type() {
        return list_type(field);
    }
    // A NULL of a type DataFusion keeps untyped (`NULL::numeric`) is
    // described as that type.
    if !matches!(
        field.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    ) {
        return None;
    }
    Some(match field.metadata().get(PG_TYPE_METADATA)?.as_str() {
        "uuid" => Type::UUID,
        "json" => Type::JSON,
        "jsonb" => Type::JSONB,
        "varchar" => Type::VARCHAR,
        "bpchar" => Type::BPCHAR,
        "name" => Type::NAME,
        "inet" => Type::INET,
        "cidr" => Type::CIDR,
        "macaddr" => Type::MACADDR,
        "macaddr8" => Type::MACADDR8,
        "timetz" => Type::TIMETZ,
        "void" => Type::VOID,
        "regtype" => Type::REGTYPE,
        // A numeric printed at its per-value display scale.
        "numeric" => Type::NUMERIC,
        _ => return None,
    })
}

/// The source's type of a column a forwarded query returns as text.
fn forwarded_type(field: &Field) -> Option<Type> {
    let metadata = field.metadata();
    let oid: u32 = metadata.get(FORWARDED_OID_METADATA)?.parse().ok()?;
    Some(Type::from_oid(oid).unwrap_or_else(|| {
        let name = metadata.get(PG_TYPE_METADATA).cloned().unwrap_or_default();
        Type::new(name, oid, postgres_types::Kind::Simple, String::new())
    }))
}

/// The catalog's vector and array types that Arrow keeps as lists.
fn list_type(field: &Field) -> Option<Type> {
    Some(match field.metadata().get(PG_TYPE_METADATA)?.as_str() {
        "int2vector" => Type::INT2_VECTOR,
        "oidvector" => Type::OID_VECTOR,
        "_oid" => Type::OID_ARRAY,
        "_aclitem" => Type::from_oid(1034)?,
        "_char" => Type::CHAR_ARRAY,
        "_regtype" => Type::REGTYPE_ARRAY,
        "_bpchar" => Type::BPCHAR_ARRAY,
        "_varchar" => Type::VARCHAR_ARRAY,
        _ => return None,
    })
}

/// The format of result column `index` from Bind's format codes: none
/// means text for all, one applies to all, else one per column.
pub fn format_for(formats: &[i16], index: usize) -> FieldFormat {
    let code = match formats {
        [] => 0,
        [one] => *one,
        many => many.get(index).copied().unwrap_or(0),
    };
    if code == 1 {
        FieldFormat::Binary
    } else {
        FieldFormat::Text
    }
}

/// Row descriptions for a result schema in the requested formats: with
/// the type modifier the source declared, and the table and column a
/// result column comes from, as PostgreSQL describes them.
pub fn fields(schema: &Schema, formats: &[i16]) -> PgWireResult<Vec<FieldInfo>> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let metadata = field.metadata();
            let number = |key: &str| metadata.get(key).and_then(|v| v.parse::<i64>().ok());
            let info = FieldInfo::new(
                display_name(field.name()).to_owned(),
                number(TABLE_OID_METADATA).map(|oid| oid as i32),
                number(ATTNUM_METADATA).map(|attnum| attnum as i16),
                pg_type(field)?,
                format_for(formats, index),
            );
            Ok(match number(TYPMOD_METADATA) {
                Some(typmod) => info.with_type_modifier(typmod as i32),
                None => info,
            })
        })
        .collect()
}

/// The width a `character(n)` column's values are padded to.
fn padded_width(field: &Field) -> Option<usize> {
    let metadata = field.metadata();
    if metadata.get(PG_TYPE_METADATA).map(String::as_str) != Some("bpchar") {
        return None;
    }
    let typmod: usize = metadata.get(TYPMOD_METADATA)?.parse().ok()?;
    typmod.checked_sub(4)
}

/// How one result column is encoded.
#[derive(Debug, Clone, Copy)]
enum ColumnKind {
    /// Utf8 holding the text form of uuid/json/jsonb/varchar/...
    TextBacked,
    /// Utf8 holding type names that all name the type of this OID (a
    /// `regtype` column), whose binary form is the OID.
    RegType(u32),
    /// Text format of a type whose PostgreSQL text output pgaccel renders
    /// itself (see [`super::text`]).
    PgText,
    /// Decimal128 as `numeric`, text or binary (see [`super::numeric`]).
    Numeric,
    /// PostgreSQL's own text of a forwarded query's value, sent as it is,
    /// or in binary (see [`super::forwarded`]).
    Forwarded,
    /// Everything else, through arrow-pg.
    Default,
}

fn column_kind(field: &Field, pg_field: &FieldInfo) -> ColumnKind {
    if forwarded_type(field).is_some() {
        return ColumnKind::Forwarded;
    }
    if let DataType::List(element) = field.data_type() {
        // Vectors print space-separated; other lists as array literals,
        // through arrow-pg unless their elements print by the session's
        // settings (floats, dates and times).
        let by_settings = crate::query::text::prints_by_settings(element.data_type());
        return if (list_type(field).is_some() || by_settings)
            && pg_field.format() == FieldFormat::Text
        {
            ColumnKind::PgText
        } else {
            ColumnKind::Default
        };
    }
    if let Some(oid) = field
        .metadata()
        .get(REGTYPE_OID_METADATA)
        .and_then(|oid| oid.parse().ok())
    {
        return ColumnKind::RegType(oid);
    }
    if special_type(field).is_some() {
        return ColumnKind::TextBacked;
    }
    if matches!(field.data_type(), DataType::Decimal128(..)) {
        return ColumnKind::Numeric;
    }
    let pg_text = crate::query::text::prints_by_settings(field.data_type())
        || matches!(
            field.data_type(),
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        );
    if pg_text && pg_field.format() == FieldFormat::Text {
        ColumnKind::PgText
    } else {
        ColumnKind::Default
    }
}

/// How the rows of one result schema are encoded in one set of formats:
/// worked out once per statement, not per row or per execution.
#[derive(Debug)]
pub struct RowEncoding {
    fields: Arc<Vec<FieldInfo>>,
    kinds: Vec<ColumnKind>,
    /// `character(n)` columns: the width their values are padded to.
    widths: Vec<Option<usize>>,
    output: Arc<Output>,
}

impl RowEncoding {
    pub fn new(schema: &Schema, formats: &[i16], output: Arc<Output>) -> PgWireResult<RowEncoding> {
        let fields = fields(schema, formats)?;
        let kinds = schema
            .fields()
            .iter()
            .zip(fields.iter())
            .map(|(field, pg_field)| column_kind(field, pg_field))
            .collect();
        Ok(RowEncoding {
            fields: Arc::new(fields),
            kinds,
            widths: schema.fields().iter().map(|f| padded_width(f)).collect(),
            output,
        })
    }

    /// Whether rows encoded now would print as they would under `output`.
    pub fn prints_as(&self, output: &Output) -> bool {
        *self.output == *output
    }

    /// The row description.
    pub fn fields(&self) -> &Arc<Vec<FieldInfo>> {
        &self.fields
    }

    /// Encodes every row of `batch`, whose schema is the one this encoding
    /// was made for.
    pub fn rows(&self, batch: &RecordBatch) -> PgWireResult<Vec<DataRow>> {
        let schema = batch.schema_ref();
        let fields = &self.fields;
        let mut encoder = DataRowEncoder::new(Arc::clone(fields));
        let mut rows = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            for (column, array) in batch.columns().iter().enumerate() {
                let pg_field = &fields[column];
                match self.kinds[column] {
                    ColumnKind::RegType(oid) => {
                        let value = (!array.is_null(row)).then(|| match pg_field.format() {
                            FieldFormat::Text => {
                                Written(BytesMut::from(string_value(array, row).as_bytes()))
                            }
                            FieldFormat::Binary => Written(BytesMut::from(&oid.to_be_bytes()[..])),
                        });
                        encode_with(&mut encoder, &value, pg_field)?;
                    }
                    ColumnKind::TextBacked => {
                        let value = (!array.is_null(row)).then(|| {
                            let mut text = string_value(array, row);
                            if let Some(width) = self.widths[column] {
                                let length = text.chars().count();
                                text.extend(std::iter::repeat_n(' ', width.saturating_sub(length)));
                            }
                            TextBacked(text)
                        });
                        encode_with(&mut encoder, &value, pg_field)?;
                    }
                    ColumnKind::PgText => {
                        let value = pg_text(array, row, &self.output, Some(pg_field.datatype()))?
                            .map(TextBacked);
                        encode_with(&mut encoder, &value, pg_field)?;
                    }
                    ColumnKind::Forwarded => {
                        let value = match array.is_null(row) {
                            true => None,
                            false => {
                                let text = string_value(array, row);
                                Some(Written(match pg_field.format() {
                                    FieldFormat::Text => BytesMut::from(text.as_bytes()),
                                    FieldFormat::Binary => {
                                        forwarded::binary(pg_field.datatype(), &text)
                                            .map_err(super::user_error)?
                                    }
                                }))
                            }
                        };
                        encode_with(&mut encoder, &value, pg_field)?;
                    }
                    ColumnKind::Numeric => {
                        let value = (!array.is_null(row))
                            .then(|| numeric_value(array, row).written(pg_field.format()));
                        encode_with(&mut encoder, &value, pg_field)?;
                    }
                    // NULL is the same for every type; arrow-pg's encoder
                    // writes a zero interval for a NULL one.
                    ColumnKind::Default if array.is_null(row) => {
                        encoder.encode_field_with_type_and_format(
                            &None::<i32>,
                            pg_field.datatype(),
                            pg_field.format(),
                            pg_field.format_options(),
                        )?;
                    }
                    ColumnKind::Default
                        if pg_field.format() == FieldFormat::Binary
                            && is_empty_list(array, row) =>
                    {
                        encoder.encode_field_with_type_and_format(
                            &Some(empty_array(pg_field.datatype())),
                            pg_field.datatype(),
                            pg_field.format(),
                            pg_field.format_options(),
                        )?;
                    }
                    ColumnKind::Default if text::infinite_date(array, row).is_some() => {
                        encoder.encode_field_with_type_and_format(
                            &Some(infinite_date(array, row, pg_field.format())),
                            pg_field.datatype(),
                            pg_field.format(),
                            pg_field.format_options(),
                        )?;
                    }
                    ColumnKind::Default => {
                        encode_value(&mut encoder, array, row, schema.field(column), pg_field)?
                    }
                }
            }
            rows.push(encoder.take_row());
        }
        Ok(rows)
    }
}

fn encode_with<T: ToSql + ToSqlText + Sized>(
    encoder: &mut DataRowEncoder,
    value: &T,
    field: &FieldInfo,
) -> PgWireResult<()> {
    encoder.encode_field_with_type_and_format(
        value,
        field.datatype(),
        field.format(),
        field.format_options(),
    )
}

/// PostgreSQL's text form of a value whose printing depends on the
/// session's settings.
fn pg_text(
    array: &Arc<dyn Array>,
    row: usize,
    output: &Output,
    field_type: Option<&Type>,
) -> PgWireResult<Option<String>> {
    let vector = matches!(
        field_type,
        Some(pg_type) if *pg_type == Type::INT2_VECTOR || *pg_type == Type::OID_VECTOR
    );
    text::value_text(array, row, output, vector).map_err(super::user_error)
}

/// The numeric at `row`. A numeric column holds decimals, except for the
/// values a decimal cannot hold (`NaN`, `Infinity`), which a parameter
/// passed through uncast (`SELECT $1::numeric`) carries as float8.
fn numeric_value(array: &Arc<dyn Array>, row: usize) -> Numeric {
    match array.data_type() {
        DataType::Decimal128(..) => {
            let decimals = array.as_primitive::<Decimal128Type>();
            Numeric::Finite {
                value: decimals.value(row),
                scale: decimals.scale(),
            }
        }
        _ => match ScalarValue::try_from_array(array, row)
            .and_then(|value| value.cast_to(&DataType::Float64))
        {
            Ok(ScalarValue::Float64(Some(float))) if !float.is_finite() => Numeric::Special(float),
            Ok(ScalarValue::Float64(Some(float))) => {
                // The shortest text that reads back as the float, as a
                // decimal of its own scale.
                let text = float.to_string();
                let scale = text.split_once('.').map_or(0, |(_, f)| f.len());
                Numeric::Finite {
                    value: text.replace('.', "").parse().unwrap_or_default(),
                    scale: i8::try_from(scale).unwrap_or(i8::MAX),
                }
            }
            _ => Numeric::Special(f64::NAN),
        },
    }
}

/// A `numeric` value: an unscaled integer and its scale, or one of
/// `NaN`, `Infinity` and `-Infinity`.
#[derive(Debug)]
enum Numeric {
    Finite { value: i128, scale: i8 },
    Special(f64),
}

impl Numeric {
    fn written(&self, format: FieldFormat) -> Written {
        let mut out = BytesMut::new();
        match (self, format) {
            (Numeric::Finite { value, scale }, FieldFormat::Binary) => {
                numeric::binary(*value, *scale, &mut out)
            }
            (Numeric::Special(float), FieldFormat::Binary) => {
                numeric::binary_special(*float, &mut out)
            }
            (Numeric::Finite { value, scale }, FieldFormat::Text) => {
                out.put_slice(numeric::text(*value, *scale).as_bytes())
            }
            (Numeric::Special(float), FieldFormat::Text) => {
                out.put_slice(numeric::special_text(*float).as_bytes())
            }
        }
        Written(out)
    }
}

/// A value pgaccel writes itself, already in the form (text or binary) of
/// its column: for what arrow-pg's encoder writes otherwise than PostgreSQL.
#[derive(Debug)]
struct Written(BytesMut);

impl ToSql for Written {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.put_slice(&self.0);
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl ToSqlText for Written {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _format_options: &FormatOptions,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.put_slice(&self.0);
        Ok(IsNull::No)
    }
}

/// A `timetz` as PostgreSQL prints it (`12:34:56.5+02`, `01:02:03-09:30`)
/// in its binary form: microseconds of the day, and the zone in seconds
/// west of UTC.
fn timetz_binary(text: &str) -> Option<(i64, i32)> {
    let split = text.rfind(['+', '-'])?;
    let (time, zone) = text.split_at(split);
    let time = chrono::NaiveTime::parse_from_str(time, "%H:%M:%S%.f").ok()?;
    let micros = i64::from(chrono::Timelike::num_seconds_from_midnight(&time)) * 1_000_000
        + i64::from(chrono::Timelike::nanosecond(&time) / 1000);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let mut east = 0;
    for (part, unit) in zone[1..].split(':').zip([3600, 60, 1]) {
        east += part.parse::<i32>().ok()? * unit;
    }
    Some((micros, -sign * east))
}

/// `infinity` or `-infinity` of a date: in binary the sentinel day number
/// pgaccel keeps it as ([`text::DATE_INFINITY`]), which is PostgreSQL's too.
fn infinite_date(array: &Arc<dyn Array>, row: usize, format: FieldFormat) -> Written {
    let mut out = BytesMut::new();
    match format {
        FieldFormat::Binary => out.put_i32(
            array
                .as_primitive::<datafusion::arrow::datatypes::Date32Type>()
                .value(row),
        ),
        FieldFormat::Text => out.put_slice(
            text::infinite_date(array, row)
                .unwrap_or_default()
                .as_bytes(),
        ),
    }
    Written(out)
}

/// An array without elements in binary: PostgreSQL writes no dimension
/// (pgwire writes one of length 0, which some clients refuse in `COPY`).
fn empty_array(array_type: &Type) -> Written {
    let element = match array_type.kind() {
        postgres_types::Kind::Array(element) => element.oid(),
        _ => 0,
    };
    let mut out = BytesMut::new();
    out.put_i32(0); // dimensions
    out.put_i32(0); // flags: no NULLs
    out.put_u32(element);
    Written(out)
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

/// Whether the value at `row` is a list with no elements.
fn is_empty_list(array: &Arc<dyn Array>, row: usize) -> bool {
    match array.data_type() {
        DataType::List(_) => array.as_list::<i32>().value_length(row) == 0,
        DataType::LargeList(_) => array.as_list::<i64>().value_length(row) == 0,
        _ => false,
    }
}

impl ToSql for TextBacked {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match *ty {
            Type::UUID => out.put_slice(uuid::Uuid::parse_str(&self.0)?.as_bytes()),
            Type::NUMERIC => super::numeric::binary_text(&self.0, out),
            Type::JSONB => {
                // jsonb's binary form is a version byte (1) and the JSON text.
                out.put_u8(1);
                out.put_slice(self.0.as_bytes());
            }
            Type::INET | Type::CIDR => {
                let (address, bits) = match self.0.split_once('/') {
                    Some((address, bits)) => (
                        address.parse::<std::net::IpAddr>()?,
                        Some(bits.parse::<u8>()?),
                    ),
                    None => (self.0.parse::<std::net::IpAddr>()?, None),
                };
                // PostgreSQL's inet_send: family (2 for IPv4, 3 for IPv6),
                // netmask bits, whether it is a cidr, address length, address.
                let (family, octets): (u8, Vec<u8>) = match address {
                    std::net::IpAddr::V4(v4) => (2, v4.octets().to_vec()),
                    std::net::IpAddr::V6(v6) => (3, v6.octets().to_vec()),
                };
                let full = if family == 2 { 32 } else { 128 };
                out.put_u8(family);
                out.put_u8(bits.unwrap_or(full));
                out.put_u8(u8::from(*ty == Type::CIDR));
                out.put_u8(octets.len() as u8);
                out.put_slice(&octets);
            }
            Type::MACADDR | Type::MACADDR8 => {
                for part in self.0.split([':', '-']) {
                    out.put_u8(u8::from_str_radix(part, 16)?);
                }
            }
            Type::TIMETZ => {
                let (micros, west) = timetz_binary(&self.0)
                    .ok_or_else(|| format!("invalid timetz value \"{}\"", self.0))?;
                out.put_i64(micros);
                out.put_i32(west);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timetz_binary_as_postgres_sends_it() {
        assert_eq!(
            timetz_binary("12:34:56.5+02"),
            Some((45_296_500_000, -7200))
        );
        assert_eq!(
            timetz_binary("01:02:03-09:30"),
            Some((3_723_000_000, 34_200))
        );
        assert_eq!(timetz_binary("nonsense"), None);
    }
}
