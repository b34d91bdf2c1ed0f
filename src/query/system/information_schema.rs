//! `information_schema`, the SQL standard's catalog, over the datasets and
//! the catalog's own tables: schemas, tables, columns with their declared
//! types (`character varying(40)` as `data_type` plus
//! `character_maximum_length`, `numeric(12,2)` as precision and scale),
//! primary keys and `NOT NULL` constraints, as PostgreSQL lists them.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{Result, ScalarValue};

use super::System;
use super::oids;
use super::relations::Datasets;
use super::rows::{Rows, int, text};
use crate::accelerator::PG_TYPE_METADATA;
use crate::query::engine::SessionInfo;

/// The views of `information_schema` pgaccel answers.
pub const TABLES: &[&str] = &[
    "schemata",
    "tables",
    "columns",
    "views",
    "table_constraints",
    "key_column_usage",
    "constraint_column_usage",
    "referential_constraints",
    "check_constraints",
    "routines",
    "parameters",
    "character_sets",
    "sequences",
    "triggers",
    "domains",
    "element_types",
    "table_privileges",
    "enabled_roles",
];

/// `information_schema.<name>` for a view name.
pub fn qualified(name: &str) -> Option<&'static str> {
    let name = name.to_lowercase();
    TABLES.iter().position(|table| *table == name).map(|index| {
        const QUALIFIED: &[&str] = &[
            "information_schema.schemata",
            "information_schema.tables",
            "information_schema.columns",
            "information_schema.views",
            "information_schema.table_constraints",
            "information_schema.key_column_usage",
            "information_schema.constraint_column_usage",
            "information_schema.referential_constraints",
            "information_schema.check_constraints",
            "information_schema.routines",
            "information_schema.parameters",
            "information_schema.character_sets",
            "information_schema.sequences",
            "information_schema.triggers",
            "information_schema.domains",
            "information_schema.element_types",
            "information_schema.table_privileges",
            "information_schema.enabled_roles",
        ];
        QUALIFIED[index]
    })
}

/// A `sql_identifier` column: `name` on the wire.
fn identifier(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
        .with_metadata([(PG_TYPE_METADATA.to_owned(), "name".to_owned())].into())
}

/// A `character_data` or `yes_or_no` column.
fn character(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
        .with_metadata([(PG_TYPE_METADATA.to_owned(), "varchar".to_owned())].into())
}

/// A `cardinal_number` column.
fn cardinal(name: &str) -> Field {
    Field::new(name, DataType::Int32, true)
}

fn schema(fields: Vec<Field>) -> SchemaRef {
    Arc::new(Schema::new(fields))
}

fn yes(value: bool) -> ScalarValue {
    text(if value { "YES" } else { "NO" })
}

fn optional(value: Option<i32>) -> ScalarValue {
    ScalarValue::Int32(value)
}

pub fn build(system: &System, name: &str, session: Option<&SessionInfo>) -> Result<RecordBatch> {
    let datasets = Datasets::of(&system.registry, &system.types);
    let database = session.map_or_else(String::new, |s| s.identity.database.clone());
    let view = name.trim_start_matches("information_schema.");
    match view {
        "schemata" => schemata(&datasets, &database, session),
        "tables" => tables(system, &datasets, &database),
        "columns" => columns(system, &datasets, &database),
        "table_constraints" => table_constraints(&datasets, &database),
        "key_column_usage" => key_column_usage(&datasets, &database, true),
        "constraint_column_usage" => key_column_usage(&datasets, &database, false),
        "check_constraints" => check_constraints(&datasets, &database),
        "character_sets" => character_sets(&database),
        "table_privileges" => table_privileges(&datasets, &database, session),
        "enabled_roles" => enabled_roles(session),
        other => empty(other),
    }
}

fn schemata(
    datasets: &Datasets,
    database: &str,
    session: Option<&SessionInfo>,
) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema(vec![
        identifier("catalog_name"),
        identifier("schema_name"),
        identifier("schema_owner"),
        identifier("default_character_set_catalog"),
        identifier("default_character_set_schema"),
        identifier("default_character_set_name"),
        character("sql_path"),
    ]));
    let owner = session.map_or("postgres", |s| s.identity.user.as_str());
    let mut names = vec![
        "information_schema".to_owned(),
        "pg_catalog".to_owned(),
        "pg_toast".to_owned(),
        "public".to_owned(),
    ];
    names.extend(datasets.schemas());
    names.sort();
    names.dedup();
    for name in names {
        let owner = if name == "public" { owner } else { "postgres" };
        rows.push(&[
            ("catalog_name", text(database)),
            ("schema_name", text(name)),
            ("schema_owner", text(owner)),
        ]);
    }
    rows.finish()
}

