//! Types as the catalog describes them: each dataset column's PostgreSQL
//! type, modifier and nullability (from the source's declaration where
//! pgaccel has one, else from the Arrow type), and PostgreSQL's
//! `format_type()` and `information_schema` spellings of them.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Int16Type, Int32Type};

use crate::accelerator::{
    DECLARED_TYPE_METADATA, NOT_NULL_METADATA, PG_TYPE_METADATA, TYPMOD_METADATA,
};

/// What the catalog keeps of one type.
#[derive(Debug, Clone)]
pub struct TypeInfo {
    pub oid: i32,
    pub name: String,
    pub len: i16,
    pub by_value: bool,
    pub align: String,
    pub storage: String,
    pub category: String,
    /// The element type of an array type, 0 otherwise.
    pub element: i32,
    /// The array type of this type, 0 if none.
    pub array: i32,
    /// The type a domain is over, 0 for other types.
    pub base: i32,
}

/// Every type of `pg_type`, by OID and by name.
#[derive(Debug, Default)]
pub struct Types {
    by_oid: HashMap<i32, TypeInfo>,
    by_name: HashMap<String, i32>,
}

impl Types {
    /// Reads `pg_type`'s rows.
    pub fn from_pg_type(batch: &RecordBatch) -> Types {
        let text = |name: &str, row: usize| -> String {
            batch
                .column_by_name(name)
                .filter(|column| !column.is_null(row))
                .map(|column| column.as_string::<i32>().value(row).to_owned())
                .unwrap_or_default()
        };
        let int = |name: &str, row: usize| -> i32 {
            batch
                .column_by_name(name)
                .map(|column| column.as_primitive::<Int32Type>().value(row))
                .unwrap_or_default()
        };
        let mut types = Types::default();
        for row in 0..batch.num_rows() {
            let info = TypeInfo {
                oid: int("oid", row),
                name: text("typname", row),
                len: batch
                    .column_by_name("typlen")
                    .map(|c| c.as_primitive::<Int16Type>().value(row))
                    .unwrap_or(-1),
                by_value: batch
                    .column_by_name("typbyval")
                    .is_some_and(|c| c.as_boolean().value(row)),
                align: text("typalign", row),
                storage: text("typstorage", row),
                category: text("typcategory", row),
                element: int("typelem", row),
                array: int("typarray", row),
                base: int("typbasetype", row),
            };
            types.by_name.insert(info.name.clone(), info.oid);
            types.by_oid.insert(info.oid, info);
        }
        types
    }

    pub fn get(&self, oid: i32) -> Option<&TypeInfo> {
        self.by_oid.get(&oid)
    }

    /// The type at the end of a chain of domains starting from `oid`'s
    /// base type (0 when `oid` is no domain); None for an unknown type.
    pub fn domain_base(&self, oid: i32) -> Option<i32> {
        let mut base = self.get(oid)?.base;
        // A chain is as long as the catalog has types; a cycle cannot be
        // declared, but the bound keeps a bad row from looping.
        for _ in 0..self.by_oid.len() {
            match self.get(base) {
                Some(next) if next.base != 0 => base = next.base,
                _ => break,
            }
        }
        Some(base)
    }

    pub fn oid_of(&self, name: &str) -> Option<i32> {
        self.by_name.get(name).copied()
    }

    /// The type of a dataset column.
    pub fn column(&self, field: &Field) -> ColumnType {
        let metadata = field.metadata();
        let declared = metadata
            .get(DECLARED_TYPE_METADATA)
            .or_else(|| metadata.get(PG_TYPE_METADATA))
            .and_then(|name| self.oid_of(name));
        let oid = declared.unwrap_or_else(|| arrow_oid(field.data_type()));
        let typmod = if declared.is_some() {
            metadata
                .get(TYPMOD_METADATA)
                .and_then(|value| value.parse().ok())
                .unwrap_or(-1)
        } else {
            arrow_typmod(field.data_type())
        };
        let not_null = !field.is_nullable() || metadata.contains_key(NOT_NULL_METADATA);
        ColumnType {
            oid,
            typmod,
            not_null,
        }
    }

    /// PostgreSQL's `format_type(oid, typmod)`.
    pub fn format(&self, oid: i32, typmod: i32) -> Option<String> {
        let info = self.get(oid)?;
        if info.element != 0 && info.name.starts_with('_') {
            return Some(format!("{}[]", self.format(info.element, typmod)?));
        }
        let modifier = |text: String| if typmod >= 0 { text } else { String::new() };
        Some(match info.name.as_str() {
            "bool" => "boolean".to_owned(),
            "int2" => "smallint".to_owned(),
            "int4" => "integer".to_owned(),
            "int8" => "bigint".to_owned(),
            "float4" => "real".to_owned(),
            "float8" => "double precision".to_owned(),
            "char" => "\"char\"".to_owned(),
            "varchar" => format!("character varying{}", modifier(format!("({})", typmod - 4))),
            "bpchar" => format!("character{}", modifier(format!("({})", typmod - 4))),
            "numeric" => format!(
                "numeric{}",
                modifier(format!(
                    "({},{})",
                    ((typmod - 4) >> 16) & 0xffff,
                    (typmod - 4) & 0xffff
                ))
            ),
            "timestamp" => format!(
                "timestamp{} without time zone",
                modifier(format!("({typmod})"))
            ),
            "timestamptz" => format!(
                "timestamp{} with time zone",
                modifier(format!("({typmod})"))
            ),
            "time" => format!("time{} without time zone", modifier(format!("({typmod})"))),
            "timetz" => format!("time{} with time zone", modifier(format!("({typmod})"))),
            "interval" if typmod >= 0 => format!("interval({})", typmod & 0xffff),
            "bit" => format!("bit{}", modifier(format!("({typmod})"))),
            "varbit" => format!("bit varying{}", modifier(format!("({typmod})"))),
            name => name.to_owned(),
        })
    }
}

