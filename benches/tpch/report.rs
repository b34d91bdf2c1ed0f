//! The result table: each figure next to its baseline, their ratio and the target.
//! A figure that could not be measured shows why in a note below the table instead
//! of stopping the run, so one failing capability does not hide the others.

use std::time::Duration;

/// One measured value, or why there is none.
pub enum Value {
    /// Not measured in this run (`--baseline-only`).
    Skipped,
    Failed(String),
    /// Not measured because pgaccel did not start (said once, in a note of its own).
    NotRun,
    /// The server does not report it; shown as "n/a" with the reason as a note.
    NotAvailable(&'static str),
    Got(f64),
}

/// What a ratio should reach.
#[derive(Clone, Copy)]
pub enum Target {
    AtLeast(f64),
    Below(f64),
    /// No target: reported for information.
    Report,
}

/// How a figure is shown and how its ratio is formed.
#[derive(Clone, Copy)]
pub enum Kind {
    /// A time: the ratio is baseline / pgaccel (how many times faster pgaccel is).
    Millis,
    /// A rate: the ratio is pgaccel / baseline.
    PerSecond(&'static str),
    /// A size: the ratio is pgaccel / baseline.
    Bytes,
}

struct Row {
    figure: String,
    kind: Kind,
    pgaccel: Value,
    baseline: Value,
    target: Target,
}

#[derive(Default)]
pub struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Report {
    pub fn add(
        &mut self,
        figure: &str,
        kind: Kind,
        pgaccel: Value,
        baseline: Value,
        target: Target,
    ) {
        for (side, value) in [("pgaccel", &pgaccel), ("baseline", &baseline)] {
            match value {
                Value::Failed(why) => self.notes.push(format!("{figure} ({side}): {why}")),
                Value::NotAvailable(why) => {
                    self.notes.push(format!("{figure} ({side}): n/a: {why}"))
                }
                Value::Skipped | Value::NotRun | Value::Got(_) => {}
            }
        }
        self.rows.push(Row {
            figure: figure.to_owned(),
            kind,
            pgaccel,
            baseline,
            target,
        });
    }

    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// Whether any figure could not be measured.
    pub fn has_failures(&self) -> bool {
        let failed = |v: &Value| matches!(v, Value::Failed(_) | Value::NotRun);
        self.rows
            .iter()
            .any(|row| failed(&row.pgaccel) || failed(&row.baseline))
    }

    pub fn print(&self) {
        let header = ["figure", "pgaccel", "baseline", "ratio", "target", ""];
        let lines: Vec<[String; 6]> = self.rows.iter().map(Row::cells).collect();
        let mut widths = header.map(str::len);
        for line in &lines {
            for (width, cell) in widths.iter_mut().zip(line) {
                *width = (*width).max(cell.len());
            }
        }
        println!();
        print_line(&header.map(str::to_owned), &widths);
        println!(
            "{}",
            "-".repeat(widths.iter().sum::<usize>() + 2 * widths.len())
        );
        for line in &lines {
            print_line(line, &widths);
        }
        println!(
            "\nratio: baseline time / pgaccel time for latencies; pgaccel / baseline for rates and memory."
        );
        for note in &self.notes {
            println!("note: {note}");
        }
    }
}

fn print_line(cells: &[String; 6], widths: &[usize; 6]) {
    let line: Vec<String> = cells
        .iter()
        .zip(widths)
        .enumerate()
        .map(|(i, (cell, width))| {
            if i == 0 {
                format!("{cell:<width$}")
            } else {
                format!("{cell:>width$}")
            }
        })
        .collect();
    println!("{}", line.join("  ").trim_end());
}

impl Row {
    fn cells(&self) -> [String; 6] {
        let ratio = self.ratio();
        let verdict = match (ratio, self.target) {
            (Some(r), Target::AtLeast(t)) => {
                if r >= t {
                    "ok"
                } else {
                    "MISSED"
                }
            }
            (Some(r), Target::Below(t)) => {
                if r < t {
                    "ok"
                } else {
                    "MISSED"
                }
            }
            _ => "",
        };
        [
            self.figure.clone(),
            self.show(&self.pgaccel),
            self.show(&self.baseline),
            ratio.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}x")),
            match self.target {
                Target::AtLeast(t) => format!(">= {t}x"),
                Target::Below(t) => format!("< {t}x"),
                Target::Report => "report".to_owned(),
            },
            verdict.to_owned(),
        ]
    }

    fn ratio(&self) -> Option<f64> {
        let (Value::Got(ours), Value::Got(theirs)) = (&self.pgaccel, &self.baseline) else {
            return None;
        };
        let ratio = match self.kind {
            Kind::Millis => theirs / ours,
            Kind::PerSecond(_) | Kind::Bytes => ours / theirs,
        };
        ratio.is_finite().then_some(ratio)
    }

    fn show(&self, value: &Value) -> String {
        let v = match value {
            Value::Got(v) => v,
            Value::Skipped => return "-".to_owned(),
            Value::Failed(_) | Value::NotRun => return "failed".to_owned(),
            Value::NotAvailable(_) => return "n/a".to_owned(),
        };
        match self.kind {
            Kind::Millis => format!("{v:.2} ms"),
            Kind::PerSecond(unit) => format!("{} {unit}/s", si(*v)),
            Kind::Bytes => format!("{:.1} MiB", v / (1024.0 * 1024.0)),
        }
    }
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// 1234567.0 → "1.23 M".
fn si(value: f64) -> String {
    match value.abs() {
        v if v >= 1e6 => format!("{:.2} M", value / 1e6),
        v if v >= 1e3 => format!("{:.1} k", value / 1e3),
        _ => format!("{value:.1}"),
    }
}
