//! `corr`, `covar_pop`, `covar_samp` and the `regr_*` aggregates as
//! PostgreSQL computes them: both arguments as `double precision`, rows
//! with a NULL skipped, and the sums of `float8_regr_accum` (count, Σx,
//! Σy and the Youngs-Cramer sums of squared and cross deviations) updated
//! one row after another, partial sums joined as `float8_regr_combine`
//! joins them. DataFusion updates running means instead, which rounds
//! differently in the last digits, so a replica would print other values
//! than its primary.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

use super::float_sums::overflow;

/// What an aggregate computes from the sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Corr,
    CovarPop,
    CovarSamp,
    Slope,
    Intercept,
    R2,
    AvgX,
    AvgY,
    Sxx,
    Syy,
    Sxy,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::Corr,
        Kind::CovarPop,
        Kind::CovarSamp,
        Kind::Slope,
        Kind::Intercept,
        Kind::R2,
        Kind::AvgX,
        Kind::AvgY,
        Kind::Sxx,
        Kind::Syy,
        Kind::Sxy,
    ];

    /// PostgreSQL's name, which DataFusion's aggregates share.
    pub fn sql_name(self) -> &'static str {
        match self {
            Kind::Corr => "corr",
            Kind::CovarPop => "covar_pop",
            Kind::CovarSamp => "covar_samp",
            Kind::Slope => "regr_slope",
            Kind::Intercept => "regr_intercept",
            Kind::R2 => "regr_r2",
            Kind::AvgX => "regr_avgx",
            Kind::AvgY => "regr_avgy",
            Kind::Sxx => "regr_sxx",
            Kind::Syy => "regr_syy",
            Kind::Sxy => "regr_sxy",
        }
    }

    pub fn name(self) -> String {
        format!("pgaccel_float_{}", self.sql_name())
    }

    /// The kind computing DataFusion's aggregate `name`.
    pub fn of(name: &str) -> Option<Kind> {
        if name == "covar" {
            return Some(Kind::CovarSamp);
        }
        Kind::ALL.into_iter().find(|kind| kind.sql_name() == name)
    }

    /// The final function over the sums (PostgreSQL's `float8_corr`,
    /// `float8_covar_pop`, ...).
    fn result(self, sums: &Sums) -> Option<f64> {
        let Sums {
            n,
            sx,
            sxx,
            sy,
            syy,
            sxy,
        } = *sums;
        if n < 1.0 {
            return None;
        }
        match self {
            Kind::Corr => (sxx != 0.0 && syy != 0.0).then(|| sxy / (sxx * syy).sqrt()),
            Kind::CovarPop => Some(sxy / n),
            Kind::CovarSamp => (n >= 2.0).then(|| sxy / (n - 1.0)),
            Kind::Slope => (sxx != 0.0).then(|| sxy / sxx),
            Kind::Intercept => (sxx != 0.0).then(|| (sy - sx * sxy / sxx) / n),
            Kind::R2 if sxx == 0.0 => None,
            Kind::R2 if syy == 0.0 => Some(1.0),
            Kind::R2 => Some((sxy * sxy) / (sxx * syy)),
            Kind::AvgX => Some(sx / n),
            Kind::AvgY => Some(sy / n),
            Kind::Sxx => Some(sxx),
            Kind::Syy => Some(syy),
            Kind::Sxy => Some(sxy),
        }
    }
}

pub fn functions() -> Vec<AggregateUDF> {
    Kind::ALL
        .into_iter()
        .map(|kind| {
            AggregateUDF::new_from_impl(Regression {
                name: kind.name(),
                kind,
                signature: Signature::exact(
                    vec![DataType::Float64, DataType::Float64],
                    Volatility::Immutable,
                ),
            })
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Regression {
    name: String,
    kind: Kind,
    signature: Signature,
}

const STATE: [&str; 6] = ["n", "sx", "sxx", "sy", "syy", "sxy"];

impl AggregateUDFImpl for Regression {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn state_fields(&self, _args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(STATE
            .into_iter()
            .map(|name| Arc::new(Field::new(name, DataType::Float64, true)))
            .collect())
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(RegressionAccumulator {
            kind: self.kind,
            sums: Sums::default(),
            frame: None,
        }))
    }

    /// Over a sliding window frame the sums start afresh for every row, as
    /// in PostgreSQL (which has no way to take a row back out of them).
    fn create_sliding_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(RegressionAccumulator {
            kind: self.kind,
            sums: Sums::default(),
            frame: Some(std::collections::VecDeque::new()),
        }))
    }
}

/// `float8_regr_accum`'s transition values.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Sums {
    n: f64,
    sx: f64,
    sxx: f64,
    sy: f64,
    syy: f64,
    sxy: f64,
}

