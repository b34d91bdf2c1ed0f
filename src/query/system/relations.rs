//! The catalog rows of relations: every loaded dataset as a table
//! (`pg_class`), its columns (`pg_attribute`), its primary key as a unique
//! index and a constraint (`pg_index`, `pg_constraint`, `pg_indexes`), its
//! schema (`pg_namespace`) and comments (`pg_description`); and the
//! catalog's own tables and views beside them.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::SchemaProvider;
use datafusion::common::{Result, ScalarValue};
use datafusion_pg_catalog::pg_catalog::oid_field::{kind, oid_field};

use super::System;
use super::oids;
use super::rows::{ArrayColumn, Rows, flag, int, list, small, text};
use super::types::{ColumnType, Types};
use crate::accelerator::DESCRIPTION_METADATA;
use crate::dataset::Registry;
use crate::query::engine::SessionInfo;

/// A dataset as a relation.
pub struct DatasetRelation {
    pub schema: String,
    pub table: String,
    pub oid: i32,
    pub columns: Vec<(String, ColumnType)>,
    /// Attribute numbers (1-based) of the primary-key columns.
    pub key: Vec<i16>,
    pub rows: usize,
    pub bytes: usize,
    pub description: Option<String>,
    pub column_descriptions: Vec<Option<String>>,
}

impl DatasetRelation {
    pub fn key_name(&self) -> String {
        format!("{}_pkey", self.table)
    }

    pub fn index_oid(&self) -> i32 {
        oids::primary_key_index(&self.schema, &self.table)
    }

    pub fn constraint_oid(&self) -> i32 {
        oids::primary_key_constraint(&self.schema, &self.table)
    }

    /// `CREATE UNIQUE INDEX ...` as `pg_get_indexdef` prints it.
    pub fn index_definition(&self) -> String {
        format!(
            "CREATE UNIQUE INDEX {} ON {}.{} USING btree ({})",
            self.key_name(),
            self.schema,
            self.table,
            self.key_columns().join(", ")
        )
    }

    pub fn key_columns(&self) -> Vec<String> {
        self.key
            .iter()
            .map(|attnum| quote(&self.columns[(*attnum - 1) as usize].0))
            .collect()
    }
}

/// An identifier quoted when PostgreSQL would quote it.
pub fn quote(name: &str) -> String {
    crate::query::statement::quote_identifier(name)
}

/// Every loaded dataset, as the catalog shows it.
pub struct Datasets(pub Vec<DatasetRelation>);

impl Datasets {
    pub fn of(registry: &Registry, types: &Types) -> Datasets {
        let relations = registry
            .iter()
            .filter_map(|dataset| {
                // What is loaded; for a dataset without acceleration, the
                // source's table (no key, size unknown).
                let (schema, key_names, rows, bytes) = match dataset.acceleration.current() {
                    Some(data) => (
                        Arc::clone(data.schema()),
                        data.key_names(),
                        data.rows(),
                        data.bytes() + data.index_bytes(),
                    ),
                    None if !dataset.config.acceleration.enabled => {
                        (dataset.federated()?.schema(), Vec::new(), 0, 0)
                    }
                    None => {
                        let version = dataset.acceleration.file_version()?;
                        (
                            Arc::clone(&version.checkpoint.schema),
                            version.checkpoint.primary_key.clone(),
                            version.reader.rows(),
                            usize::try_from(version.bytes).unwrap_or(usize::MAX),
                        )
                    }
                };
                let name = &dataset.config.name;
                let columns: Vec<(String, ColumnType)> = schema
                    .fields()
                    .iter()
                    .map(|field| (field.name().clone(), types.column(field)))
                    .collect();
                let key = key_names
                    .iter()
                    .filter_map(|key| columns.iter().position(|(name, _)| name == key))
                    .map(|index| index as i16 + 1)
                    .collect();
                Some(DatasetRelation {
                    schema: name.schema.clone(),
                    table: name.table.clone(),
                    oid: oids::relation(&name.schema, &name.table),
                    columns,
                    key,
                    rows,
                    bytes,
                    description: dataset
                        .config
                        .description
                        .clone()
                        .or_else(|| schema.metadata().get(DESCRIPTION_METADATA).cloned()),
                    column_descriptions: schema
                        .fields()
                        .iter()
                        .map(|f| f.metadata().get(DESCRIPTION_METADATA).cloned())
                        .collect(),
                })
            })
            .collect();
        Datasets(relations)
    }

