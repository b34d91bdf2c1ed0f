//! `postgres:[schema.]table`: reads a PostgreSQL table through
//! datafusion-table-providers' connection pool and table provider, which push
//! projections and filters down into the SQL sent to PostgreSQL.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;
use datafusion::sql::unparser::dialect::PostgreSqlDialect;
use datafusion_table_providers::UnsupportedTypeAction;
use datafusion_table_providers::postgres::DynPostgresConnectionPool;
use datafusion_table_providers::postgres::conn::PostgresPooledConnection;
use datafusion_table_providers::sql::db_connection_pool::postgrespool::PostgresConnectionPool;
use datafusion_table_providers::sql::sql_provider_datafusion::{SqlExec, SqlTable};
use secrecy::SecretString;

use super::classify::{self, Class};
use super::{ReadFilter, Snapshot, SourceError};
use crate::accelerator::{
    DECLARED_TYPE_METADATA, DESCRIPTION_METADATA, NOT_NULL_METADATA, PG_TYPE_METADATA,
    TYPMOD_METADATA,
};
use crate::config::PostgresParams;

/// PostgreSQL types that Arrow stores as Utf8 but that the wire layer reports
/// and encodes as themselves.
const TYPES_KEPT_AS_METADATA: &[&str] = &[
    "uuid", "json", "jsonb", "varchar", "bpchar", "name", "inet", "cidr", "macaddr", "macaddr8",
    "timetz",
];

/// Types the table provider reads natively except for some values, read as
/// the text PostgreSQL prints and parsed back into the provider's Arrow
/// type: `timestamp`, whose values before 1970 the provider drops. Arrays
/// are parsed back too: the provider fails on an array holding a NULL
/// element (see [`ArrayFromText`]).
const PARSED_BACK: &[&str] = &["timestamp"];

/// Whether the table provider reads a `numeric` of this type modifier
/// exactly: it holds 28 significant digits, so a wider or unconstrained
/// numeric column is read as text and parsed back (see [`PARSED_BACK`]).
fn exact_numeric(typmod: i32) -> bool {
    const PROVIDER_DIGITS: i32 = 28;
    typmod >= 4 && ((typmod - 4) >> 16) <= PROVIDER_DIGITS
}

/// The types (by `typname`, domains by their base type's) the table
/// provider reads itself, from their binary form. A column of any other type
/// (`inet`, `tsvector`, `timetz`, ranges, geometry, arrays of dates, ...),
/// which it would refuse or fail on, is read as the text PostgreSQL prints
/// for it (see [`TextCastTable`]). Enums are read natively, as their label.
const READ_NATIVELY: &[&str] = &[
    "bool",
    "int2",
    "int4",
    "int8",
    "float4",
    "float8",
    "numeric",
    "text",
    "varchar",
    "bpchar",
    "char",
    "name",
    "date",
    "time",
    "timestamp",
    "timestamptz",
    "interval",
    "uuid",
    "json",
    "jsonb",
    "bytea",
    "oid",
    "_bool",
    "_int2",
    "_int4",
    "_int8",
    "_float4",
    "_float8",
    "_numeric",
    "_text",
    "_varchar",
    "_bpchar",
    "_bytea",
];

const COLUMN_TYPES_SQL: &str = "SELECT a.attname, t.typname, a.atttypmod, a.attnotnull, \
     col_description(a.attrelid, a.attnum), obj_description(a.attrelid, 'pg_class'), \
     t.typtype::text, coalesce(b.typname, t.typname) \
     FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
     LEFT JOIN pg_type b ON b.oid = t.typbasetype AND t.typtype = 'd' \
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
    /// Reads on one connection, in a snapshot of its own: a read is never
    /// split into parallel ranges.
    single: bool,
}

/// How a refresh reads the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    /// The table provider's rows.
    Rows,
    /// Binary COPY (see [`super::pg_copy`]), split into ranges of a large
    /// table's pages read in parallel as `split` says.
    Copy {
        split: Option<super::pg_copy::SplitPolicy>,
    },
}

impl PostgresSource {
    /// Connects and checks that the table exists.
    pub async fn connect(
        dataset: String,
        params: &PostgresParams,
        schema: &str,
        table: &str,
    ) -> Result<Self, SourceError> {
        Self::connect_with(dataset, params, schema, table, None).await
    }