fn tables(system: &System, datasets: &Datasets, database: &str) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema(vec![
        identifier("table_catalog"),
        identifier("table_schema"),
        identifier("table_name"),
        character("table_type"),
        identifier("self_referencing_column_name"),
        character("reference_generation"),
        identifier("user_defined_type_catalog"),
        identifier("user_defined_type_schema"),
        identifier("user_defined_type_name"),
        character("is_insertable_into"),
        character("is_typed"),
        character("commit_action"),
    ]));
    let mut push = |schema: &str, table: &str, kind: &str| {
        rows.push(&[
            ("table_catalog", text(database)),
            ("table_schema", text(schema)),
            ("table_name", text(table)),
            ("table_type", text(kind)),
            ("is_insertable_into", yes(kind == "BASE TABLE")),
            ("is_typed", yes(false)),
        ]);
    };
    for relation in &datasets.0 {
        push(&relation.schema, &relation.table, "BASE TABLE");
    }
    for relation in &system.system_relations {
        let schema = if relation.namespace == oids::PG_CATALOG_NAMESPACE {
            "pg_catalog"
        } else {
            "information_schema"
        };
        let kind = if relation.kind == "r" {
            "BASE TABLE"
        } else {
            "VIEW"
        };
        push(schema, &relation.name, kind);
    }
    rows.finish()
}

fn columns(system: &System, datasets: &Datasets, database: &str) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema(vec![
        identifier("table_catalog"),
        identifier("table_schema"),
        identifier("table_name"),
        identifier("column_name"),
        cardinal("ordinal_position"),
        character("column_default"),
        character("is_nullable"),
        character("data_type"),
        cardinal("character_maximum_length"),
        cardinal("character_octet_length"),
        cardinal("numeric_precision"),
        cardinal("numeric_precision_radix"),
        cardinal("numeric_scale"),
        cardinal("datetime_precision"),
        character("interval_type"),
        cardinal("interval_precision"),
        identifier("character_set_catalog"),
        identifier("character_set_schema"),
        identifier("character_set_name"),
        identifier("collation_catalog"),
        identifier("collation_schema"),
        identifier("collation_name"),
        identifier("domain_catalog"),
        identifier("domain_schema"),
        identifier("domain_name"),
        identifier("udt_catalog"),
        identifier("udt_schema"),
        identifier("udt_name"),
        identifier("scope_catalog"),
        identifier("scope_schema"),
        identifier("scope_name"),
        cardinal("maximum_cardinality"),
        identifier("dtd_identifier"),
        character("is_self_referencing"),
        character("is_identity"),
        character("identity_generation"),
        character("identity_start"),
        character("identity_increment"),
        character("identity_maximum"),
        character("identity_minimum"),
        character("identity_cycle"),
        character("is_generated"),
        character("generation_expression"),
        character("is_updatable"),
    ]));
    let types = &system.types;
    for relation in &datasets.0 {
        for (index, (name, column)) in relation.columns.iter().enumerate() {
            let sql = types.sql_info(column.oid, column.typmod);
            let udt = types
                .get(column.oid)
                .map_or_else(|| "text".to_owned(), |info| info.name.clone());
            let position = index as i32 + 1;
            rows.push(&[
                ("table_catalog", text(database)),
                ("table_schema", text(&relation.schema)),
                ("table_name", text(&relation.table)),
                ("column_name", text(name)),
                ("ordinal_position", int(position)),
                ("is_nullable", yes(!column.not_null)),
                ("data_type", text(sql.data_type)),
                (
                    "character_maximum_length",
                    optional(sql.character_maximum_length),
                ),
                (
                    "character_octet_length",
                    optional(sql.character_octet_length),
                ),
                ("numeric_precision", optional(sql.numeric_precision)),
                (
                    "numeric_precision_radix",
                    optional(sql.numeric_precision_radix),
                ),
                ("numeric_scale", optional(sql.numeric_scale)),
                ("datetime_precision", optional(sql.datetime_precision)),
                ("udt_catalog", text(database)),
                ("udt_schema", text("pg_catalog")),
                ("udt_name", text(udt)),
                ("dtd_identifier", text(position.to_string())),
                ("is_self_referencing", yes(false)),
                ("is_identity", yes(false)),
                ("identity_cycle", yes(false)),
                ("is_generated", text("NEVER")),
                ("is_updatable", yes(true)),
            ]);
        }
    }
    rows.finish()
}

