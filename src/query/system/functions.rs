//! The catalog's functions, answered from the same rows as the catalog
//! tables: `format_type()` with modifiers, `pg_get_indexdef()`,
//! `pg_get_constraintdef()`, `obj_description()`, `col_description()`,
//! relation sizes (the acceleration's), `pg_table_is_visible()` along the
//! session's `search_path`, role names, function signatures, and the small
//! text helpers catalog queries use (`quote_literal`, `pg_size_pretty`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, new_null_array};
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::FunctionRegistry;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};

use super::System;
use super::oids;
use super::relations::Datasets;
use crate::query::PgError;
use crate::query::engine::SessionInfo;

/// What a catalog function computes from the catalog, the session and its
/// arguments (`None` is SQL NULL).
type Body = fn(&Call<'_>, &[ScalarValue]) -> Option<ScalarValue>;

/// A call's context.
struct Call<'a> {
    system: &'a System,
    session: Option<&'a SessionInfo>,
}

impl Call<'_> {
    fn datasets(&self) -> Datasets {
        Datasets::of(&self.system.registry, &self.system.types)
    }
}

struct CatalogFunction {
    name: &'static str,
    signature: Signature,
    returns: DataType,
    body: Body,
    /// The error when the body finds nothing for arguments that are not
    /// NULL (a `'name'::regclass` input naming no relation); NULL without.
    missing: Option<fn(&[ScalarValue]) -> PgError>,
    system: Arc<System>,
}

impl std::fmt::Debug for CatalogFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogFunction")
            .field("name", &self.name)
            .finish()
    }
}

// A function is known by its name.
impl PartialEq for CatalogFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for CatalogFunction {}

