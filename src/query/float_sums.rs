//! `sum()`, `avg()`, `var_pop()`, `var_samp()`, `stddev_pop()` and
//! `stddev_samp()` of `real` and `double precision` as PostgreSQL computes
//! them: one value after another in the order the rows come
//! (`float4pl`/`float8pl`), `sum(real)` in single precision, and an
//! overflow to infinity from finite values is 22003. The others keep
//! `float8_accum`'s sum of squared deviations (Youngs-Cramer), whose
//! overflow PostgreSQL also reports (`avg` of `1.5` and `1e308` fails);
//! DataFusion's variances update a running mean (Welford), which rounds
//! differently in the last digits.
//! DataFusion adds a batch in vector lanes, which rounds differently
//! (`1.5 + -2.5 + 0.1` is `-0.8999999999999999` there, `-0.9` in
//! PostgreSQL), and overflows to `Infinity` silently.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float32Array, Float64Array, Int64Array,
};
use datafusion::arrow::datatypes::{
    DataType, Field, FieldRef, Float32Type, Float64Type, Int64Type,
};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

use super::{PgError, sqlstate};

/// What a float aggregate computes from `float8_accum`'s sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Sum,
    Avg,
    VarPop,
    VarSamp,
    StddevPop,
    StddevSamp,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Sum,
        Kind::Avg,
        Kind::VarPop,
        Kind::VarSamp,
        Kind::StddevPop,
        Kind::StddevSamp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Sum => "pgaccel_float_sum",
            Kind::Avg => "pgaccel_float_avg",
            Kind::VarPop => "pgaccel_float_var_pop",
            Kind::VarSamp => "pgaccel_float_var_samp",
            Kind::StddevPop => "pgaccel_float_stddev_pop",
            Kind::StddevSamp => "pgaccel_float_stddev_samp",
        }
    }

    /// The kind computing DataFusion's aggregate `name` (of a float).
    pub fn of(name: &str) -> Option<Kind> {
        Some(match name {
            "sum" => Kind::Sum,
            "avg" | "mean" => Kind::Avg,
            "var_pop" | "var_population" => Kind::VarPop,
            "var" | "var_samp" | "var_sample" | "variance" => Kind::VarSamp,
            "stddev_pop" => Kind::StddevPop,
            "stddev" | "stddev_samp" => Kind::StddevSamp,
            _ => return None,
        })
    }

    /// Whether the sum of squared deviations is kept (all but `sum`).
    fn spread(self) -> bool {
        self != Kind::Sum
    }

    /// The result of `count` values adding to `sum` with squared
    /// deviations `squares`: NULL over too few values.
    fn result(self, sum: f64, count: i64, squares: f64) -> Option<f64> {
        let n = count as f64;
        match self {
            Kind::Sum => (count > 0).then_some(sum),
            Kind::Avg => (count > 0).then(|| sum / n),
            Kind::VarPop => (count > 0).then(|| squares / n),
            Kind::VarSamp => (count > 1).then(|| squares / (n - 1.0)),
            Kind::StddevPop => (count > 0).then(|| (squares / n).sqrt()),
            Kind::StddevSamp => (count > 1).then(|| (squares / (n - 1.0)).sqrt()),
        }
    }
}

pub fn functions() -> Vec<AggregateUDF> {
    Kind::ALL
        .into_iter()
        .map(|kind| {
            AggregateUDF::new_from_impl(FloatSum {
                kind,
                signature: Signature::uniform(
                    1,
                    vec![DataType::Float32, DataType::Float64],
                    Volatility::Immutable,
                ),
            })
        })
        .collect()
}

/// PostgreSQL's `float_overflow_error`.
pub(super) fn overflow() -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(
        sqlstate::NUMERIC_OUT_OF_RANGE,
        "value out of range: overflow",
    )))
}

/// PostgreSQL's `float8pl` (or `float4pl` in `single` precision).
fn add(sum: f64, value: f64, single: bool) -> Result<f64> {
    let result = if single {
        f64::from(sum as f32 + value as f32)
    } else {
        sum + value
    };
    if result.is_infinite() && !sum.is_infinite() && !value.is_infinite() {
        return Err(overflow());
    }
    Ok(result)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatSum {
    kind: Kind,
    signature: Signature,
}

impl FloatSum {
    /// Whether values add in single precision: `sum(real)`.
    fn single(&self, argument: &DataType) -> bool {
        self.kind == Kind::Sum && argument == &DataType::Float32
    }
}

impl AggregateUDFImpl for FloatSum {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match arg_types.first() {
            Some(DataType::Float32) if self.kind == Kind::Sum => DataType::Float32,
            _ => DataType::Float64,
        })
    }

    fn state_fields(&self, _args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new("sum", DataType::Float64, true)),
            Arc::new(Field::new("count", DataType::Int64, true)),
            Arc::new(Field::new("squares", DataType::Float64, true)),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let argument = args.exprs[0].data_type(args.schema)?;
        Ok(Box::new(Sums {
            groups: Groups::new(self.kind, self.single(&argument)),
        }))
    }

    /// Over a sliding window frame, PostgreSQL adds the frame's values
    /// afresh for every row (these aggregates take no value back out), so
    /// this one keeps the frame's values and does the same.
    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let argument = args.exprs[0].data_type(args.schema)?;
        Ok(Box::new(Frame {
            kind: self.kind,
            single: self.single(&argument),
            values: std::collections::VecDeque::new(),
        }))
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !args.is_distinct
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let argument = args.exprs[0].data_type(args.schema)?;
        Ok(Box::new(Groups::new(self.kind, self.single(&argument))))
    }
}