fn constraint_fields() -> Vec<Field> {
    vec![
        identifier("constraint_catalog"),
        identifier("constraint_schema"),
        identifier("constraint_name"),
    ]
}

/// PostgreSQL's name for a column's `NOT NULL` check in information_schema.
fn not_null_name(schema: &str, relation: i32, attnum: usize) -> String {
    format!("{}_{relation}_{attnum}_not_null", oids::namespace(schema))
}

fn table_constraints(datasets: &Datasets, database: &str) -> Result<RecordBatch> {
    let mut fields = constraint_fields();
    fields.extend([
        identifier("table_catalog"),
        identifier("table_schema"),
        identifier("table_name"),
        character("constraint_type"),
        character("is_deferrable"),
        character("initially_deferred"),
        character("enforced"),
        character("nulls_distinct"),
    ]);
    let mut rows = Rows::new(schema(fields));
    for relation in &datasets.0 {
        let mut push = |name: String, kind: &str| {
            rows.push(&[
                ("constraint_catalog", text(database)),
                ("constraint_schema", text(&relation.schema)),
                ("constraint_name", text(name)),
                ("table_catalog", text(database)),
                ("table_schema", text(&relation.schema)),
                ("table_name", text(&relation.table)),
                ("constraint_type", text(kind)),
                ("is_deferrable", yes(false)),
                ("initially_deferred", yes(false)),
                ("enforced", yes(true)),
            ]);
        };
        if !relation.key.is_empty() {
            push(relation.key_name(), "PRIMARY KEY");
        }
        for (index, (_, column)) in relation.columns.iter().enumerate() {
            if column.not_null {
                push(
                    not_null_name(&relation.schema, relation.oid, index + 1),
                    "CHECK",
                );
            }
        }
    }
    rows.finish()
}

/// `key_column_usage` (with `ordinal_position`) or
/// `constraint_column_usage`: the primary keys' columns.
fn key_column_usage(datasets: &Datasets, database: &str, key_usage: bool) -> Result<RecordBatch> {
    let table_fields = [
        identifier("table_catalog"),
        identifier("table_schema"),
        identifier("table_name"),
        identifier("column_name"),
    ];
    let fields = if key_usage {
        let mut fields = constraint_fields();
        fields.extend(table_fields);
        fields.extend([
            cardinal("ordinal_position"),
            cardinal("position_in_unique_constraint"),
        ]);
        fields
    } else {
        let mut fields = table_fields.to_vec();
        fields.extend(constraint_fields());
        fields
    };
    let mut rows = Rows::new(schema(fields));
    for relation in &datasets.0 {
        for (position, attnum) in relation.key.iter().enumerate() {
            rows.push(&[
                ("constraint_catalog", text(database)),
                ("constraint_schema", text(&relation.schema)),
                ("constraint_name", text(relation.key_name())),
                ("table_catalog", text(database)),
                ("table_schema", text(&relation.schema)),
                ("table_name", text(&relation.table)),
                (
                    "column_name",
                    text(&relation.columns[(*attnum - 1) as usize].0),
                ),
                ("ordinal_position", int(position as i32 + 1)),
            ]);
        }
    }
    rows.finish()
}

fn check_constraints(datasets: &Datasets, database: &str) -> Result<RecordBatch> {
    let mut fields = constraint_fields();
    fields.push(character("check_clause"));
    let mut rows = Rows::new(schema(fields));
    for relation in &datasets.0 {
        for (index, (name, column)) in relation.columns.iter().enumerate() {
            if column.not_null {
                rows.push(&[
                    ("constraint_catalog", text(database)),
                    ("constraint_schema", text(&relation.schema)),
                    (
                        "constraint_name",
                        text(not_null_name(&relation.schema, relation.oid, index + 1)),
                    ),
                    ("check_clause", text(format!("{name} IS NOT NULL"))),
                ]);
            }
        }
    }
    rows.finish()
}

