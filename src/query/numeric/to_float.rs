//! `numeric::float8` and `numeric::float4` as PostgreSQL converts them: the
//! float nearest the exact value, as reading the numeric's text gives
//! (`float8in(numeric_out(x))`). Arrow's cast divides the digits by a power
//! of ten in floating point, which lands a unit off for a value with many
//! decimals (an `avg()`, held at 40: `477.36999999999995` for `477.37`) or
//! more than 15 digits.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Float32Array, Float64Array};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Decimal256Type};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// Powers of ten a double holds exactly.
const EXACT_TENS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The conversion of a decimal to `target` (`Float64` or `Float32`).
pub(super) fn function(target: DataType) -> ScalarUDF {
    ScalarUDF::new_from_impl(NumericToFloat {
        name: format!("pgaccel_numeric_to_{}", target.to_string().to_lowercase()),
        target,
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct NumericToFloat {
    name: String,
    target: DataType,
    signature: Signature,
}

/// The double nearest `digits × 10^-scale`.
fn nearest_double(digits: i128, scale: i8) -> f64 {
    // Both operands exact, so the one rounding of the division is the
    // value's nearest double.
    if (0..=22).contains(&scale) && digits.unsigned_abs() <= 1 << 53 {
        return digits as f64 / EXACT_TENS[scale as usize];
    }
    parsed(&digits.to_string(), scale)
}

/// `digits × 10^-scale` read as text, which Rust rounds to the nearest.
fn parsed<F: std::str::FromStr + Default>(digits: &str, scale: i8) -> F {
    format!("{digits}e{}", -i32::from(scale))
        .parse()
        .unwrap_or_default()
}

impl ScalarUDFImpl for NumericToFloat {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.target.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::super::functions::argument_arrays(&args)?;
        let values = &arrays[0];
        let double = self.target == DataType::Float64;
        let out: ArrayRef = match values.data_type() {
            DataType::Decimal128(_, scale) if double => {
                let scale = *scale;
                Arc::new(
                    values
                        .as_primitive::<Decimal128Type>()
                        .iter()
                        .map(|v| v.map(|digits| nearest_double(digits, scale)))
                        .collect::<Float64Array>(),
                )
            }
            DataType::Decimal128(_, scale) | DataType::Decimal256(_, scale) => {
                let scale = *scale;
                let digits: Vec<Option<String>> = match values.data_type() {
                    DataType::Decimal128(..) => values
                        .as_primitive::<Decimal128Type>()
                        .iter()
                        .map(|v| v.map(|digits| digits.to_string()))
                        .collect(),
                    _ => values
                        .as_primitive::<Decimal256Type>()
                        .iter()
                        .map(|v| v.map(|digits| digits.to_string()))
                        .collect(),
                };
                let digits = digits.iter().map(Option::as_deref);
                if double {
                    Arc::new(
                        digits
                            .map(|v| v.map(|d| parsed::<f64>(d, scale)))
                            .collect::<Float64Array>(),
                    )
                } else {
                    Arc::new(
                        digits
                            .map(|v| v.map(|d| parsed::<f32>(d, scale)))
                            .collect::<Float32Array>(),
                    )
                }
            }
            other => {
                return Err(DataFusionError::Internal(format!(
                    "{} of {other}",
                    self.name
                )));
            }
        };
        super::super::functions::columnar(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_float_of_the_exact_value() {
        // Each expected value is PostgreSQL 15's `SELECT x::numeric::float8`.
        assert_eq!(nearest_double(47737, 2), 477.37);
        assert_eq!(
            parsed::<f64>("4773700000000000000000000000000000000000000", 40),
            477.37
        );
        assert_eq!(nearest_double(1, 1), 0.1);
        assert_eq!(
            nearest_double(-12345678901234567890123, 3),
            -1.2345678901234568e19
        );
        assert_eq!(parsed::<f32>("1", 1), 0.1_f32);
        assert_eq!(nearest_double(0, 40), 0.0);
    }
}