    pub fn by_oid(&self, oid: i32) -> Option<&DatasetRelation> {
        self.0.iter().find(|relation| relation.oid == oid)
    }

    pub fn by_index_oid(&self, oid: i32) -> Option<&DatasetRelation> {
        self.0
            .iter()
            .find(|relation| !relation.key.is_empty() && relation.index_oid() == oid)
    }

    pub fn by_constraint_oid(&self, oid: i32) -> Option<&DatasetRelation> {
        self.0
            .iter()
            .find(|relation| !relation.key.is_empty() && relation.constraint_oid() == oid)
    }

    /// The schemas datasets are served in.
    pub fn schemas(&self) -> Vec<String> {
        let mut schemas: Vec<String> = self.0.iter().map(|r| r.schema.clone()).collect();
        schemas.sort();
        schemas.dedup();
        schemas
    }
}

/// One of the catalog's own tables or views.
pub struct SystemRelation {
    pub oid: i32,
    pub namespace: i32,
    pub name: String,
    pub kind: &'static str,
    pub columns: Vec<(String, ColumnType)>,
}

/// The catalog's own relations, read once from the shipped catalog's schema
/// and pgaccel's built tables.
pub fn system_relations(
    system: &System,
    shipped: &dyn SchemaProvider,
) -> Result<Vec<SystemRelation>> {
    let mut relations = Vec::new();
    let mut names = shipped.table_names();
    names.extend(super::BUILT.iter().map(|name| (*name).to_owned()));
    names.sort();
    names.dedup();
    for name in names {
        let schema = if super::BUILT.contains(&name.as_str()) {
            Some(system.schema_of(&name)?)
        } else if let Some(batch) = system.shipped(&name) {
            Some(batch.schema())
        } else {
            futures::executor::block_on(shipped.table(&name))?.map(|table| table.schema())
        };
        let columns = match schema {
            Some(schema) => columns_of(&system.types, &schema),
            None => Vec::new(),
        };
        let is_view = name.starts_with("pg_stat")
            || matches!(
                name.as_str(),
                "pg_tables"
                    | "pg_indexes"
                    | "pg_roles"
                    | "pg_user"
                    | "pg_settings"
                    | "pg_locks"
                    | "pg_cursors"
                    | "pg_views"
                    | "pg_matviews"
                    | "pg_timezone_names"
                    | "pg_timezone_abbrevs"
                    | "pg_prepared_statements"
                    | "pg_replication_slots"
            );
        relations.push(SystemRelation {
            oid: oids::catalog_relation(&name),
            namespace: oids::PG_CATALOG_NAMESPACE,
            kind: if is_view { "v" } else { "r" },
            name,
            columns,
        });
    }
    for name in super::information_schema::TABLES {
        relations.push(SystemRelation {
            oid: oids::stable("relation", &format!("information_schema.{name}")),
            namespace: oids::INFORMATION_SCHEMA_NAMESPACE,
            name: (*name).to_owned(),
            kind: "v",
            columns: Vec::new(),
        });
    }
    Ok(relations)
}

fn columns_of(types: &Types, schema: &Schema) -> Vec<(String, ColumnType)> {
    schema
        .fields()
        .iter()
        .map(|field| (field.name().clone(), types.column(field)))
        .collect()
}

fn namespace_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        oid_field("oid", kind::OID, false),
        Field::new("nspname", DataType::Utf8, false),
        oid_field("nspowner", kind::OID, false),
        ArrayColumn::TextArray("_aclitem").field("nspacl"),
    ]))
}

