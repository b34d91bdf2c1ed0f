//! A random query generator over the differential fixture: seeded and
//! reproducible, it builds type-correct queries (projections, predicates,
//! joins, aggregates with GROUP BY and HAVING, subqueries, set operations,
//! windows, casts, CASE) and compares pgaccel's answer with PostgreSQL's on
//! both protocols, as the differential corpus does. A refusal (0A000) is
//! allowed; any other difference fails, printing the seed, the query and
//! both answers, written also as corpus lines to `generator.txt` in cargo's
//! test temporary directory, ready to become corpus cases.
//!
//! CI runs a fixed seed for a bounded number of queries. For longer runs
//! (`scripts/generate-queries`), `PGACCEL_GENERATOR_SEED` picks the seed and
//! `PGACCEL_GENERATOR_SECONDS` how long to run.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::differential::{Answer, answers, served_fixture};

/// The seed and query count CI runs.
const CI_SEED: u64 = 20261202;
const CI_QUERIES: usize = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Int,
    Big,
    Num,
    Float,
    Text,
    Date,
    Ts,
    Tstz,
}

const ALL_TYPES: [Ty; 8] = [
    Ty::Int,
    Ty::Big,
    Ty::Num,
    Ty::Float,
    Ty::Text,
    Ty::Date,
    Ty::Ts,
    Ty::Tstz,
];

/// The fixture's tables and the columns the generator uses, by type.
const SCHEMA: &[(&str, &[(&str, Ty)])] = &[
    (
        "nums",
        &[
            ("id", Ty::Int),
            ("i2", Ty::Int),
            ("i4", Ty::Int),
            ("i8", Ty::Big),
            ("n", Ty::Num),
            ("f8", Ty::Float),
            ("grp", Ty::Text),
        ],
    ),
    (
        "texts",
        &[
            ("id", Ty::Int),
            ("t", Ty::Text),
            ("v", Ty::Text),
            ("c", Ty::Text),
        ],
    ),
    (
        "times",
        &[
            ("id", Ty::Int),
            ("d", Ty::Date),
            ("ts", Ty::Ts),
            ("tstz", Ty::Tstz),
        ],
    ),
    (
        "customers",
        &[
            ("id", Ty::Int),
            ("name", Ty::Text),
            ("region", Ty::Text),
            ("since", Ty::Date),
        ],
    ),
    (
        "orders",
        &[
            ("id", Ty::Int),
            ("customer_id", Ty::Int),
            ("amount", Ty::Num),
            ("qty", Ty::Int),
            ("status", Ty::Text),
            ("placed", Ty::Tstz),
        ],
    ),
];

/// A column in scope: `alias.name`.
#[derive(Debug, Clone)]
struct Column {
    qualified: String,
    ty: Ty,
}

struct Generator {
    rng: fastrand::Rng,
}

fn table(name: &str) -> &'static [(&'static str, Ty)] {
    SCHEMA
        .iter()
        .find(|(table, _)| *table == name)
        .map(|(_, columns)| *columns)
        .unwrap_or(&[])
}

fn scope(name: &str, alias: &str) -> Vec<Column> {
    table(name)
        .iter()
        .map(|(column, ty)| Column {
            qualified: format!("{alias}.{column}"),
            ty: *ty,
        })
        .collect()
}

