//! The functions and aggregates behind [`super::postgres_numerics`]:
//! numeric division, `avg`, rounding, `::numeric` and the text of a numeric
//! at its display scale, as DataFusion UDFs over Arrow decimals.

use super::*;

/// The result of a function computing [`DYNAMIC`] values or, as its
/// `_scale` twin, their display scales.
pub(super) fn values_or_scales(
    mut values: Decimal256Builder,
    mut scales: Int32Builder,
    scale_only: bool,
) -> Result<ArrayRef> {
    Ok(if scale_only {
        Arc::new(scales.finish())
    } else {
        Arc::new(
            values
                .finish()
                .with_precision_and_scale(76, DYNAMIC_SCALE as i8)?,
        )
    })
}

/// The type of a [`DYNAMIC`] function's values or, as its `_scale` twin,
/// of their display scales.
pub(super) fn value_or_scale_type(scale_only: bool) -> DataType {
    if scale_only { DataType::Int32 } else { DYNAMIC }
}

/// One field of an aggregate's state.
fn state_field(name: &str, part: &str, data_type: DataType) -> FieldRef {
    Arc::new(Field::new(format!("{name}[{part}]"), data_type, true))
}

pub(super) fn number_at(array: &dyn Array, row: usize) -> Option<Number> {
    if array.is_null(row) {
        return None;
    }
    let integer = |digits: i256| Number { digits, scale: 0 };
    Some(match array.data_type() {
        DataType::Int8 => integer(array.as_primitive::<Int8Type>().value(row).into()),
        DataType::Int16 => integer(array.as_primitive::<Int16Type>().value(row).into()),
        DataType::Int32 => integer(array.as_primitive::<Int32Type>().value(row).into()),
        DataType::Int64 => integer(array.as_primitive::<Int64Type>().value(row).into()),
        DataType::UInt8 => integer(i256::from(
            array.as_primitive::<UInt8Type>().value(row) as i64
        )),
        DataType::UInt16 => integer(i256::from(
            array.as_primitive::<UInt16Type>().value(row) as i64
        )),
        DataType::UInt32 => integer(i256::from(
            array.as_primitive::<UInt32Type>().value(row) as i64
        )),
        DataType::UInt64 => integer(i256::from_i128(
            array.as_primitive::<UInt64Type>().value(row) as i128,
        )),
        DataType::Decimal128(_, scale) => Number {
            digits: i256::from_i128(array.as_primitive::<Decimal128Type>().value(row)),
            scale: (*scale).max(0) as u32,
        },
        DataType::Decimal256(_, scale) => Number {
            digits: array.as_primitive::<Decimal256Type>().value(row),
            scale: (*scale).max(0) as u32,
        },
        _ => return None,
    })
}

/// Every value of an integer or decimal array as digits at the array's
/// scale (read with one type dispatch per batch, not per row).
pub(super) fn digits_of(array: &dyn Array) -> Vec<Option<i256>> {
    fn widen<T>(array: &dyn Array, to: impl Fn(T::Native) -> i256) -> Vec<Option<i256>>
    where
        T: datafusion::arrow::datatypes::ArrowPrimitiveType,
    {
        array
            .as_primitive::<T>()
            .iter()
            .map(|v| v.map(&to))
            .collect()
    }
    match array.data_type() {
        DataType::Int8 => widen::<Int8Type>(array, i256::from),
        DataType::Int16 => widen::<Int16Type>(array, i256::from),
        DataType::Int32 => widen::<Int32Type>(array, i256::from),
        DataType::Int64 => widen::<Int64Type>(array, i256::from),
        DataType::UInt8 => widen::<UInt8Type>(array, |v| i256::from(i64::from(v))),
        DataType::UInt16 => widen::<UInt16Type>(array, |v| i256::from(i64::from(v))),
        DataType::UInt32 => widen::<UInt32Type>(array, |v| i256::from(i64::from(v))),
        DataType::UInt64 => widen::<UInt64Type>(array, |v| i256::from_i128(i128::from(v))),
        DataType::Decimal128(..) => widen::<Decimal128Type>(array, i256::from_i128),
        DataType::Decimal256(..) => widen::<Decimal256Type>(array, |v| v),
        _ => vec![None; array.len()],
    }
}

pub(super) fn scale_at(array: &dyn Array, row: usize) -> Option<i32> {
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::Int32 => Some(array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => Some(array.as_primitive::<Int64Type>().value(row) as i32),
        _ => None,
    }
}

pub(super) fn is_exact_number(data_type: &DataType) -> bool {
    data_type.is_integer()
        || matches!(
            data_type,
            DataType::Decimal128(..) | DataType::Decimal256(..)
        )
}

pub(super) fn is_decimal(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Decimal128(..) | DataType::Decimal256(..)
    )
}

pub(super) use super::super::functions::{argument_arrays as arrays, columnar as finish};

/// `pgaccel_numeric_div(a, b, display scale of a, display scale of b)`:
/// PostgreSQL's numeric division, as [`DYNAMIC`].
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Divide {
    signature: Signature,
    scale_only: bool,
}

impl ScalarUDFImpl for Divide {
    fn name(&self) -> &str {
        if self.scale_only {
            DIVIDE_SCALE
        } else {
            DIVIDE
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(value_or_scale_type(self.scale_only))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = arrays(&args)?;
        let rows = arrays[0].len();
        let mut values = Decimal256Builder::with_capacity(rows);
        let mut scales = Int32Builder::with_capacity(rows);
        for row in 0..rows {
            let (Some(dividend), Some(divisor), Some(scale1), Some(scale2)) = (
                number_at(&arrays[0], row),
                number_at(&arrays[1], row),
                scale_at(&arrays[2], row),
                scale_at(&arrays[3], row),
            ) else {
                values.append_null();
                scales.append_null();
                continue;
            };
            if divisor.digits == i256::ZERO {
                return Err(DataFusionError::External(Box::new(PgError::new(
                    sqlstate::DIVISION_BY_ZERO,
                    "division by zero",
                ))));
            }
            let scale = div_scale(dividend, scale1, divisor, scale2);
            scales.append_value(scale);
            if !self.scale_only {
                let quotient = divide(dividend, divisor, scale as u32).ok_or_else(out_of_range)?;
                values.append_value(to_dynamic(quotient, scale as u32)?);
            }
        }
        finish(values_or_scales(values, scales, self.scale_only)?, scalar)
    }
}

/// [`Divide`] (or, `scale_only`, its `_scale` twin) as a function of its
/// own, for plans written outside the numeric rewrite.
pub(super) fn divide_udf(scale_only: bool) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(Divide {
        signature: Signature::any(4, Volatility::Immutable),
        scale_only,
    }))
}