fn character_sets(database: &str) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema(vec![
        identifier("character_set_catalog"),
        identifier("character_set_schema"),
        identifier("character_set_name"),
        identifier("character_repertoire"),
        identifier("form_of_use"),
        identifier("default_collate_catalog"),
        identifier("default_collate_schema"),
        identifier("default_collate_name"),
    ]));
    rows.push(&[
        ("character_set_name", text("UTF8")),
        ("character_repertoire", text("UCS")),
        ("form_of_use", text("UTF8")),
        ("default_collate_catalog", text(database)),
        ("default_collate_schema", text("pg_catalog")),
        ("default_collate_name", text("C.UTF-8")),
    ]);
    rows.finish()
}

fn table_privileges(
    datasets: &Datasets,
    database: &str,
    session: Option<&SessionInfo>,
) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema(vec![
        identifier("grantor"),
        identifier("grantee"),
        identifier("table_catalog"),
        identifier("table_schema"),
        identifier("table_name"),
        character("privilege_type"),
        character("is_grantable"),
        character("with_hierarchy"),
    ]));
    let grantee = session.map_or("postgres", |s| s.identity.user.as_str());
    for relation in &datasets.0 {
        rows.push(&[
            ("grantor", text("postgres")),
            ("grantee", text(grantee)),
            ("table_catalog", text(database)),
            ("table_schema", text(&relation.schema)),
            ("table_name", text(&relation.table)),
            ("privilege_type", text("SELECT")),
            ("is_grantable", yes(false)),
            ("with_hierarchy", yes(true)),
        ]);
    }
    rows.finish()
}

fn enabled_roles(session: Option<&SessionInfo>) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema(vec![identifier("role_name")]));
    if let Some(session) = session {
        rows.push(&[("role_name", text(&session.identity.user))]);
    }
    rows.finish()
}

/// The views pgaccel has nothing to list in: their columns, no rows.
fn empty(view: &str) -> Result<RecordBatch> {
    let names: &[&str] = match view {
        "views" => &[
            "table_catalog",
            "table_schema",
            "table_name",
            "view_definition",
            "check_option",
            "is_updatable",
            "is_insertable_into",
            "is_trigger_updatable",
            "is_trigger_deletable",
            "is_trigger_insertable_into",
        ],
        "referential_constraints" => &[
            "constraint_catalog",
            "constraint_schema",
            "constraint_name",
            "unique_constraint_catalog",
            "unique_constraint_schema",
            "unique_constraint_name",
            "match_option",
            "update_rule",
            "delete_rule",
        ],
        "routines" => &[
            "specific_catalog",
            "specific_schema",
            "specific_name",
            "routine_catalog",
            "routine_schema",
            "routine_name",
            "routine_type",
            "data_type",
            "type_udt_name",
            "routine_body",
            "routine_definition",
            "external_language",
            "is_deterministic",
        ],
        "parameters" => &[
            "specific_catalog",
            "specific_schema",
            "specific_name",
            "ordinal_position",
            "parameter_mode",
            "parameter_name",
            "data_type",
            "udt_name",
        ],
        "sequences" => &[
            "sequence_catalog",
            "sequence_schema",
            "sequence_name",
            "data_type",
            "numeric_precision",
            "start_value",
            "minimum_value",
            "maximum_value",
            "increment",
            "cycle_option",
        ],
        "triggers" => &[
            "trigger_catalog",
            "trigger_schema",
            "trigger_name",
            "event_manipulation",
            "event_object_catalog",
            "event_object_schema",
            "event_object_table",
            "action_order",
            "action_condition",
            "action_statement",
            "action_orientation",
            "action_timing",
        ],
        "domains" => &[
            "domain_catalog",
            "domain_schema",
            "domain_name",
            "data_type",
            "udt_name",
        ],
        _ => &[
            "object_catalog",
            "object_schema",
            "object_name",
            "object_type",
            "collection_type_identifier",
            "data_type",
        ],
    };
    Rows::new(schema(names.iter().map(|name| character(name)).collect())).finish()
}