impl std::hash::Hash for CatalogFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for CatalogFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.returns.clone())
    }

    fn return_field_from_args(
        &self,
        _args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        Ok(Arc::new(datafusion::arrow::datatypes::Field::new(
            self.name,
            self.returns.clone(),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = Call {
            system: &self.system,
            session: SessionInfo::of(&args.config_options),
        };
        let null = || ScalarValue::try_from(&self.returns);
        let evaluate = |values: &[ScalarValue]| -> Result<ScalarValue> {
            match (self.body)(&call, values) {
                Some(value) if value.data_type() == self.returns => Ok(value),
                Some(value) => value.cast_to(&self.returns),
                None => match self.missing {
                    Some(missing) if values.iter().all(|v| !v.is_null()) => {
                        Err(DataFusionError::External(Box::new(missing(values))))
                    }
                    _ => null(),
                },
            }
        };
        let rows = args.args.iter().find_map(|arg| match arg {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        });
        let row_values = |row: usize| -> Result<Vec<ScalarValue>> {
            args.args
                .iter()
                .map(|arg| match arg {
                    ColumnarValue::Scalar(value) => Ok(value.clone()),
                    ColumnarValue::Array(array) => ScalarValue::try_from_array(array, row),
                })
                .collect()
        };
        match rows {
            None => evaluate(&row_values(0)?).map(ColumnarValue::Scalar),
            Some(0) => Ok(ColumnarValue::Array(new_null_array(&self.returns, 0))),
            Some(rows) => {
                let values = (0..rows)
                    .map(|row| evaluate(&row_values(row)?))
                    .collect::<Result<Vec<_>>>()?;
                Ok(ColumnarValue::Array(ScalarValue::iter_to_array(values)?))
            }
        }
    }
}

/// The argument as an OID (any integer type, or text digits).
fn oid(value: Option<&ScalarValue>) -> Option<i32> {
    match value? {
        ScalarValue::Int32(v) => *v,
        ScalarValue::Int64(v) => v.map(|v| v as i32),
        ScalarValue::Int16(v) => v.map(i32::from),
        ScalarValue::UInt32(v) => v.map(|v| v as i32),
        ScalarValue::UInt64(v) => v.map(|v| v as i32),
        other => text_of(Some(other))?.parse().ok(),
    }
}

fn text_of(value: Option<&ScalarValue>) -> Option<String> {
    match value? {
        ScalarValue::Utf8(text) | ScalarValue::LargeUtf8(text) | ScalarValue::Utf8View(text) => {
            text.clone()
        }
        value if value.is_null() => None,
        other => Some(other.to_string()),
    }
}

fn number(value: Option<&ScalarValue>) -> Option<i64> {
    value?.cast_to(&DataType::Int64).ok().and_then(|v| match v {
        ScalarValue::Int64(n) => n,
        _ => None,
    })
}

fn text(value: impl Into<String>) -> Option<ScalarValue> {
    Some(ScalarValue::Utf8(Some(value.into())))
}

fn format_type(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let oid = oid(args.first())?;
    let typmod = number(args.get(1)).unwrap_or(-1) as i32;
    if oid == 0 {
        return text("-");
    }
    let name = call
        .system
        .types
        .format(oid, typmod)
        .unwrap_or_else(|| "???".to_owned());
    // A `character` without a length given as such (-1, not NULL) is
    // `bpchar`: `character` alone means `character(1)`.
    let given = args.get(1).is_some_and(|typmod| !typmod.is_null());
    text(match name.as_str() {
        "character" | "character[]" if given && typmod < 0 => {
            name.replacen("character", "bpchar", 1)
        }
        _ => name,
    })
}

fn domain_base_type(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let base = call.system.types.domain_base(oid(args.first())?)?;
    Some(ScalarValue::Int32(Some(base)))
}

/// The names of role `args[0]` and of every role it is a member of,
/// directly or through other roles (`pg_auth_members`); empty for an
/// unknown role.
fn role_memberships(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let role = oid(args.first())?;
    let roles = call.system.build("pg_roles", call.session).ok()?;
    let column = |batch: &datafusion::arrow::array::RecordBatch, name: &str, row: usize| {
        ScalarValue::try_from_array(batch.column_by_name(name)?, row).ok()
    };
    let name_of = |wanted: i32| {
        (0..roles.num_rows())
            .find(|row| oid(column(&roles, "oid", *row).as_ref()) == Some(wanted))
            .and_then(|row| text_of(column(&roles, "rolname", row).as_ref()))
    };
    let mut names = Vec::new();
    let mut seen = vec![role];
    let mut next = 0;
    while next < seen.len() {
        let current = seen[next];
        next += 1;
        let Some(name) = name_of(current) else {
            continue;
        };
        names.push(ScalarValue::Utf8(Some(name)));
        if let Some(members) = call.system.shipped("pg_auth_members") {
            for row in 0..members.num_rows() {
                if oid(column(members, "member", row).as_ref()) == Some(current)
                    && let Some(parent) = oid(column(members, "roleid", row).as_ref())
                    && !seen.contains(&parent)
                {
                    seen.push(parent);
                }
            }
        }
    }
    Some(ScalarValue::List(ScalarValue::new_list_nullable(
        &names,
        &DataType::Utf8,
    )))
}

fn index_definition(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let datasets = call.datasets();
    let relation = datasets.by_index_oid(oid(args.first())?)?;
    match number(args.get(1)).unwrap_or(0) {
        0 => text(relation.index_definition()),
        column => relation
            .key_columns()
            .get(usize::try_from(column - 1).ok()?)
            .cloned()
            .and_then(text),
    }
}

fn constraint_definition(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let datasets = call.datasets();
    let relation = datasets.by_constraint_oid(oid(args.first())?)?;
    text(format!(
        "PRIMARY KEY ({})",
        relation.key_columns().join(", ")
    ))
}

/// The `pg_description` class OID a catalog name stands for.
fn class_of(name: &str) -> Option<i32> {
    Some(match name.trim_start_matches("pg_catalog.") {
        "pg_class" => oids::PG_CLASS,
        "pg_namespace" => oids::PG_NAMESPACE,
        "pg_constraint" => oids::PG_CONSTRAINT,
        "pg_proc" => 1255,
        "pg_type" => 1247,
        "pg_database" => 1262,
        "pg_am" => 2601,
        "pg_operator" => 2617,
        "pg_opclass" => 2616,
        "pg_language" => 2612,
        "pg_extension" => 3079,
        "pg_tablespace" => 1213,
        "pg_authid" => 1260,
        _ => return None,
    })
}

fn object_description(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let object = oid(args.first())?;
    let class = match args.get(1) {
        Some(name) => Some(class_of(&text_of(Some(name))?)?),
        None => None,
    };
    let datasets = call.datasets();
    if class.is_none_or(|class| class == oids::PG_CLASS)
        && let Some(relation) = datasets.by_oid(object)
    {
        return relation.description.clone().and_then(text);
    }
    shipped_description(call, object, class, 0)
}

/// A description PostgreSQL ships for one of its own objects.
fn shipped_description(
    call: &Call<'_>,
    object: i32,
    class: Option<i32>,
    subid: i32,
) -> Option<ScalarValue> {
    let rows = call.system.shipped("pg_description")?;
    let objoid = rows.column_by_name("objoid")?.as_primitive::<Int32Type>();
    let classoid = rows.column_by_name("classoid")?.as_primitive::<Int32Type>();
    let objsubid = rows.column_by_name("objsubid")?.as_primitive::<Int32Type>();
    let descriptions = rows.column_by_name("description")?.as_string::<i32>();
    (0..rows.num_rows())
        .find(|&row| {
            objoid.value(row) == object
                && objsubid.value(row) == subid
                && class.is_none_or(|class| classoid.value(row) == class)
        })
        .and_then(|row| text(descriptions.value(row)))
}

fn column_description(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let table = oid(args.first())?;
    let column = number(args.get(1))?;
    let datasets = call.datasets();
    match datasets.by_oid(table) {
        Some(relation) => relation
            .column_descriptions
            .get(usize::try_from(column - 1).ok()?)?
            .clone()
            .and_then(text),
        None => shipped_description(call, table, Some(oids::PG_CLASS), column as i32),
    }
}

/// `pg_relation_size` and friends: the acceleration's size, in bytes.
fn relation_size(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let object = oid(args.first())?;
    let datasets = call.datasets();
    let bytes = datasets
        .by_oid(object)
        .or_else(|| datasets.by_index_oid(object))
        .map_or(0, |relation| relation.bytes);
    Some(ScalarValue::Int64(Some(bytes as i64)))
}

fn table_is_visible(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let object = oid(args.first())?;
    let datasets = call.datasets();
    let Some(relation) = datasets
        .by_oid(object)
        .or_else(|| datasets.by_index_oid(object))
    else {
        // The catalog's own relations are always on the path.
        return Some(ScalarValue::Boolean(Some(true)));
    };
    let visible = call.session.is_none_or(|session| {
        let path = session.settings().search_path();
        let user = &session.identity.user;
        let in_path = |schema: &str| {
            path.iter()
                .any(|entry| entry == schema || (entry == "$user" && user == schema))
        };
        // Visible when its schema is on the path and no earlier schema has
        // a dataset of the same name.
        in_path(&relation.schema)
            && !datasets.0.iter().any(|other| {
                other.table == relation.table
                    && other.schema != relation.schema
                    && in_path(&other.schema)
                    && path.iter().position(|p| *p == other.schema)
                        < path.iter().position(|p| *p == relation.schema)
            })
    });
    Some(ScalarValue::Boolean(Some(visible)))
}

fn user_name(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let role = oid(args.first())?;
    if role == oids::BOOTSTRAP_SUPERUSER {
        return text("postgres");
    }
    if let Some(session) = call.session
        && oids::role(&session.identity.user) == role
    {
        return text(&session.identity.user);
    }
    text(format!("unknown (OID={role})"))
}

/// PostgreSQL's `quote_literal`: doubled quotes, and `E'...'` with doubled
/// backslashes when the text has any.
fn quote_literal(_: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    text(literal(&text_of(args.first())?))
}

fn literal(value: &str) -> String {
    let escaped = value.replace('\'', "''");
    if value.contains('\\') {
        format!("E'{}'", escaped.replace('\\', "\\\\"))
    } else {
        format!("'{escaped}'")
    }
}

fn quote_nullable(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    quote_literal(call, args).or_else(|| text("NULL"))
}

/// PostgreSQL's `pg_size_pretty(bigint)`.
fn size_pretty(_: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let mut size = number(args.first())?;
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    // (name, limit, rounded, bits) as PostgreSQL's size_pretty_units.
    let units: [(&str, i64, bool, u32); 6] = [
        ("bytes", 10 * 1024, false, 0),
        ("kB", 20 * 1024 - 1, true, 10),
        ("MB", 20 * 1024 - 1, true, 20),
        ("GB", 20 * 1024 - 1, true, 30),
        ("TB", 20 * 1024 - 1, true, 40),
        ("PB", 20 * 1024 - 1, true, 50),
    ];
    for (index, (name, limit, round, bits)) in units.iter().enumerate() {
        let last = index + 1 == units.len();
        if last || size.abs() < *limit {
            if *round {
                size = half_rounded(size);
            }
            return text(format!("{size} {name}"));
        }
        let (_, _, next_round, next_bits) = units[index + 1];
        let shift = next_bits - bits - u32::from(next_round) + u32::from(*round);
        size /= 1i64 << shift;
    }
    None
}

/// `pg_get_function_arguments` / `_identity_arguments` / `_result` from the
/// shipped `pg_proc`.
fn function_arguments(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let (types, names, _) = procedure(call, oid(args.first())?)?;
    let arguments: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(index, oid)| {
            let formatted = call.system.types.format(*oid, -1).unwrap_or_default();
            match names.get(index).filter(|name| !name.is_empty()) {
                Some(name) => format!("{name} {formatted}"),
                None => formatted,
            }
        })
        .collect();
    text(arguments.join(", "))
}

fn function_result(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let (_, _, result) = procedure(call, oid(args.first())?)?;
    text(call.system.types.format(result, -1)?)
}

/// A function's argument types, argument names and result type.
fn procedure(call: &Call<'_>, object: i32) -> Option<(Vec<i32>, Vec<String>, i32)> {
    let rows = call.system.shipped("pg_proc")?;
    let oids = rows.column_by_name("oid")?.as_primitive::<Int32Type>();
    let row = (0..rows.num_rows()).find(|&row| oids.value(row) == object)?;
    let list = |name: &str| -> Vec<ScalarValue> {
        rows.column_by_name(name)
            .and_then(|column| ScalarValue::try_from_array(column, row).ok())
            .and_then(|value| match value {
                ScalarValue::List(list) if !list.is_null(0) => {
                    ScalarValue::convert_array_to_scalar_vec(list.as_ref())
                        .ok()
                        .and_then(|mut rows| rows.pop().flatten())
                }
                _ => None,
            })
            .unwrap_or_default()
    };
    let types = list("proargtypes")
        .iter()
        .filter_map(|v| oid(Some(v)))
        .collect();
    let names = list("proargnames")
        .iter()
        .map(|v| text_of(Some(v)).unwrap_or_default())
        .collect();
    let result = rows
        .column_by_name("prorettype")?
        .as_primitive::<Int32Type>()
        .value(row);
    Some((types, names, result))
}

/// `age(xid)`: every catalog row was written by one frozen transaction, so
/// it is as old as it can be. `age(timestamp)` is refused, not guessed.
fn transaction_age(_: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    match args.first()? {
        ScalarValue::Int64(_) | ScalarValue::Int32(_) | ScalarValue::UInt32(_) => {
            Some(ScalarValue::Int32(Some(0)))
        }
        _ => None,
    }
}

/// PostgreSQL's `format(fmt, ...)`: `%s` (text, NULL as empty), `%I` (an
/// identifier, quoted when needed), `%L` (a literal, NULL as `NULL`), `%%`,
/// each with an optional argument position (`%2$s`), `-` flag and width
/// (`%-10s`, `%*s`, `%*3$s`). A format PostgreSQL rejects gives NULL.
fn format(_: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let template = text_of(args.first())?;
    let values = &args[1..];
    let mut next = 0;
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    // Digits at the cursor, and whether a `$` follows them.
    fn number(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<usize> {
        let mut digits = String::new();
        while let Some(c) = chars.peek().filter(|c| c.is_ascii_digit()) {
            digits.push(*c);
            chars.next();
        }
        digits.parse().ok()
    }
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // `n$`: the argument's position; digits without `$` are a width.
        let mut width: Option<i64> = None;
        if let Some(n) = number(&mut chars) {
            if chars.peek() == Some(&'$') {
                chars.next();
                next = n.checked_sub(1)?;
            } else {
                width = Some(n as i64);
            }
        }
        let mut left = false;
        while chars.peek() == Some(&'-') {
            chars.next();
            left = true;
        }
        if width.is_none() {
            if chars.peek() == Some(&'*') {
                chars.next();
                let position = number(&mut chars);
                let index = match position {
                    Some(n) if chars.peek() == Some(&'$') => {
                        chars.next();
                        n.checked_sub(1)?
                    }
                    Some(_) => return None,
                    None => {
                        next += 1;
                        next - 1
                    }
                };
                let value = values.get(index)?;
                width = match value.cast_to(&DataType::Int64).ok()? {
                    ScalarValue::Int64(w) => w,
                    _ => return None,
                };
            } else {
                width = number(&mut chars).map(|n| n as i64);
            }
        }
        let kind = chars.next()?;
        let value = values.get(next)?;
        next += 1;
        let value = text_of(Some(value));
        let formatted = match (kind, value) {
            ('s', value) => value.unwrap_or_default(),
            ('I', Some(value)) => super::relations::quote(&value),
            ('L', Some(value)) => literal(&value),
            ('L', None) => "NULL".to_owned(),
            _ => return None,
        };
        let width = width.unwrap_or(0);
        let left = left || width < 0;
        let pad = (width.unsigned_abs() as usize).saturating_sub(formatted.chars().count());
        if left {
            out.push_str(&formatted);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&formatted);
        }
    }
    text(out)
}

