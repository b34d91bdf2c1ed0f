//! `postgres:[schema.]table`: reads a PostgreSQL table through
//! datafusion-table-providers' connection pool and table provider, which push
//! projections and filters down into the SQL sent to PostgreSQL.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;
use datafusion_table_providers::UnsupportedTypeAction;
use datafusion_table_providers::postgres::PostgresTableFactory;
use datafusion_table_providers::sql::db_connection_pool::postgrespool::PostgresConnectionPool;
use secrecy::SecretString;

use super::{ReadFilter, Snapshot, SourceError};
use crate::accelerator::{
    DECLARED_TYPE_METADATA, DESCRIPTION_METADATA, NOT_NULL_METADATA, PG_TYPE_METADATA,
    TYPMOD_METADATA,
};
use crate::config::PostgresParams;

/// PostgreSQL types that Arrow stores as Utf8 but that the wire layer reports
/// and encodes as themselves.
const TYPES_KEPT_AS_METADATA: &[&str] = &["uuid", "json", "jsonb", "varchar", "bpchar", "name"];

const COLUMN_TYPES_SQL: &str = "SELECT a.attname, t.typname, a.atttypmod, a.attnotnull, \
     col_description(a.attrelid, a.attnum), obj_description(a.attrelid, 'pg_class') \
     FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
     WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped \
     ORDER BY a.attnum";

const PRIMARY_KEY_SQL: &str = "SELECT a.attname \
     FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) \
     WHERE i.indrelid = to_regclass($1) AND i.indisprimary \
     ORDER BY array_position(i.indkey::int2[], a.attnum)";

#[derive(Debug)]
pub struct PostgresSource {
    dataset: String,
    pool: Arc<PostgresConnectionPool>,
    schema: String,
    table: String,
    /// The table as resolved at connection, for queries the source answers.
    federated: Arc<dyn TableProvider>,
}

impl PostgresSource {
    /// Connects and checks that the table exists.
    pub async fn connect(
        dataset: String,
        params: &PostgresParams,
        schema: &str,
        table: &str,
    ) -> Result<Self, SourceError> {
        let pool = PostgresConnectionPool::new(pool_params(params))
            .await
            .map_err(|e| SourceError::connecting(&dataset, e.to_string()))?
            .with_unsupported_type_action(UnsupportedTypeAction::String);
        let pool = Arc::new(pool);
        let (provider, columns, _) = describe_table(&dataset, &pool, schema, table).await?;
        let federated = super::federated_view(&dataset, provider, &columns)?;
        Ok(PostgresSource {
            dataset,
            pool,
            schema: schema.to_owned(),
            table: table.to_owned(),
            federated,
        })
    }

    pub fn federated(&self) -> Arc<dyn TableProvider> {
        Arc::clone(&self.federated)
    }

    /// The table's current columns and primary key, and a provider reading
    /// exactly those columns. Resolved again at every read, so a column
    /// added at the source appears at the next refresh.
    async fn describe(
        &self,
    ) -> Result<(Arc<dyn TableProvider>, SchemaRef, Vec<String>), SourceError> {
        describe_table(&self.dataset, &self.pool, &self.schema, &self.table).await
    }

    pub async fn read_all(&self, filter: &ReadFilter) -> Result<Snapshot, SourceError> {
        let (provider, schema, primary_key) = self.describe().await?;
        let read_error = |message: String| SourceError::reading(&self.dataset, message);
        let frame = SessionContext::new()
            .read_table(provider)
            .map_err(|e| read_error(e.to_string()))?;
        let frame = super::restrict(&self.dataset, frame, filter)?;
        // The selected columns, keeping their PostgreSQL type annotations,
        // and the table's (its comment).
        let schema = Arc::new(Schema::new_with_metadata(
            frame
                .schema()
                .fields()
                .iter()
                .map(|field| {
                    schema
                        .field_with_name(field.name())
                        .map(|annotated| Arc::new(annotated.clone()))
                        .unwrap_or_else(|_| Arc::clone(field))
                })
                .collect::<Vec<_>>(),
            schema.metadata().clone(),
        ));
        let primary_key = super::key_within(primary_key, &schema);
        let stream = super::execute(&self.dataset, frame).await?;
        Ok(Snapshot {
            stream: super::with_schema(stream, Arc::clone(&schema)),
            schema,
            primary_key,
        })
    }
}