/// `pgaccel_numeric_mul(a, b, display scale of a, display scale of b)`: a
/// product with a [`DYNAMIC`] operand, exact at the sum of the display
/// scales (PostgreSQL's `mul_var` result scale), as [`DYNAMIC`]; more
/// decimals than it holds are refused.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Multiply {
    signature: Signature,
}

/// `number`'s digits at its display scale `display` (the digits past it
/// are zeros).
pub(super) fn at_display_scale(number: Number, display: u32) -> Option<i256> {
    if number.scale >= display {
        Some(number.digits / ten_to(number.scale - display)?)
    } else {
        number.digits.checked_mul(ten_to(display - number.scale)?)
    }
}

impl ScalarUDFImpl for Multiply {
    fn name(&self) -> &str {
        MULTIPLY
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DYNAMIC)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = arrays(&args)?;
        let rows = arrays[0].len();
        let mut values = Decimal256Builder::with_capacity(rows);
        for row in 0..rows {
            let (Some(a), Some(b), Some(scale_a), Some(scale_b)) = (
                number_at(&arrays[0], row),
                number_at(&arrays[1], row),
                scale_at(&arrays[2], row),
                scale_at(&arrays[3], row),
            ) else {
                values.append_null();
                continue;
            };
            let (scale_a, scale_b) = (scale_a.max(0) as u32, scale_b.max(0) as u32);
            if scale_a + scale_b > DYNAMIC_SCALE {
                return Err(refused("a product of numerics with more than 40 decimals"));
            }
            let product = at_display_scale(a, scale_a)
                .zip(at_display_scale(b, scale_b))
                .and_then(|(a, b)| a.checked_mul(b))
                .ok_or_else(out_of_range)?;
            values.append_value(to_dynamic(product, scale_a + scale_b)?);
        }
        let array = values
            .finish()
            .with_precision_and_scale(76, DYNAMIC_SCALE as i8)?;
        finish(Arc::new(array), scalar)
    }
}

/// `pgaccel_numeric_text(value, display scale)`: the value as PostgreSQL
/// prints it; [`DISPLAY`] is the same text in a result column the wire
/// reports as `numeric`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Text {
    signature: Signature,
    display: bool,
}

