//! `mysql:[database.]table`: reads a MySQL or MariaDB table through
//! datafusion-table-providers' MySQL pool and table provider, which push
//! projections and filters down into the SQL sent to the server.
//!
//! Columns are given the PostgreSQL type that says the same thing: a MySQL
//! `TIMESTAMP` is an instant (`timestamptz`), `DATETIME` a wall-clock time
//! (`timestamp`); `ENUM` and `SET` values are text; `VARCHAR`/`CHAR` and
//! `JSON` keep their names on the wire.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;
use datafusion_table_providers::mysql::MySQLTableFactory;
use datafusion_table_providers::sql::db_connection_pool::mysqlpool::MySQLConnectionPool;
use mysql_async::prelude::Queryable;
use secrecy::SecretString;

use super::classify::{self, Class};
use super::{ReadFilter, Snapshot, SourceError};
use crate::accelerator::{
    DECLARED_TYPE_METADATA, NOT_NULL_METADATA, PG_TYPE_METADATA, TYPMOD_METADATA,
};
use crate::config::{MysqlParams, SslMode};

const COLUMNS_SQL: &str = "SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE, \
     CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE FROM information_schema.COLUMNS \
     WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION";

const PRIMARY_KEY_SQL: &str = "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE \
     WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' \
     ORDER BY ORDINAL_POSITION";

#[derive(Debug)]
pub struct MysqlSource {
    dataset: String,
    pool: Arc<MySQLConnectionPool>,
    database: Option<String>,
    table: String,
    /// The table as resolved at connection, for queries the source answers.
    federated: Option<Arc<dyn TableProvider>>,
}

impl MysqlSource {
    /// Connects and checks that the table exists.
    pub async fn connect(
        dataset: String,
        params: &MysqlParams,
        database: Option<&str>,
        table: &str,
    ) -> Result<Self, SourceError> {
        let pool = connect_pool(&dataset, params, false).await?;
        Self::with_pool(dataset, pool, database, table).await
    }

    /// Connects for a copy that reads the table in one consistent snapshot
    /// (`refresh_mode: changes`); returns the binlog position that snapshot
    /// ends at. The pool holds one connection, which keeps its transaction
    /// when it goes back to the pool, so every read of the copy is in it.
    pub async fn connect_at_snapshot(
        dataset: String,
        params: &MysqlParams,
        database: Option<&str>,
        table: &str,
    ) -> Result<(Self, super::binlog::BinlogPosition), SourceError> {
        let pool = connect_pool(&dataset, params, true).await?;
        let position = {
            let connection = pool
                .connect_direct()
                .await
                .map_err(|e| SourceError::connect_failed(&dataset, &e))?;
            let mut conn = connection.conn.lock().await;
            super::binlog::start_snapshot(&mut conn, &dataset).await?
        };
        let source = Self::with_pool(dataset, pool, database, table).await?;
        Ok((source, position))
    }

    /// A connection of its own (the binlog stream takes one), with the
    /// dataset's TLS settings.
    pub async fn connect_one(
        dataset: &str,
        params: &MysqlParams,
    ) -> Result<mysql_async::Conn, SourceError> {
        let pool = connect_pool(dataset, params, true).await?;
        let connection = pool
            .connect_direct()
            .await
            .map_err(|e| SourceError::connect_failed(dataset, &e))?;
        Arc::try_unwrap(connection.conn)
            .map(futures::lock::Mutex::into_inner)
            .map_err(|_| SourceError::Connect {
                dataset: dataset.to_owned(),
                message: "the connection is shared".to_owned(),
            })
    }

    async fn with_pool(
        dataset: String,
        pool: MySQLConnectionPool,
        database: Option<&str>,
        table: &str,
    ) -> Result<Self, SourceError> {
        let mut source = MysqlSource {
            dataset,
            pool: Arc::new(pool),
            database: database.map(str::to_owned),
            table: table.to_owned(),
            federated: None,
        };
        let (provider, columns) = source.describe().await?;
        let schema = pg_schema(&provider.schema(), &columns);
        source.federated = Some(super::federated_view(&source.dataset, provider, &schema)?);
        Ok(source)
    }