pub fn namespaces(_system: &System, datasets: &Datasets) -> Result<RecordBatch> {
    let mut rows = Rows::new(namespace_schema());
    let owner = int(oids::BOOTSTRAP_SUPERUSER);
    for name in ["pg_toast", "pg_catalog", "public", "information_schema"] {
        rows.push(&[
            ("oid", int(oids::namespace(name))),
            ("nspname", text(name)),
            ("nspowner", owner.clone()),
        ]);
    }
    for schema in datasets.schemas() {
        if !matches!(
            schema.as_str(),
            "public" | "pg_catalog" | "information_schema"
        ) {
            rows.push(&[
                ("oid", int(oids::namespace(&schema))),
                ("nspname", text(&schema)),
                ("nspowner", owner.clone()),
            ]);
        }
    }
    rows.finish()
}

fn class_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        oid_field("oid", kind::OID, false),
        Field::new("relname", DataType::Utf8, false),
        oid_field("relnamespace", kind::OID, false),
        oid_field("reltype", kind::OID, false),
        oid_field("reloftype", kind::OID, false),
        oid_field("relowner", kind::OID, false),
        oid_field("relam", kind::OID, false),
        oid_field("relfilenode", kind::OID, false),
        oid_field("reltablespace", kind::OID, false),
        Field::new("relpages", DataType::Int32, false),
        Field::new("reltuples", DataType::Float32, false),
        Field::new("relallvisible", DataType::Int32, false),
        oid_field("reltoastrelid", kind::OID, false),
        Field::new("relhasindex", DataType::Boolean, false),
        Field::new("relisshared", DataType::Boolean, false),
        Field::new("relpersistence", DataType::Utf8, false),
        Field::new("relkind", DataType::Utf8, false),
        Field::new("relnatts", DataType::Int16, false),
        Field::new("relchecks", DataType::Int16, false),
        Field::new("relhasrules", DataType::Boolean, false),
        Field::new("relhastriggers", DataType::Boolean, false),
        Field::new("relhassubclass", DataType::Boolean, false),
        Field::new("relrowsecurity", DataType::Boolean, false),
        Field::new("relforcerowsecurity", DataType::Boolean, false),
        Field::new("relispopulated", DataType::Boolean, false),
        Field::new("relreplident", DataType::Utf8, false),
        Field::new("relispartition", DataType::Boolean, false),
        oid_field("relrewrite", kind::OID, false),
        Field::new("relfrozenxid", DataType::Utf8, false),
        Field::new("relminmxid", DataType::Utf8, false),
        ArrayColumn::TextArray("_aclitem").field("relacl"),
        ArrayColumn::TextArray("_text").field("reloptions"),
        Field::new("relpartbound", DataType::Utf8, true),
    ]))
}

fn class_row<'a>(
    oid: i32,
    name: &str,
    namespace: i32,
    kind: &str,
    attributes: usize,
) -> Vec<(&'a str, ScalarValue)> {
    vec![
        ("oid", int(oid)),
        ("relname", text(name)),
        ("relnamespace", int(namespace)),
        ("relowner", int(oids::BOOTSTRAP_SUPERUSER)),
        ("relfilenode", int(oid)),
        ("relpersistence", text("p")),
        ("relkind", text(kind)),
        ("relnatts", small(attributes as i16)),
        ("relispopulated", flag(true)),
        ("relreplident", text(if kind == "i" { "n" } else { "d" })),
        ("relfrozenxid", text("0")),
        ("relminmxid", text("0")),
    ]
}

pub fn classes(system: &System, datasets: &Datasets) -> Result<RecordBatch> {
    let mut rows = Rows::new(class_schema());
    for relation in &system.system_relations {
        let mut row = class_row(
            relation.oid,
            &relation.name,
            relation.namespace,
            relation.kind,
            relation.columns.len(),
        );
        row.push((
            "relam",
            int(if relation.kind == "r" {
                oids::HEAP_ACCESS_METHOD
            } else {
                0
            }),
        ));
        rows.push(&row);
    }
    for relation in &datasets.0 {
        let namespace = oids::namespace(&relation.schema);
        let mut table = class_row(
            relation.oid,
            &relation.table,
            namespace,
            "r",
            relation.columns.len(),
        );
        table.extend([
            ("relam", int(oids::HEAP_ACCESS_METHOD)),
            ("relhasindex", flag(!relation.key.is_empty())),
            (
                "reltuples",
                ScalarValue::Float32(Some(relation.rows as f32)),
            ),
            ("relpages", int((relation.bytes / 8192) as i32)),
        ]);
        rows.push(&table);
        if !relation.key.is_empty() {
            let mut index = class_row(
                relation.index_oid(),
                &relation.key_name(),
                namespace,
                "i",
                relation.key.len(),
            );
            index.extend([
                ("relam", int(oids::BTREE_ACCESS_METHOD)),
                (
                    "reltuples",
                    ScalarValue::Float32(Some(relation.rows as f32)),
                ),
            ]);
            rows.push(&index);
        }
    }
    rows.finish()
}