/// PostgreSQL's encodings, by number.
const ENCODINGS: &[&str] = &[
    "SQL_ASCII",
    "EUC_JP",
    "EUC_CN",
    "EUC_KR",
    "EUC_TW",
    "EUC_JIS_2004",
    "UTF8",
    "MULE_INTERNAL",
    "LATIN1",
    "LATIN2",
    "LATIN3",
    "LATIN4",
    "LATIN5",
    "LATIN6",
    "LATIN7",
    "LATIN8",
    "LATIN9",
    "LATIN10",
    "WIN1256",
    "WIN1258",
    "WIN866",
    "WIN874",
    "KOI8R",
    "WIN1251",
    "WIN1252",
    "ISO_8859_5",
    "ISO_8859_6",
    "ISO_8859_7",
    "ISO_8859_8",
    "WIN1250",
    "WIN1253",
    "WIN1254",
    "WIN1255",
    "WIN1257",
    "KOI8U",
    "SJIS",
    "BIG5",
    "GBK",
    "UHC",
    "GB18030",
    "JOHAB",
    "SHIFT_JIS_2004",
];

/// `pg_encoding_to_char(n)`: the encoding's name, empty for no encoding.
fn encoding_name(_: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let number = usize::try_from(number(args.first())?).ok();
    text(number.and_then(|n| ENCODINGS.get(n)).copied().unwrap_or(""))
}