    /// Connects on one connection whose transaction reads the snapshot
    /// `snapshot` exported (a new replication slot's), so that everything
    /// this source reads is the table as of that snapshot. The source
    /// reads the table once: its connection is held in that transaction.
    pub async fn connect_at_snapshot(
        dataset: String,
        params: &PostgresParams,
        schema: &str,
        table: &str,
        snapshot: &str,
    ) -> Result<Self, SourceError> {
        Self::connect_with(dataset, params, schema, table, Some(snapshot)).await
    }

    async fn connect_with(
        dataset: String,
        params: &PostgresParams,
        schema: &str,
        table: &str,
        snapshot: Option<&str>,
    ) -> Result<Self, SourceError> {
        super::check_root_cert("params.pg_sslrootcert", params.sslrootcert.as_deref()).map_err(
            |message| SourceError::Rejected {
                dataset: dataset.clone(),
                message,
            },
        )?;
        let mut settings = pool_params(params);
        if snapshot.is_some() {
            // One connection, so every read of the pool is in its transaction.
            settings.insert(
                "connection_pool_size".to_owned(),
                SecretString::from("1".to_owned()),
            );
        }
        let pool = PostgresConnectionPool::new(settings)
            .await
            .map_err(|e| SourceError::connect_failed(&dataset, &e))?
            .with_unsupported_type_action(UnsupportedTypeAction::Ignore);
        if let Some(snapshot) = snapshot {
            let connection = pool
                .connect_direct()
                .await
                .map_err(|e| SourceError::connect_failed(&dataset, &e))?;
            let begin = format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '{}'",
                snapshot.replace('\'', "''")
            );
            connection
                .conn
                .batch_execute(&begin)
                .await
                .map_err(|e| SourceError::Query {
                    dataset: dataset.clone(),
                    message: format!(
                        "cannot read the table in the replication slot's snapshot: {}",
                        super::with_causes(&e)
                    ),
                })?;
        }
        let pool = Arc::new(pool);
        let (provider, columns, _) =
            describe_table(&dataset, &pool, schema, table, Reader::Rows).await?;
        let federated = super::federated_view(&dataset, provider, &columns)?;
        Ok(PostgresSource {
            dataset,
            pool,
            schema: schema.to_owned(),
            table: table.to_owned(),
            federated,
            single: snapshot.is_some(),
        })
    }

    pub fn federated(&self) -> Arc<dyn TableProvider> {
        Arc::clone(&self.federated)
    }

    /// The table's current columns and primary key, and a provider reading
    /// exactly those columns (through binary COPY, see [`super::pg_copy`]).
    /// Resolved again at every read, so a column added at the source
    /// appears at the next refresh.
    async fn describe(
        &self,
    ) -> Result<(Arc<dyn TableProvider>, SchemaRef, Vec<String>), SourceError> {
        let reader = if super::pg_copy::enabled() {
            Reader::Copy {
                split: (!self.single).then(super::pg_copy::SplitPolicy::from_env),
            }
        } else {
            Reader::Rows
        };
        describe_table(&self.dataset, &self.pool, &self.schema, &self.table, reader).await
    }

    /// The class of the error that reading the table meets now, on a
    /// connection of pgaccel's own; `None` when it reads.
    pub async fn probe(&self) -> Option<Class> {
        let connection = match self.pool.connect_direct().await {
            Ok(connection) => connection,
            Err(e) => return classify::of(&e),
        };
        let sql = format!(
            "SELECT * FROM {}.{} LIMIT 0",
            quote_ident(&self.schema),
            quote_ident(&self.table)
        );
        let read = connection.conn.query(&sql, &[]).await;
        read.err().and_then(|e| classify::of(&e))
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
/// reading exactly those columns, with `reader` wherever it can decode
/// every column.
async fn describe_table(
    dataset: &str,
    pool: &Arc<PostgresConnectionPool>,
    schema: &str,
    table: &str,
    reader: Reader,
) -> Result<(Arc<dyn TableProvider>, SchemaRef, Vec<String>), SourceError> {
    let qualified = format!("{}.{}", quote_ident(schema), quote_ident(table));
    let described = describe(pool, schema, table)
        .await
        .map_err(|e| SourceError::connect_failed(dataset, &*e))?;
    if described.columns.is_empty() {
        return Err(SourceError::Schema {
            dataset: dataset.to_owned(),
            message: format!("table {schema}.{table} does not exist or has no columns"),
        });
    }
    let reference = TableReference::partial(schema, table);
    let schema_error = |message: String| SourceError::Schema {
        dataset: dataset.to_owned(),
        message,
    };
    // The pool leaves out the columns the provider has no type for.
    let dyn_pool: Arc<DynPostgresConnectionPool> = Arc::clone(pool) as _;
    let table = SqlTable::new("postgres", &dyn_pool, reference.clone())
        .await
        .map_err(|e| schema_error(e.to_string()))?
        .with_dialect(Arc::new(PostgreSqlDialect {}));
    let read = table.schema();
    let text_columns: HashSet<String> = described
        .columns
        .iter()
        .filter(|(name, declared)| !declared.native || read.field_with_name(name).is_err())
        .map(|(name, _)| name.clone())
        .collect();
    let parsed_back: HashSet<String> = described
        .columns
        .iter()
        .filter(|(name, declared)| {
            declared.parsed_back
                && !text_columns.contains(*name)
                && read.field_with_name(name).is_ok()
        })
        .map(|(name, _)| name.clone())
        .collect();
    let provider: Arc<dyn TableProvider> =
        if text_columns.is_empty() && parsed_back.is_empty() && reader == Reader::Rows {
            Arc::new(table)
        } else {
            let field = |name: &String, text: bool| match read.field_with_name(name) {
                Ok(field) if !text_columns.contains(name) && !text => field.clone(),
                // Read as text, with the column's own nullability.
                Ok(field) => Field::new(name, DataType::Utf8, field.is_nullable()),
                Err(_) => Field::new(name, DataType::Utf8, true),
            };
            let fields = |text: bool| {
                described
                    .order
                    .iter()
                    .map(|name| field(name, text && parsed_back.contains(name)))
                    .collect::<Vec<_>>()
            };
            let schema = Arc::new(Schema::new(fields(false)));
            Arc::new(TextCastTable {
                inner: SqlTable::new_with_schema("postgres", &dyn_pool, schema, reference)
                    .with_dialect(Arc::new(PostgreSqlDialect {})),
                read_schema: Arc::new(Schema::new(fields(true))),
                pool: dyn_pool,
                text_columns,
                parsed_back,
                copy: match reader {
                    Reader::Rows => None,
                    Reader::Copy { split } => Some(CopyRead {
                        pool: Arc::clone(pool),
                        split: split.map(|policy| (qualified, policy)),
                    }),
                },
            })
        };
    let annotated = annotate(&provider.schema(), &described);
    Ok((provider, annotated, described.primary_key))
}

/// A connection pool to the source `params` name, for queries pgaccel
/// forwards to it (see `query::forward`).
pub async fn postgres_pool(
    params: &PostgresParams,
) -> Result<PostgresConnectionPool, Box<dyn std::error::Error + Send + Sync>> {
    Ok(PostgresConnectionPool::new(pool_params(params)).await?)
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
    if let Some(root) = &params.sslrootcert {
        put("sslrootcert", &root.to_string_lossy());
    }
    if let Some(pass) = &params.pass {
        put("pass", pass.expose());
    }
    map
}

/// A column as the source table declares it.
struct Declared {
    type_name: String,
    /// Whether the table provider reads it (see [`READ_NATIVELY`]).
    native: bool,
    /// Read as text and parsed back (see [`PARSED_BACK`]).
    parsed_back: bool,
    typmod: i32,
    not_null: bool,
    comment: Option<String>,
}

/// Each column as declared, the primary key's columns, the table's comment.
struct Described {
    columns: HashMap<String, Declared>,
    /// The column names in the table's order.
    order: Vec<String>,
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
    let order = rows.iter().map(|row| row.get::<_, String>(0)).collect();
    let columns = rows
        .iter()
        .map(|row| {
            let kind: String = row.get(6);
            let read_as: String = row.get(7);
            let declared = Declared {
                type_name: row.get(1),
                native: kind == "e" || READ_NATIVELY.contains(&read_as.as_str()),
                parsed_back: PARSED_BACK.contains(&read_as.as_str())
                    || read_as.starts_with('_')
                    || (read_as == "numeric" && !exact_numeric(row.get(2))),
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
        order,
        primary_key,
        comment,
    })
}

pub(super) fn quote_ident(name: &str) -> String {
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

/// A source table with columns the table provider cannot read (see
/// [`READ_NATIVELY`]): the provider's own scan, with the SQL it sends
/// reading each such column as the text PostgreSQL prints for it, in its
/// select list and in the filters pushed down (so PostgreSQL filters the
/// same text pgaccel then holds).
struct TextCastTable {
    /// The schema of what PostgreSQL sends: the [`Self::parsed_back`]
    /// columns as text.
    read_schema: SchemaRef,
    /// Columns read as text in the select list only (filters compare them
    /// with their own type in PostgreSQL), then parsed back.
    parsed_back: HashSet<String>,
    inner: SqlTable<PostgresPooledConnection, &'static (dyn tokio_postgres::types::ToSql + Sync)>,
    pool: Arc<DynPostgresConnectionPool>,
    text_columns: HashSet<String>,
    /// Reads through binary COPY on this pool where every column decodes
    /// (see [`super::pg_copy`]); otherwise through the provider's rows.
    copy: Option<CopyRead>,
}

/// A table read through binary COPY.
struct CopyRead {
    pool: Arc<PostgresConnectionPool>,
    /// The table, quoted and qualified, and when its reads are split into
    /// ranges of its pages.
    split: Option<(String, super::pg_copy::SplitPolicy)>,
}

impl std::fmt::Debug for TextCastTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextCastTable")
            .field("inner", &self.inner)
            .field("text_columns", &self.text_columns)
            .field("parsed_back", &self.parsed_back)
            .field("copy", &self.copy.is_some())
            .finish()
    }
}

impl TextCastTable {
    /// `sql` (one SELECT) with every reference to a text column cast.
    fn cast_columns(&self, sql: &str) -> datafusion::error::Result<String> {
        use datafusion::sql::sqlparser::ast::{
            Expr, Ident, SelectItem, SetExpr, Statement, VisitMut, VisitorMut,
        };
        use datafusion::sql::sqlparser::dialect::PostgreSqlDialect as Parsing;
        use datafusion::sql::sqlparser::parser::Parser;
        use std::ops::ControlFlow;

        /// `column` as PostgreSQL prints it: its output function, as
        /// `concat()` calls it (a cast to text can differ: an inet `::1`
        /// casts to `::1/128`), and NULL for NULL.
        fn printed(column: &Expr) -> Expr {
            Parser::new(&Parsing {})
                .try_with_sql(&format!(
                    "CASE WHEN {column} IS NULL THEN NULL ELSE concat({column}) END"
                ))
                .and_then(|mut parser| parser.parse_expr())
                .expect("a valid expression")
        }

        struct Casts<'a>(&'a HashSet<String>);
        impl VisitorMut for Casts<'_> {
            type Break = ();
            fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
                if column_name(expr).is_some_and(|ident| self.0.contains(&ident.value)) {
                    *expr = printed(expr);
                }
                ControlFlow::Continue(())
            }
        }

        fn column_name(expr: &Expr) -> Option<&Ident> {
            match expr {
                Expr::Identifier(ident) => Some(ident),
                Expr::CompoundIdentifier(parts) => parts.last(),
                _ => None,
            }
        }

        let mut statements = Parser::parse_sql(&Parsing {}, sql)
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        for statement in &mut statements {
            // The names of the select items that are text columns, kept
            // through the rewrite.
            let names: Vec<Option<Ident>> = match &*statement {
                Statement::Query(query) => match query.body.as_ref() {
                    SetExpr::Select(select) => select
                        .projection
                        .iter()
                        .map(|item| match item {
                            SelectItem::UnnamedExpr(expr) => column_name(expr)
                                .filter(|ident| {
                                    self.text_columns.contains(&ident.value)
                                        || self.parsed_back.contains(&ident.value)
                                })
                                .cloned(),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            let _ = statement.visit(&mut Casts(&self.text_columns));
            if let Statement::Query(query) = statement
                && let SetExpr::Select(select) = query.body.as_mut()
            {
                for (item, name) in select.projection.iter_mut().zip(names) {
                    if let (SelectItem::UnnamedExpr(expr), Some(alias)) = (&*item, name) {
                        // A parsed-back column is still a bare reference.
                        let expr = match column_name(expr) {
                            Some(_) => printed(expr),
                            None => expr.clone(),
                        };
                        *item = SelectItem::ExprWithAlias { expr, alias };
                    }
                }
            }
        }
        Ok(statements
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "))
    }
}

#[async_trait::async_trait]
impl TableProvider for TextCastTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> datafusion::datasource::TableType {
        datafusion::datasource::TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&datafusion::logical_expr::Expr],
    ) -> datafusion::error::Result<Vec<datafusion::logical_expr::TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        _state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        filters: &[datafusion::logical_expr::Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        use datafusion::common::config::ConfigOptions;
        use datafusion::logical_expr::ScalarUDF;
        use datafusion::physical_expr::ScalarFunctionExpr;
        use datafusion::physical_expr::expressions::{CastExpr, Column};
        use datafusion::physical_plan::projection::ProjectionExec;
        let sql = self.inner.scan_to_sql(projection, filters, limit)?;
        let sql = if self.text_columns.is_empty() && self.parsed_back.is_empty() {
            sql
        } else {
            self.cast_columns(&sql)?
        };
        let read_schema = match projection {
            Some(indices) => Arc::new(self.read_schema.project(indices)?),
            None => Arc::clone(&self.read_schema),
        };
        let copied = match &self.copy {
            Some(copy) => super::pg_copy::plan(&copy.pool, &sql, &read_schema)
                .await?
                .map(|columns| (copy, columns)),
            None => None,
        };
        let read: Arc<dyn datafusion::physical_plan::ExecutionPlan> = match copied {
            Some((copy, columns)) => {
                // A limited read is one COPY: its ranges would each apply the
                // limit.
                let split = match (&copy.split, limit) {
                    (Some((table, policy)), None) => {
                        super::pg_copy::split(&copy.pool, table, *policy).await?
                    }
                    _ => None,
                };
                Arc::new(super::pg_copy::CopyExec::new(
                    Arc::clone(&copy.pool),
                    sql,
                    read_schema,
                    columns,
                    split,
                ))
            }
            None => Arc::new(SqlExec::new(
                projection,
                &self.read_schema,
                Arc::clone(&self.pool),
                sql,
                Arc::new(PostgreSqlDialect {}),
            )?),
        };
        if self.parsed_back.is_empty() {
            return Ok(read);
        }
        // The parsed-back columns, from their text to their own type.
        let wanted = match projection {
            Some(indices) => Arc::new(self.schema().project(indices)?),
            None => self.schema(),
        };
        let exprs = wanted
            .fields()
            .iter()
            .enumerate()
            .map(|(index, field)| {
                let column: Arc<dyn datafusion::physical_plan::PhysicalExpr> =
                    Arc::new(Column::new(field.name(), index));
                let expr: Arc<dyn datafusion::physical_plan::PhysicalExpr> = match field.data_type()
                {
                    _ if !self.parsed_back.contains(field.name()) => column,
                    DataType::List(_) => Arc::new(ScalarFunctionExpr::new(
                        ArrayFromText::NAME,
                        Arc::new(ScalarUDF::new_from_impl(ArrayFromText::new(field))),
                        vec![column],
                        Arc::clone(field),
                        Arc::new(ConfigOptions::default()),
                    )),
                    data_type => Arc::new(CastExpr::new(column, data_type.clone(), None)),
                };
                (expr, field.name().clone())
            })
            .collect::<Vec<_>>();
        Ok(Arc::new(ProjectionExec::try_new(exprs, read)?))
    }
}

/// Parses an array column read as the text PostgreSQL prints for it
/// (`{1,NULL,3}`) into the list the table provider's own type gives it.
/// The provider decodes arrays through tokio-postgres's `Vec<T>`, which
/// cannot hold a NULL element, so a table with one would not load.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayFromText {
    /// The column, as a list field.
    target: Field,
    signature: datafusion::logical_expr::Signature,
}