/// The table's current columns (annotated) and primary key, and a provider
/// reading exactly those columns.
async fn describe_table(
    dataset: &str,
    pool: &Arc<PostgresConnectionPool>,
    schema: &str,
    table: &str,
) -> Result<(Arc<dyn TableProvider>, SchemaRef, Vec<String>), SourceError> {
    let described = describe(pool, schema, table)
        .await
        .map_err(|e| SourceError::connecting(dataset, e.to_string()))?;
    if described.columns.is_empty() {
        return Err(SourceError::Schema {
            dataset: dataset.to_owned(),
            message: format!("table {schema}.{table} does not exist or has no columns"),
        });
    }
    let provider = PostgresTableFactory::new(Arc::clone(pool))
        .table_provider(TableReference::partial(schema, table))
        .await
        .map_err(|e| SourceError::Schema {
            dataset: dataset.to_owned(),
            message: e.to_string(),
        })?;
    let annotated = annotate(&provider.schema(), &described);
    Ok((provider, annotated, described.primary_key))
}

fn pool_params(params: &PostgresParams) -> HashMap<String, SecretString> {
    let mut map = HashMap::new();
    let mut put = |key: &str, value: &str| {
        map.insert(key.to_owned(), SecretString::from(value.to_owned()));
    };
    if let Some(connection_string) = &params.connection_string {
        put("connection_string", connection_string.expose());
        return map;
    }
    put("host", &params.host);
    put("port", &params.port.to_string());
    put("db", &params.db);
    put("user", &params.user);
    put("sslmode", params.sslmode.as_str());
    if let Some(pass) = &params.pass {
        put("pass", pass.expose());
    }
    map
}

/// A column as the source table declares it.
struct Declared {
    type_name: String,
    typmod: i32,
    not_null: bool,
    comment: Option<String>,
}

/// Each column as declared, the primary key's columns, the table's comment.
struct Described {
    columns: HashMap<String, Declared>,
    primary_key: Vec<String>,
    comment: Option<String>,
}

/// Each column's declared type, and the primary key's columns.
async fn describe(
    pool: &PostgresConnectionPool,
    schema: &str,
    table: &str,
) -> Result<Described, Box<dyn std::error::Error + Send + Sync>> {
    let connection = pool.connect_direct().await?;
    let qualified = format!("{}.{}", quote_ident(schema), quote_ident(table));
    let rows = connection
        .conn
        .query(COLUMN_TYPES_SQL, &[&qualified])
        .await?;
    let comment = rows.first().and_then(|row| row.get::<_, Option<String>>(5));
    let columns = rows
        .iter()
        .map(|row| {
            let declared = Declared {
                type_name: row.get(1),
                typmod: row.get(2),
                not_null: row.get(3),
                comment: row.get(4),
            };
            (row.get::<_, String>(0), declared)
        })
        .collect();
    let rows = connection
        .conn
        .query(PRIMARY_KEY_SQL, &[&qualified])
        .await?;
    let primary_key = rows.iter().map(|row| row.get::<_, String>(0)).collect();
    Ok(Described {
        columns,
        primary_key,
        comment,
    })
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Adds [`PG_TYPE_METADATA`] to the columns whose PostgreSQL type the wire
/// layer must know, and each column's declared type, modifier and `NOT
/// NULL` for the catalog.
fn annotate(schema: &SchemaRef, described: &Described) -> SchemaRef {
    let column_types = &described.columns;
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|field| {
            let Some(declared) = column_types.get(field.name()) else {
                return field.as_ref().clone();
            };
            let mut metadata = field.metadata().clone();
            if TYPES_KEPT_AS_METADATA.contains(&declared.type_name.as_str()) {
                metadata.insert(PG_TYPE_METADATA.to_owned(), declared.type_name.clone());
            }
            metadata.insert(
                DECLARED_TYPE_METADATA.to_owned(),
                declared.type_name.clone(),
            );
            if declared.typmod >= 0 {
                metadata.insert(TYPMOD_METADATA.to_owned(), declared.typmod.to_string());
            }
            if declared.not_null {
                metadata.insert(NOT_NULL_METADATA.to_owned(), "true".to_owned());
            }
            if let Some(comment) = &declared.comment {
                metadata.insert(DESCRIPTION_METADATA.to_owned(), comment.clone());
            }
            field.as_ref().clone().with_metadata(metadata)
        })
        .collect();
    let mut metadata = schema.metadata().clone();
    if let Some(comment) = &described.comment {
        metadata.insert(DESCRIPTION_METADATA.to_owned(), comment.clone());
    }
    Arc::new(Schema::new_with_metadata(fields, metadata))
}