/// Each element of a text array with a prefix and suffix; NULL stays NULL,
/// and a NULL array gives an empty one (PostgreSQL's `ARRAY(SELECT ...
/// FROM unnest(NULL))`).
fn concat_each(_: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let prefix = text_of(args.get(1)).unwrap_or_default();
    let suffix = text_of(args.get(2)).unwrap_or_default();
    let elements = match args.first()? {
        ScalarValue::List(list) if !list.is_null(0) => {
            ScalarValue::convert_array_to_scalar_vec(list.as_ref())
                .ok()?
                .pop()
                .flatten()
                .unwrap_or_default()
        }
        _ => Vec::new(),
    };
    let values: Vec<ScalarValue> = elements
        .iter()
        .map(|element| {
            ScalarValue::Utf8(text_of(Some(element)).map(|e| format!("{prefix}{e}{suffix}")))
        })
        .collect();
    Some(ScalarValue::List(ScalarValue::new_list_nullable(
        &values,
        &DataType::Utf8,
    )))
}

fn always_true(_: &Call<'_>, _: &[ScalarValue]) -> Option<ScalarValue> {
    Some(ScalarValue::Boolean(Some(true)))
}

/// `btree`, the access method of every index pgaccel has (its primary
/// keys).
const BTREE_OID: i32 = 403;