fn attribute_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        oid_field("attrelid", kind::OID, false),
        Field::new("attname", DataType::Utf8, false),
        oid_field("atttypid", kind::OID, false),
        Field::new("attlen", DataType::Int16, false),
        Field::new("attnum", DataType::Int16, false),
        Field::new("attcacheoff", DataType::Int32, false),
        Field::new("atttypmod", DataType::Int32, false),
        Field::new("attndims", DataType::Int16, false),
        Field::new("attbyval", DataType::Boolean, false),
        Field::new("attalign", DataType::Utf8, false),
        Field::new("attstorage", DataType::Utf8, false),
        Field::new("attcompression", DataType::Utf8, false),
        Field::new("attnotnull", DataType::Boolean, false),
        Field::new("atthasdef", DataType::Boolean, false),
        Field::new("atthasmissing", DataType::Boolean, false),
        Field::new("attidentity", DataType::Utf8, false),
        Field::new("attgenerated", DataType::Utf8, false),
        Field::new("attisdropped", DataType::Boolean, false),
        Field::new("attislocal", DataType::Boolean, false),
        Field::new("attinhcount", DataType::Int16, false),
        Field::new("attstattarget", DataType::Int16, false),
        oid_field("attcollation", kind::OID, false),
        ArrayColumn::TextArray("_aclitem").field("attacl"),
        ArrayColumn::TextArray("_text").field("attoptions"),
        ArrayColumn::TextArray("_text").field("attfdwoptions"),
        Field::new("attmissingval", DataType::Utf8, true),
    ]))
}

fn attribute_row<'a>(
    types: &Types,
    relation: i32,
    attnum: i16,
    name: &str,
    column: &ColumnType,
) -> Vec<(&'a str, ScalarValue)> {
    let info = types.get(column.oid);
    let array = info.is_some_and(|info| info.element != 0 && info.name.starts_with('_'));
    vec![
        ("attrelid", int(relation)),
        ("attname", text(name)),
        ("atttypid", int(column.oid)),
        ("attlen", small(info.map_or(-1, |i| i.len))),
        ("attnum", small(attnum)),
        ("attcacheoff", int(-1)),
        ("atttypmod", int(column.typmod)),
        ("attndims", small(i16::from(array))),
        ("attbyval", flag(info.is_some_and(|i| i.by_value))),
        ("attalign", text(info.map_or("i", |i| i.align.as_str()))),
        ("attstorage", text(info.map_or("x", |i| i.storage.as_str()))),
        ("attnotnull", flag(column.not_null)),
        ("attislocal", flag(true)),
        ("attstattarget", small(-1)),
        ("attcollation", int(types.collation(column.oid))),
    ]
}

pub fn attributes(system: &System, datasets: &Datasets) -> Result<RecordBatch> {
    let types = &system.types;
    let mut rows = Rows::new(attribute_schema());
    for relation in &system.system_relations {
        for (index, (name, column)) in relation.columns.iter().enumerate() {
            rows.push(&attribute_row(
                types,
                relation.oid,
                index as i16 + 1,
                name,
                column,
            ));
        }
    }
    for relation in &datasets.0 {
        for (index, (name, column)) in relation.columns.iter().enumerate() {
            rows.push(&attribute_row(
                types,
                relation.oid,
                index as i16 + 1,
                name,
                column,
            ));
        }
        for (position, attnum) in relation.key.iter().enumerate() {
            let (name, column) = &relation.columns[(*attnum - 1) as usize];
            rows.push(&attribute_row(
                types,
                relation.index_oid(),
                position as i16 + 1,
                name,
                column,
            ));
        }
    }
    rows.finish()
}

