//! Tests over `testdata/config/`: every file in `valid/` loads, and every file in
//! `invalid/` fails with an error containing the text of its `# expect:` first line
//! (dataset and key). Also checks that errors never contain secret values and that
//! `unsupported()` names what this version refuses.

use std::path::{Path, PathBuf};

use super::load::{Input, document};
use super::{Config, ConfigErrors, secret, validate};

/// Secret values the fixtures resolve; none may appear in any error message.
const SECRET_VALUES: &[&str] = &[
    "app-password-value",
    "admin-key-value",
    "pg-password-value",
    "mysql://u:p@h/db",
];

fn fixture_env(name: &str) -> Option<String> {
    let value = match name {
        "PGACCEL_SECRET_APP_PW" => SECRET_VALUES[0],
        "PGACCEL_SECRET_ADMIN_KEY" => SECRET_VALUES[1],
        "PG_PASSWORD" => SECRET_VALUES[2],
        "MYSQL_URL" => SECRET_VALUES[3],
        "PG_HOST" => "db.internal",
        "PG_PORT" => "6543",
        _ => return None,
    };
    Some(value.to_string())
}

/// Loads a fixture with a fixed environment, so tests neither read nor mutate the
/// process environment.
fn load_fixture(path: &Path) -> Result<Config, ConfigErrors> {
    let overrides = ::config::Environment::with_prefix("PGACCEL")
        .separator("__")
        .source(Some(Default::default()));
    let document = document(Input::Path(path), overrides)?;
    validate::validate(document, &fixture_env)
}

fn fixtures(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/config")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn valid_fixtures_load() {
    let files = fixtures("valid");
    assert!(files.len() >= 4);
    for path in files {
        if let Err(errors) = load_fixture(&path) {
            panic!("{} should be valid:\n{errors}", path.display());
        }
    }
}

#[test]
fn invalid_fixtures_name_dataset_and_key() {
    let files = fixtures("invalid");
    assert!(files.len() >= 20);
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{} has no '# expect:' first line", path.display()));
        let errors = match load_fixture(&path) {
            Ok(_) => panic!("{} should be invalid", path.display()),
            Err(errors) => errors.to_string(),
        };
        assert!(
            errors.contains(expect),
            "{}: expected '{expect}' in:\n{errors}",
            path.display()
        );
        for secret in SECRET_VALUES {
            assert!(
                !errors.contains(secret),
                "{} leaks a secret:\n{errors}",
                path.display()
            );
        }
    }
}

#[test]
fn secrets_resolve_and_stay_hidden() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/config/valid/secrets.yaml");
    let config = load_fixture(&path).unwrap();
    let api_key = config.runtime.http.api_key.as_ref().unwrap();
    assert_eq!(api_key.expose(), "admin-key-value");
    let super::SourceParams::Postgres(pg) = &config.datasets[0].params else {
        panic!("postgres")
    };
    assert_eq!((pg.host.as_str(), pg.port), ("db.internal", 6543));
    assert_eq!(pg.pass.as_ref().unwrap().expose(), "pg-password-value");
    let debug = format!("{config:?}");
    for secret in SECRET_VALUES {
        assert!(!debug.contains(secret), "Debug leaks {secret}");
    }
}