/// `pg_indexam_has_property(am, property)`: btree's answers, NULL for an
/// unknown property or access method, as PostgreSQL answers.
fn index_am_property(_: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let am = oid(args.first())?;
    let property = text_of(args.get(1))?;
    let known = matches!(
        property.as_str(),
        "can_order" | "can_unique" | "can_multi_col" | "can_exclude" | "can_include"
    );
    (am == BTREE_OID && known).then_some(ScalarValue::Boolean(Some(true)))
}

/// `pg_index_has_property(index, property)` of a primary-key index.
fn index_property(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    call.datasets().by_index_oid(oid(args.first())?)?;
    let value = match text_of(args.get(1))?.as_str() {
        "clusterable" | "index_scan" | "bitmap_scan" | "backward_scan" => true,
        _ => return None,
    };
    Some(ScalarValue::Boolean(Some(value)))
}

/// `pg_index_column_has_property(index, column, property)` of a key
/// column of a primary-key index: ascending, NULLs last.
fn index_column_property(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let datasets = call.datasets();
    let relation = datasets.by_index_oid(oid(args.first())?)?;
    let column = number(args.get(1))?;
    if column < 1 || column as usize > relation.key_columns().len() {
        return None;
    }
    let value = match text_of(args.get(2))?.as_str() {
        "asc" | "nulls_last" | "orderable" | "returnable" | "search_array" | "search_nulls" => true,
        "desc" | "nulls_first" | "distance_orderable" => false,
        _ => return None,
    };
    Some(ScalarValue::Boolean(Some(value)))
}

fn nothing(_: &Call<'_>, _: &[ScalarValue]) -> Option<ScalarValue> {
    None
}

fn empty_text(_: &Call<'_>, _: &[ScalarValue]) -> Option<ScalarValue> {
    text("")
}

/// `to_regclass('name')`: the OID of the relation the name resolves to
/// along the search path, or NULL.
fn to_regclass(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let name = text_of(args.first())?;
    // A number is the OID itself, as in PostgreSQL's regclass input.
    if let Ok(number) = name.trim().parse::<u32>() {
        return Some(ScalarValue::Int32(Some(number as i32)));
    }
    // An identifier folds to lower case unless quoted.
    let part = |text: &str| match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => text.to_lowercase(),
    };
    let (schema, table) = match name.split_once('.') {
        Some((schema, table)) => (Some(part(schema)), part(table)),
        None => (None, part(&name)),
    };
    let (schema, table) = (schema.as_deref(), table.as_str());
    let datasets = call.datasets();
    let path = call
        .session
        .map(|s| s.settings().search_path())
        .unwrap_or_else(|| vec!["public".to_owned()]);
    let in_scope = |relation_schema: &str| match schema {
        Some(schema) => relation_schema == schema,
        None => path.iter().any(|p| p == relation_schema),
    };
    let found = datasets.0.iter().find_map(|relation| {
        if !in_scope(&relation.schema) {
            return None;
        }
        if relation.table == table {
            Some(relation.oid)
        } else if !relation.key.is_empty() && relation.key_name() == table {
            // The primary key's index, `<table>_pkey`.
            Some(relation.index_oid())
        } else {
            None
        }
    });
    if let Some(oid) = found {
        return Some(ScalarValue::Int32(Some(oid)));
    }
    call.system
        .system_relations
        .iter()
        .find(|relation| relation.name == table && schema.is_none_or(|s| s == "pg_catalog"))
        .map(|relation| ScalarValue::Int32(Some(relation.oid)))
}

/// `'name'::regclass` naming no relation.
fn missing_relation(args: &[ScalarValue]) -> PgError {
    let name = text_of(args.first()).unwrap_or_default();
    PgError::new(
        crate::query::sqlstate::UNDEFINED_TABLE,
        format!("relation \"{name}\" does not exist"),
    )
}

/// `'name'::regnamespace` naming no schema.
fn missing_schema(args: &[ScalarValue]) -> PgError {
    let name = text_of(args.first()).unwrap_or_default();
    PgError::new(
        crate::query::sqlstate::UNDEFINED_SCHEMA,
        format!("schema \"{name}\" does not exist"),
    )
}

fn to_regtype(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let name = text_of(args.first())?;
    let name = name.trim_start_matches("pg_catalog.");
    let name = match name {
        "integer" | "int" => "int4",
        "bigint" => "int8",
        "smallint" => "int2",
        "boolean" => "bool",
        "real" => "float4",
        "double precision" => "float8",
        "character varying" => "varchar",
        "character" => "bpchar",
        "timestamp with time zone" => "timestamptz",
        "timestamp without time zone" | "timestamp" => "timestamp",
        other => other,
    };
    call.system
        .types
        .oid_of(name)
        .map(|oid| ScalarValue::Int32(Some(oid)))
}

fn to_regnamespace(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let name = text_of(args.first())?;
    if let Ok(number) = name.trim().parse::<u32>() {
        return Some(ScalarValue::Int32(Some(number as i32)));
    }
    let known = matches!(
        name.as_str(),
        "pg_catalog" | "public" | "information_schema"
    ) || call.datasets().schemas().contains(&name);
    known.then(|| ScalarValue::Int32(Some(oids::namespace(&name))))
}