    pub fn federated(&self) -> Arc<dyn TableProvider> {
        Arc::clone(self.federated.as_ref().expect("set at connection"))
    }

    fn reference(&self) -> TableReference {
        match &self.database {
            Some(database) => TableReference::partial(database.as_str(), self.table.as_str()),
            None => TableReference::bare(self.table.as_str()),
        }
    }

    /// The table's columns (with their MySQL type names) and primary key,
    /// and a provider reading it; resolved again at every read.
    async fn describe(&self) -> Result<(Arc<dyn TableProvider>, Columns), SourceError> {
        let columns = self.columns().await?;
        if columns.types.is_empty() {
            return Err(SourceError::Schema {
                dataset: self.dataset.clone(),
                message: format!(
                    "table {} does not exist or has no columns",
                    self.reference()
                ),
            });
        }
        let provider = MySQLTableFactory::new(Arc::clone(&self.pool))
            .table_provider(self.reference())
            .await
            .map_err(|e| SourceError::Schema {
                dataset: self.dataset.clone(),
                message: e.to_string(),
            })?;
        Ok((provider, columns))
    }

    /// The class of the error that reading the table meets now, on a
    /// connection of pgaccel's own; `None` when it reads.
    pub async fn probe(&self) -> Option<Class> {
        let connection = match self.pool.connect_direct().await {
            Ok(connection) => connection,
            Err(e) => return classify::of(&e),
        };
        let mut conn = connection.conn.lock().await;
        let quote = |name: &str| format!("`{}`", name.replace('`', "``"));
        let table = match &self.database {
            Some(database) => format!("{}.{}", quote(database), quote(&self.table)),
            None => quote(&self.table),
        };
        let read: Result<Vec<mysql_async::Row>, _> =
            conn.query(format!("SELECT * FROM {table} LIMIT 0")).await;
        read.err().and_then(|e| classify::of(&e))
    }

    async fn columns(&self) -> Result<Columns, SourceError> {
        let failed = |e: mysql_async::Error| SourceError::connect_failed(&self.dataset, &e);
        let connection = self
            .pool
            .connect_direct()
            .await
            .map_err(|e| SourceError::connect_failed(&self.dataset, &e))?;
        let mut conn = connection.conn.lock().await;
        let key = (self.database.clone(), self.table.clone());
        type Row = (
            String,
            String,
            String,
            Option<u64>,
            Option<u64>,
            Option<u64>,
        );
        let rows: Vec<Row> = conn.exec(COLUMNS_SQL, key.clone()).await.map_err(failed)?;
        let primary_key: Vec<String> = conn.exec(PRIMARY_KEY_SQL, key).await.map_err(failed)?;
        let mut columns = Columns {
            types: HashMap::new(),
            declared: HashMap::new(),
            primary_key,
        };
        for (name, data_type, nullable, length, precision, scale) in rows {
            let data_type = data_type.to_lowercase();
            let declared = declared_type(&data_type, length, precision, scale);
            columns
                .declared
                .insert(name.clone(), (declared, nullable == "NO"));
            columns.types.insert(name, data_type);
        }
        Ok(columns)
    }

    pub async fn read_all(&self, filter: &ReadFilter) -> Result<Snapshot, SourceError> {
        let (provider, columns) = self.describe().await?;
        let read_error = |message: String| SourceError::reading(&self.dataset, message);
        // Rows decoded in place where every column allows (see
        // [`super::mysql_read`]).
        let provider: Arc<dyn TableProvider> = if super::mysql_read::enabled() {
            Arc::new(super::mysql_read::DirectTable::new(
                provider,
                Arc::clone(&self.pool),
                self.reference(),
            ))
        } else {
            provider
        };
        let frame = SessionContext::new()
            .read_table(provider)
            .map_err(|e| read_error(e.to_string()))?;
        let frame = super::restrict(&self.dataset, frame, filter)?;
        let read_schema = SchemaRef::new(frame.schema().as_arrow().clone());
        let schema = pg_schema(&read_schema, &columns);
        let primary_key = super::key_within(columns.primary_key, &schema);
        let stream = super::execute(&self.dataset, frame).await?;
        Ok(Snapshot {
            stream: super::convert(stream, Arc::clone(&schema)),
            schema,
            primary_key,
        })
    }
}

