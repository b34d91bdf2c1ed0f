// pgjdbc: DatabaseMetaData (tables, columns, primary keys, indexes, types),
// ResultSetMetaData, a PreparedStatement past prepareThreshold (server-side
// prepared, binary transfer), a portal fetched in chunks with setFetchSize,
// every getter on all_types, and transactions.
//
// Environment: CLIENT_JDBC_URL (made by run.sh), CLIENT_SCHEMA, CLIENT_TARGET.

import java.math.BigDecimal;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import org.postgresql.PGStatement;
import org.postgresql.util.PGInterval;
import org.postgresql.util.PGobject;

public class CheckJdbc {
    static final String URL = env("CLIENT_JDBC_URL");
    static final String SCHEMA = env("CLIENT_SCHEMA");
    static final String TARGET = System.getenv().getOrDefault("CLIENT_TARGET", "postgres");
    static final String ALL_TYPES = SCHEMA + ".all_types";
    static final String ORDERS = SCHEMA + ".orders";
    static final int ORDERS_COUNT = 1000;
    static final String[] STATUSES = {"new", "paid", "shipped", "returned"};

    // --- assertions: one line per group, expected and actual on failure ---

    interface Body {
        void run(Connection conn) throws Exception;
    }

    static List<String> errors;
    static final List<String> failedGroups = new ArrayList<>();
    static int groups = 0;