/// The names of catalog objects for OIDs (`oid::regclass` and friends, as
/// clients print them).
fn relation_name(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let object = oid(args.first())?;
    let datasets = call.datasets();
    // A dataset's table, or its primary key's index, schema-qualified when
    // its schema is not on the search path.
    let found = datasets
        .by_oid(object)
        .map(|relation| (relation, relation.table.clone()))
        .or_else(|| {
            datasets
                .by_index_oid(object)
                .map(|relation| (relation, relation.key_name()))
        });
    if let Some((relation, name)) = found {
        let visible = matches!(
            table_is_visible(call, args),
            Some(ScalarValue::Boolean(Some(true)))
        );
        return text(if visible {
            super::relations::quote(&name)
        } else {
            format!(
                "{}.{}",
                super::relations::quote(&relation.schema),
                super::relations::quote(&name)
            )
        });
    }
    call.system
        .system_relations
        .iter()
        .find(|relation| relation.oid == object)
        .map(|relation| relation.name.clone())
        .or_else(|| Some(object.to_string()))
        .and_then(text)
}

fn type_name(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let object = oid(args.first())?;
    text(
        call.system
            .types
            .format(object, -1)
            .unwrap_or_else(|| object.to_string()),
    )
}

fn namespace_name(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let object = oid(args.first())?;
    let mut names = vec![
        "pg_catalog".to_owned(),
        "public".to_owned(),
        "information_schema".to_owned(),
        "pg_toast".to_owned(),
    ];
    names.extend(call.datasets().schemas());
    names
        .into_iter()
        .find(|name| oids::namespace(name) == object || (name == "pg_toast" && object == 99))
        .or_else(|| Some(object.to_string()))
        .and_then(text)
}

/// The OID of the (first) function named `name`, for the catalog's
/// `regproc` columns, which keep names.
fn procedure_oid(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let name = text_of(args.first())?;
    let name = name.rsplit('.').next().unwrap_or(&name);
    if name == "-" {
        return Some(ScalarValue::Int32(Some(0)));
    }
    let rows = call.system.shipped("pg_proc")?;
    let oids = rows.column_by_name("oid")?.as_primitive::<Int32Type>();
    let names = rows.column_by_name("proname")?.as_string::<i32>();
    (0..rows.num_rows())
        .find(|&row| names.value(row) == name)
        .map(|row| ScalarValue::Int32(Some(oids.value(row))))
}

fn procedure_name(call: &Call<'_>, args: &[ScalarValue]) -> Option<ScalarValue> {
    let object = oid(args.first())?;
    let rows = call.system.shipped("pg_proc")?;
    let oids = rows.column_by_name("oid")?.as_primitive::<Int32Type>();
    let names = rows.column_by_name("proname")?.as_string::<i32>();
    (0..rows.num_rows())
        .find(|&row| oids.value(row) == object)
        .map(|row| names.value(row).to_owned())
        .or_else(|| Some(object.to_string()))
        .and_then(text)
}

/// Registers the catalog functions in `state`, over any of the same name.
/// `pg_typeof(value)`: the name of the value's PostgreSQL type, as
/// `format_type` prints it (without modifiers).
#[derive(Debug)]
struct TypeOf {
    system: Arc<System>,
    signature: Signature,
}

impl PartialEq for TypeOf {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for TypeOf {}

impl std::hash::Hash for TypeOf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        "pg_typeof".hash(state);
    }
}

impl ScalarUDFImpl for TypeOf {
    fn name(&self) -> &str {
        "pg_typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    /// A `regtype`: every value of the column names the argument's type.
    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        use crate::accelerator::{PG_TYPE_METADATA, REGTYPE_OID_METADATA};
        let field = args
            .arg_fields
            .first()
            .ok_or_else(|| DataFusionError::Plan("pg_typeof takes one argument".to_owned()))?;
        let oid = self.system.types.column(field).oid;
        let metadata = [
            (PG_TYPE_METADATA.to_owned(), "regtype".to_owned()),
            (REGTYPE_OID_METADATA.to_owned(), oid.to_string()),
        ];
        Ok(Arc::new(
            datafusion::arrow::datatypes::Field::new("pg_typeof", DataType::Utf8, false)
                .with_metadata(metadata.into()),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let field = args
            .arg_fields
            .first()
            .ok_or_else(|| DataFusionError::Plan("pg_typeof takes one argument".to_owned()))?;
        let types = &self.system.types;
        let column = types.column(field);
        let name = types
            .format(column.oid, -1)
            .unwrap_or_else(|| "unknown".to_owned());
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(name))))
    }
}