pub fn indexes(system: &System, datasets: &Datasets) -> Result<RecordBatch> {
    let shipped = system.shipped("pg_index").expect("pg_index is shipped");
    let mut rows = Rows::new(shipped.schema());
    for relation in datasets.0.iter().filter(|r| !r.key.is_empty()) {
        let keys = relation.key.len() as i16;
        let key_values: Vec<ScalarValue> = relation.key.iter().map(|k| small(*k)).collect();
        let collations = relation
            .key
            .iter()
            .map(|k| {
                int(system
                    .types
                    .collation(relation.columns[(*k - 1) as usize].1.oid))
            })
            .collect();
        rows.push(&[
            ("indexrelid", int(relation.index_oid())),
            ("indrelid", int(relation.oid)),
            ("indnatts", small(keys)),
            ("indnkeyatts", small(keys)),
            ("indisunique", flag(true)),
            ("indisprimary", flag(true)),
            ("indimmediate", flag(true)),
            ("indisvalid", flag(true)),
            ("indisready", flag(true)),
            ("indislive", flag(true)),
            ("indkey", list(key_values, &DataType::Int16)),
            ("indcollation", list(collations, &DataType::Int32)),
            (
                "indclass",
                list(
                    vec![int(oids::DEFAULT_OPCLASS); keys as usize],
                    &DataType::Int32,
                ),
            ),
            (
                "indoption",
                list(vec![small(0); keys as usize], &DataType::Int16),
            ),
        ]);
    }
    concat(shipped, rows.finish()?)
}

/// `pg_depend`: PostgreSQL's own rows, and each primary-key index's
/// dependency on its constraint (deptype `i`, internal), which tools follow
/// to tell a constraint's index from a plain index.
pub fn dependencies(system: &System, datasets: &Datasets) -> Result<RecordBatch> {
    let shipped = system.shipped("pg_depend").expect("pg_depend is shipped");
    let mut rows = Rows::new(shipped.schema());
    for relation in datasets.0.iter().filter(|r| !r.key.is_empty()) {
        rows.push(&[
            ("classid", int(oids::catalog_relation("pg_class"))),
            ("objid", int(relation.index_oid())),
            ("objsubid", int(0)),
            ("refclassid", int(oids::catalog_relation("pg_constraint"))),
            ("refobjid", int(relation.constraint_oid())),
            ("refobjsubid", int(0)),
            ("deptype", text("i")),
        ]);
    }
    concat(shipped, rows.finish()?)
}

pub fn constraints(system: &System, datasets: &Datasets) -> Result<RecordBatch> {
    let shipped = system
        .shipped("pg_constraint")
        .expect("pg_constraint is shipped");
    let mut rows = Rows::new(shipped.schema());
    for relation in datasets.0.iter().filter(|r| !r.key.is_empty()) {
        let key_values: Vec<ScalarValue> = relation.key.iter().map(|k| small(*k)).collect();
        rows.push(&[
            ("oid", int(relation.constraint_oid())),
            ("conname", text(relation.key_name())),
            ("connamespace", int(oids::namespace(&relation.schema))),
            ("contype", text("p")),
            ("convalidated", flag(true)),
            ("conrelid", int(relation.oid)),
            ("conindid", int(relation.index_oid())),
            ("confupdtype", text(" ")),
            ("confdeltype", text(" ")),
            ("confmatchtype", text(" ")),
            ("conislocal", flag(true)),
            ("connoinherit", flag(true)),
            ("conkey", list(key_values, &DataType::Int16)),
        ]);
    }
    concat(shipped, rows.finish()?)
}