fn from_yaml_with(yaml: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigErrors> {
    let vars = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let overrides = ::config::Environment::with_prefix("PGACCEL")
        .separator("__")
        .source(Some(vars));
    validate::validate(
        document(Input::Yaml(yaml), overrides)?,
        &secret::process_env,
    )
}

fn from_yaml(yaml: &str) -> Result<Config, ConfigErrors> {
    from_yaml_with(yaml, &[])
}

#[test]
fn environment_overrides_apply() {
    let yaml = "runtime:\n  pg:\n    listen: 127.0.0.1:15432\n";
    let vars = [
        ("PGACCEL__RUNTIME__PG__LISTEN", "0.0.0.0:0"),
        ("PGACCEL_SECRET_X", "ignored"),
    ];
    let config = from_yaml_with(yaml, &vars).unwrap();
    assert_eq!(config.runtime.pg.listen.to_string(), "0.0.0.0:0");
    let vars = [(
        "PGACCEL__RUNTIME__PARAMS__DEDICATED_THREAD_POOL",
        "disabled",
    )];
    assert!(
        !from_yaml_with("", &vars)
            .unwrap()
            .runtime
            .dedicated_thread_pool
    );
}

#[test]
fn one_bad_dataset_does_not_hide_another() {
    let yaml = "datasets:\n  - from: postgres:a\n    name: a\n    nope: 1\n    acceleration: { refresh_mode: x, engine: y }\n  - from: nowhere\n    name: b\n";
    let errors = from_yaml(yaml).unwrap_err().to_string();
    for expected in [
        "dataset 'a': nope",
        "dataset 'a': acceleration.refresh_mode",
        "dataset 'a': acceleration.engine",
        "dataset 'b': from",
    ] {
        assert!(
            errors.contains(expected),
            "missing '{expected}' in:\n{errors}"
        );
    }
}

#[test]
fn defaults_apply() {
    let config = from_yaml("datasets:\n  - from: file:x.parquet\n    name: x\n").unwrap();
    assert_eq!(config.runtime.pg.listen.to_string(), "127.0.0.1:15432");
    assert_eq!(config.runtime.http.listen.to_string(), "127.0.0.1:8090");
    assert_eq!(config.runtime.pg.max_connections, 500);
    assert!(config.runtime.dedicated_thread_pool);
    let a = &config.datasets[0].acceleration;
    assert!(a.enabled && a.retry.enabled && a.retry.max_attempts.is_none());
    assert_eq!(
        (a.engine, a.mode, a.refresh_mode),
        (
            super::Engine::Arrow,
            super::Mode::Memory,
            super::RefreshMode::Full
        )
    );
    assert!(a.schedule.is_none() && a.jitter.is_none());
    assert!(
        config.unsupported().is_empty(),
        "{:?}",
        config.unsupported()
    );
}

#[test]
fn jitter_defaults_to_a_tenth_of_the_interval() {
    let yaml = "datasets:\n  - from: file:x.csv\n    name: x\n    acceleration: { refresh_check_interval: 10s, refresh_jitter_enabled: true }\n";
    let config = from_yaml(yaml).unwrap();
    assert_eq!(
        config.datasets[0].acceleration.jitter,
        Some(std::time::Duration::from_secs(1))
    );
}

/// `refresh_mode: caching` takes its `caching_*` keys from
/// `acceleration.params`, with the seed's defaults; each key is refused with
/// another refresh mode, and so are the keys that choose what a refresh
/// loads.
#[test]
fn caching_mode_reads_its_keys() {
    let yaml = "datasets:\n  - from: postgres:public.t\n    name: t\n    acceleration:\n      refresh_mode: caching\n      params: { caching_ttl: 5s, caching_stale_while_revalidate_ttl: 1m, caching_stale_if_error: enabled, caching_max_keys: 100, caching_max_size: 1MB }\n";
    let config = from_yaml(yaml).unwrap();
    assert!(
        config.unsupported().is_empty(),
        "{:?}",
        config.unsupported()
    );
    let caching = &config.datasets[0].acceleration.caching;
    assert_eq!(caching.ttl, std::time::Duration::from_secs(5));
    assert_eq!(
        caching.stale_while_revalidate,
        std::time::Duration::from_secs(60)
    );
    assert!(caching.stale_if_error);
    assert_eq!(caching.max_keys, 100);
    let defaults = from_yaml("datasets:\n  - from: postgres:public.t\n    name: t\n    acceleration: { refresh_mode: caching }\n").unwrap();
    assert_eq!(
        defaults.datasets[0].acceleration.caching.ttl,
        std::time::Duration::from_secs(30)
    );
    for (yaml, key, words) in [
        (
            "datasets:\n  - from: postgres:public.t\n    name: t\n    acceleration: { params: { caching_ttl: 5s } }\n",
            "acceleration.params.caching_ttl",
            "only applies to refresh_mode: caching",
        ),
        (
            "datasets:\n  - from: postgres:public.t\n    name: t\n    acceleration: { refresh_mode: caching, params: { caching_stale_if_error: maybe } }\n",
            "acceleration.params.caching_stale_if_error",
            "valid values are enabled, disabled",
        ),
        (
            "datasets:\n  - from: postgres:public.t\n    name: t\n    acceleration: { refresh_mode: caching, refresh_sql: 'SELECT * FROM t WHERE id > 3' }\n",
            "acceleration.refresh_sql",
            "does not apply to refresh_mode: caching",
        ),
    ] {
        let errors = from_yaml(yaml).unwrap_err().to_string();
        assert!(
            errors.contains(key) && errors.contains(words),
            "{key}: {errors}"
        );
    }
}

/// `refresh_mode: changes` is accepted on PostgreSQL tables, with its
/// slot parameters, and on MySQL tables with a server id; a source without a change stream, a filtering
/// `refresh_sql` and a malformed slot name are refused, each naming its key.
#[test]
fn changes_mode_is_checked_against_its_source() {
    let accepted = "datasets:\n  - from: postgres:public.t\n    name: t\n    params: { pg_db: test, pg_user: root, pg_replication_slot: my_slot, drop_slot_on_remove: true }\n    acceleration: { refresh_mode: changes, refresh_sql: 'SELECT id, name FROM t' }\n";
    let config = from_yaml(accepted).unwrap();
    assert!(
        config.unsupported().is_empty(),
        "{:?}",
        config.unsupported()
    );
    let crate::config::SourceParams::Postgres(params) = &config.datasets[0].params else {
        panic!("postgres params");
    };
    assert_eq!(params.replication_slot.as_deref(), Some("my_slot"));
    assert!(params.drop_slot_on_remove);
    let mysql = "datasets:\n  - from: mysql:shop.t\n    name: t\n    params: { mysql_user: root, mysql_server_id: 4001 }\n    acceleration: { refresh_mode: changes }\n";
    let config = from_yaml(mysql).unwrap();
    assert!(
        config.unsupported().is_empty(),
        "{:?}",
        config.unsupported()
    );
    let crate::config::SourceParams::Mysql(params) = &config.datasets[0].params else {
        panic!("mysql params");
    };
    assert_eq!(params.server_id, Some(4001));
    for (yaml, key, words) in [
        (
            "datasets:\n  - from: mysql:shop.t\n    name: t\n    params: { mysql_user: root, mysql_server_id: 0 }\n    acceleration: { refresh_mode: changes }\n",
            "params.mysql_server_id",
            "a replication server id",
        ),
        (
            "datasets:\n  - from: duckdb:t\n    name: t\n    params: { duckdb_open: x.db }\n    acceleration: { refresh_mode: changes }\n",
            "acceleration.refresh_mode",
            "has no change stream",
        ),
        (
            "datasets:\n  - from: postgres:public.t\n    name: t\n    params: { pg_db: test, pg_user: root }\n    acceleration: { refresh_mode: changes, refresh_sql: 'SELECT * FROM t WHERE id > 3' }\n",
            "acceleration.refresh_sql",
            "not filter rows",
        ),
        (
            "datasets:\n  - from: postgres:public.t\n    name: t\n    params: { pg_db: test, pg_user: root, pg_replication_slot: My-Slot }\n    acceleration: { refresh_mode: changes }\n",
            "params.pg_replication_slot",
            "lower-case letters",
        ),
    ] {
        let errors = from_yaml(yaml).unwrap_err().to_string();
        assert!(
            errors.contains(key) && errors.contains(words),
            "{key}: {errors}"
        );
    }
}

#[test]
fn the_full_example_is_supported() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/config/valid/full.yaml");
    let refused = load_fixture(&path).unwrap().unsupported();
    assert!(refused.is_empty(), "{refused:#?}");
}

