//! The result table: each figure next to its baseline, their ratio and the target.
//! A figure that could not be measured shows why in a note below the table instead
//! of stopping the run, so one failing capability does not hide the others.
//!
//! Every bench that reports this way can also write its table as JSON
//! (`--json FILE`); `cargo bench --bench report` runs them all and prints
//! their tables as one.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value as Json, json};

/// One measured value, or why there is none.
#[derive(Clone)]
pub enum Value {
    /// Not measured in this run (`--baseline-only`).
    Skipped,
    Failed(String),
    /// Not measured because pgaccel did not start (said once, in a note of its own).
    NotRun,
    /// The server does not report it; shown as "n/a" with the reason as a note.
    NotAvailable(&'static str),
    Got(f64),
    /// Stopped at a timeout: at least this much. A ratio formed with it is a
    /// bound, shown with "≥" or "≤".
    AtLeast(f64),
}

/// What a ratio should reach.
#[derive(Clone, Copy)]
pub enum Target {
    AtLeast(f64),
    AtMost(f64),
    /// No target: reported for information.
    Report,
}

/// How a figure is shown and how its ratio is formed.
#[derive(Clone, Copy)]
pub enum Kind {
    /// A time: the ratio is baseline / pgaccel (how many times faster pgaccel is).
    Millis,
    /// A time: the ratio is pgaccel / baseline (how many times as long it takes,
    /// for figures such as latency during a refresh against idle latency).
    MillisRelative,
    /// A rate: the ratio is pgaccel / baseline.
    PerSecond(&'static str),
    /// A size: the ratio is pgaccel / baseline.
    Bytes,
}

/// Whether a ratio is exact or only a bound on the true one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    Exact,
    Lower,
    Upper,
}

impl Bound {
    fn prefix(self) -> &'static str {
        match self {
            Bound::Exact => "",
            Bound::Lower => "≥ ",
            Bound::Upper => "≤ ",
        }
    }
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
                Value::Skipped | Value::NotRun | Value::Got(_) | Value::AtLeast(_) => {}
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
        self.table().print();
    }

    pub fn table(&self) -> Table {
        Table {
            sections: vec![(String::new(), self.rows.iter().map(Row::cells).collect())],
            notes: self.notes.clone(),
        }
    }

    /// The figures of bench `bench` as JSON: each row with its values, ratio,
    /// target and verdict, and the cells as printed.
    pub fn json(&self, bench: &str) -> Json {
        json!({
            "bench": bench,
            "rows": self.rows.iter().map(Row::json).collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }

    /// Writes `json(bench)` to `path`, if a path was given.
    pub fn write_json(&self, path: Option<&Path>, bench: &str) -> std::io::Result<()> {
        let Some(path) = path else { return Ok(()) };
        std::fs::write(path, format!("{:#}\n", self.json(bench)))?;
        println!("figures written to {}", path.display());
        Ok(())
    }
}

/// Printed table: sections of rows of six cells, and notes.
pub struct Table {
    pub sections: Vec<(String, Vec<[String; 6]>)>,
    pub notes: Vec<String>,
}

const HEADER: [&str; 6] = ["figure", "pgaccel", "baseline", "ratio", "target", ""];

impl Table {
    pub fn print(&self) {
        let mut widths = HEADER.map(str::len);
        for line in self.sections.iter().flat_map(|(_, lines)| lines) {
            for (width, cell) in widths.iter_mut().zip(line) {
                *width = (*width).max(cell.chars().count());
            }
        }
        println!();
        print_line(&HEADER.map(str::to_owned), &widths);
        let rule = "-".repeat(widths.iter().sum::<usize>() + 2 * widths.len());
        println!("{rule}");
        for (title, lines) in &self.sections {
            if !title.is_empty() {
                println!("{title}");
            }
            for line in lines {
                print_line(line, &widths);
            }
        }
        println!("\n{RATIO_MEANING}");
        for note in &self.notes {
            println!("note: {note}");
        }
    }

    /// The table as Markdown, sections as bold rows, for the README.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "| {} | verdict |\n|---|---|---|---|---|---|\n",
            HEADER[..5].join(" | ")
        );
        for (title, lines) in &self.sections {
            if !title.is_empty() {
                out.push_str(&format!("| **{title}** | | | | | |\n"));
            }
            for line in lines {
                out.push_str(&format!("| {} |\n", line.join(" | ")));
            }
        }
        out.push_str(&format!("\n{RATIO_MEANING}\n"));
        for note in &self.notes {
            out.push_str(&format!("\n- {note}"));
        }
        out.push('\n');
        out
    }
}