pub fn descriptions(system: &System, datasets: &Datasets) -> Result<RecordBatch> {
    let shipped = system
        .shipped("pg_description")
        .expect("pg_description is shipped");
    let mut rows = Rows::new(shipped.schema());
    for relation in &datasets.0 {
        if let Some(description) = &relation.description {
            rows.push(&[
                ("objoid", int(relation.oid)),
                ("classoid", int(oids::PG_CLASS)),
                ("objsubid", int(0)),
                ("description", text(description)),
            ]);
        }
        for (index, description) in relation.column_descriptions.iter().enumerate() {
            if let Some(description) = description {
                rows.push(&[
                    ("objoid", int(relation.oid)),
                    ("classoid", int(oids::PG_CLASS)),
                    ("objsubid", int(index as i32 + 1)),
                    ("description", text(description)),
                ]);
            }
        }
    }
    concat(shipped, rows.finish()?)
}

fn concat(first: &RecordBatch, second: RecordBatch) -> Result<RecordBatch> {
    Ok(datafusion::arrow::compute::concat_batches(
        &first.schema(),
        [first, &second],
    )?)
}

pub fn tables(datasets: &Datasets, _session: Option<&SessionInfo>) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("schemaname", DataType::Utf8, true),
        Field::new("tablename", DataType::Utf8, true),
        Field::new("tableowner", DataType::Utf8, true),
        Field::new("tablespace", DataType::Utf8, true),
        Field::new("hasindexes", DataType::Boolean, true),
        Field::new("hasrules", DataType::Boolean, true),
        Field::new("hastriggers", DataType::Boolean, true),
        Field::new("rowsecurity", DataType::Boolean, true),
    ]));
    let mut rows = Rows::new(schema);
    for relation in &datasets.0 {
        rows.push(&[
            ("schemaname", text(&relation.schema)),
            ("tablename", text(&relation.table)),
            ("tableowner", text("postgres")),
            ("hasindexes", flag(!relation.key.is_empty())),
            ("hasrules", flag(false)),
            ("hastriggers", flag(false)),
            ("rowsecurity", flag(false)),
        ]);
    }
    rows.finish()
}

pub fn index_definitions(datasets: &Datasets) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("schemaname", DataType::Utf8, true),
        Field::new("tablename", DataType::Utf8, true),
        Field::new("indexname", DataType::Utf8, true),
        Field::new("tablespace", DataType::Utf8, true),
        Field::new("indexdef", DataType::Utf8, true),
    ]));
    let mut rows = Rows::new(schema);
    for relation in datasets.0.iter().filter(|r| !r.key.is_empty()) {
        rows.push(&[
            ("schemaname", text(&relation.schema)),
            ("tablename", text(&relation.table)),
            ("indexname", text(relation.key_name())),
            ("indexdef", text(relation.index_definition())),
        ]);
    }
    rows.finish()
}

/// `pg_stat_user_tables` / `pg_statio_user_tables`: the datasets with their
/// row counts; pgaccel keeps no per-table access statistics.
pub fn table_statistics(name: &str, datasets: &Datasets) -> Result<RecordBatch> {
    let counter = |name: &str| Field::new(name, DataType::Int64, true);
    let mut fields = vec![
        oid_field("relid", kind::OID, false),
        Field::new("schemaname", DataType::Utf8, true),
        Field::new("relname", DataType::Utf8, true),
    ];
    if name == "pg_stat_user_tables" {
        fields.extend(
            [
                "seq_scan",
                "seq_tup_read",
                "idx_scan",
                "idx_tup_fetch",
                "n_tup_ins",
                "n_tup_upd",
                "n_tup_del",
                "n_tup_hot_upd",
                "n_live_tup",
                "n_dead_tup",
            ]
            .map(counter),
        );
    } else {
        fields.extend(
            [
                "heap_blks_read",
                "heap_blks_hit",
                "idx_blks_read",
                "idx_blks_hit",
            ]
            .map(counter),
        );
    }
    let mut rows = Rows::new(Arc::new(Schema::new(fields)));
    for relation in &datasets.0 {
        rows.push(&[
            ("relid", int(relation.oid)),
            ("schemaname", text(&relation.schema)),
            ("relname", text(&relation.table)),
            ("n_live_tup", ScalarValue::Int64(Some(relation.rows as i64))),
        ]);
    }
    rows.finish()
}