    static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            System.err.println(name + " is not set (run the checks through run.sh)");
            System.exit(2);
        }
        return value;
    }

    static String show(Object value) {
        if (value == null) {
            return "null";
        }
        String text = value.getClass().isArray() ? Arrays.deepToString(new Object[] {value}) : value.toString();
        return text + " (" + value.getClass().getSimpleName() + ")";
    }

    /** Equal values of the same class (any List or Map for collections,
     *  whose elements are compared with their classes by equals); arrays
     *  compared element by element. */
    static void eq(String label, Object expected, Object actual) {
        boolean sameKind = expected instanceof List ? actual instanceof List
            : expected instanceof Map ? actual instanceof Map
            : expected != null && actual != null && expected.getClass() == actual.getClass();
        boolean same = expected == null || actual == null
            ? expected == actual
            : sameKind && Arrays.deepEquals(new Object[] {expected}, new Object[] {actual});
        if (!same) {
            errors.add(label + ": expected " + show(expected) + ", got " + show(actual));
        }
    }

    static void ok(String label, boolean condition, String detail) {
        if (!condition) {
            errors.add(label + ": " + detail);
        }
    }

    interface Action {
        void run() throws SQLException;
    }

    static void rejects(String label, Action action, String sqlState) {
        try {
            action.run();
            errors.add(label + ": expected SQLSTATE " + sqlState + ", but it succeeded");
        } catch (SQLException e) {
            if (!sqlState.equals(e.getSQLState())) {
                errors.add(label + ": expected SQLSTATE " + sqlState + ", got " + e.getSQLState() + " (" + e.getMessage() + ")");
            }
        }
    }

    static void group(Connection conn, String title, Body body) {
        errors = new ArrayList<>();
        groups++;
        try {
            body.run(conn);
        } catch (Exception e) {
            errors.add("threw " + e);
        } finally {
            try {
                if (!conn.getAutoCommit()) {
                    conn.rollback();
                    conn.setAutoCommit(true);
                }
            } catch (SQLException e) {
                errors.add("could not reset the connection: " + e);
            }
        }
        if (errors.isEmpty()) {
            System.out.println("  ok   " + title);
        } else {
            failedGroups.add(title);
            System.out.println("  FAIL " + title);
            for (String message : errors) {
                System.out.println("       - " + message);
            }
        }
    }

    // --- DatabaseMetaData ---

    static void checkTables(Connection conn) throws SQLException {
        DatabaseMetaData meta = conn.getMetaData();
        Map<String, String> tables = new LinkedHashMap<>();
        Map<String, String> remarks = new LinkedHashMap<>();
        try (ResultSet rs = meta.getTables(null, SCHEMA, "%", new String[] {"TABLE"})) {
            while (rs.next()) {
                eq("TABLE_SCHEM", SCHEMA, rs.getString("TABLE_SCHEM"));
                tables.put(rs.getString("TABLE_NAME"), rs.getString("TABLE_TYPE"));
                remarks.put(rs.getString("TABLE_NAME"), rs.getString("REMARKS"));
            }
        }
        eq("tables and TABLE_TYPE", Map.of("all_types", "TABLE", "orders", "TABLE"), tables);
        eq("table order", List.of("all_types", "orders"), new ArrayList<>(tables.keySet()));
        eq("orders REMARKS", "Orders of the client checks", remarks.get("orders"));
        try (ResultSet rs = meta.getTables(null, SCHEMA, "orders", null)) {
            eq("getTables(orders) finds it", true, rs.next());
        }
        Set<String> schemas = new HashSet<>();
        try (ResultSet rs = meta.getSchemas()) {
            while (rs.next()) {
                schemas.add(rs.getString("TABLE_SCHEM"));
            }
        }
        ok("getSchemas has the schema", schemas.contains(SCHEMA), schemas.toString());
    }

    /** TYPE_NAME, DATA_TYPE, COLUMN_SIZE, DECIMAL_DIGITS, NULLABLE of each column. */
    static final Object[][] ALL_TYPES_COLUMNS = {
        {"id", "int4", Types.INTEGER, 10, 0, DatabaseMetaData.columnNoNulls},
        {"c_int2", "int2", Types.SMALLINT, 5, 0, DatabaseMetaData.columnNullable},
        {"c_int4", "int4", Types.INTEGER, 10, 0, DatabaseMetaData.columnNoNulls},
        {"c_int8", "int8", Types.BIGINT, 19, 0, DatabaseMetaData.columnNullable},
        {"c_numeric", "numeric", Types.NUMERIC, 12, 2, DatabaseMetaData.columnNullable},
        {"c_float4", "float4", Types.REAL, 8, 8, DatabaseMetaData.columnNullable},
        {"c_float8", "float8", Types.DOUBLE, 17, 17, DatabaseMetaData.columnNullable},
        {"c_bool", "bool", Types.BIT, 1, 0, DatabaseMetaData.columnNullable},
        {"c_text", "text", Types.VARCHAR, Integer.MAX_VALUE, 0, DatabaseMetaData.columnNullable},
        {"c_varchar", "varchar", Types.VARCHAR, 40, 0, DatabaseMetaData.columnNullable},
        {"c_char", "bpchar", Types.CHAR, 5, 0, DatabaseMetaData.columnNullable},
        {"c_date", "date", Types.DATE, 13, 0, DatabaseMetaData.columnNullable},
        {"c_time", "time", Types.TIME, 15, 6, DatabaseMetaData.columnNullable},
        {"c_timestamp", "timestamp", Types.TIMESTAMP, 29, 6, DatabaseMetaData.columnNullable},
        {"c_timestamptz", "timestamptz", Types.TIMESTAMP, 35, 6, DatabaseMetaData.columnNullable},
        {"c_interval", "interval", Types.OTHER, 49, 6, DatabaseMetaData.columnNullable},
        {"c_uuid", "uuid", Types.OTHER, Integer.MAX_VALUE, 0, DatabaseMetaData.columnNullable},
        {"c_bytea", "bytea", Types.BINARY, Integer.MAX_VALUE, 0, DatabaseMetaData.columnNullable},
        {"c_json", "json", Types.OTHER, Integer.MAX_VALUE, 0, DatabaseMetaData.columnNullable},
        {"c_jsonb", "jsonb", Types.OTHER, Integer.MAX_VALUE, 0, DatabaseMetaData.columnNullable},
        {"c_int4_array", "_int4", Types.ARRAY, 10, 0, DatabaseMetaData.columnNullable},
        {"c_text_array", "_text", Types.ARRAY, Integer.MAX_VALUE, 0, DatabaseMetaData.columnNullable},
    };

    static final Object[][] ORDERS_COLUMNS = {
        {"id", "int8", Types.BIGINT, 19, 0, DatabaseMetaData.columnNoNulls},
        {"customer_id", "int4", Types.INTEGER, 10, 0, DatabaseMetaData.columnNoNulls},
        {"status", "varchar", Types.VARCHAR, 20, 0, DatabaseMetaData.columnNoNulls},
        {"total", "numeric", Types.NUMERIC, 12, 2, DatabaseMetaData.columnNullable},
        {"created_at", "timestamptz", Types.TIMESTAMP, 35, 6, DatabaseMetaData.columnNoNulls},
    };

    static void checkColumnsOf(DatabaseMetaData meta, String tableName, Object[][] expected) throws SQLException {
        List<List<Object>> actual = new ArrayList<>();
        try (ResultSet rs = meta.getColumns(null, SCHEMA, tableName, "%")) {
            while (rs.next()) {
                eq(tableName + "." + rs.getString("COLUMN_NAME") + " ORDINAL_POSITION", actual.size() + 1,
                    rs.getInt("ORDINAL_POSITION"));
                eq(tableName + "." + rs.getString("COLUMN_NAME") + " IS_NULLABLE",
                    rs.getInt("NULLABLE") == DatabaseMetaData.columnNoNulls ? "NO" : "YES", rs.getString("IS_NULLABLE"));
                actual.add(List.of(rs.getString("COLUMN_NAME"), rs.getString("TYPE_NAME"), rs.getInt("DATA_TYPE"),
                    rs.getInt("COLUMN_SIZE"), rs.getInt("DECIMAL_DIGITS"), rs.getInt("NULLABLE")));
            }
        }
        eq(tableName + " column count", expected.length, actual.size());
        for (int i = 0; i < Math.min(expected.length, actual.size()); i++) {
            eq(tableName + " column " + (i + 1) + " [name, TYPE_NAME, DATA_TYPE, COLUMN_SIZE, DECIMAL_DIGITS, NULLABLE]",
                Arrays.asList(expected[i]), actual.get(i));
        }
    }

    static void checkColumns(Connection conn) throws SQLException {
        DatabaseMetaData meta = conn.getMetaData();
        checkColumnsOf(meta, "all_types", ALL_TYPES_COLUMNS);
        checkColumnsOf(meta, "orders", ORDERS_COLUMNS);
    }

    static void checkKeysAndIndexes(Connection conn) throws SQLException {
        DatabaseMetaData meta = conn.getMetaData();
        List<List<Object>> keys = new ArrayList<>();
        try (ResultSet rs = meta.getPrimaryKeys(null, SCHEMA, "orders")) {
            while (rs.next()) {
                keys.add(List.of(rs.getString("TABLE_NAME"), rs.getString("COLUMN_NAME"), rs.getInt("KEY_SEQ"),
                    rs.getString("PK_NAME")));
            }
        }
        eq("getPrimaryKeys [TABLE_NAME, COLUMN_NAME, KEY_SEQ, PK_NAME]",
            List.of(List.of("orders", "id", 1, "orders_pkey")), keys);
        List<List<Object>> indexes = new ArrayList<>();
        try (ResultSet rs = meta.getIndexInfo(null, SCHEMA, "orders", false, false)) {
            while (rs.next()) {
                indexes.add(List.of(rs.getString("INDEX_NAME"), rs.getBoolean("NON_UNIQUE"), rs.getString("COLUMN_NAME"),
                    rs.getInt("ORDINAL_POSITION"), rs.getInt("TYPE")));
            }
        }
        eq("getIndexInfo [INDEX_NAME, NON_UNIQUE, COLUMN_NAME, ORDINAL_POSITION, TYPE]",
            List.of(List.of("orders_pkey", false, "id", 1, (int) DatabaseMetaData.tableIndexOther)), indexes);
        try (ResultSet rs = meta.getIndexInfo(null, SCHEMA, "orders", true, true)) {
            eq("getIndexInfo(unique only) finds the primary key", true, rs.next() && "orders_pkey".equals(rs.getString("INDEX_NAME")));
        }
        try (ResultSet rs = meta.getImportedKeys(null, SCHEMA, "orders")) {
            eq("no foreign keys", false, rs.next());
        }
    }

    static void checkTypeInfo(Connection conn) throws SQLException {
        Map<String, Integer> types = new LinkedHashMap<>();
        try (ResultSet rs = conn.getMetaData().getTypeInfo()) {
            while (rs.next()) {
                types.put(rs.getString("TYPE_NAME"), rs.getInt("DATA_TYPE"));
            }
        }
        ok("getTypeInfo is not empty", types.size() > 20, "only " + types.size() + " types");
        eq("int4", Types.INTEGER, types.get("int4"));
        eq("numeric", Types.NUMERIC, types.get("numeric"));
        eq("uuid", Types.OTHER, types.get("uuid"));
        eq("_int4", Types.ARRAY, types.get("_int4"));
        DatabaseMetaData meta = conn.getMetaData();
        eq("getDatabaseProductName", "PostgreSQL", meta.getDatabaseProductName());
        ok("getDatabaseMajorVersion", meta.getDatabaseMajorVersion() >= 10, "" + meta.getDatabaseMajorVersion());
    }

    // --- results ---

    static final String SELECT_ALL_TYPES = "SELECT id, c_int2, c_int4, c_int8, c_numeric, c_float4, c_float8, c_bool, "
        + "c_text, c_varchar, c_char, c_date, c_time, c_timestamp, c_timestamptz, c_interval, c_uuid, c_bytea, "
        + "c_json, c_jsonb, c_int4_array, c_text_array FROM " + ALL_TYPES;

    /** Every getter on rows 1, 2 and 3 of all_types, in id order. */
    static void checkGetters(String label, ResultSet rs) throws SQLException {
        eq(label + " row 1", true, rs.next());
        eq(label + " getInt", 1, rs.getInt("id"));
        eq(label + " getShort", (short) 32767, rs.getShort("c_int2"));
        eq(label + " getInt c_int4", 2147483647, rs.getInt("c_int4"));
        eq(label + " getLong", 9223372036854775807L, rs.getLong("c_int8"));
        eq(label + " getBigDecimal", new BigDecimal("1234567890.12"), rs.getBigDecimal("c_numeric"));
        eq(label + " getFloat", 1.5f, rs.getFloat("c_float4"));
        eq(label + " getDouble", 0.1, rs.getDouble("c_float8"));
        eq(label + " getBoolean", true, rs.getBoolean("c_bool"));
        eq(label + " getString text", "hello", rs.getString("c_text"));
        eq(label + " getString varchar", "world", rs.getString("c_varchar"));
        eq(label + " getString char(5)", "ab   ", rs.getString("c_char"));
        eq(label + " getDate", LocalDate.of(2024, 2, 29), rs.getDate("c_date").toLocalDate());
        eq(label + " getObject LocalDate", LocalDate.of(2024, 2, 29), rs.getObject("c_date", LocalDate.class));
        eq(label + " getTime", "12:34:56", rs.getTime("c_time").toString());
        eq(label + " getObject LocalTime", LocalTime.of(12, 34, 56, 789_000_000), rs.getObject("c_time", LocalTime.class));
        eq(label + " getTimestamp", LocalDateTime.of(2024, 2, 29, 12, 34, 56, 789_000_000),
            rs.getTimestamp("c_timestamp").toLocalDateTime());
        OffsetDateTime tz = OffsetDateTime.of(2024, 2, 29, 10, 34, 56, 789_000_000, ZoneOffset.UTC);
        eq(label + " getTimestamp timestamptz", tz.toInstant(), rs.getTimestamp("c_timestamptz").toInstant());
        OffsetDateTime odt = rs.getObject("c_timestamptz", OffsetDateTime.class);
        eq(label + " getObject OffsetDateTime", tz.toInstant(), odt.toInstant());
        eq(label + " OffsetDateTime offset", ZoneOffset.UTC, odt.getOffset());
        Object interval = rs.getObject("c_interval");
        eq(label + " interval class", PGInterval.class, interval.getClass());
        eq(label + " interval", new PGInterval(0, 0, 1, 2, 3, 4), interval);
        eq(label + " getObject uuid", UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), rs.getObject("c_uuid"));
        eq(label + " getBytes", new byte[] {(byte) 0xde, (byte) 0xad, (byte) 0xbe, (byte) 0xef}, rs.getBytes("c_bytea"));
        eq(label + " getString json", "{\"a\": [1, 2]}", rs.getString("c_json"));
        Object jsonb = rs.getObject("c_jsonb");
        eq(label + " jsonb class", PGobject.class, jsonb.getClass());
        eq(label + " jsonb type and value", List.of("jsonb", "{\"b\": {\"c\": true}}"),
            List.of(((PGobject) jsonb).getType(), ((PGobject) jsonb).getValue()));
        Array ints = rs.getArray("c_int4_array");
        eq(label + " getArray int4[] base type", "int4", ints.getBaseTypeName());
        eq(label + " getArray int4[]", new Integer[] {1, 2, 3}, ints.getArray());
        eq(label + " getArray text[]", new String[] {"x", "y z"}, rs.getArray("c_text_array").getArray());

        eq(label + " row 2", true, rs.next());
        eq(label + " getInt NULL", 0, rs.getInt("c_int2"));
        eq(label + " wasNull", true, rs.wasNull());
        eq(label + " getBigDecimal NULL", null, rs.getBigDecimal("c_numeric"));
        eq(label + " getObject NULL uuid", null, rs.getObject("c_uuid"));
        eq(label + " getBytes NULL", null, rs.getBytes("c_bytea"));
        eq(label + " getArray NULL", null, rs.getArray("c_int4_array"));
        eq(label + " getTimestamp NULL", null, rs.getTimestamp("c_timestamptz"));

        eq(label + " row 3", true, rs.next());
        eq(label + " getShort min", (short) -32768, rs.getShort("c_int2"));
        eq(label + " getInt min", -2147483648, rs.getInt("c_int4"));
        eq(label + " getLong -1", -1L, rs.getLong("c_int8"));
        eq(label + " getBigDecimal -0.01", new BigDecimal("-0.01"), rs.getBigDecimal("c_numeric"));
        eq(label + " getFloat -3.25", -3.25f, rs.getFloat("c_float4"));
        eq(label + " getDouble 1e300", 1e300, rs.getDouble("c_float8"));
        eq(label + " getBoolean false", false, rs.getBoolean("c_bool"));
        eq(label + " getString unicode", "ünïcode ✓", rs.getString("c_text"));
        eq(label + " getString empty", "", rs.getString("c_varchar"));
        eq(label + " getDate epoch", LocalDate.of(1970, 1, 1), rs.getObject("c_date", LocalDate.class));
        eq(label + " getTimestamp 1999", LocalDateTime.of(1999, 12, 31, 23, 59, 59),
            rs.getObject("c_timestamp", LocalDateTime.class));
        eq(label + " interval -1 mons +3 days", new PGInterval(0, -1, 3, 0, 0, 0), rs.getObject("c_interval"));
        eq(label + " getObject zero uuid", new UUID(0, 0), rs.getObject("c_uuid"));
        eq(label + " getBytes empty", new byte[0], rs.getBytes("c_bytea"));
        eq(label + " getString json []", "[]", rs.getString("c_json"));
        eq(label + " getString jsonb", "[1, \"x\", null]", rs.getString("c_jsonb"));
        eq(label + " getArray empty", new Integer[0], rs.getArray("c_int4_array").getArray());
        eq(label + " end of rows", false, rs.next());
    }

    static void checkStatementGetters(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(SELECT_ALL_TYPES + " ORDER BY id")) {
            ResultSetMetaData md = rs.getMetaData();
            eq("column count", 22, md.getColumnCount());
            eq("numeric type name, precision, scale", List.of("numeric", 12, 2),
                List.of(md.getColumnTypeName(5), md.getPrecision(5), md.getScale(5)));
            eq("varchar display size", 40, md.getColumnDisplaySize(10));
            eq("timestamptz type name", "timestamptz", md.getColumnTypeName(15));
            eq("uuid class name", "java.util.UUID", md.getColumnClassName(17));
            // isNullable and the table name come from the table OID and column
            // number in RowDescription, looked up in pg_attribute and pg_class.
            eq("isNullable id", ResultSetMetaData.columnNoNulls, md.isNullable(1));
            eq("isNullable c_int2", ResultSetMetaData.columnNullable, md.isNullable(2));
            eq("base table name", "all_types", md.unwrap(org.postgresql.PGResultSetMetaData.class).getBaseTableName(1));
            checkGetters("Statement", rs);
        }
    }

    static List<Integer> resultFormats(ResultSet rs) throws SQLException {
        org.postgresql.PGResultSetMetaData md = rs.getMetaData().unwrap(org.postgresql.PGResultSetMetaData.class);
        List<Integer> formats = new ArrayList<>();
        for (int column : new int[] {3, 4, 7, 15, 17, 18}) {
            formats.add(md.getFormat(column));
        }
        return formats;
    }

    /** The same getters through a PreparedStatement executed 10 times: from
     *  the 5th execution on pgjdbc uses a named server-side statement and
     *  binary transfer, and every getter must give the same answers. */
    static void checkPreparedGetters(Connection conn) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(SELECT_ALL_TYPES + " WHERE id = ANY(?) ORDER BY id")) {
            PGStatement pgStatement = ps.unwrap(PGStatement.class);
            eq("prepareThreshold", 5, pgStatement.getPrepareThreshold());
            List<List<Integer>> formats = new ArrayList<>();
            for (int run = 1; run <= 10; run++) {
                ps.setArray(1, conn.createArrayOf("int4", new Integer[] {3, 1, 2}));
                try (ResultSet rs = ps.executeQuery()) {
                    formats.add(resultFormats(rs));
                    checkGetters("run " + run, rs);
                }
            }
            eq("server-side prepared after 10 runs", true, pgStatement.isUseServerPrepare());
            // pgjdbc asks for these columns in binary once the statement is
            // prepared on the server (0 = text, 1 = binary).
            eq("formats of int4, int8, float8, timestamptz, uuid, bytea: first run", List.of(0, 0, 0, 0, 0, 0),
                formats.get(0));
            eq("formats of int4, int8, float8, timestamptz, uuid, bytea: last run", List.of(1, 1, 1, 1, 1, 1),
                formats.get(9));
        }
    }

    static String expectedTotal(long id) {
        long cents = (id * 731) % 100000;
        return String.format("%d.%02d", cents / 100, cents % 100);
    }

    static void checkOrderRow(String label, ResultSet rs) throws SQLException {
        long id = rs.getLong("id");
        eq(label + " id=" + id, List.of((int) (id % 100), STATUSES[(int) (id % 4)], new BigDecimal(expectedTotal(id)),
                OffsetDateTime.of(2026, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC).plusHours(id).toInstant()),
            List.of(rs.getInt("customer_id"), rs.getString("status"), rs.getBigDecimal("total"),
                rs.getObject("created_at", OffsetDateTime.class).toInstant()));
    }

    static void checkPreparedParameters(Connection conn) throws SQLException {
        String sql = "SELECT id, customer_id, status, total, created_at FROM " + ORDERS
            + " WHERE id = ? AND customer_id = ? AND status = ? AND total = ? AND created_at = ?";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int run = 1; run <= 10; run++) {
                long id = run * 89L;
                ps.setLong(1, id);
                ps.setInt(2, (int) (id % 100));
                ps.setString(3, STATUSES[(int) (id % 4)]);
                ps.setBigDecimal(4, new BigDecimal(expectedTotal(id)));
                // The same instant in another offset: the server compares instants.
                ps.setObject(5, OffsetDateTime.of(2026, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC).plusHours(id)
                    .withOffsetSameInstant(ZoneOffset.ofHours(-5)));
                try (ResultSet rs = ps.executeQuery()) {
                    eq("run " + run + " found", true, rs.next());
                    checkOrderRow("run " + run, rs);
                    eq("run " + run + " one row", false, rs.next());
                }
            }
            eq("server-side prepared", true, ps.unwrap(PGStatement.class).isUseServerPrepare());
        }
        String typed = "SELECT id FROM " + ALL_TYPES + " WHERE c_int2 = ? AND c_float4 = ? AND c_float8 = ? AND c_bool = ?"
            + " AND c_char = ? AND c_date = ? AND c_time = ? AND c_timestamp = ? AND c_uuid = ? AND c_bytea = ?"
            + " AND c_jsonb = ?::jsonb AND c_int4_array = ? AND c_text_array = ? AND c_interval = ?::interval";
        try (PreparedStatement ps = conn.prepareStatement(typed)) {
            for (int run = 1; run <= 7; run++) {
                ps.setShort(1, (short) 32767);
                ps.setFloat(2, 1.5f);
                ps.setDouble(3, 0.1);
                ps.setBoolean(4, true);
                ps.setString(5, "ab");
                ps.setObject(6, LocalDate.of(2024, 2, 29));
                ps.setObject(7, LocalTime.of(12, 34, 56, 789_000_000));
                ps.setObject(8, LocalDateTime.of(2024, 2, 29, 12, 34, 56, 789_000_000));
                ps.setObject(9, UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"));
                ps.setBytes(10, new byte[] {(byte) 0xde, (byte) 0xad, (byte) 0xbe, (byte) 0xef});
                ps.setString(11, "{\"b\": {\"c\": true}}");
                ps.setArray(12, conn.createArrayOf("int4", new Integer[] {1, 2, 3}));
                ps.setArray(13, conn.createArrayOf("text", new String[] {"x", "y z"}));
                ps.setString(14, "1 day 02:03:04");
                List<Integer> ids = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        ids.add(rs.getInt(1));
                    }
                }
                eq("every type as a parameter, run " + run, List.of(1), ids);
            }
        }
    }

    static void checkFetchSize(Connection conn) throws SQLException {
        conn.setAutoCommit(false);
        conn.setReadOnly(true); // BEGIN READ ONLY
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT id, customer_id, status, total, created_at FROM " + ORDERS + " ORDER BY id")) {
            ps.setFetchSize(100); // a portal, fetched 100 rows at a time
            try (ResultSet rs = ps.executeQuery()) {
                long count = 0;
                while (rs.next()) {
                    count++;
                    eq("id in order", count, rs.getLong("id"));
                    checkOrderRow("fetch", rs);
                }
                eq("rows", (long) ORDERS_COUNT, count);
            }
        }
        try (Statement st = conn.createStatement()) {
            st.setFetchSize(7);
            try (ResultSet rs = st.executeQuery("SELECT id FROM " + ORDERS + " WHERE customer_id = 42 ORDER BY id")) {
                List<Long> ids = new ArrayList<>();
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
                eq("statement fetch size 7", List.of(42L, 142L, 242L, 342L, 442L, 542L, 642L, 742L, 842L, 942L), ids);
            }
            try (ResultSet rs = st.executeQuery("SHOW transaction_read_only")) {
                rs.next();
                eq("read-only transaction", "on", rs.getString(1));
            }
        }
        conn.commit();
        conn.setReadOnly(false);
    }

    static void checkTransaction(Connection conn) throws SQLException {
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            try (ResultSet rs = st.executeQuery("SELECT count(*) FROM " + ORDERS + " WHERE status = 'paid'")) {
                rs.next();
                eq("read in a transaction", 250L, rs.getLong(1));
            }
            rejects("1/0", () -> st.executeQuery("SELECT 1/0"), "22012");
            rejects("after the error", () -> st.executeQuery("SELECT 1"), "25P02");
            conn.rollback();
            try (ResultSet rs = st.executeQuery("SELECT count(*) FROM " + ORDERS)) {
                rs.next();
                eq("after rollback", (long) ORDERS_COUNT, rs.getLong(1));
            }
            conn.commit();
            conn.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            try (ResultSet rs = st.executeQuery("SHOW TRANSACTION ISOLATION LEVEL")) {
                rs.next();
                eq("repeatable read", "repeatable read", rs.getString(1));
            }
            conn.commit();
            conn.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        }
    }

    static void checkReadReplica(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            rejects("INSERT", () -> st.executeUpdate(
                "INSERT INTO " + ORDERS + " VALUES (100001, 1, 'new', 1.00, now())"), "25006");
            try (ResultSet rs = st.executeQuery("SELECT pg_is_in_recovery()")) {
                rs.next();
                eq("pg_is_in_recovery()", true, rs.getBoolean(1));
            }
            try (ResultSet rs = st.executeQuery("SHOW transaction_read_only")) {
                rs.next();
                eq("transaction_read_only", "on", rs.getString(1));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        System.out.println("pgjdbc " + org.postgresql.util.DriverInfo.DRIVER_VERSION + ", java " + System.getProperty("java.version"));
        Properties props = new Properties();
        props.setProperty("ApplicationName", "pgaccel-check-jdbc");
        try (Connection conn = DriverManager.getConnection(URL, props)) {
            group(conn, "DatabaseMetaData.getTables / getSchemas", CheckJdbc::checkTables);
            group(conn, "DatabaseMetaData.getColumns", CheckJdbc::checkColumns);
            group(conn, "DatabaseMetaData.getPrimaryKeys / getIndexInfo", CheckJdbc::checkKeysAndIndexes);
            group(conn, "DatabaseMetaData.getTypeInfo", CheckJdbc::checkTypeInfo);
            group(conn, "Statement: ResultSetMetaData and every getter", CheckJdbc::checkStatementGetters);
            group(conn, "PreparedStatement x10: every getter, server-prepared, binary", CheckJdbc::checkPreparedGetters);
            group(conn, "PreparedStatement x10: parameters of every type", CheckJdbc::checkPreparedParameters);
            group(conn, "setAutoCommit(false) + setFetchSize(100): portal over orders", CheckJdbc::checkFetchSize);
            group(conn, "transactions: 25P02 until rollback, isolation level", CheckJdbc::checkTransaction);
            if (TARGET.equals("pgaccel")) {
                group(conn, "read replica: 25006 on write, in recovery, read only", CheckJdbc::checkReadReplica);
            } else {
                System.out.println("  skip read replica assertions: target is postgres");
            }
        }
        if (!failedGroups.isEmpty()) {
            System.out.println("FAIL jdbc: " + failedGroups.size() + " of " + groups + " groups failed: "
                + String.join(", ", failedGroups));
            System.exit(1);
        }
        System.out.println("PASS jdbc: " + groups + " groups");
    }
}