impl Sums {
    /// One row: `y` and `x` (`float8_regr_accum`). A sum that becomes
    /// infinite from finite values is 22003; one fed an infinity or NaN
    /// becomes NaN.
    fn offer(&mut self, y: f64, x: f64) -> Result<()> {
        let before = *self;
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        if before.n > 0.0 {
            let dx = x * self.n - self.sx;
            let dy = y * self.n - self.sy;
            let scale = 1.0 / (self.n * before.n);
            self.sxx += dx * dx * scale;
            self.syy += dy * dy * scale;
            self.sxy += dx * dy * scale;
            if self.sx.is_infinite() || self.sxx.is_infinite() {
                if !before.sx.is_infinite() && !x.is_infinite() {
                    return Err(overflow());
                }
                self.sxx = f64::NAN;
            }
            if self.sy.is_infinite() || self.syy.is_infinite() {
                if !before.sy.is_infinite() && !y.is_infinite() {
                    return Err(overflow());
                }
                self.syy = f64::NAN;
            }
            if self.sxy.is_infinite() {
                if !before.sx.is_infinite()
                    && !x.is_infinite()
                    && !before.sy.is_infinite()
                    && !y.is_infinite()
                {
                    return Err(overflow());
                }
                self.sxy = f64::NAN;
            }
        } else {
            if !x.is_finite() {
                self.sxx = f64::NAN;
                self.sxy = f64::NAN;
            }
            if !y.is_finite() {
                self.syy = f64::NAN;
                self.sxy = f64::NAN;
            }
        }
        Ok(())
    }

    /// Another partial result (`float8_regr_combine`).
    fn combine(&mut self, other: Sums) -> Result<()> {
        if other.n == 0.0 {
            return Ok(());
        }
        if self.n == 0.0 {
            *self = other;
            return Ok(());
        }
        let one = *self;
        let n = one.n + other.n;
        let dx = one.sx / one.n - other.sx / other.n;
        let dy = one.sy / one.n - other.sy / other.n;
        self.n = n;
        self.sx = one.sx + other.sx;
        self.sxx = one.sxx + other.sxx + one.n * other.n * dx * dx / n;
        self.sy = one.sy + other.sy;
        self.syy = one.syy + other.syy + one.n * other.n * dy * dy / n;
        self.sxy = one.sxy + other.sxy + one.n * other.n * dx * dy / n;
        let overflowed =
            |sum: f64, a: f64, b: f64| sum.is_infinite() && a.is_finite() && b.is_finite();
        if overflowed(self.sx, one.sx, other.sx)
            || overflowed(self.sxx, one.sxx, other.sxx)
            || overflowed(self.sy, one.sy, other.sy)
            || overflowed(self.syy, one.syy, other.syy)
            || overflowed(self.sxy, one.sxy, other.sxy)
        {
            return Err(overflow());
        }
        Ok(())
    }
}

#[derive(Debug)]
struct RegressionAccumulator {
    kind: Kind,
    sums: Sums,
    /// In a sliding window frame, its rows (`None` where one side is NULL).
    frame: Option<std::collections::VecDeque<Option<(f64, f64)>>>,
}

impl Accumulator for RegressionAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let ys = values[0].as_primitive::<Float64Type>();
        let xs = values[1].as_primitive::<Float64Type>();
        for row in 0..ys.len() {
            let pair =
                (ys.is_valid(row) && xs.is_valid(row)).then(|| (ys.value(row), xs.value(row)));
            match (&mut self.frame, pair) {
                (Some(frame), pair) => frame.push_back(pair),
                (None, Some((y, x))) => self.sums.offer(y, x)?,
                (None, None) => {}
            }
        }
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(frame) = &mut self.frame {
            let count = values[0].len().min(frame.len());
            frame.drain(..count);
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        self.frame.is_some()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let columns: Vec<_> = states
            .iter()
            .map(|state| state.as_primitive::<Float64Type>())
            .collect();
        for row in 0..columns[0].len() {
            let value = |column: usize| columns[column].value(row);
            self.sums.combine(Sums {
                n: value(0),
                sx: value(1),
                sxx: value(2),
                sy: value(3),
                syy: value(4),
                sxy: value(5),
            })?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let Sums {
            n,
            sx,
            sxx,
            sy,
            syy,
            sxy,
        } = self.sums;
        // In the order of [`STATE`].
        Ok([n, sx, sxx, sy, syy, sxy]
            .into_iter()
            .map(|value| ScalarValue::Float64(Some(value)))
            .collect())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if let Some(frame) = &self.frame {
            let mut sums = Sums::default();
            for (y, x) in frame.iter().flatten() {
                sums.offer(*y, *x)?;
            }
            return Ok(ScalarValue::Float64(self.kind.result(&sums)));
        }
        Ok(ScalarValue::Float64(self.kind.result(&self.sums)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_sums_join_as_one_pass_would_count_them() {
        let rows = [(1.0, 2.0), (3.0, 5.0), (4.0, 4.0), (8.0, 1.5)];
        let mut whole = Sums::default();
        for (y, x) in rows {
            whole.offer(y, x).unwrap();
        }
        let (mut first, mut second) = (Sums::default(), Sums::default());
        for (y, x) in &rows[..2] {
            first.offer(*y, *x).unwrap();
        }
        for (y, x) in &rows[2..] {
            second.offer(*y, *x).unwrap();
        }
        first.combine(second).unwrap();
        assert_eq!(first.n, 4.0);
        assert!((first.sxy - whole.sxy).abs() < 1e-12);
        // covar_pop of these rows, by hand: Σ(x-x̄)(y-ȳ)/n.
        let covariance = Kind::CovarPop.result(&whole).unwrap();
        assert!((covariance - (-1.25)).abs() < 1e-12, "{covariance}");
        assert_eq!(Kind::CovarSamp.result(&Sums::default()), None);
        let error = Sums {
            n: 1.0,
            sx: 1e308,
            ..Sums::default()
        }
        .offer(1.0, 1.7e308)
        .unwrap_err();
        assert!(error.to_string().contains("overflow"), "{error}");
    }
}