pub fn register(state: &mut SessionState, system: Arc<System>) -> Result<()> {
    use TypeSignature::{Any, Nullary};
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(TypeOf {
        system: Arc::clone(&system),
        signature: Signature::any(1, Volatility::Immutable),
    })))?;
    let text_type = DataType::Utf8;
    let definitions: Vec<(&'static str, Vec<TypeSignature>, DataType, Body)> = vec![
        ("format_type", vec![Any(2)], text_type.clone(), format_type),
        (
            crate::query::compat::DOMAIN_BASE_TYPE,
            vec![Any(1)],
            DataType::Int32,
            domain_base_type,
        ),
        (
            "pg_get_indexdef",
            vec![Any(1), Any(3)],
            text_type.clone(),
            index_definition,
        ),
        (
            "pg_get_constraintdef",
            vec![Any(1), Any(2)],
            text_type.clone(),
            constraint_definition,
        ),
        (
            "obj_description",
            vec![Any(1), Any(2)],
            text_type.clone(),
            object_description,
        ),
        (
            "col_description",
            vec![Any(2)],
            text_type.clone(),
            column_description,
        ),
        (
            "shobj_description",
            vec![Any(2)],
            text_type.clone(),
            nothing,
        ),
        (
            "pg_get_serial_sequence",
            vec![Any(2)],
            text_type.clone(),
            nothing,
        ),
        (
            crate::query::compat::ROLE_MEMBERSHIPS,
            vec![Any(1)],
            DataType::new_list(DataType::Utf8, true),
            role_memberships,
        ),
        (
            "pg_indexam_has_property",
            vec![Any(2)],
            DataType::Boolean,
            index_am_property,
        ),
        (
            "pg_index_has_property",
            vec![Any(2)],
            DataType::Boolean,
            index_property,
        ),
        (
            "pg_index_column_has_property",
            vec![Any(3)],
            DataType::Boolean,
            index_column_property,
        ),
        // pgaccel's catalog holds no expression trees (no defaults, checks
        // or partition bounds): every one is NULL, and so is its text.
        (
            "pg_get_expr",
            vec![Any(2), Any(3)],
            text_type.clone(),
            nothing,
        ),
        (
            "pg_get_viewdef",
            vec![Any(1), Any(2)],
            text_type.clone(),
            nothing,
        ),
        (
            "pg_get_triggerdef",
            vec![Any(1), Any(2)],
            text_type.clone(),
            nothing,
        ),
        (
            "pg_get_ruledef",
            vec![Any(1), Any(2)],
            text_type.clone(),
            nothing,
        ),
        (
            "pg_get_statisticsobjdef",
            vec![Any(1)],
            text_type.clone(),
            nothing,
        ),
        (
            "pg_tablespace_location",
            vec![Any(1)],
            text_type.clone(),
            empty_text,
        ),
        (
            "pg_relation_size",
            vec![Any(1), Any(2)],
            DataType::Int64,
            relation_size,
        ),
        (
            "pg_total_relation_size",
            vec![Any(1)],
            DataType::Int64,
            relation_size,
        ),
        (
            "pg_table_size",
            vec![Any(1)],
            DataType::Int64,
            relation_size,
        ),
        (
            "pg_indexes_size",
            vec![Any(1)],
            DataType::Int64,
            relation_size,
        ),
        (
            "pg_size_pretty",
            vec![Any(1)],
            text_type.clone(),
            size_pretty,
        ),
        (
            "pg_table_is_visible",
            vec![Any(1)],
            DataType::Boolean,
            table_is_visible,
        ),
        (
            "pg_type_is_visible",
            vec![Any(1)],
            DataType::Boolean,
            always_true,
        ),
        (
            "pg_function_is_visible",
            vec![Any(1)],
            DataType::Boolean,
            always_true,
        ),
        (
            "pg_collation_is_visible",
            vec![Any(1)],
            DataType::Boolean,
            always_true,
        ),
        (
            "pg_opclass_is_visible",
            vec![Any(1)],
            DataType::Boolean,
            always_true,
        ),
        (
            "pg_operator_is_visible",
            vec![Any(1)],
            DataType::Boolean,
            always_true,
        ),
        (
            "pg_conversion_is_visible",
            vec![Any(1)],
            DataType::Boolean,
            always_true,
        ),
        (
            "pg_ts_config_is_visible",
            vec![Any(1)],
            DataType::Boolean,
            always_true,
        ),
        (
            "pg_get_userbyid",
            vec![Any(1)],
            text_type.clone(),
            user_name,
        ),
        (
            "quote_literal",
            vec![Any(1)],
            text_type.clone(),
            quote_literal,
        ),
        (
            "quote_nullable",
            vec![Any(1)],
            text_type.clone(),
            quote_nullable,
        ),
        (
            "pg_get_function_arguments",
            vec![Any(1)],
            text_type.clone(),
            function_arguments,
        ),
        (
            "pg_get_function_identity_arguments",
            vec![Any(1)],
            text_type.clone(),
            function_arguments,
        ),
        (
            "pg_get_function_result",
            vec![Any(1)],
            text_type.clone(),
            function_result,
        ),
        ("to_regclass", vec![Any(1)], DataType::Int32, to_regclass),
        (
            "pgaccel_regclass_in",
            vec![Any(1)],
            DataType::Int32,
            to_regclass,
        ),
        (
            "pgaccel_regnamespace_in",
            vec![Any(1)],
            DataType::Int32,
            to_regnamespace,
        ),
        ("to_regtype", vec![Any(1)], DataType::Int32, to_regtype),
        (
            "to_regnamespace",
            vec![Any(1)],
            DataType::Int32,
            to_regnamespace,
        ),
        (
            "pgaccel_regclass_name",
            vec![Any(1)],
            text_type.clone(),
            relation_name,
        ),
        (
            "pgaccel_regtype_name",
            vec![Any(1)],
            text_type.clone(),
            type_name,
        ),
        (
            "pgaccel_regnamespace_name",
            vec![Any(1)],
            text_type.clone(),
            namespace_name,
        ),
        (
            "pgaccel_regproc_name",
            vec![Any(1)],
            text_type.clone(),
            procedure_name,
        ),
        (
            "pgaccel_regproc_oid",
            vec![Any(1)],
            DataType::Int32,
            procedure_oid,
        ),
        (
            "pgaccel_regrole_name",
            vec![Any(1)],
            text_type.clone(),
            user_name,
        ),
        (
            "pg_jit_available",
            vec![Nullary],
            DataType::Boolean,
            |_, _| Some(ScalarValue::Boolean(Some(false))),
        ),
        (
            "pg_get_function_sqlbody",
            vec![Any(1)],
            text_type.clone(),
            nothing,
        ),
        (
            "pg_get_functiondef",
            vec![Any(1)],
            text_type.clone(),
            nothing,
        ),
        ("age", vec![Any(1)], DataType::Int32, transaction_age),
        (
            "pg_encoding_to_char",
            vec![Any(1)],
            text_type.clone(),
            encoding_name,
        ),
        (
            "pgaccel_concat_each",
            vec![Any(3)],
            DataType::List(Arc::new(datafusion::arrow::datatypes::Field::new(
                "item",
                DataType::Utf8,
                true,
            ))),
            concat_each,
        ),
        (
            "format",
            vec![TypeSignature::VariadicAny],
            text_type.clone(),
            format,
        ),
    ];
    for (name, arguments, returns, body) in definitions {
        let signature = match arguments.len() {
            1 => Signature::new(
                arguments.into_iter().next().expect("one"),
                Volatility::Stable,
            ),
            _ => Signature::one_of(arguments, Volatility::Stable),
        };
        let missing = match name {
            "pgaccel_regclass_in" => Some(missing_relation as fn(&[ScalarValue]) -> PgError),
            "pgaccel_regnamespace_in" => Some(missing_schema as fn(&[ScalarValue]) -> PgError),
            _ => None,
        };
        let function = CatalogFunction {
            name,
            signature,
            returns,
            body,
            missing,
            system: Arc::clone(&system),
        };
        state
            .register_udf(Arc::new(ScalarUDF::new_from_impl(function)))
            .map_err(|e| DataFusionError::Internal(e.to_string()))?;
    }
    Ok(())
}