impl ArrayFromText {
    const NAME: &str = "pgaccel_array_from_text";

    fn new(target: &Field) -> Self {
        ArrayFromText {
            target: target.clone(),
            signature: datafusion::logical_expr::Signature::exact(
                vec![DataType::Utf8],
                datafusion::logical_expr::Volatility::Immutable,
            ),
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for ArrayFromText {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(self.target.data_type().clone())
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> datafusion::error::Result<datafusion::logical_expr::ColumnarValue> {
        use datafusion::arrow::array::{Array, AsArray, new_empty_array};
        use datafusion::common::ScalarValue;
        let texts = args.args[0].to_array(args.number_rows)?;
        if texts.is_empty() {
            return Ok(datafusion::logical_expr::ColumnarValue::Array(
                new_empty_array(self.target.data_type()),
            ));
        }
        let texts = texts.as_string::<i32>();
        let values = texts
            .iter()
            .map(|text| match text {
                None => ScalarValue::try_from(self.target.data_type()),
                Some(text) => super::pg_stream::parse_text(text, &self.target).map_err(|e| {
                    datafusion::error::DataFusionError::Execution(format!(
                        "column \"{}\": cannot read the array {text}: {e}",
                        self.target.name()
                    ))
                }),
            })
            .collect::<datafusion::error::Result<Vec<_>>>()?;
        Ok(datafusion::logical_expr::ColumnarValue::Array(
            ScalarValue::iter_to_array(values)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SslMode;
    use datafusion::arrow::compute::concat_batches;
    use datafusion::physical_plan::ExecutionPlan;

    fn local_params() -> PostgresParams {
        PostgresParams {
            host: "127.0.0.1".into(),
            port: 5432,
            db: "test".into(),
            user: "postgres".into(),
            pass: None,
            sslmode: SslMode::Disable,
            sslrootcert: None,
            connection_string: None,
            replication_slot: None,
            publication: None,
            drop_slot_on_remove: false,
        }
    }

    /// Every row of `provider`, through `plan`'s choice of reader, and how
    /// many binary COPYs read it (0: the row reader).
    async fn read(provider: Arc<dyn TableProvider>) -> (RecordBatch, usize) {
        read_after(provider, async {}).await
    }

    /// As [`read`], running `between` after the plan is made and before it
    /// runs.
    async fn read_after(
        provider: Arc<dyn TableProvider>,
        between: impl std::future::Future<Output = ()>,
    ) -> (RecordBatch, usize) {
        let context = SessionContext::new();
        let plan = context
            .read_table(provider)
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let mut copied = 0;
        let mut stack: Vec<Arc<dyn ExecutionPlan>> = vec![Arc::clone(&plan)];
        while let Some(node) = stack.pop() {
            if node.name() == "CopyExec" {
                copied = node.properties().partitioning.partition_count();
            }
            stack.extend(node.children().into_iter().cloned());
        }
        between.await;
        let batches = datafusion::physical_plan::collect(plan, context.task_ctx())
            .await
            .unwrap();
        let schema = batches[0].schema();
        // By the first column: two scans need not return rows in one order.
        let batch = concat_batches(&schema, &batches).unwrap();
        let order =
            datafusion::arrow::compute::sort_to_indices(batch.column(0), None, None).unwrap();
        let batch = datafusion::arrow::compute::take_record_batch(&batch, &order).unwrap();
        (batch, copied)
    }

    use datafusion::arrow::record_batch::RecordBatch;

    /// The binary COPY reader gives exactly the arrays the table
    /// provider's row reader gives, for every type it decodes and their
    /// edge values; a table it cannot decode falls back to the rows.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn copy_reads_what_the_row_reader_reads() {
        let schema = format!("pgaccel_copy_{}", std::process::id());
        let params = local_params();
        let pool = Arc::new(
            postgres_pool(&params)
                .await
                .unwrap()
                .with_unsupported_type_action(UnsupportedTypeAction::Ignore),
        );
        let admin = pool.connect_direct().await.unwrap();
        admin
            .conn
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};
                 CREATE DOMAIN {schema}.small AS int4 CHECK (VALUE < 1000);
                 CREATE TABLE {schema}.t (id int8 PRIMARY KEY, b bool, c \"char\", i2 int2, i4 int4,
                   o oid, f4 float4, f8 float8, n numeric(12,3), n0 numeric(18,0), tx text,
                   vc varchar(9), bp char(6), nm name, u uuid, j json, jb jsonb, by bytea, d date,
                   tm time, tz timestamptz, iv interval, dom {schema}.small, ts timestamp,
                   wide numeric);
                 INSERT INTO {schema}.t VALUES
                   (1, true, 'a', 32767, -2147483648, 4294967295, 'NaN', '-Infinity', -123456789.125,
                    999999999999999999, 'ünï ✓', 'varying', 'ab', 'pg_class',
                    'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{{\"a\": [1]}}', '{{\"b\": null}}',
                    '\\xdeadbeef', '0001-01-01', '23:59:59.999999', '1677-09-22 00:00:00+00',
                    '-178000000 years -3 days -04:05:06.000007', 999, '1900-01-01 00:00:01',
                    1e-40),
                   (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                   (3, false, ' ', -32768, 0, 0, 1.5, 1e300, 0.001, 0, '', '', '', '',
                    '00000000-0000-0000-0000-000000000000', '[]', '{{}}', '\\x', '2262-04-11',
                    '00:00', '2262-04-11 23:47:16.854775+00', '1 mon 2 days 00:00:00.000001', -5,
                    '2000-01-01', 12345678901234.5);
                 INSERT INTO {schema}.t (id, n, tx, bp)
                   SELECT g, g / 7.0, repeat('x', g % 50), 'k' || g % 10 FROM generate_series(4, 20000) g;
                 CREATE TYPE {schema}.mood AS ENUM ('sad', 'ok');
                 CREATE TABLE {schema}.e (id int4, m {schema}.mood);
                 INSERT INTO {schema}.e VALUES (1, 'ok'), (2, NULL);"
            ))
            .await
            .unwrap();
        let (rows, _, _) = describe_table("t", &pool, &schema, "t", Reader::Rows)
            .await
            .unwrap();
        let (copy, annotated, _) =
            describe_table("t", &pool, &schema, "t", Reader::Copy { split: None })
                .await
                .unwrap();
        let (by_rows, rows_copied) = read(rows).await;
        let (by_copy, copied) = read(copy).await;
        assert_eq!(rows_copied, 0);
        assert_eq!(copied, 1, "every column of t decodes from binary COPY");
        assert_eq!(by_copy.num_rows(), 20_000);
        for (index, field) in annotated.fields().iter().enumerate() {
            assert_eq!(
                by_copy.column(index).data_type(),
                by_rows.column(index).data_type(),
                "column {}",
                field.name()
            );
            let differ = (0..by_copy.num_rows()).find(|&row| {
                by_copy.column(index).slice(row, 1).to_data()
                    != by_rows.column(index).slice(row, 1).to_data()
            });
            assert_eq!(
                differ.map(|row| (
                    format!("{:?}", by_copy.column(index).slice(row, 1)),
                    format!("{:?}", by_rows.column(index).slice(row, 1))
                )),
                None,
                "column {}",
                field.name()
            );
        }

        // Split into three ranges of pages: the same rows, as of the
        // snapshot taken when the read was planned.
        let policy = super::super::pg_copy::SplitPolicy {
            ranges: 3,
            min_pages: 1,
        };
        let (split, _, _) = describe_table(
            "t",
            &pool,
            &schema,
            "t",
            Reader::Copy {
                split: Some(policy),
            },
        )
        .await
        .unwrap();
        let later = format!(
            "INSERT INTO {schema}.t (id) VALUES (99999); DELETE FROM {schema}.t WHERE id = 4"
        );
        let (by_ranges, ranges) = read_after(split, async {
            admin.conn.batch_execute(&later).await.unwrap();
        })
        .await;
        assert_eq!(ranges, 3);
        assert_eq!(by_ranges, by_rows);

        // An enum column is left to the rows.
        let (copy, _, _) = describe_table("e", &pool, &schema, "e", Reader::Copy { split: None })
            .await
            .unwrap();
        let (batch, copied) = read(copy).await;
        assert_eq!(copied, 0);
        assert_eq!(batch.num_rows(), 2);

        admin
            .conn
            .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .unwrap();
    }
}