const RATIO_MEANING: &str = "ratio: baseline time / pgaccel time for latencies marked \"faster\"; pgaccel / baseline for the others (rates, memory, times marked \"as long\").";

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
        let met = self.met(ratio);
        [
            self.figure.clone(),
            self.show(&self.pgaccel),
            self.show(&self.baseline),
            ratio.map_or_else(
                || "-".to_owned(),
                |(r, bound)| format!("{}{r:.2}x{}", bound.prefix(), self.ratio_suffix()),
            ),
            self.target_text(),
            match met {
                Some(true) => "ok",
                Some(false) => "MISSED",
                None => "",
            }
            .to_owned(),
        ]
    }

    fn ratio_suffix(&self) -> &'static str {
        match self.kind {
            Kind::Millis => " faster",
            Kind::MillisRelative => " as long",
            Kind::PerSecond(_) | Kind::Bytes => "",
        }
    }

    fn target_text(&self) -> String {
        match self.target {
            Target::AtLeast(t) => format!(">= {t}x"),
            Target::AtMost(t) => format!("<= {t}x"),
            Target::Report => "report".to_owned(),
        }
    }

    /// Whether the target is met; a bound counts only when it is on the
    /// target's side.
    fn met(&self, ratio: Option<(f64, Bound)>) -> Option<bool> {
        let (ratio, bound) = ratio?;
        match self.target {
            Target::AtLeast(t) => Some(ratio >= t && bound != Bound::Upper),
            Target::AtMost(t) => Some(ratio <= t && bound != Bound::Lower),
            Target::Report => None,
        }
    }

    /// The ratio, and whether it is exact or a bound (when a side is a
    /// lower bound).
    fn ratio(&self) -> Option<(f64, Bound)> {
        let value = |v: &Value| match v {
            Value::Got(v) => Some((*v, false)),
            Value::AtLeast(v) => Some((*v, true)),
            _ => None,
        };
        let (ours, ours_bound) = value(&self.pgaccel)?;
        let (theirs, theirs_bound) = value(&self.baseline)?;
        // A lower bound in the numerator makes the ratio a lower bound; in the
        // denominator, an upper bound.
        let (ratio, numerator_bound, denominator_bound) = match self.kind {
            Kind::Millis => (theirs / ours, theirs_bound, ours_bound),
            Kind::MillisRelative | Kind::PerSecond(_) | Kind::Bytes => {
                (ours / theirs, ours_bound, theirs_bound)
            }
        };
        let bound = match (numerator_bound, denominator_bound) {
            (false, false) => Bound::Exact,
            (true, false) => Bound::Lower,
            (false, true) => Bound::Upper,
            (true, true) => return None,
        };
        ratio.is_finite().then_some((ratio, bound))
    }

    fn show(&self, value: &Value) -> String {
        let (v, prefix) = match value {
            Value::Got(v) => (v, ""),
            Value::AtLeast(v) => (v, "≥ "),
            Value::Skipped => return "-".to_owned(),
            Value::Failed(_) | Value::NotRun => return "failed".to_owned(),
            Value::NotAvailable(_) => return "n/a".to_owned(),
        };
        let shown = match self.kind {
            Kind::Millis | Kind::MillisRelative => format!("{v:.2} ms"),
            Kind::PerSecond(unit) => format!("{} {unit}/s", si(*v)),
            Kind::Bytes => format!("{:.1} MiB", v / (1024.0 * 1024.0)),
        };
        format!("{prefix}{shown}")
    }

    fn json(&self) -> Json {
        let value = |v: &Value| match v {
            Value::Got(v) => json!(v),
            Value::AtLeast(v) => json!({ "at_least": v }),
            Value::Failed(why) => json!({ "failed": why }),
            Value::NotAvailable(why) => json!({ "not_available": why }),
            Value::Skipped => json!("skipped"),
            Value::NotRun => json!("not_run"),
        };
        let ratio = self.ratio();
        json!({
            "figure": self.figure,
            "unit": match self.kind {
                Kind::Millis | Kind::MillisRelative => "ms".to_owned(),
                Kind::PerSecond(unit) => format!("{unit}/s"),
                Kind::Bytes => "bytes".to_owned(),
            },
            "pgaccel": value(&self.pgaccel),
            "baseline": value(&self.baseline),
            "ratio": ratio.map(|(r, _)| r),
            "ratio_bound": ratio.map(|(_, bound)| match bound {
                Bound::Exact => "exact",
                Bound::Lower => "lower",
                Bound::Upper => "upper",
            }),
            "ratio_is": match self.kind {
                Kind::Millis => "baseline / pgaccel",
                Kind::MillisRelative | Kind::PerSecond(_) | Kind::Bytes => "pgaccel / baseline",
            },
            "target": match self.target {
                Target::AtLeast(t) => json!({ "at_least": t }),
                Target::AtMost(t) => json!({ "at_most": t }),
                Target::Report => Json::Null,
            },
            "met": self.met(ratio),
            "cells": self.cells(),
        })
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
