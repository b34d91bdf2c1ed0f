//! `max()` and `min()` of `real` and `double precision` as PostgreSQL
//! orders floats: `NaN` is greater than every number (so it is the `max`
//! of any group holding one, and the `min` only of a group of nothing
//! else). DataFusion's skip `NaN`, which answers `Infinity` where
//! PostgreSQL answers `NaN`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float32Type, Float64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

pub const MAX: &str = "pgaccel_float_max";
pub const MIN: &str = "pgaccel_float_min";

pub fn functions() -> Vec<AggregateUDF> {
    [true, false]
        .into_iter()
        .map(|greatest| {
            AggregateUDF::new_from_impl(FloatExtreme {
                greatest,
                signature: Signature::uniform(
                    1,
                    vec![DataType::Float32, DataType::Float64],
                    Volatility::Immutable,
                ),
            })
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatExtreme {
    /// `max` (else `min`).
    greatest: bool,
    signature: Signature,
}

impl AggregateUDFImpl for FloatExtreme {
    fn name(&self) -> &str {
        if self.greatest { MAX } else { MIN }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        arg_types
            .first()
            .cloned()
            .ok_or_else(|| DataFusionError::Plan(format!("{} takes one argument", self.name())))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            "value",
            args.return_field.data_type().clone(),
            true,
        ))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Extreme {
            greatest: self.greatest,
            data_type: args.return_type().clone(),
            value: None,
        }))
    }
}

#[derive(Debug)]
struct Extreme {
    greatest: bool,
    data_type: DataType,
    value: Option<f64>,
}

impl Extreme {
    /// Whether `candidate` replaces `held`, NaN above every number.
    fn replaces(&self, candidate: f64, held: f64) -> bool {
        let ordering = match (candidate.is_nan(), held.is_nan()) {
            (true, true) => return false,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            (false, false) => match candidate.partial_cmp(&held) {
                Some(ordering) => ordering,
                None => return false,
            },
        };
        if self.greatest {
            ordering == std::cmp::Ordering::Greater
        } else {
            ordering == std::cmp::Ordering::Less
        }
    }

    fn offer(&mut self, values: &ArrayRef) {
        let mut each = |candidate: f64| match self.value {
            Some(held) if !self.replaces(candidate, held) => {}
            _ => self.value = Some(candidate),
        };
        match values.data_type() {
            DataType::Float32 => values
                .as_primitive::<Float32Type>()
                .iter()
                .flatten()
                .for_each(|v| each(f64::from(v))),
            DataType::Float64 => values
                .as_primitive::<Float64Type>()
                .iter()
                .flatten()
                .for_each(each),
            _ => {}
        }
    }
}

impl Accumulator for Extreme {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.offer(&values[0]);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.offer(&states[0]);
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(match self.data_type {
            DataType::Float32 => ScalarValue::Float32(self.value.map(|v| v as f32)),
            _ => ScalarValue::Float64(self.value),
        })
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Float64Array;

    fn extreme(greatest: bool, values: &[Option<f64>]) -> ScalarValue {
        let mut accumulator = Extreme {
            greatest,
            data_type: DataType::Float64,
            value: None,
        };
        let array: ArrayRef = Arc::new(Float64Array::from(values.to_vec()));
        accumulator.update_batch(&[array]).unwrap();
        accumulator.evaluate().unwrap()
    }

    #[test]
    fn nan_is_greater_than_every_number() {
        let values = [
            Some(f64::NEG_INFINITY),
            Some(f64::NAN),
            None,
            Some(f64::INFINITY),
        ];
        assert!(matches!(extreme(true, &values), ScalarValue::Float64(Some(v)) if v.is_nan()));
        assert_eq!(
            extreme(false, &values),
            ScalarValue::Float64(Some(f64::NEG_INFINITY))
        );
        assert!(
            matches!(extreme(false, &[Some(f64::NAN)]), ScalarValue::Float64(Some(v)) if v.is_nan())
        );
        assert_eq!(extreme(true, &[None]), ScalarValue::Float64(None));
    }
}