impl Generator {
    fn new(seed: u64) -> Self {
        Generator {
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.u32(0..100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.usize(0..items.len())]
    }

    fn column(&mut self, columns: &[Column], ty: Ty) -> Option<String> {
        let matching: Vec<&Column> = columns.iter().filter(|c| c.ty == ty).collect();
        (!matching.is_empty()).then(|| self.pick(&matching).qualified.clone())
    }

    /// A value of `ty`: a column in scope or a literal, or an expression
    /// over them while `depth` lasts.
    fn expr(&mut self, ty: Ty, columns: &[Column], depth: u32) -> String {
        if depth == 0 || self.chance(40) {
            return match self.column(columns, ty) {
                Some(column) if self.chance(75) => column,
                _ => self.literal(ty),
            };
        }
        let d = depth - 1;
        match ty {
            Ty::Int => match self.rng.u32(0..9) {
                0 => format!(
                    "({} + {})",
                    self.expr(Ty::Int, columns, d),
                    self.expr(Ty::Int, columns, d)
                ),
                1 => format!(
                    "({} - {})",
                    self.expr(Ty::Int, columns, d),
                    self.expr(Ty::Int, columns, d)
                ),
                2 => format!(
                    "({} * {})",
                    self.expr(Ty::Int, columns, d),
                    self.rng.i32(-3..4)
                ),
                3 => format!("abs({})", self.expr(Ty::Int, columns, d)),
                4 => format!(
                    "({} % {})",
                    self.expr(Ty::Int, columns, d),
                    self.rng.i32(1..9)
                ),
                5 => format!(
                    "({} / {})",
                    self.expr(Ty::Int, columns, d),
                    self.rng.i32(1..9)
                ),
                6 => format!("length({})", self.expr(Ty::Text, columns, d)),
                7 => format!(
                    "CASE WHEN {} THEN {} ELSE {} END",
                    self.predicate(columns, d),
                    self.expr(Ty::Int, columns, d),
                    self.expr(Ty::Int, columns, d)
                ),
                _ => format!(
                    "coalesce({}, {})",
                    self.expr(Ty::Int, columns, d),
                    self.literal(Ty::Int)
                ),
            },
            Ty::Big => match self.rng.u32(0..3) {
                0 => format!("{}::int8", self.expr(Ty::Int, columns, d)),
                1 => format!(
                    "({} + {})",
                    self.expr(Ty::Big, columns, d),
                    self.expr(Ty::Int, columns, d)
                ),
                _ => format!(
                    "({} - {})",
                    self.expr(Ty::Big, columns, d),
                    self.expr(Ty::Big, columns, d)
                ),
            },
            Ty::Num => match self.rng.u32(0..7) {
                0 => format!(
                    "({} + {})",
                    self.expr(Ty::Num, columns, d),
                    self.expr(Ty::Num, columns, d)
                ),
                1 => format!(
                    "({} * {})",
                    self.expr(Ty::Num, columns, d),
                    self.literal(Ty::Num)
                ),
                2 => format!(
                    "round({}, {})",
                    self.expr(Ty::Num, columns, d),
                    self.rng.i32(0..4)
                ),
                3 => format!(
                    "({} / {})",
                    self.expr(Ty::Num, columns, d),
                    self.pick(&["3", "7.5", "-2"])
                ),
                4 => format!("{}::numeric", self.expr(Ty::Int, columns, d)),
                5 => format!("abs({})", self.expr(Ty::Num, columns, d)),
                _ => format!(
                    "({} - {})",
                    self.expr(Ty::Num, columns, d),
                    self.expr(Ty::Int, columns, d)
                ),
            },
            Ty::Float => match self.rng.u32(0..4) {
                0 => format!("({} * 2.5::float8)", self.expr(Ty::Float, columns, d)),
                1 => format!("{}::float8", self.expr(Ty::Int, columns, d)),
                2 => format!("abs({})", self.expr(Ty::Float, columns, d)),
                _ => format!(
                    "({} + {})",
                    self.expr(Ty::Float, columns, d),
                    self.expr(Ty::Float, columns, d)
                ),
            },
            Ty::Text => match self.rng.u32(0..8) {
                0 => format!("upper({})", self.expr(Ty::Text, columns, d)),
                1 => format!("lower({})", self.expr(Ty::Text, columns, d)),
                2 => format!(
                    "({} || {})",
                    self.expr(Ty::Text, columns, d),
                    self.expr(Ty::Text, columns, d)
                ),
                3 => format!(
                    "substr({}, {}, {})",
                    self.expr(Ty::Text, columns, d),
                    self.rng.i32(1..4),
                    self.rng.i32(0..5)
                ),
                4 => format!("trim({})", self.expr(Ty::Text, columns, d)),
                5 => format!("replace({}, 'a', 'xy')", self.expr(Ty::Text, columns, d)),
                6 => format!("{}::text", self.expr(Ty::Int, columns, d)),
                _ => format!("coalesce({}, 'none')", self.expr(Ty::Text, columns, d)),
            },
            Ty::Date => match self.rng.u32(0..2) {
                0 => format!(
                    "({} + {})",
                    self.expr(Ty::Date, columns, d),
                    self.rng.i32(-40..40)
                ),
                _ => format!(
                    "({} - {})",
                    self.expr(Ty::Date, columns, d),
                    self.rng.i32(0..400)
                ),
            },
            Ty::Ts => match self.rng.u32(0..3) {
                0 => format!(
                    "date_trunc('{}', {})",
                    self.pick(&["year", "month", "day", "hour"]),
                    self.expr(Ty::Ts, columns, d)
                ),
                1 => format!(
                    "({} + interval '{} hours')",
                    self.expr(Ty::Ts, columns, d),
                    self.rng.i32(-30..30)
                ),
                _ => format!("{}::timestamp", self.expr(Ty::Date, columns, d)),
            },
            Ty::Tstz => match self.rng.u32(0..2) {
                0 => format!(
                    "date_trunc('{}', {})",
                    self.pick(&["year", "month", "day", "hour"]),
                    self.expr(Ty::Tstz, columns, d)
                ),
                _ => format!(
                    "({} - interval '{} minutes')",
                    self.expr(Ty::Tstz, columns, d),
                    self.rng.i32(0..3000)
                ),
            },
        }
    }

    fn literal(&mut self, ty: Ty) -> String {
        match ty {
            Ty::Int => self.rng.i32(-5..60).to_string(),
            Ty::Big => format!("{}::int8", self.rng.i64(-5..5_000_000_000)),
            Ty::Num => self
                .pick(&["0", "1.5", "-2.25", "100.125", "0.001"])
                .to_string(),
            Ty::Float => self
                .pick(&["0.5::float8", "-1.25::float8", "1e10::float8"])
                .to_string(),
            Ty::Text => self
                .pick(&["'a'", "''", "'new'", "'north'", "'Hello World'", "'é'"])
                .to_string(),
            Ty::Date => format!(
                "date '{}'",
                self.pick(&["2024-02-29", "1999-12-31", "2030-06-15"])
            ),
            Ty::Ts => format!(
                "timestamp '{}'",
                self.pick(&["2024-03-10 02:30:00", "2000-01-01 00:00:00"])
            ),
            Ty::Tstz => format!(
                "timestamptz '{}'",
                self.pick(&["2024-03-10 07:30:00+00", "2024-06-01 12:00:00+02"])
            ),
        }
    }

    /// A boolean over the columns in scope.
    fn predicate(&mut self, columns: &[Column], depth: u32) -> String {
        let ty = *self.pick(&ALL_TYPES);
        match self.rng.u32(0..if depth == 0 { 5 } else { 8 }) {
            0..=2 => {
                let operator = self.pick(&["=", "<>", "<", "<=", ">", ">="]);
                format!(
                    "{} {operator} {}",
                    self.expr(ty, columns, depth.min(1)),
                    self.expr(ty, columns, depth.min(1))
                )
            }
            3 => format!(
                "{} IS {}NULL",
                self.expr(ty, columns, depth.min(1)),
                if self.chance(50) { "NOT " } else { "" }
            ),
            4 => format!(
                "{} IN ({}, {})",
                self.expr(Ty::Int, columns, 0),
                self.literal(Ty::Int),
                self.literal(Ty::Int)
            ),
            5 => format!(
                "({} AND {})",
                self.predicate(columns, depth - 1),
                self.predicate(columns, depth - 1)
            ),
            6 => format!(
                "({} OR {})",
                self.predicate(columns, depth - 1),
                self.predicate(columns, depth - 1)
            ),
            _ => format!("NOT ({})", self.predicate(columns, depth - 1)),
        }
    }

    fn one_table(&mut self) -> (String, Vec<Column>) {
        let (name, _) = *self.pick(SCHEMA);
        (format!("{name} t"), scope(name, "t"))
    }

    /// A list of 1 to 4 typed select items.
    fn select_list(&mut self, columns: &[Column]) -> Vec<String> {
        (0..self.rng.usize(1..5))
            .map(|_| {
                let ty = *self.pick(&ALL_TYPES);
                self.expr(ty, columns, 2)
            })
            .collect()
    }

    fn order_all(count: usize) -> String {
        (1..=count)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn query(&mut self) -> String {
        match self.rng.u32(0..7) {
            0 | 1 => self.plain(),
            2 => self.aggregate(),
            3 => self.join(),
            4 => self.subquery(),
            5 => self.set_operation(),
            _ => self.window(),
        }
    }

    fn plain(&mut self) -> String {
        let (from, columns) = self.one_table();
        let items = self.select_list(&columns);
        let mut sql = format!("SELECT {} FROM {from}", items.join(", "));
        if self.chance(60) {
            let _ = write!(sql, " WHERE {}", self.predicate(&columns, 2));
        }
        let _ = write!(sql, " ORDER BY {}", Self::order_all(items.len()));
        if self.chance(30) {
            let _ = write!(sql, " LIMIT {}", self.rng.u32(0..10));
        }
        sql
    }

    fn aggregate(&mut self) -> String {
        let (from, columns) = self.one_table();
        let keys: Vec<String> = (0..self.rng.usize(0..3))
            .map(|_| self.pick(&columns).qualified.clone())
            .collect();
        let mut items = keys.clone();
        for _ in 0..self.rng.usize(1..4) {
            let ty = *self.pick(&[Ty::Int, Ty::Num, Ty::Big, Ty::Text, Ty::Date]);
            let argument = self
                .column(&columns, ty)
                .unwrap_or_else(|| "t.id".to_owned());
            let aggregate = match (self.rng.u32(0..6), ty) {
                (0, _) => "count(*)".to_owned(),
                (1, _) => format!("count({argument})"),
                (2, Ty::Int | Ty::Num | Ty::Big) => format!("sum({argument})"),
                (3, Ty::Int | Ty::Num) => format!("avg({argument})"),
                (4, _) => format!("min({argument})"),
                _ => format!("max({argument})"),
            };
            items.push(aggregate);
        }
        let mut sql = format!("SELECT {} FROM {from}", items.join(", "));
        if self.chance(40) {
            let _ = write!(sql, " WHERE {}", self.predicate(&columns, 1));
        }
        if !keys.is_empty() {
            let _ = write!(sql, " GROUP BY {}", keys.join(", "));
            if self.chance(30) {
                let _ = write!(sql, " HAVING count(*) > {}", self.rng.u32(0..3));
            }
        }
        let _ = write!(sql, " ORDER BY {}", Self::order_all(items.len()));
        sql
    }

    fn join(&mut self) -> String {
        let kind = *self.pick(&["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]);
        let mut columns = scope("orders", "o");
        columns.extend(scope("customers", "c"));
        let items = self.select_list(&columns);
        let mut sql = format!(
            "SELECT {} FROM orders o {kind} customers c ON c.id = o.customer_id",
            items.join(", ")
        );
        if self.chance(60) {
            let _ = write!(sql, " WHERE {}", self.predicate(&columns, 1));
        }
        let _ = write!(sql, " ORDER BY {}", Self::order_all(items.len()));
        if self.chance(40) {
            let _ = write!(sql, " LIMIT {}", self.rng.u32(1..20));
        }
        sql
    }

    fn subquery(&mut self) -> String {
        let (from, columns) = self.one_table();
        let (inner_name, _) = *self.pick(SCHEMA);
        let inner = scope(inner_name, "s");
        let items = self.select_list(&columns);
        let condition = match self.rng.u32(0..4) {
            0 => format!(
                "t.id IN (SELECT s.id FROM {inner_name} s WHERE {})",
                self.predicate(&inner, 1)
            ),
            1 => format!(
                "EXISTS (SELECT 1 FROM {inner_name} s WHERE s.id = t.id AND {})",
                self.predicate(&inner, 1)
            ),
            2 => format!(
                "t.id NOT IN (SELECT s.id FROM {inner_name} s WHERE {})",
                self.predicate(&inner, 1)
            ),
            _ => format!("t.id <= (SELECT count(*) FROM {inner_name} s)"),
        };
        format!(
            "SELECT {} FROM {from} WHERE {condition} ORDER BY {}",
            items.join(", "),
            Self::order_all(items.len())
        )
    }

    fn set_operation(&mut self) -> String {
        let ty = *self.pick(&[Ty::Int, Ty::Text, Ty::Date, Ty::Num]);
        let branch = |generator: &mut Generator| {
            let (from, columns) = generator.one_table();
            let mut sql = format!("SELECT {} FROM {from}", generator.expr(ty, &columns, 1));
            if generator.chance(50) {
                let _ = write!(sql, " WHERE {}", generator.predicate(&columns, 1));
            }
            sql
        };
        let left = branch(self);
        let right = branch(self);
        let operator = self.pick(&["UNION", "UNION ALL", "INTERSECT", "EXCEPT"]);
        format!("{left} {operator} {right} ORDER BY 1")
    }

    fn window(&mut self) -> String {
        let (from, columns) = self.one_table();
        let partition = self.pick(&columns).qualified.clone();
        let value = self
            .column(&columns, Ty::Int)
            .unwrap_or_else(|| "t.id".to_owned());
        let function = match self.rng.u32(0..6) {
            0 => "row_number()".to_owned(),
            1 => "rank()".to_owned(),
            2 => format!("sum({value})"),
            3 => format!("lag({value})"),
            4 => format!("max({value})"),
            _ => "count(*)".to_owned(),
        };
        format!(
            "SELECT t.id, {function} OVER (PARTITION BY {partition} ORDER BY t.id) FROM {from} ORDER BY 1"
        )
    }
}

/// Runs generated queries on PostgreSQL and pgaccel and returns every
/// difference (a refusal with 0A000 is not one, nor one the corpus lists),
/// how many queries ran, were refused and differed as listed.
async fn run(seed: u64, queries: usize, budget: Duration) -> (Vec<String>, usize, usize, usize) {
    let (_source, _server, primary, replica) = served_fixture("generator", "").await;

    // Queries it found before are corpus cases; while they are listed in
    // known_differences.txt they are counted, not failed.
    let known_ids = crate::differential::known_differences();
    let known: Vec<String> = crate::differential::corpus()
        .into_iter()
        .filter(|case| known_ids.contains_key(&case.id))
        .map(|case| case.sql.trim().to_owned())
        .collect();
    let mut generator = Generator::new(seed);
    let started = Instant::now();
    let mut differences = Vec::new();
    let (mut ran, mut refused, mut listed) = (0, 0, 0);
    while ran < queries && started.elapsed() < budget {
        let sql = format!("{};", generator.query());
        ran += 1;
        for (protocol, expected, got) in answers(&primary, &replica, &sql).await {
            if got == Answer::Error("0A000".to_owned()) && expected != got {
                refused += 1;
                break;
            }
            if expected != got && known.contains(&sql) {
                listed += 1;
                break;
            }
            if expected != got {
                differences.push(format!(
                    "-- seed {seed}, query {ran} ({protocol}):\n-- PostgreSQL {expected:?}\n-- pgaccel    {got:?}\n{sql}"
                ));
                break;
            }
        }
    }
    (differences, ran, refused, listed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_queries_answer_as_postgres_answers() {
    let seed = std::env::var("PGACCEL_GENERATOR_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CI_SEED);
    let (queries, budget) = match std::env::var("PGACCEL_GENERATOR_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(seconds) => (usize::MAX, Duration::from_secs(seconds)),
        None => (CI_QUERIES, Duration::MAX),
    };
    let (differences, ran, refused, listed) = run(seed, queries, budget).await;
    let report = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("generator.txt");
    std::fs::write(&report, differences.join("\n\n")).unwrap();
    println!(
        "generator: seed {seed}, {ran} queries, {refused} refused with 0A000, {listed} known differences (corpus cases), {} new differences ({})",
        differences.len(),
        report.display()
    );
    assert!(ran >= queries.min(CI_QUERIES), "only {ran} queries ran");
    assert!(
        differences.is_empty(),
        "{} generated queries differ from PostgreSQL:\n{}",
        differences.len(),
        differences.join("\n\n")
    );
}

#[test]
fn the_generator_is_reproducible() {
    let mut one = Generator::new(7);
    let mut two = Generator::new(7);
    let first: Vec<String> = (0..50).map(|_| one.query()).collect();
    let second: Vec<String> = (0..50).map(|_| two.query()).collect();
    assert_eq!(first, second);
    let mut other = Generator::new(8);
    assert_ne!(first, (0..50).map(|_| other.query()).collect::<Vec<_>>());
}