#[test]
fn a_missing_file_names_the_path() {
    let errors = super::load(Path::new("/nonexistent/pgaccel.yaml"))
        .unwrap_err()
        .to_string();
    assert!(
        errors.starts_with("/nonexistent/pgaccel.yaml: cannot read the configuration"),
        "{errors}"
    );
}

/// Any document made by damaging a valid fixture (a value replaced by any
/// text, a line dropped, doubled or re-indented) loads or fails with errors
/// that say something; it never panics, and errors show no secret.
#[test]
fn damaged_fixtures_never_panic() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config as Cases, RngAlgorithm, TestRng, TestRunner};

    let documents: Vec<String> = fixtures("valid")
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    let damage = prop_oneof![
        ".{0,24}".prop_map(Damage::Value),
        Just(Damage::Drop),
        Just(Damage::Double),
        (0usize..6).prop_map(Damage::Indent),
    ];
    let cases = (
        0..documents.len(),
        prop::collection::vec((any::<prop::sample::Index>(), damage), 1..4),
    );
    let mut runner = TestRunner::new_with_rng(
        Cases {
            cases: 500,
            failure_persistence: None,
            ..Cases::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let outcome = runner.run(&cases, |(chosen, damages)| {
        let mut lines: Vec<String> = documents[chosen].lines().map(str::to_owned).collect();
        for (at, damage) in damages {
            if lines.is_empty() {
                break;
            }
            let i = at.index(lines.len());
            match damage {
                Damage::Value(text) => {
                    if let Some((key, _)) = lines[i].split_once(':') {
                        lines[i] = format!("{key}: {text}");
                    }
                }
                Damage::Drop => {
                    lines.remove(i);
                }
                Damage::Double => lines.insert(i, lines[i].clone()),
                Damage::Indent(spaces) => {
                    lines[i] = format!("{}{}", " ".repeat(spaces), lines[i].trim_start());
                }
            }
        }
        let text = lines.join("\n");
        let overrides = ::config::Environment::with_prefix("PGACCEL")
            .separator("__")
            .source(Some(Default::default()));
        let loaded = document(Input::Yaml(&text), overrides)
            .and_then(|document| validate::validate(document, &fixture_env));
        if let Err(errors) = loaded {
            let message = errors.to_string();
            prop_assert!(!message.trim().is_empty(), "{}", text);
            for secret in SECRET_VALUES {
                prop_assert!(!message.contains(secret), "{}\n{}", text, message);
            }
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

#[derive(Debug, Clone)]
enum Damage {
    Value(String),
    Drop,
    Double,
    Indent(usize),
}

/// An `https://` source takes the params that bound the requests queries
/// may make; a path that is not one is refused, naming the param.
#[test]
fn http_sources_read_their_request_params() {
    let yaml = "datasets:\n  - from: https://api.example.com/v1\n    name: api\n    params: { allowed_request_paths: '/search, /shows/*', request_query_filters: enabled, max_request_query_length: 200 }\n    acceleration: { refresh_mode: caching }\n";
    let config = from_yaml(yaml).unwrap();
    let crate::config::SourceParams::Http(params) = &config.datasets[0].params else {
        panic!("http params");
    };
    assert_eq!(params.allowed_paths, ["/search", "/shows/*"]);
    assert!(params.query_filters);
    assert_eq!(params.max_query_length, 200);
    let errors = from_yaml(
        "datasets:\n  - from: https://api.example.com/v1\n    name: api\n    params: { allowed_request_paths: search }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        errors.contains("params.allowed_request_paths") && errors.contains("starts with '/'"),
        "{errors}"
    );
}