/// The catalog's set-returning functions, called in FROM.
#[derive(Debug)]
struct CatalogTableFunction {
    name: &'static str,
    system: Arc<System>,
}

impl datafusion::catalog::TableFunctionImpl for CatalogTableFunction {
    fn call_with_args(
        &self,
        args: datafusion::catalog::TableFunctionArgs,
    ) -> Result<Arc<dyn datafusion::catalog::TableProvider>> {
        use datafusion::arrow::datatypes::{Field, Schema};
        use datafusion::catalog::MemTable;
        match self.name {
            "pg_show_all_settings" => Ok(Arc::new(super::SystemTable {
                name: "pg_settings",
                schema: self.system.schema_of("pg_settings")?,
                system: Arc::clone(&self.system),
            })),
            // A table that is not partitioned is its own only ancestor.
            "pg_partition_ancestors" => {
                let relation = match args.exprs().first() {
                    Some(datafusion::logical_expr::Expr::Literal(value, _)) => oid(Some(value)),
                    _ => None,
                };
                let schema = Arc::new(Schema::new(vec![Field::new(
                    "relid",
                    DataType::Int32,
                    true,
                )]));
                let rows = datafusion::arrow::array::Int32Array::from(vec![relation]);
                let batch = datafusion::arrow::array::RecordBatch::try_new(
                    Arc::clone(&schema),
                    vec![Arc::new(rows)],
                )?;
                Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
            }
            // pgaccel has no extensions to offer.
            _ => {
                let text = |name: &str| Field::new(name, DataType::Utf8, true);
                let schema = Arc::new(Schema::new(vec![
                    text("name"),
                    text("version"),
                    Field::new("installed", DataType::Boolean, true),
                    Field::new("superuser", DataType::Boolean, true),
                    Field::new("trusted", DataType::Boolean, true),
                    Field::new("relocatable", DataType::Boolean, true),
                    text("schema"),
                    text("requires"),
                    text("comment"),
                    text("default_version"),
                    text("installed_version"),
                ]));
                Ok(Arc::new(MemTable::try_new(schema, vec![vec![]])?))
            }
        }
    }
}

/// Registers the catalog's set-returning functions in `state`.
pub fn register_table_functions(state: &mut SessionState, system: &Arc<System>) {
    for name in [
        "pg_show_all_settings",
        "pg_partition_ancestors",
        "pg_available_extension_versions",
        "pg_available_extensions",
    ] {
        state.register_udtf(
            name,
            Arc::new(CatalogTableFunction {
                name,
                system: Arc::clone(system),
            }),
        );
    }
}