/// Running sums and counts of many groups.
#[derive(Debug)]
struct Groups {
    kind: Kind,
    single: bool,
    sums: Vec<f64>,
    counts: Vec<i64>,
    /// Sums of squared deviations (all but `sum`).
    squares: Vec<f64>,
}

impl Groups {
    fn new(kind: Kind, single: bool) -> Self {
        Groups {
            kind,
            single,
            sums: Vec::new(),
            counts: Vec::new(),
            squares: Vec::new(),
        }
    }

    fn grow(&mut self, groups: usize) {
        self.sums.resize(groups, 0.0);
        self.counts.resize(groups, 0);
        self.squares.resize(groups, 0.0);
    }

    /// One value: `float4pl`/`float8pl`, or `float8_accum` for the rest.
    fn offer(&mut self, group: usize, value: f64) -> Result<()> {
        if !self.kind.spread() {
            self.sums[group] = add(self.sums[group], value, self.single)?;
            self.counts[group] += 1;
            return Ok(());
        }
        let (before, sum_before) = (self.counts[group] as f64, self.sums[group]);
        let count = before + 1.0;
        let sum = sum_before + value;
        let mut squares = self.squares[group];
        if before > 0.0 {
            let deviation = value * count - sum;
            squares += deviation * deviation / (count * before);
            if sum.is_infinite() || squares.is_infinite() {
                if !sum_before.is_infinite() && !value.is_infinite() {
                    return Err(overflow());
                }
                squares = f64::NAN;
            }
        } else if value.is_nan() || value.is_infinite() {
            squares = f64::NAN;
        }
        self.sums[group] = sum;
        self.counts[group] += 1;
        self.squares[group] = squares;
        Ok(())
    }

    /// Another partial result: `float8pl` of the sums, or
    /// `float8_combine` for the rest.
    fn combine(&mut self, group: usize, sum: f64, count: i64, squares: f64) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        if self.counts[group] == 0 {
            self.sums[group] = sum;
            self.counts[group] = count;
            self.squares[group] = squares;
            return Ok(());
        }
        let (n1, n2) = (self.counts[group] as f64, count as f64);
        let sum1 = self.sums[group];
        self.sums[group] = add(sum1, sum, self.single)?;
        self.counts[group] += count;
        if self.kind.spread() {
            let squares1 = self.squares[group];
            let deviation = sum1 / n1 - sum / n2;
            let combined = squares1 + squares + n1 * n2 * deviation * deviation / (n1 + n2);
            if combined.is_infinite() && !squares1.is_infinite() && !squares.is_infinite() {
                return Err(overflow());
            }
            self.squares[group] = combined;
        }
        Ok(())
    }

    fn results(&self, sums: Vec<f64>, counts: Vec<i64>, squares: Vec<f64>) -> ArrayRef {
        let values = sums
            .into_iter()
            .zip(counts)
            .zip(squares)
            .map(|((sum, count), squares)| self.kind.result(sum, count, squares));
        if self.single {
            Arc::new(
                values
                    .map(|v| v.map(|v| v as f32))
                    .collect::<Float32Array>(),
            )
        } else {
            Arc::new(values.collect::<Float64Array>())
        }
    }
}

fn float_values(array: &ArrayRef) -> Vec<Option<f64>> {
    match array.data_type() {
        DataType::Float32 => array
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| v.map(f64::from))
            .collect(),
        _ => array.as_primitive::<Float64Type>().iter().collect(),
    }
}

fn passes(filter: Option<&BooleanArray>, row: usize) -> bool {
    filter.is_none_or(|filter| filter.is_valid(row) && filter.value(row))
}