/// A PostgreSQL type name and its modifier (`atttypmod`).
type DeclaredType = (&'static str, i32);

struct Columns {
    /// Column name → MySQL type name (`DATA_TYPE`, lower case).
    types: HashMap<String, String>,
    /// Column name → the declared PostgreSQL type and modifier (where it
    /// says more than the Arrow type), and whether it is `NOT NULL`.
    declared: HashMap<String, (Option<DeclaredType>, bool)>,
    primary_key: Vec<String>,
}

/// The pool, with `prefer` done as libpq does it: TLS if the server offers
/// it, else plain (the provider's own "preferred" insists on TLS).
async fn connect_pool(
    dataset: &str,
    params: &MysqlParams,
    single: bool,
) -> Result<MySQLConnectionPool, SourceError> {
    super::check_root_cert("params.mysql_sslrootcert", params.sslrootcert.as_deref()).map_err(
        |message| SourceError::Rejected {
            dataset: dataset.to_owned(),
            message,
        },
    )?;
    let attempt = |mode: &'static str| async move {
        MySQLConnectionPool::new(pool_params(params, mode, single))
            .await
            .map_err(|e| SourceError::connect_failed(dataset, &e))
    };
    match params.sslmode {
        SslMode::Disable => attempt("disabled").await,
        // When the plain attempt fails too, its error is the one to report
        // and classify: the encrypted attempt's (often "the server does not
        // support SSL") would read as a TLS configuration error.
        SslMode::Prefer => match attempt("preferred").await {
            Ok(pool) => Ok(pool),
            Err(_) => attempt("disabled").await,
        },
        // The pool's "preferred" is TLS without verifying the certificate,
        // which is what MySQL's REQUIRED means; its "required" verifies the
        // certificate and the host name, so VERIFY_CA checks the host name
        // too (the driver cannot verify one without the other).
        SslMode::Require => attempt("preferred").await,
        SslMode::VerifyCa | SslMode::VerifyFull => attempt("required").await,
    }
}

/// The pool's settings; `single`: one connection, kept as it is between
/// uses (not reset, so a transaction started on it goes on).
fn pool_params(params: &MysqlParams, sslmode: &str, single: bool) -> HashMap<String, SecretString> {
    let mut map = HashMap::new();
    let mut put = |key: &str, value: &str| {
        map.insert(key.to_owned(), SecretString::from(value.to_owned()));
    };
    put("sslmode", sslmode);
    if let Some(root) = &params.sslrootcert {
        put("sslrootcert", &root.to_string_lossy());
    }
    let mut url = match &params.connection_string {
        Some(connection_string) => connection_string.expose().to_owned(),
        None => connection_url(params),
    };
    if single {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str("pool_min=1&pool_max=1&reset_connection=false");
    }
    put("connection_string", &url);
    map
}

/// The connection URL of `params`. Written as a URL because only a URL can
/// say `prefer_socket=false`: the MySQL driver otherwise switches a
/// connection to 127.0.0.1 over to the server's Unix socket, which would
/// bypass whatever listens on the configured port (a proxy, a tunnel).
fn connection_url(params: &MysqlParams) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    let encode = |text: &str| utf8_percent_encode(text, NON_ALPHANUMERIC).to_string();
    let password = params
        .pass
        .as_ref()
        .map(|pass| format!(":{}", encode(pass.expose())))
        .unwrap_or_default();
    let database = params.db.as_deref().map(encode).unwrap_or_default();
    let host = if params.host.contains(':') {
        format!("[{}]", params.host)
    } else {
        params.host.clone()
    };
    format!(
        "mysql://{user}{password}@{host}:{port}/{database}?prefer_socket=false",
        user = encode(&params.user),
        port = params.port,
    )
}