/// A dataset column's type in catalog terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnType {
    pub oid: i32,
    pub typmod: i32,
    pub not_null: bool,
}

/// The PostgreSQL type of values of an Arrow type.
pub fn arrow_oid(data_type: &DataType) -> i32 {
    // A 256-bit decimal holds a numeric computed at PostgreSQL's scale.
    if matches!(data_type, DataType::Decimal256(..)) {
        return 1700;
    }
    arrow_pg::datatypes::into_pg_type(data_type)
        .map(|t| t.oid() as i32)
        .unwrap_or(25)
}

/// The modifier an Arrow type implies: a decimal's precision and scale.
fn arrow_typmod(data_type: &DataType) -> i32 {
    match data_type {
        DataType::Decimal128(precision, scale) | DataType::Decimal256(precision, scale) => {
            ((i32::from(*precision) << 16) | i32::from(*scale as u8)) + 4
        }
        _ => -1,
    }
}

/// `information_schema.columns`' descriptive columns for a type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SqlTypeInfo {
    /// `data_type`: the SQL standard's name (`character varying`, `ARRAY`).
    pub data_type: String,
    pub character_maximum_length: Option<i32>,
    pub character_octet_length: Option<i32>,
    pub numeric_precision: Option<i32>,
    pub numeric_precision_radix: Option<i32>,
    pub numeric_scale: Option<i32>,
    pub datetime_precision: Option<i32>,
}

impl Types {
    /// How `information_schema` describes `oid` with `typmod`.
    pub fn sql_info(&self, oid: i32, typmod: i32) -> SqlTypeInfo {
        let Some(info) = self.get(oid) else {
            return SqlTypeInfo {
                data_type: "USER-DEFINED".to_owned(),
                ..SqlTypeInfo::default()
            };
        };
        let length = (typmod >= 4).then_some(typmod - 4);
        let text_octets = |length: Option<i32>| Some(length.map_or(1_073_741_824, |n| n * 4));
        let binary = |precision: i32| SqlTypeInfo {
            numeric_precision: Some(precision),
            numeric_precision_radix: Some(2),
            numeric_scale: Some(0),
            ..SqlTypeInfo::default()
        };
        let mut sql = match info.name.as_str() {
            "int2" => binary(16),
            "int4" => binary(32),
            "int8" => binary(64),
            "float4" => SqlTypeInfo {
                numeric_precision: Some(24),
                numeric_precision_radix: Some(2),
                ..SqlTypeInfo::default()
            },
            "float8" => SqlTypeInfo {
                numeric_precision: Some(53),
                numeric_precision_radix: Some(2),
                ..SqlTypeInfo::default()
            },
            "numeric" => SqlTypeInfo {
                numeric_precision: length.map(|m| (m >> 16) & 0xffff),
                numeric_scale: length.map(|m| m & 0xffff),
                numeric_precision_radix: Some(10),
                ..SqlTypeInfo::default()
            },
            "varchar" | "bpchar" => SqlTypeInfo {
                character_maximum_length: length,
                character_octet_length: text_octets(length),
                ..SqlTypeInfo::default()
            },
            "text" => SqlTypeInfo {
                character_octet_length: text_octets(None),
                ..SqlTypeInfo::default()
            },
            "date" => SqlTypeInfo {
                datetime_precision: Some(0),
                ..SqlTypeInfo::default()
            },
            "timestamp" | "timestamptz" | "time" | "timetz" | "interval" => SqlTypeInfo {
                datetime_precision: Some(if typmod >= 0 { typmod & 0xffff } else { 6 }),
                ..SqlTypeInfo::default()
            },
            _ => SqlTypeInfo::default(),
        };
        sql.data_type = match info.name.as_str() {
            _ if info.element != 0 && info.name.starts_with('_') => "ARRAY".to_owned(),
            "varchar" => "character varying".to_owned(),
            "bpchar" => "character".to_owned(),
            "timestamp" => "timestamp without time zone".to_owned(),
            "timestamptz" => "timestamp with time zone".to_owned(),
            "time" => "time without time zone".to_owned(),
            "timetz" => "time with time zone".to_owned(),
            "numeric" => "numeric".to_owned(),
            _ => self.format(oid, -1).unwrap_or_else(|| info.name.clone()),
        };
        sql
    }

    /// The collation of a column of type `oid`: the default for text types.
    pub fn collation(&self, oid: i32) -> i32 {
        match self.get(oid).map(|info| info.category.as_str()) {
            Some("S") if oid != 19 => super::oids::DEFAULT_COLLATION,
            Some("S") => 950,
            _ => 0,
        }
    }
}