impl GroupsAccumulator for Groups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.grow(total_num_groups);
        for (row, (&group, value)) in group_indices
            .iter()
            .zip(float_values(&values[0]))
            .enumerate()
        {
            if let Some(value) = value.filter(|_| passes(opt_filter, row)) {
                self.offer(group, value)?;
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sums = emit_to.take_needed(&mut self.sums);
        let counts = emit_to.take_needed(&mut self.counts);
        let squares = emit_to.take_needed(&mut self.squares);
        Ok(self.results(sums, counts, squares))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let sums = emit_to.take_needed(&mut self.sums);
        let counts = emit_to.take_needed(&mut self.counts);
        let squares = emit_to.take_needed(&mut self.squares);
        Ok(vec![
            Arc::new(Float64Array::from(sums)),
            Arc::new(Int64Array::from(counts)),
            Arc::new(Float64Array::from(squares)),
        ])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.grow(total_num_groups);
        let sums = values[0].as_primitive::<Float64Type>();
        let counts = values[1].as_primitive::<Int64Type>();
        let squares = values[2].as_primitive::<Float64Type>();
        for (row, &group) in group_indices.iter().enumerate() {
            if sums.is_valid(row) {
                self.combine(
                    group,
                    sums.value(row),
                    counts.value(row),
                    squares.value(row),
                )?;
            }
        }
        Ok(())
    }

    /// Each row as a group of its own.
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let values = float_values(&values[0]);
        let mut sums = Vec::with_capacity(values.len());
        let mut counts = Vec::with_capacity(values.len());
        let mut squares = Vec::with_capacity(values.len());
        for (row, value) in values.into_iter().enumerate() {
            let kept = value.filter(|_| passes(opt_filter, row));
            sums.push(kept.unwrap_or(0.0));
            counts.push(i64::from(kept.is_some()));
            // float8_accum's first value: no spread, unless it is not a
            // finite number.
            squares.push(match kept {
                Some(v) if self.kind.spread() && !v.is_finite() => f64::NAN,
                _ => 0.0,
            });
        }
        Ok(vec![
            Arc::new(Float64Array::from(sums)),
            Arc::new(Int64Array::from(counts)),
            Arc::new(Float64Array::from(squares)),
        ])
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self.sums.capacity() * std::mem::size_of::<f64>()
            + self.counts.capacity() * std::mem::size_of::<i64>()
            + self.squares.capacity() * std::mem::size_of::<f64>()
    }
}

/// One group: [`Groups`] of one.
#[derive(Debug)]
struct Sums {
    groups: Groups,
}

impl Accumulator for Sums {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let groups = vec![0; values[0].len()];
        self.groups.update_batch(values, &groups, None, 1)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let groups = vec![0; states[0].len()];
        self.groups.merge_batch(states, &groups, 1)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.groups.grow(1);
        Ok(vec![
            ScalarValue::Float64(Some(self.groups.sums[0])),
            ScalarValue::Int64(Some(self.groups.counts[0])),
            ScalarValue::Float64(Some(self.groups.squares[0])),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.groups.grow(1);
        let result = self.groups.results(
            vec![self.groups.sums[0]],
            vec![self.groups.counts[0]],
            vec![self.groups.squares[0]],
        );
        ScalarValue::try_from_array(&result, 0)
    }

    fn size(&self) -> usize {
        self.groups.size()
    }
}

/// The values in a sliding window frame, added afresh when asked.
#[derive(Debug)]
struct Frame {
    kind: Kind,
    single: bool,
    values: std::collections::VecDeque<Option<f64>>,
}

impl Accumulator for Frame {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.values.extend(float_values(&values[0]));
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let count = values[0].len().min(self.values.len());
        self.values.drain(..count);
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, _states: &[ArrayRef]) -> Result<()> {
        Err(DataFusionError::Internal(
            "a window frame's aggregate is not merged".into(),
        ))
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Err(DataFusionError::Internal(
            "a window frame's aggregate has no partial state".into(),
        ))
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut groups = Groups::new(self.kind, self.single);
        groups.grow(1);
        for value in self.values.iter().flatten() {
            groups.offer(0, *value)?;
        }
        let result = groups.results(
            groups.sums.clone(),
            groups.counts.clone(),
            groups.squares.clone(),
        );
        ScalarValue::try_from_array(&result, 0)
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.capacity() * std::mem::size_of::<Option<f64>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_add_in_row_order() {
        let mut sums = Sums {
            groups: Groups::new(Kind::Sum, false),
        };
        let values: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(1.5),
            None,
            Some(-2.5),
            Some(0.1),
        ]));
        sums.update_batch(&[values]).unwrap();
        assert_eq!(
            sums.evaluate().unwrap(),
            ScalarValue::Float64(Some(1.5 + -2.5 + 0.1))
        );
        let huge: ArrayRef = Arc::new(Float64Array::from(vec![f64::MAX, f64::MAX]));
        let error = sums.update_batch(&[huge]).unwrap_err();
        assert!(
            error.to_string().contains("value out of range: overflow"),
            "{error}"
        );
        // avg of 1.5 and 1.7e308: the squared deviations overflow.
        let mut average = Sums {
            groups: Groups::new(Kind::Avg, false),
        };
        let values: ArrayRef = Arc::new(Float64Array::from(vec![1.5, 1.7e308]));
        let error = average.update_batch(&[values]).unwrap_err();
        assert!(
            error.to_string().contains("value out of range: overflow"),
            "{error}"
        );
    }
}