impl ScalarUDFImpl for Text {
    fn name(&self) -> &str {
        if self.display { DISPLAY } else { TEXT }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<FieldRef> {
        let nullable = args.arg_fields.iter().any(|field| field.is_nullable());
        let field = Field::new(self.name(), DataType::Utf8, nullable);
        Ok(Arc::new(if self.display {
            field.with_metadata([(PG_TYPE_METADATA.to_owned(), "numeric".to_owned())].into())
        } else {
            field
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = arrays(&args)?;
        let rows = arrays[0].len();
        let mut out = StringBuilder::with_capacity(rows, rows * 24);
        for row in 0..rows {
            match (number_at(&arrays[0], row), scale_at(&arrays[1], row)) {
                (Some(number), Some(display)) => {
                    out.append_value(text(number.digits, number.scale, display.max(0) as u32));
                }
                _ => out.append_null(),
            }
        }
        finish(Arc::new(out.finish()), scalar)
    }
}

/// `avg` of integers and numerics as PostgreSQL computes it: the exact sum
/// divided by the count with [`div_scale`]; with a second argument, the
/// display scale of each input (for inputs that are themselves
/// [`DYNAMIC`]). [`AVG_SCALE`] is the same aggregate returning the scale,
/// [`AVG_WITH_SCALE`] both at once (one pass over the rows where a result
/// is printed).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Average {
    signature: Signature,
    output: AverageOutput,
}

/// What an [`Average`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum AverageOutput {
    Value,
    Scale,
    /// A struct of the value ([`AVERAGE_VALUE`]) and its display scale
    /// ([`AVERAGE_SCALE`]).
    Both,
}

/// The fields of an [`AverageOutput::Both`] result.
pub(super) const AVERAGE_VALUE: &str = "value";
pub(super) const AVERAGE_SCALE: &str = "scale";

pub(super) fn average_fields() -> datafusion::arrow::datatypes::Fields {
    datafusion::arrow::datatypes::Fields::from(vec![
        Field::new(AVERAGE_VALUE, DYNAMIC, true),
        Field::new(AVERAGE_SCALE, DataType::Int32, true),
    ])
}

/// The result of an [`Average`] over groups (or one group).
fn average_output(
    values: Decimal256Builder,
    scales: Int32Builder,
    output: AverageOutput,
) -> Result<ArrayRef> {
    match output {
        AverageOutput::Value => values_or_scales(values, scales, false),
        AverageOutput::Scale => values_or_scales(values, scales, true),
        AverageOutput::Both => {
            let (mut values, mut scales) = (values, scales);
            let values: ArrayRef = Arc::new(
                values
                    .finish()
                    .with_precision_and_scale(76, DYNAMIC_SCALE as i8)?,
            );
            let scales: ArrayRef = Arc::new(scales.finish());
            Ok(Arc::new(datafusion::arrow::array::StructArray::try_new(
                average_fields(),
                vec![values, scales],
                None,
            )?))
        }
    }
}

impl AggregateUDFImpl for Average {
    fn name(&self) -> &str {
        match self.output {
            AverageOutput::Value => AVG,
            AverageOutput::Scale => AVG_SCALE,
            AverageOutput::Both => AVG_WITH_SCALE,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.output {
            AverageOutput::Value => DYNAMIC,
            AverageOutput::Scale => DataType::Int32,
            AverageOutput::Both => DataType::Struct(average_fields()),
        })
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let scale = match args
            .exprs
            .first()
            .map(|e| e.data_type(args.schema))
            .transpose()?
        {
            Some(DataType::Decimal128(_, scale) | DataType::Decimal256(_, scale)) => {
                scale.max(0) as u32
            }
            _ => 0,
        };
        Ok(Box::new(AverageAccumulator {
            sum: i256::ZERO,
            scale,
            count: 0,
            display: 0,
            output: self.output,
            distinct: args.is_distinct.then(std::collections::HashSet::new),
        }))
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !args.is_distinct
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn datafusion::logical_expr::GroupsAccumulator>> {
        let scale = match args
            .exprs
            .first()
            .map(|e| e.data_type(args.schema))
            .transpose()?
        {
            Some(DataType::Decimal128(_, scale) | DataType::Decimal256(_, scale)) => {
                scale.max(0) as u32
            }
            _ => 0,
        };
        Ok(Box::new(AverageGroups {
            sums: Vec::new(),
            narrow: Vec::new(),
            counts: Vec::new(),
            displays: Vec::new(),
            scale,
            output: self.output,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        if args.is_distinct {
            return Ok(vec![
                Arc::new(Field::new_list(
                    format!("{}[values]", args.name),
                    Field::new_list_field(DataType::Decimal256(76, 0), true),
                    true,
                )),
                state_field(args.name, "display", DataType::Int32),
            ]);
        }
        Ok(vec![
            state_field(args.name, "sum", DataType::Decimal256(76, 0)),
            state_field(args.name, "count", DataType::Int64),
            state_field(args.name, "display", DataType::Int32),
        ])
    }
}

#[derive(Debug)]
pub(super) struct AverageAccumulator {
    /// The sum's digits at `scale`.
    sum: i256,
    scale: u32,
    count: i64,
    /// The largest display scale of an input.
    display: i32,
    output: AverageOutput,
    /// `avg(DISTINCT x)`: the distinct values seen (summed at the end).
    distinct: Option<std::collections::HashSet<i256>>,
}

impl AverageAccumulator {
    fn add(&mut self, values: &[ArrayRef], sign: i64) -> Result<()> {
        let Some(column) = values.first() else {
            return Ok(());
        };
        for (row, digits) in digits_of(column).into_iter().enumerate() {
            let Some(digits) = digits else {
                continue;
            };
            let display = values
                .get(1)
                .and_then(|scales| scale_at(scales, row))
                .unwrap_or(self.scale as i32);
            self.display = self.display.max(display);
            if let Some(seen) = &mut self.distinct {
                seen.insert(digits);
                continue;
            }
            let digits = if sign < 0 {
                digits.wrapping_neg()
            } else {
                digits
            };
            self.sum = self.sum.checked_add(digits).ok_or_else(out_of_range)?;
            self.count += sign;
        }
        Ok(())
    }
}

impl Accumulator for AverageAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(values, 1)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(values, -1)
    }

    fn supports_retract_batch(&self) -> bool {
        self.distinct.is_none()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        if let Some(seen) = &mut self.distinct {
            let lists = states[0].as_list::<i32>();
            let displays = states[1].as_primitive::<Int32Type>();
            for row in 0..lists.len() {
                if lists.is_null(row) {
                    continue;
                }
                let values = lists.value(row);
                let values = values.as_primitive::<Decimal256Type>();
                seen.extend(values.iter().flatten());
                self.display = self.display.max(displays.value(row));
            }
            return Ok(());
        }
        let sums = states[0].as_primitive::<Decimal256Type>();
        let counts = states[1].as_primitive::<Int64Type>();
        let displays = states[2].as_primitive::<Int32Type>();
        for row in 0..sums.len() {
            if sums.is_null(row) {
                continue;
            }
            self.sum = self
                .sum
                .checked_add(sums.value(row))
                .ok_or_else(out_of_range)?;
            self.count += counts.value(row);
            self.display = self.display.max(displays.value(row));
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        if let Some(seen) = &self.distinct {
            let values: Vec<ScalarValue> = seen
                .iter()
                .map(|digits| ScalarValue::Decimal256(Some(*digits), 76, 0))
                .collect();
            return Ok(vec![
                ScalarValue::List(ScalarValue::new_list_nullable(
                    &values,
                    &DataType::Decimal256(76, 0),
                )),
                ScalarValue::Int32(Some(self.display)),
            ]);
        }
        Ok(vec![
            ScalarValue::Decimal256(Some(self.sum), 76, 0),
            ScalarValue::Int64(Some(self.count)),
            ScalarValue::Int32(Some(self.display)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if let Some(seen) = &self.distinct {
            self.sum = seen
                .iter()
                .try_fold(i256::ZERO, |sum, digits| sum.checked_add(*digits))
                .ok_or_else(out_of_range)?;
            self.count = seen.len() as i64;
        }
        let average = average(self.sum, self.scale, self.count, self.display)?;
        Ok(match self.output {
            AverageOutput::Value => {
                ScalarValue::Decimal256(average.map(|(value, _)| value), 76, DYNAMIC_SCALE as i8)
            }
            AverageOutput::Scale => ScalarValue::Int32(average.map(|(_, scale)| scale)),
            AverageOutput::Both => {
                let mut values = Decimal256Builder::with_capacity(1);
                let mut scales = Int32Builder::with_capacity(1);
                values.append_option(average.map(|(value, _)| value));
                scales.append_option(average.map(|(_, scale)| scale));
                let array = average_output(values, scales, AverageOutput::Both)?;
                ScalarValue::try_from_array(&array, 0)?
            }
        })
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self
                .distinct
                .as_ref()
                .map_or(0, |seen| seen.capacity() * std::mem::size_of::<i256>())
    }
}

/// The average of `count` values summing to `sum` (digits at `scale`), as
/// [`DYNAMIC`] digits with its display scale; `None` for no values.
pub(super) fn average(
    sum: i256,
    scale: u32,
    count: i64,
    display: i32,
) -> Result<Option<(i256, i32)>> {
    if count == 0 {
        return Ok(None);
    }
    let sum = Number { digits: sum, scale };
    let count = Number {
        digits: i256::from(count),
        scale: 0,
    };
    let scale = div_scale(sum, display, count, 0);
    let quotient = divide(sum, count, scale as u32).ok_or_else(out_of_range)?;
    Ok(Some((to_dynamic(quotient, scale as u32)?, scale)))
}

/// [`Average`] over many groups at once.
#[derive(Debug)]
pub(super) struct AverageGroups {
    sums: Vec<i256>,
    /// Sums and counts of values of at most 128 bits, all at `scale`, not
    /// yet added to `sums` and `counts`: most rows add in 128 bits, and
    /// only a sum that would overflow them is carried into `sums`. Their
    /// display scale is `scale`, applied when they are carried.
    narrow: Vec<NarrowSum>,
    counts: Vec<i64>,
    displays: Vec<i32>,
    scale: u32,
    output: AverageOutput,
}

/// A group's [`AverageGroups::narrow`] sum and count, side by side so that
/// a row updates one place.
#[derive(Debug, Default, Clone, Copy)]
struct NarrowSum {
    sum: i128,
    count: i64,
}

impl AverageGroups {
    fn grow(&mut self, groups: usize) {
        self.sums.resize(groups, i256::ZERO);
        self.narrow.resize(groups, NarrowSum::default());
        self.counts.resize(groups, 0);
        self.displays.resize(groups, 0);
    }
}

impl AverageGroups {
    /// Adds a column of values of at most 128 bits, all at this average's
    /// scale, to [`AverageGroups::narrow`].
    fn add_narrow<T>(&mut self, column: &ArrayRef, group_indices: &[usize])
    where
        T: datafusion::arrow::datatypes::ArrowPrimitiveType,
        T::Native: Into<i128>,
    {
        let array = column.as_primitive::<T>();
        let mut add = |group: usize, value: i128| {
            let narrow = &mut self.narrow[group];
            match narrow.sum.checked_add(value) {
                Some(sum) => narrow.sum = sum,
                None => {
                    // Carried into the wide sum, which holds any sum of
                    // 2^63 values of 128 bits.
                    self.sums[group] = self.sums[group].wrapping_add(i256::from_i128(narrow.sum));
                    narrow.sum = value;
                }
            }
            narrow.count += 1;
        };
        if array.null_count() == 0 {
            for (&group, &value) in group_indices.iter().zip(array.values().iter()) {
                add(group, value.into());
            }
        } else {
            for (row, &group) in group_indices.iter().enumerate() {
                if array.is_valid(row) {
                    add(group, array.value(row).into());
                }
            }
        }
    }

    /// Adds the narrow sums and counts into the wide ones.
    fn carry(&mut self) -> Result<()> {
        let display = self.scale as i32;
        for (group, narrow) in self.narrow.iter_mut().enumerate() {
            let NarrowSum { sum, count } = std::mem::take(narrow);
            if count == 0 {
                continue;
            }
            self.sums[group] = self.sums[group]
                .checked_add(i256::from_i128(sum))
                .ok_or_else(out_of_range)?;
            self.counts[group] += count;
            self.displays[group] = self.displays[group].max(display);
        }
        Ok(())
    }
}

pub(super) fn passes(filter: Option<&datafusion::arrow::array::BooleanArray>, row: usize) -> bool {
    filter.is_none_or(|filter| filter.is_valid(row) && filter.value(row))
}

impl datafusion::logical_expr::GroupsAccumulator for AverageGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&datafusion::arrow::array::BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.grow(total_num_groups);
        if let ([column], None) = (values, opt_filter) {
            type AddNarrow = fn(&mut AverageGroups, &ArrayRef, &[usize]);
            let add: Option<AddNarrow> = match column.data_type() {
                DataType::Decimal128(..) => Some(Self::add_narrow::<Decimal128Type>),
                DataType::Int64 => Some(Self::add_narrow::<Int64Type>),
                DataType::Int32 => Some(Self::add_narrow::<Int32Type>),
                DataType::Int16 => Some(Self::add_narrow::<Int16Type>),
                _ => None,
            };
            if let Some(add) = add {
                add(self, column, group_indices);
                return Ok(());
            }
        }
        let digits = digits_of(&values[0]);
        let scales = values.get(1);
        for (row, (&group, value)) in group_indices.iter().zip(digits).enumerate() {
            let Some(value) = value else { continue };
            if !passes(opt_filter, row) {
                continue;
            }
            self.sums[group] = self.sums[group]
                .checked_add(value)
                .ok_or_else(out_of_range)?;
            self.counts[group] += 1;
            let display = scales
                .and_then(|scales| scale_at(scales, row))
                .unwrap_or(self.scale as i32);
            self.displays[group] = self.displays[group].max(display);
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: datafusion::logical_expr::EmitTo) -> Result<ArrayRef> {
        self.carry()?;
        emit_to.take_needed(&mut self.narrow);
        let sums = emit_to.take_needed(&mut self.sums);
        let counts = emit_to.take_needed(&mut self.counts);
        let displays = emit_to.take_needed(&mut self.displays);
        let mut values = Decimal256Builder::with_capacity(sums.len());
        let mut scales = Int32Builder::with_capacity(sums.len());
        for ((sum, count), display) in sums.into_iter().zip(counts).zip(displays) {
            match average(sum, self.scale, count, display)? {
                Some((value, scale)) => {
                    values.append_value(value);
                    scales.append_value(scale);
                }
                None => {
                    values.append_null();
                    scales.append_null();
                }
            }
        }
        average_output(values, scales, self.output)
    }

    fn state(&mut self, emit_to: datafusion::logical_expr::EmitTo) -> Result<Vec<ArrayRef>> {
        self.carry()?;
        emit_to.take_needed(&mut self.narrow);
        let sums = emit_to.take_needed(&mut self.sums);
        let counts = emit_to.take_needed(&mut self.counts);
        let displays = emit_to.take_needed(&mut self.displays);
        Ok(vec![
            Arc::new(
                datafusion::arrow::array::Decimal256Array::from(sums)
                    .with_precision_and_scale(76, 0)?,
            ),
            Arc::new(datafusion::arrow::array::Int64Array::from(counts)),
            Arc::new(datafusion::arrow::array::Int32Array::from(displays)),
        ])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.grow(total_num_groups);
        let sums = values[0].as_primitive::<Decimal256Type>();
        let counts = values[1].as_primitive::<Int64Type>();
        let displays = values[2].as_primitive::<Int32Type>();
        for (row, &group) in group_indices.iter().enumerate() {
            if sums.is_null(row) {
                continue;
            }
            self.sums[group] = self.sums[group]
                .checked_add(sums.value(row))
                .ok_or_else(out_of_range)?;
            self.counts[group] += counts.value(row);
            self.displays[group] = self.displays[group].max(displays.value(row));
        }
        Ok(())
    }

    /// Each row as a group of its own: the value (or nothing, when NULL or
    /// filtered out) with a count of 1.
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&datafusion::arrow::array::BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let digits = digits_of(&values[0]);
        let rows = digits.len();
        let mut sums = Decimal256Builder::with_capacity(rows);
        let mut counts = datafusion::arrow::array::Int64Builder::with_capacity(rows);
        let mut displays = Int32Builder::with_capacity(rows);
        for (row, value) in digits.into_iter().enumerate() {
            let kept = value.filter(|_| passes(opt_filter, row));
            sums.append_value(kept.unwrap_or(i256::ZERO));
            counts.append_value(i64::from(kept.is_some()));
            let display = values
                .get(1)
                .and_then(|scales| scale_at(scales, row))
                .unwrap_or(self.scale as i32);
            displays.append_value(if kept.is_some() { display } else { 0 });
        }
        Ok(vec![
            Arc::new(sums.finish().with_precision_and_scale(76, 0)?),
            Arc::new(counts.finish()),
            Arc::new(displays.finish()),
        ])
    }

    fn size(&self) -> usize {
        self.sums.capacity() * std::mem::size_of::<i256>()
            + self.narrow.capacity() * std::mem::size_of::<NarrowSum>()
            + self.counts.capacity() * std::mem::size_of::<i64>()
            + self.displays.capacity() * std::mem::size_of::<i32>()
    }
}

/// Every [`Spread`].
pub(super) const SPREADS: [Spread; 4] = [
    Spread::VarianceSample,
    Spread::VariancePopulation,
    Spread::DeviationSample,
    Spread::DeviationPopulation,
];

/// Every [`Rounding`].
pub(super) const ROUNDINGS: [Rounding; 4] = [
    Rounding::Round,
    Rounding::Trunc,
    Rounding::Ceil,
    Rounding::Floor,
];

/// Which of PostgreSQL's `var_samp`, `var_pop`, `stddev_samp` and
/// `stddev_pop` a [`Variance`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Spread {
    VarianceSample,
    VariancePopulation,
    DeviationSample,
    DeviationPopulation,
}

impl Spread {
    /// The spread DataFusion's aggregate `name` computes.
    pub(super) fn of(name: &str) -> Option<Spread> {
        Some(match name {
            "var" => Spread::VarianceSample,
            "var_pop" => Spread::VariancePopulation,
            "stddev" => Spread::DeviationSample,
            "stddev_pop" => Spread::DeviationPopulation,
            _ => return None,
        })
    }

    pub(super) fn name(self, scale_only: bool) -> &'static str {
        match (self, scale_only) {
            (Spread::VarianceSample, false) => "pgaccel_var_samp",
            (Spread::VariancePopulation, false) => "pgaccel_var_pop",
            (Spread::DeviationSample, false) => "pgaccel_stddev_samp",
            (Spread::DeviationPopulation, false) => "pgaccel_stddev_pop",
            (Spread::VarianceSample, true) => "pgaccel_var_samp_scale",
            (Spread::VariancePopulation, true) => "pgaccel_var_pop_scale",
            (Spread::DeviationSample, true) => "pgaccel_stddev_samp_scale",
            (Spread::DeviationPopulation, true) => "pgaccel_stddev_pop_scale",
        }
    }

    fn sample(self) -> bool {
        matches!(self, Spread::VarianceSample | Spread::DeviationSample)
    }

    fn deviation(self) -> bool {
        matches!(self, Spread::DeviationSample | Spread::DeviationPopulation)
    }
}

/// The square root of `n`, rounded half away from zero.
pub(super) fn rounded_sqrt(n: i256) -> Option<i256> {
    if n.is_negative() {
        return None;
    }
    if n == i256::ZERO {
        return Some(n);
    }
    // Newton's method from above: x(k+1) = (x(k) + n / x(k)) / 2.
    let two = i256::from_i128(2);
    let bits = 256 - n.leading_zeros();
    let mut x = i256::ONE.checked_mul(two.checked_pow(bits.div_ceil(2))?)?;
    loop {
        let next = x.checked_add(n.checked_div(x)?)?.checked_div(two)?;
        if next >= x {
            break;
        }
        x = next;
    }
    // x = floor(sqrt(n)); round up when n ≥ (x + ½)², i.e. n − x² > x.
    let remainder = n.checked_sub(x.checked_mul(x)?)?;
    Some(if remainder > x {
        x.checked_add(i256::ONE)?
    } else {
        x
    })
}

/// PostgreSQL's `numeric_stddev_internal` over exact sums: the value (as
/// [`DYNAMIC`] digits) and its display scale; `None` for too few values.
pub(super) fn spread(
    spread: Spread,
    sum: i256,
    squares: i256,
    count: i64,
    scale: u32,
) -> Result<Option<(i256, i32)>> {
    if count <= i64::from(spread.sample()) {
        return Ok(None);
    }
    let n = i256::from(count);
    // N·Σx² − (Σx)², at twice the inputs' scale.
    let numerator = n
        .checked_mul(squares)
        .and_then(|product| product.checked_sub(sum.checked_mul(sum)?))
        .ok_or_else(out_of_range)?;
    if numerator <= i256::ZERO {
        return Ok(Some((i256::ZERO, 0)));
    }
    let denominator = if spread.sample() {
        n.checked_mul(n.checked_sub(i256::ONE).ok_or_else(out_of_range)?)
    } else {
        n.checked_mul(n)
    }
    .ok_or_else(out_of_range)?;
    let numerator = Number {
        digits: numerator,
        scale: scale * 2,
    };
    let denominator = Number {
        digits: denominator,
        scale: 0,
    };
    let rscale = div_scale(numerator, (scale * 2) as i32, denominator, 0);
    let variance = divide(numerator, denominator, rscale as u32).ok_or_else(out_of_range)?;
    let value = if spread.deviation() {
        let widened = ten_to(rscale as u32)
            .and_then(|factor| variance.checked_mul(factor))
            .ok_or_else(out_of_range)?;
        rounded_sqrt(widened).ok_or_else(out_of_range)?
    } else {
        variance
    };
    Ok(Some((to_dynamic(value, rscale as u32)?, rscale)))
}

/// `var_samp`, `var_pop`, `stddev_samp` and `stddev_pop` of integers and
/// fixed-scale numerics as PostgreSQL computes them: exact sums, the
/// quotient at [`div_scale`]'s scale, the root rounded at the same scale.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Variance {
    signature: Signature,
    spread: Spread,
    scale_only: bool,
}

impl AggregateUDFImpl for Variance {
    fn name(&self) -> &str {
        self.spread.name(self.scale_only)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(value_or_scale_type(self.scale_only))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if args.is_distinct {
            return Err(unsupported("DISTINCT in stddev() or variance()"));
        }
        let scale = match args
            .exprs
            .first()
            .map(|e| e.data_type(args.schema))
            .transpose()?
        {
            Some(DataType::Decimal128(_, scale)) => scale.max(0) as u32,
            _ => 0,
        };
        Ok(Box::new(VarianceAccumulator {
            spread: self.spread,
            scale_only: self.scale_only,
            scale,
            sum: i256::ZERO,
            squares: i256::ZERO,
            count: 0,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            state_field(args.name, "sum", DataType::Decimal256(76, 0)),
            state_field(args.name, "squares", DataType::Decimal256(76, 0)),
            state_field(args.name, "count", DataType::Int64),
        ])
    }
}

#[derive(Debug)]
struct VarianceAccumulator {
    spread: Spread,
    scale_only: bool,
    /// The inputs' scale: `sum` is at it, `squares` at twice it.
    scale: u32,
    sum: i256,
    squares: i256,
    count: i64,
}

impl VarianceAccumulator {
    fn add(&mut self, values: &[ArrayRef], sign: i64) -> Result<()> {
        let Some(column) = values.first() else {
            return Ok(());
        };
        for digits in digits_of(column).into_iter().flatten() {
            let square = digits.checked_mul(digits).ok_or_else(out_of_range)?;
            let (digits, square) = if sign < 0 {
                (digits.wrapping_neg(), square.wrapping_neg())
            } else {
                (digits, square)
            };
            self.sum = self.sum.checked_add(digits).ok_or_else(out_of_range)?;
            self.squares = self.squares.checked_add(square).ok_or_else(out_of_range)?;
            self.count += sign;
        }
        Ok(())
    }
}

impl Accumulator for VarianceAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(values, 1)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(values, -1)
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let sums = states[0].as_primitive::<Decimal256Type>();
        let squares = states[1].as_primitive::<Decimal256Type>();
        let counts = states[2].as_primitive::<Int64Type>();
        for row in 0..sums.len() {
            if sums.is_null(row) {
                continue;
            }
            self.sum = self
                .sum
                .checked_add(sums.value(row))
                .ok_or_else(out_of_range)?;
            self.squares = self
                .squares
                .checked_add(squares.value(row))
                .ok_or_else(out_of_range)?;
            self.count += counts.value(row);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Decimal256(Some(self.sum), 76, 0),
            ScalarValue::Decimal256(Some(self.squares), 76, 0),
            ScalarValue::Int64(Some(self.count)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let result = spread(self.spread, self.sum, self.squares, self.count, self.scale)?;
        Ok(if self.scale_only {
            ScalarValue::Int32(result.map(|(_, scale)| scale))
        } else {
            ScalarValue::Decimal256(result.map(|(value, _)| value), 76, DYNAMIC_SCALE as i8)
        })
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// How [`RoundNumeric`] rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Rounding {
    /// Half away from zero.
    Round,
    Trunc,
    Ceil,
    Floor,
}

impl Rounding {
    pub(super) fn of(name: &str) -> Option<Rounding> {
        Some(match name {
            "round" => Rounding::Round,
            "trunc" => Rounding::Trunc,
            "ceil" | "ceiling" => Rounding::Ceil,
            "floor" => Rounding::Floor,
            _ => return None,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Rounding::Round => "pgaccel_numeric_round",
            Rounding::Trunc => "pgaccel_numeric_trunc",
            Rounding::Ceil => "pgaccel_numeric_ceil",
            Rounding::Floor => "pgaccel_numeric_floor",
        }
    }

    /// `digits` (at some scale) divided by `10^drop`, rounded this way.
    pub(super) fn apply(self, digits: i256, drop: u32) -> Option<i256> {
        if drop == 0 {
            return Some(digits);
        }
        let divisor = ten_to(drop)?;
        let quotient = digits.checked_div(divisor)?;
        let remainder = digits.checked_rem(divisor)?;
        let away = match self {
            Rounding::Round => remainder.wrapping_abs().checked_mul(i256::from_i128(2))? >= divisor,
            Rounding::Trunc => false,
            Rounding::Ceil => remainder > i256::ZERO,
            Rounding::Floor => remainder < i256::ZERO,
        };
        if !away {
            return Some(quotient);
        }
        if digits.is_negative() {
            quotient.checked_sub(i256::ONE)
        } else {
            quotient.checked_add(i256::ONE)
        }
    }
}

/// `round`, `trunc`, `ceil` and `floor` of a numeric, as PostgreSQL's:
/// numeric results (DataFusion computes them in floating point), halves
/// rounded away from zero, the display scale the requested number of
/// decimals (never negative). `round(x, 2)` with a constant count has a
/// fixed scale; with a computed one the result is [`DYNAMIC`].
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct RoundNumeric {
    signature: Signature,
    rounding: Rounding,
}

/// The constant decimal count of `round(x, n)`: 0 without `n`.
pub(super) fn constant_places(args: &[Option<&ScalarValue>], arity: usize) -> Option<i32> {
    if arity < 2 {
        return Some(0);
    }
    let value = args.get(1).copied().flatten()?;
    match value.cast_to(&DataType::Int32).ok()? {
        ScalarValue::Int32(Some(places)) => Some(places),
        _ => None,
    }
}

impl ScalarUDFImpl for RoundNumeric {
    fn name(&self) -> &str {
        self.rounding.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DYNAMIC)
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<FieldRef> {
        let input = args.arg_fields[0].data_type();
        let data_type = match constant_places(args.scalar_arguments, args.arg_fields.len()) {
            Some(places) => {
                let scale = places.clamp(0, DYNAMIC_SCALE as i32) as i8;
                match input {
                    DataType::Decimal128(..) => DataType::Decimal128(38, scale),
                    _ => DataType::Decimal256(76, scale),
                }
            }
            None => DYNAMIC,
        };
        let nullable = args.arg_fields.iter().any(|field| field.is_nullable());
        Ok(Arc::new(Field::new(self.name(), data_type, nullable)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let output = args.return_field.data_type().clone();
        let (arrays, scalar) = arrays(&args)?;
        let rows = arrays[0].len();
        let out_scale = match output {
            DataType::Decimal128(_, scale) | DataType::Decimal256(_, scale) => scale as u32,
            _ => DYNAMIC_SCALE,
        };
        let mut values = Decimal256Builder::with_capacity(rows);
        for row in 0..rows {
            let places = match arrays.get(1) {
                Some(places) => scale_at(places, row),
                None => Some(0),
            };
            let (Some(number), Some(places)) = (number_at(&arrays[0], row), places) else {
                values.append_null();
                continue;
            };
            // Rounded at `places` decimals (to tens, hundreds, ... when
            // negative), then written at the output's scale.
            let kept = places.clamp(-(76 - 1), DYNAMIC_SCALE as i32);
            let drop = number.scale as i32 - kept;
            let digits = if drop > 0 {
                let rounded = self
                    .rounding
                    .apply(number.digits, drop as u32)
                    .ok_or_else(out_of_range)?;
                // Back to `kept` decimals' worth of digits at scale max(kept, 0).
                if kept < 0 {
                    rounded
                        .checked_mul(ten_to(kept.unsigned_abs()).ok_or_else(out_of_range)?)
                        .ok_or_else(out_of_range)?
                } else {
                    rounded
                }
            } else {
                number
                    .digits
                    .checked_mul(ten_to((-drop) as u32).ok_or_else(out_of_range)?)
                    .ok_or_else(out_of_range)?
            };
            let at = kept.max(0) as u32;
            let scaled = if out_scale >= at {
                digits
                    .checked_mul(ten_to(out_scale - at).ok_or_else(out_of_range)?)
                    .ok_or_else(out_of_range)?
            } else {
                Rounding::Round
                    .apply(digits, at - out_scale)
                    .ok_or_else(out_of_range)?
            };
            values.append_value(scaled);
        }
        let array = values
            .finish()
            .with_precision_and_scale(76, out_scale as i8)?;
        let array: ArrayRef = match output {
            DataType::Decimal128(precision, scale) => {
                let mut narrow =
                    datafusion::arrow::array::Decimal128Builder::with_capacity(array.len());
                for row in 0..array.len() {
                    if array.is_null(row) {
                        narrow.append_null();
                    } else {
                        let value = array.value(row).to_i128().ok_or_else(out_of_range)?;
                        if value.unsigned_abs() >= 10u128.pow(u32::from(precision)) {
                            return Err(out_of_range());
                        }
                        narrow.append_value(value);
                    }
                }
                Arc::new(narrow.finish().with_precision_and_scale(precision, scale)?)
            }
            _ => Arc::new(array),
        };
        finish(array, scalar)
    }
}

/// `round(float8)`: PostgreSQL's `rint`, halves to even.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct FloatRound {
    signature: Signature,
}

impl ScalarUDFImpl for FloatRound {
    fn name(&self) -> &str {
        FLOAT_ROUND
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::datatypes::{Float32Type, Float64Type};
        let (arrays, scalar) = arrays(&args)?;
        let array: ArrayRef = match arrays[0].data_type() {
            DataType::Float32 => Arc::new(
                arrays[0]
                    .as_primitive::<Float32Type>()
                    .unary::<_, Float32Type>(f32::round_ties_even),
            ),
            _ => Arc::new(
                datafusion::arrow::compute::cast(&arrays[0], &DataType::Float64)?
                    .as_primitive::<Float64Type>()
                    .unary::<_, Float64Type>(f64::round_ties_even),
            ),
        };
        finish(array, scalar)
    }
}

/// `x::numeric` without a precision: the value as an unconstrained numeric
/// with the display scale PostgreSQL gives it (an integer's is 0, a
/// numeric keeps its own, text shows its own, a float gets its 15
/// significant digits). [`TO_NUMERIC_SCALE`] returns that scale.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct ToNumeric {
    signature: Signature,
    scale_only: bool,
}

/// The digits and scale of a numeric's text (`-1.50`, `1e3`, ` 2 `).
pub(super) fn parse_numeric(text: &str) -> Option<Number> {
    let trimmed = text.trim();
    let (mantissa, exponent) = match trimmed.find(['e', 'E']) {
        Some(at) => (&trimmed[..at], trimmed[at + 1..].parse::<i32>().ok()?),
        None => (trimmed, 0),
    };
    let (negative, unsigned) = match mantissa.as_bytes().first()? {
        b'-' => (true, &mantissa[1..]),
        b'+' => (false, &mantissa[1..]),
        _ => (false, mantissa),
    };
    let (integer, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if integer.is_empty() && fraction.is_empty()
        || !integer
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let mut digits =
        i256::from_string(&format!("{integer}{fraction}0"))?.checked_div(i256::from_i128(10))?;
    let mut scale = fraction.len() as i32 - exponent;
    if scale < 0 {
        digits = digits.checked_mul(ten_to(scale.unsigned_abs())?)?;
        scale = 0;
    }
    if negative {
        digits = digits.checked_neg()?;
    }
    Some(Number {
        digits,
        scale: scale as u32,
    })
}

/// The significant digits of a `float8` converted to numeric (C's `DBL_DIG`).
pub(super) const FLOAT8_DIGITS: usize = 15;
/// The significant digits of a `float4` converted to numeric (C's `FLT_DIG`).
pub(super) const FLOAT4_DIGITS: usize = 6;

/// A float as PostgreSQL converts it to numeric: 15 significant digits
/// (`FLOAT8_DIGITS`), 6 for a `float4` (`FLOAT4_DIGITS`), trailing zeros
/// dropped.
pub(super) fn float_numeric(value: f64, digits: usize) -> Option<Number> {
    if !value.is_finite() {
        return None;
    }
    let text = format!("{value:.*e}", digits - 1);
    let (mantissa, exponent) = text.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
    parse_numeric(&format!("{mantissa}e{exponent}"))
}

impl ScalarUDFImpl for ToNumeric {
    fn name(&self) -> &str {
        if self.scale_only {
            TO_NUMERIC_SCALE
        } else {
            TO_NUMERIC
        }
    }

    /// `NULL::numeric` stays untyped, so that it joins numerics of any
    /// scale in a CASE or UNION, but is described to clients as a numeric.
    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<FieldRef> {
        let arg_types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|field| field.data_type().clone())
            .collect();
        let data_type = self.return_type(&arg_types)?;
        let field = Field::new(self.name(), data_type.clone(), true);
        Ok(Arc::new(if data_type == DataType::Null {
            field.with_metadata([(PG_TYPE_METADATA.to_owned(), "numeric".to_owned())].into())
        } else {
            field
        }))
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if self.scale_only {
            return Ok(DataType::Int32);
        }
        Ok(match &arg_types[0] {
            t if t.is_integer() => DataType::Decimal128(38, 0),
            DataType::Decimal128(..) | DataType::Decimal256(..) | DataType::Null => {
                arg_types[0].clone()
            }
            _ => DYNAMIC,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let output = args.return_field.data_type().clone();
        let input = &args.args[0];
        let input_type = input.data_type();
        if !self.scale_only && output == input_type {
            return Ok(input.clone());
        }
        if !self.scale_only && output == DataType::Decimal128(38, 0) {
            return input.cast_to(&output, None);
        }
        let (arrays, scalar) = arrays(&args)?;
        let array = &arrays[0];
        let rows = array.len();
        let mut values = Decimal256Builder::with_capacity(rows);
        let mut scales = Int32Builder::with_capacity(rows);
        let floats = match array.data_type() {
            DataType::Float16 | DataType::Float32 | DataType::Float64 => {
                Some(datafusion::arrow::compute::cast(array, &DataType::Float64)?)
            }
            _ => None,
        };
        let digits = match array.data_type() {
            DataType::Float16 | DataType::Float32 => FLOAT4_DIGITS,
            _ => FLOAT8_DIGITS,
        };
        let texts = match (&floats, array.data_type()) {
            (None, t) if !is_exact_number(t) => {
                Some(datafusion::arrow::compute::cast(array, &DataType::Utf8)?)
            }
            _ => None,
        };
        for row in 0..rows {
            if array.is_null(row) {
                values.append_null();
                scales.append_null();
                continue;
            }
            let number = if let Some(floats) = &floats {
                let value = floats
                    .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                    .value(row);
                float_numeric(value, digits).ok_or_else(|| {
                    DataFusionError::External(Box::new(PgError::new(
                        sqlstate::FEATURE_NOT_SUPPORTED,
                        format!("{value} as a numeric is not supported"),
                    )))
                })?
            } else if let Some(texts) = &texts {
                let text = texts.as_string::<i32>().value(row);
                parse_numeric(text).ok_or_else(|| {
                    DataFusionError::External(Box::new(sqlstate::numeric_input_error(text)))
                })?
            } else {
                number_at(array, row).ok_or_else(out_of_range)?
            };
            scales.append_value(number.scale as i32);
            if !self.scale_only {
                values.append_value(to_dynamic(number.digits, number.scale)?);
            }
        }
        finish(values_or_scales(values, scales, self.scale_only)?, scalar)
    }
}

/// [`PENDING`]: never left in a plan that runs (see
/// [`Threads::resolve_pending`]); refuses if it is.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Pending {
    signature: Signature,
}

impl ScalarUDFImpl for Pending {
    fn name(&self) -> &str {
        PENDING
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Err(refused("this use of a numeric computed in a subquery"))
    }
}

/// `scale(numeric)`, which the rewrite replaces with the value's display
/// scale before the plan runs; this one only gives its type to the planner.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Scale {
    signature: Signature,
}

impl ScalarUDFImpl for Scale {
    fn name(&self) -> &str {
        "scale"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Err(refused("this scale() of a numeric"))
    }
}

pub(super) fn one_or_two() -> Signature {
    Signature::one_of(
        vec![TypeSignature::Any(1), TypeSignature::Any(2)],
        Volatility::Immutable,
    )
}

/// The functions and aggregates [`postgres_numerics`] plans with.
pub fn register(state: &mut datafusion::execution::context::SessionState) -> Result<()> {
    use datafusion::execution::FunctionRegistry;
    for scale_only in [false, true] {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(Divide {
            signature: Signature::any(4, Volatility::Immutable),
            scale_only,
        })))?;
    }
    for output in [
        AverageOutput::Value,
        AverageOutput::Scale,
        AverageOutput::Both,
    ] {
        state.register_udaf(Arc::new(AggregateUDF::new_from_impl(Average {
            signature: one_or_two(),
            output,
        })))?;
    }
    for spread in SPREADS {
        for scale_only in [false, true] {
            state.register_udaf(Arc::new(AggregateUDF::new_from_impl(Variance {
                signature: Signature::any(1, Volatility::Immutable),
                spread,
                scale_only,
            })))?;
        }
    }
    // PostgreSQL's `variance` is `var_samp`, and `every` is `bool_and`.
    for (name, alias) in [("var", "variance"), ("bool_and", "every")] {
        if let Some(aggregate) = state.aggregate_functions().get(name).cloned() {
            state.register_udaf(Arc::new(aggregate.as_ref().clone().with_aliases([alias])))?;
        }
    }
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(Multiply {
        signature: Signature::any(4, Volatility::Immutable),
    })))?;
    for display in [false, true] {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(Text {
            signature: Signature::any(2, Volatility::Immutable),
            display,
        })))?;
    }
    for rounding in ROUNDINGS {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(RoundNumeric {
            signature: one_or_two(),
            rounding,
        })))?;
    }
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(Pending {
        signature: Signature::any(1, Volatility::Immutable),
    })))?;
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(FloatRound {
        signature: Signature::any(1, Volatility::Immutable),
    })))?;
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(Scale {
        signature: Signature::any(1, Volatility::Immutable),
    })))?;
    for kind in super::transcendental::Kind::ALL {
        for scale_only in [false, true] {
            state.register_udf(super::transcendental::udf(kind, scale_only))?;
        }
    }
    // PostgreSQL spells `ceil` also `ceiling`.
    if let Some(ceil) = state.scalar_functions().get("ceil").cloned() {
        state.register_udf(Arc::new(ceil.as_ref().clone().with_aliases(["ceiling"])))?;
    }
    for scale_only in [false, true] {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(ToNumeric {
            signature: Signature::any(1, Volatility::Immutable),
            scale_only,
        })))?;
    }
    Ok(())
}
