//! `(start1, end1) OVERLAPS (start2, end2)`: whether two periods of time
//! share an instant, with PostgreSQL's reading of its arguments and NULLs.
//! Each period is a pair of dates or timestamps (in either order), or a
//! start and an interval. The parser's `OVERLAPS` operator over two rows is
//! written as `pgaccel_overlaps(start1, end1, start2, end2)` before
//! planning; an interval end becomes `start + interval` once its type is
//! known ([`interval_ends`]), so that a timestamptz's months and days are
//! added on the session's clock as everywhere else.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanBuilder};
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{DFSchema, DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    BinaryExpr, Cast, ColumnarValue, Expr, ExprSchemable, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};

pub const NAME: &str = "pgaccel_overlaps";

pub fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(Overlaps {
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Overlaps {
    signature: Signature,
}

fn moment(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(..) | DataType::Null
    )
}

/// The timestamp type the four arguments are compared as: a timestamptz
/// when one of them is one.
fn common(arg_types: &[DataType]) -> DataType {
    let zoned = arg_types
        .iter()
        .any(|t| matches!(t, DataType::Timestamp(_, Some(_))));
    DataType::Timestamp(TimeUnit::Microsecond, zoned.then(|| "UTC".into()))
}

impl ScalarUDFImpl for Overlaps {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let fits = arg_types.len() == 4
            && arg_types.iter().enumerate().all(|(index, t)| {
                moment(t) || (index % 2 == 1 && matches!(t, DataType::Interval(_)))
            });
        if !fits {
            if arg_types
                .iter()
                .any(|t| matches!(t, DataType::Time64(_) | DataType::Time32(_)))
            {
                return Err(DataFusionError::NotImplemented(
                    "OVERLAPS of times of day is not supported".to_owned(),
                ));
            }
            return Err(super::json::no_such_function("overlaps", arg_types));
        }
        let target = common(arg_types);
        Ok(arg_types
            .iter()
            .map(|t| match t {
                DataType::Interval(_) => t.clone(),
                _ => target.clone(),
            })
            .collect())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let [s1, e1, s2, e2] = arrays.as_slice() else {
            return Err(DataFusionError::Internal(
                "OVERLAPS takes two periods".into(),
            ));
        };
        let read = |array: &ArrayRef, row: usize| -> Result<Option<i64>> {
            match array.data_type() {
                DataType::Timestamp(TimeUnit::Microsecond, _) => Ok(array
                    .is_valid(row)
                    .then(|| array.as_primitive::<TimestampMicrosecondType>().value(row))),
                DataType::Null => Ok(None),
                other => Err(DataFusionError::Internal(format!(
                    "OVERLAPS of {other} was not planned as timestamps"
                ))),
            }
        };
        let mut out = BooleanBuilder::with_capacity(s1.len());
        for row in 0..s1.len() {
            out.append_option(overlaps(
                (read(s1, row)?, read(e1, row)?),
                (read(s2, row)?, read(e2, row)?),
            ));
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

/// A period's earlier end and its later one, which may be missing; `None`
/// when both are.
fn ordered((start, end): (Option<i64>, Option<i64>)) -> Option<(i64, Option<i64>)> {
    match (start, end) {
        (None, None) => None,
        (Some(only), None) | (None, Some(only)) => Some((only, None)),
        (Some(start), Some(end)) => Some((start.min(end), Some(start.max(end)))),
    }
}

/// PostgreSQL's `overlaps`: the later start comes before the earlier
/// period's end; equal starts overlap. Unknown (NULL) where a missing end
/// decides the answer.
fn overlaps(first: (Option<i64>, Option<i64>), second: (Option<i64>, Option<i64>)) -> Option<bool> {
    let (s1, e1) = ordered(first)?;
    let (s2, e2) = ordered(second)?;
    let later = |start: i64, other_end: Option<i64>, own_end: Option<i64>| {
        if start < other_end? {
            return Some(true);
        }
        // The later start is not before the other period's end, so no end
        // of its own can make them overlap; a missing one leaves it unknown.
        own_end.map(|_| false)
    };
    match s1.cmp(&s2) {
        std::cmp::Ordering::Greater => later(s1, e2, e1),
        std::cmp::Ordering::Less => later(s2, e1, e2),
        std::cmp::Ordering::Equal => (e1.is_some() && e2.is_some()).then_some(true),
    }
}

/// `pgaccel_overlaps()` with each interval end written as its period's
/// start (at the type the periods are compared as) plus the interval;
/// `None` for any other expression, or one without interval ends.
pub fn interval_ends(function: &ScalarFunction, schema: &DFSchema) -> Option<Expr> {
    if function.name() != NAME || function.args.len() != 4 {
        return None;
    }
    let types: Vec<DataType> = function
        .args
        .iter()
        .map(|arg| arg.get_type(schema))
        .collect::<Result<_>>()
        .ok()?;
    if !types.iter().any(|t| matches!(t, DataType::Interval(_))) {
        return None;
    }
    let target = common(&types);
    let mut args = function.args.clone();
    for end in [1, 3] {
        if matches!(types[end], DataType::Interval(_)) {
            let start = Expr::Cast(Cast::new(Box::new(args[end - 1].clone()), target.clone()));
            args[end] = Expr::BinaryExpr(BinaryExpr::new(
                Box::new(start),
                Operator::Plus,
                Box::new(args[end].clone()),
            ));
        }
    }
    Some(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::clone(&function.func),
        args,
    )))
}

#[cfg(test)]
mod tests {
    use super::overlaps;

    #[test]
    fn periods_overlap_as_in_postgresql() {
        // PostgreSQL 15.
        assert_eq!(overlaps((Some(1), Some(5)), (Some(4), Some(8))), Some(true));
        assert_eq!(
            overlaps((Some(1), Some(4)), (Some(4), Some(8))),
            Some(false)
        );
        assert_eq!(overlaps((Some(5), Some(1)), (Some(8), Some(4))), Some(true));
        assert_eq!(overlaps((Some(3), Some(3)), (Some(3), Some(3))), Some(true));
        assert_eq!(overlaps((Some(1), None), (Some(2), Some(3))), None);
        assert_eq!(overlaps((Some(1), None), (Some(0), Some(3))), Some(true));
        assert_eq!(overlaps((None, Some(2)), (Some(1), None)), None);
        assert_eq!(overlaps((Some(9), None), (Some(1), Some(3))), None);
        assert_eq!(overlaps((Some(9), Some(10)), (Some(1), None)), None);
        assert_eq!(overlaps((None, None), (Some(1), Some(3))), None);
        assert_eq!(
            overlaps((Some(9), Some(10)), (Some(1), Some(3))),
            Some(false)
        );
    }
}