/// The PostgreSQL type and modifier a MySQL column declares, where the
/// catalog should show more than its Arrow type says (`varchar(40)`,
/// `numeric(12,2)`).
fn declared_type(
    data_type: &str,
    length: Option<u64>,
    precision: Option<u64>,
    scale: Option<u64>,
) -> Option<DeclaredType> {
    let modifier = |value: u64| i32::try_from(value).ok().map(|v| v + 4);
    match data_type {
        "varchar" => Some(("varchar", modifier(length?)?)),
        "char" => Some(("bpchar", modifier(length?)?)),
        "decimal" => {
            let (precision, scale) = (precision?, scale?);
            Some(("numeric", modifier((precision << 16) | scale)?))
        }
        _ => None,
    }
}

/// The schema pgaccel keeps: each column with the type and annotation that
/// describe its MySQL type to PostgreSQL clients.
fn pg_schema(read: &SchemaRef, columns: &Columns) -> SchemaRef {
    let types = &columns.types;
    let fields: Vec<Field> = read
        .fields()
        .iter()
        .map(|field| {
            let mysql_type = types.get(field.name()).map(String::as_str);
            let data_type = match (field.data_type(), mysql_type) {
                (DataType::Timestamp(unit, None), Some("timestamp")) => {
                    DataType::Timestamp(*unit, Some("UTC".into()))
                }
                (DataType::Dictionary(_, value), _) => value.as_ref().clone(),
                (DataType::Time64(TimeUnit::Nanosecond), _) => {
                    DataType::Time64(TimeUnit::Microsecond)
                }
                (other, _) => other.clone(),
            };
            let mut metadata = field.metadata().clone();
            let pg_type = match mysql_type {
                Some("varchar") => Some("varchar"),
                Some("char") => Some("bpchar"),
                Some("json") => Some("json"),
                _ => None,
            };
            if let Some(pg_type) = pg_type
                && matches!(data_type, DataType::Utf8 | DataType::LargeUtf8)
            {
                metadata.insert(PG_TYPE_METADATA.to_owned(), pg_type.to_owned());
            }
            if let Some((declared, not_null)) = columns.declared.get(field.name()) {
                if let Some((type_name, typmod)) = declared {
                    metadata.insert(DECLARED_TYPE_METADATA.to_owned(), (*type_name).to_owned());
                    metadata.insert(TYPMOD_METADATA.to_owned(), typmod.to_string());
                }
                if *not_null {
                    metadata.insert(NOT_NULL_METADATA.to_owned(), "true".to_owned());
                }
            }
            Field::new(field.name(), data_type, field.is_nullable()).with_metadata(metadata)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::compute::{concat_batches, sort_to_indices, take_record_batch};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::physical_plan::ExecutionPlan;

    /// Every row of `provider` sorted by its first column, and whether the
    /// in-place reader read them.
    async fn read(provider: Arc<dyn TableProvider>) -> (RecordBatch, bool) {
        let context = SessionContext::new();
        let plan = context
            .read_table(provider)
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let mut direct = false;
        let mut stack: Vec<Arc<dyn ExecutionPlan>> = vec![Arc::clone(&plan)];
        while let Some(node) = stack.pop() {
            direct |= node.name() == "MysqlReadExec";
            stack.extend(node.children().into_iter().cloned());
        }
        let batches = datafusion::physical_plan::collect(plan, context.task_ctx())
            .await
            .unwrap();
        let batch = concat_batches(&batches[0].schema(), &batches).unwrap();
        let order = sort_to_indices(batch.column(0), None, None).unwrap();
        (take_record_batch(&batch, &order).unwrap(), direct)
    }

    /// The in-place reader gives exactly the arrays the provider's
    /// conversion gives, for every type it decodes and their edge values;
    /// a table it cannot decode is left to the provider.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_in_place_reader_reads_what_the_provider_reads() {
        let database = format!("pgaccel_direct_{}", std::process::id());
        let params = MysqlParams {
            host: "127.0.0.1".into(),
            port: 3306,
            db: Some("test".into()),
            user: "root".into(),
            pass: None,
            sslmode: SslMode::Disable,
            sslrootcert: None,
            connection_string: None,
            server_id: None,
        };
        let pool = Arc::new(connect_pool("t", &params, false).await.unwrap());
        let setup = format!(
            "DROP DATABASE IF EXISTS {database}; CREATE DATABASE {database};
             CREATE TABLE {database}.t (id BIGINT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED,
               si SMALLINT, su SMALLINT UNSIGNED, mi MEDIUMINT, i INT, iu INT UNSIGNED,
               bu BIGINT UNSIGNED, f FLOAT, d DOUBLE, n DECIMAL(15,2), n0 DECIMAL(20,0),
               c CHAR(4), vc VARCHAR(20), vb VARCHAR(20) COLLATE utf8mb4_bin, tx TEXT, dt DATE)
               CHARACTER SET utf8mb4;
             INSERT INTO {database}.t VALUES
               (1, -128, 255, -32768, 65535, -8388608, -2147483648, 4294967295,
                18446744073709551615, 1.5, -1e300, -9999999999999.99, 99999999999999999999,
                'ab', 'ünï ✓', 'Bin', 'long text', '1000-01-01'),
               (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
               (3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.01, 0, '', '', '', '', '9999-12-31');
             CREATE TABLE {database}.big (id INT PRIMARY KEY, n DECIMAL(12,3), s VARCHAR(30));
             INSERT INTO {database}.big
               SELECT seq, seq / 7, REPEAT('x', seq % 30) FROM seq_1_to_20000;
             CREATE TABLE {database}.e (id INT, m ENUM('a', 'b'));
             INSERT INTO {database}.e VALUES (1, 'b'), (2, NULL);"
        );
        {
            let connection = pool.connect_direct().await.unwrap();
            let mut conn = connection.conn.lock().await;
            conn.query_drop(setup).await.unwrap();
        }
        for (table, rows) in [("t", 3), ("big", 20_000)] {
            let reference = TableReference::partial(database.as_str(), table);
            let provider = MySQLTableFactory::new(Arc::clone(&pool))
                .table_provider(reference.clone())
                .await
                .unwrap();
            let direct = super::super::mysql_read::DirectTable::new(
                Arc::clone(&provider),
                Arc::clone(&pool),
                reference,
            );
            let (by_provider, provider_direct) = read(provider).await;
            let (by_direct, was_direct) = read(Arc::new(direct)).await;
            assert!(!provider_direct);
            assert!(was_direct, "every column of {table} decodes in place");
            assert_eq!(by_direct.num_rows(), rows);
            for (index, field) in by_provider.schema().fields().iter().enumerate() {
                assert_eq!(
                    by_direct.column(index).data_type(),
                    by_provider.column(index).data_type(),
                    "{table}.{}",
                    field.name()
                );
                let differ = (0..rows).find(|&row| {
                    by_direct.column(index).slice(row, 1).to_data()
                        != by_provider.column(index).slice(row, 1).to_data()
                });
                assert_eq!(
                    differ.map(|row| (
                        format!("{:?}", by_direct.column(index).slice(row, 1)),
                        format!("{:?}", by_provider.column(index).slice(row, 1))
                    )),
                    None,
                    "{table}.{}",
                    field.name()
                );
            }
        }
        // An ENUM column is left to the provider.
        let reference = TableReference::partial(database.as_str(), "e");
        let provider = MySQLTableFactory::new(Arc::clone(&pool))
            .table_provider(reference.clone())
            .await
            .unwrap();
        let direct =
            super::super::mysql_read::DirectTable::new(provider, Arc::clone(&pool), reference);
        let (batch, was_direct) = read(Arc::new(direct)).await;
        assert!(!was_direct);
        assert_eq!(batch.num_rows(), 2);

        let connection = pool.connect_direct().await.unwrap();
        let mut conn = connection.conn.lock().await;
        conn.query_drop(format!("DROP DATABASE {database}"))
            .await
            .unwrap();
    }
}
