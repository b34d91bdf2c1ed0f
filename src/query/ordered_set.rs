//! PostgreSQL's ordered-set aggregates that DataFusion lacks or computes
//! otherwise: `percentile_disc(f) WITHIN GROUP (ORDER BY x)`, the first
//! value of the ordered group whose position reaches the fraction f of it,
//! `percentile_cont(f)`, the double between the two values around position
//! `f × (n - 1)` as PostgreSQL interpolates it (`lo + (hi - lo) × p`, where
//! DataFusion's last digit differs), and
//! `mode() WITHIN GROUP (ORDER BY x)`, the most frequent value (the first
//! in the ordering among equally frequent ones). NULL values are ignored;
//! an empty group gives NULL. A percentile of an array of fractions
//! (`percentile_cont(ARRAY[0.25, 0.75])`) is the array of the percentiles,
//! NULL where the fraction is.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

pub fn functions() -> Vec<AggregateUDF> {
    [
        OrderedSet::PercentileDisc,
        OrderedSet::PercentileCont,
        OrderedSet::Mode,
    ]
    .into_iter()
    .map(|kind| {
        AggregateUDF::new_from_impl(OrderedSetAggregate {
            kind,
            signature: Signature::any(kind.arguments(), Volatility::Immutable),
        })
    })
    .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum OrderedSet {
    PercentileDisc,
    PercentileCont,
    Mode,
}

impl OrderedSet {
    /// With the ordered value first (DataFusion prepends it).
    fn arguments(self) -> usize {
        if self.has_fraction() { 2 } else { 1 }
    }

    fn has_fraction(self) -> bool {
        matches!(
            self,
            OrderedSet::PercentileDisc | OrderedSet::PercentileCont
        )
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct OrderedSetAggregate {
    kind: OrderedSet,
    signature: Signature,
}

impl AggregateUDFImpl for OrderedSetAggregate {
    fn name(&self) -> &str {
        match self.kind {
            OrderedSet::PercentileDisc => "percentile_disc",
            OrderedSet::PercentileCont => "percentile_cont",
            OrderedSet::Mode => "mode",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// DataFusion's own `percentile_cont` answers to `quantile_cont` too:
    /// this one takes both names, so that no registration of that one
    /// (under either) can come back in place of this.
    fn aliases(&self) -> &[String] {
        static QUANTILE: std::sync::LazyLock<Vec<String>> =
            std::sync::LazyLock::new(|| vec!["quantile_cont".to_owned()]);
        match self.kind {
            OrderedSet::PercentileCont => &QUANTILE,
            _ => &[],
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let value = arg_types.first().cloned().ok_or_else(|| {
            DataFusionError::Plan(format!("{} needs WITHIN GROUP (ORDER BY ...)", self.name()))
        })?;
        let result = if self.kind != OrderedSet::PercentileCont {
            value
        } else if value.is_numeric() || value.is_null() {
            // percentile_cont of a number is a double precision.
            DataType::Float64
        } else {
            return Err(DataFusionError::NotImplemented(format!(
                "percentile_cont() of {} is not supported",
                super::json::pg_type_name(&value)
            )));
        };
        Ok(match arg_types.get(1) {
            Some(fractions) if is_list(fractions) => DataType::new_list(result, true),
            _ => result,
        })
    }

    /// percentile_disc() and mode() return one of the ordered values: of
    /// its PostgreSQL type too (a `character(n)` keeps its width).
    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        let types: Vec<DataType> = arg_fields.iter().map(|f| f.data_type().clone()).collect();
        let data_type = self.return_type(&types)?;
        let field = Field::new(self.name(), data_type.clone(), true);
        Ok(Arc::new(match arg_fields.first() {
            Some(value)
                if self.kind != OrderedSet::PercentileCont && value.data_type() == &data_type =>
            {
                field.with_metadata(value.metadata().clone())
            }
            _ => field,
        }))
    }

    fn supports_within_group_clause(&self) -> bool {
        true
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let value = args.input_fields[0].data_type().clone();
        let mut fields = vec![Arc::new(Field::new(
            "values",
            DataType::new_list(value, true),
            true,
        ))];
        if self.kind.has_fraction() {
            let fraction = match args.input_fields.get(1) {
                Some(field) if is_list(field.data_type()) => {
                    DataType::new_list(DataType::Float64, true)
                }
                _ => DataType::Float64,
            };
            fields.push(Arc::new(Field::new("fraction", fraction, true)));
        }
        Ok(fields)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let descending = args
            .order_bys
            .first()
            .is_some_and(|sort| sort.options.descending);
        let many = match args.exprs.get(1) {
            Some(fractions) if self.kind.has_fraction() => {
                is_list(&fractions.data_type(args.schema)?)
            }
            _ => false,
        };
        Ok(Box::new(OrderedSetAccumulator {
            kind: self.kind,
            data_type: args.exprs[0].data_type(args.schema)?,
            values: Vec::new(),
            fraction: if many {
                Fractions::Many(None)
            } else {
                Fractions::One(None)
            },
            descending,
        }))
    }
}

fn is_list(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    )
}

/// The fraction of a percentile, or its array of fractions; `None` until
/// a row has given it.
#[derive(Debug)]
enum Fractions {
    One(Option<f64>),
    Many(Option<Vec<Option<f64>>>),
}

#[derive(Debug)]
struct OrderedSetAccumulator {
    kind: OrderedSet,
    data_type: DataType,
    values: Vec<ScalarValue>,
    fraction: Fractions,
    descending: bool,
}

/// A fraction checked to lie in [0, 1] as PostgreSQL requires.
fn fraction_of(value: &ScalarValue) -> Result<Option<f64>> {
    if value.is_null() {
        return Ok(None);
    }
    let ScalarValue::Float64(Some(fraction)) = value.cast_to(&DataType::Float64)? else {
        return Ok(None);
    };
    if !(0.0..=1.0).contains(&fraction) {
        return Err(DataFusionError::External(Box::new(super::PgError::new(
            super::sqlstate::NUMERIC_OUT_OF_RANGE,
            format!("percentile value {fraction} is not between 0 and 1"),
        ))));
    }
    Ok(Some(fraction))
}

impl OrderedSetAccumulator {
    fn set_fraction(&mut self, value: ScalarValue) -> Result<()> {
        if value.is_null() {
            return Ok(());
        }
        match &mut self.fraction {
            Fractions::One(fraction) => *fraction = fraction_of(&value)?,
            Fractions::Many(fractions) => {
                let list = match value.cast_to(&DataType::new_list(DataType::Float64, true))? {
                    ScalarValue::List(list) => list.value(0),
                    other => {
                        return Err(DataFusionError::Internal(format!(
                            "an array of fractions read as {other}"
                        )));
                    }
                };
                *fractions = Some(
                    (0..list.len())
                        .map(|index| fraction_of(&ScalarValue::try_from_array(&list, index)?))
                        .collect::<Result<_>>()?,
                );
            }
        }
        Ok(())
    }

    /// The percentile at `fraction` of the non-empty `sorted` values.
    fn percentile(&self, sorted: &[ScalarValue], fraction: f64) -> Result<ScalarValue> {
        if self.kind == OrderedSet::PercentileDisc {
            // The first value whose position (from 1) reaches f * n.
            let position = (fraction * sorted.len() as f64).ceil() as usize;
            return Ok(sorted[position.saturating_sub(1).min(sorted.len() - 1)].clone());
        }
        let double = |value: &ScalarValue| match value.cast_to(&DataType::Float64) {
            Ok(ScalarValue::Float64(Some(value))) => Ok(value),
            _ => Err(DataFusionError::Internal(format!(
                "percentile_cont of {value}"
            ))),
        };
        // PostgreSQL's percentile_cont_final_common and float8_lerp.
        let position = fraction * (sorted.len() - 1) as f64;
        let (first, second) = (position.floor(), position.ceil());
        let low = double(&sorted[first as usize])?;
        Ok(ScalarValue::Float64(Some(if first == second {
            low
        } else {
            let high = double(&sorted[second as usize])?;
            low + (high - low) * (position - first)
        })))
    }

    fn sorted(&self) -> Vec<ScalarValue> {
        let mut values = self.values.clone();
        values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        if self.descending {
            values.reverse();
        }
        values
    }
}

impl Accumulator for OrderedSetAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let column = &values[0];
        for row in 0..column.len() {
            if !column.is_null(row) {
                self.values.push(ScalarValue::try_from_array(column, row)?);
            }
            // DataFusion may append the ordering's own columns after the
            // arguments: only the percentiles have a second argument.
            if self.kind.has_fraction()
                && let Some(fractions) = values.get(1)
            {
                self.set_fraction(ScalarValue::try_from_array(fractions, row)?)?;
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = &states[0];
        for row in 0..lists.len() {
            if let ScalarValue::List(list) = ScalarValue::try_from_array(lists, row)? {
                let inner = list.value(0);
                for index in 0..inner.len() {
                    if !inner.is_null(index) {
                        self.values
                            .push(ScalarValue::try_from_array(&inner, index)?);
                    }
                }
            }
            if let Some(fractions) = states.get(1) {
                self.set_fraction(ScalarValue::try_from_array(fractions, row)?)?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let list = ScalarValue::List(ScalarValue::new_list_nullable(
            &self.values,
            &self.data_type,
        ));
        let mut state = vec![list];
        if self.kind.has_fraction() {
            state.push(match &self.fraction {
                Fractions::One(fraction) => ScalarValue::Float64(*fraction),
                Fractions::Many(fractions) => match fractions {
                    Some(fractions) => ScalarValue::List(ScalarValue::new_list_nullable(
                        &fractions
                            .iter()
                            .map(|f| ScalarValue::Float64(*f))
                            .collect::<Vec<_>>(),
                        &DataType::Float64,
                    )),
                    None => ScalarValue::try_from(&DataType::new_list(DataType::Float64, true))?,
                },
            });
        }
        Ok(state)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let value_type = if self.kind == OrderedSet::PercentileCont {
            DataType::Float64
        } else {
            self.data_type.clone()
        };
        let (fractions, many) = match &self.fraction {
            Fractions::One(fraction) => (vec![*fraction], false),
            Fractions::Many(Some(fractions)) => (fractions.clone(), true),
            Fractions::Many(None) => (Vec::new(), true),
        };
        let null = if many {
            ScalarValue::try_from(&DataType::new_list(value_type.clone(), true))?
        } else {
            ScalarValue::try_from(&value_type)?
        };
        // An empty group, or one whose fraction never came (all NULL).
        if self.values.is_empty()
            || (self.kind.has_fraction() && matches!(self.fraction, Fractions::Many(None)))
        {
            return Ok(null);
        }
        let sorted = self.sorted();
        if !self.kind.has_fraction() {
            return Ok(mode(&sorted));
        }
        let percentiles = fractions
            .iter()
            .map(|fraction| match fraction {
                None => ScalarValue::try_from(&value_type),
                Some(fraction) => self.percentile(&sorted, *fraction),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(if many {
            ScalarValue::List(ScalarValue::new_list_nullable(&percentiles, &value_type))
        } else {
            percentiles.into_iter().next().unwrap_or(null)
        })
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.iter().map(ScalarValue::size).sum::<usize>()
    }
}

/// The most frequent of the non-empty `sorted` values, the first in the
/// ordering among equally frequent ones.
fn mode(sorted: &[ScalarValue]) -> ScalarValue {
    let mut best = (0, 0);
    let mut run = (0, 0);
    for index in 0..sorted.len() {
        if index > 0 && sorted[index] == sorted[index - 1] {
            run.1 += 1;
        } else {
            run = (index, 1);
        }
        if run.1 > best.1 {
            best = run;
        }
    }
    sorted[best.0].clone()
}
