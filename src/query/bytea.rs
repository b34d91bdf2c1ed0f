//! `bytea` as PostgreSQL measures and slices it: `length`, `octet_length`
//! and `bit_length` of a `bytea` count its bytes (bits), and `substr` /
//! `substring` take bytes. DataFusion's string functions refuse a binary
//! value, or read it as text first, which pgaccel prints as `\x...` (so
//! that `length('\x0102'::bytea)` was 6, not 2). Each is registered again
//! under its own name as a function that answers a `bytea` here and hands
//! anything else to DataFusion's.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, Int32Builder};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::FunctionRegistry as _;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult};
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::PgError;

/// PostgreSQL's `substring_error`.
const SUBSTRING_ERROR: &str = "22011";

/// DataFusion's `octet_length`, `bit_length`, `character_length`
/// (`length`) and `substr` (`substring`) of `state`, answering `bytea` too,
/// to be registered in their place.
pub fn functions(state: &SessionState) -> Result<Vec<Arc<ScalarUDF>>> {
    [
        ("octet_length", Kind::Length),
        ("bit_length", Kind::BitLength),
        ("character_length", Kind::Length),
        ("substr", Kind::Substr),
    ]
    .into_iter()
    .map(|(name, kind)| {
        Ok(Arc::new(ScalarUDF::new_from_impl(ByteaAware {
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
            inner: state.udf(name)?,
        })))
    })
    .collect()
}

/// `SUBSTRING(x FROM a FOR b)` and `substr(x, a, b)`, which the SQL
/// parser reads as one syntax that DataFusion plans with its own `substr`:
/// pgaccel's, which answers a `bytea` too.
#[derive(Debug)]
pub struct SubstringPlanner;

impl ExprPlanner for SubstringPlanner {
    fn plan_substring(&self, args: Vec<Expr>) -> Result<PlannerResult<Vec<Expr>>> {
        let function = ScalarUDF::new_from_impl(ByteaAware {
            kind: Kind::Substr,
            signature: Signature::user_defined(Volatility::Immutable),
            inner: datafusion::functions::unicode::substr(),
        });
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::new(function), args),
        )))
    }
}

fn is_bytea(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Length,
    BitLength,
    Substr,
}

#[derive(Debug)]
struct ByteaAware {
    kind: Kind,
    signature: Signature,
    /// DataFusion's function of this name, for every other argument.
    inner: Arc<ScalarUDF>,
}

impl PartialEq for ByteaAware {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.inner.name() == other.inner.name()
    }
}

impl Eq for ByteaAware {}

impl std::hash::Hash for ByteaAware {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        self.inner.name().hash(state);
    }
}

impl ScalarUDFImpl for ByteaAware {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types.split_first() {
            Some((first, rest)) if is_bytea(first) => {
                if self.kind == Kind::Substr && !(1..=2).contains(&rest.len())
                    || self.kind != Kind::Substr && !rest.is_empty()
                {
                    return Err(DataFusionError::Plan(format!(
                        "function {}(bytea) takes other arguments",
                        self.name()
                    )));
                }
                let mut types = vec![DataType::Binary];
                types.extend(rest.iter().map(|_| DataType::Int64));
                Ok(types)
            }
            _ => {
                let fields: Vec<_> = arg_types
                    .iter()
                    .map(|t| Arc::new(Field::new("argument", t.clone(), true)))
                    .collect();
                Ok(fields_with_udf(&fields, self.inner.as_ref())?
                    .iter()
                    .map(|field| field.data_type().clone())
                    .collect())
            }
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(first) if is_bytea(first) => Ok(match self.kind {
                Kind::Length | Kind::BitLength => DataType::Int32,
                Kind::Substr => DataType::Binary,
            }),
            _ => self.inner.return_type(arg_types),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if !args
            .args
            .first()
            .is_some_and(|arg| is_bytea(&arg.data_type()))
        {
            return self.inner.invoke_with_args(args);
        }
        let scalar = args
            .args
            .iter()
            .all(|arg| matches!(arg, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let first = datafusion::arrow::compute::cast(&arrays[0], &DataType::Binary)?;
        let values = first.as_binary::<i32>();
        let result: ArrayRef = match self.kind {
            Kind::Length | Kind::BitLength => {
                let unit = if self.kind == Kind::BitLength { 8 } else { 1 };
                let mut out = Int32Builder::with_capacity(values.len());
                for value in values.iter() {
                    out.append_option(value.map(|bytes| bytes.len() as i32 * unit));
                }
                Arc::new(out.finish())
            }
            Kind::Substr => {
                let starts = arrays[1].as_primitive::<Int64Type>();
                let counts = arrays
                    .get(2)
                    .map(|counts| counts.as_primitive::<Int64Type>());
                let mut out = BinaryBuilder::with_capacity(values.len(), 0);
                for row in 0..values.len() {
                    let count =
                        counts.map(|counts| (!counts.is_null(row)).then(|| counts.value(row)));
                    if values.is_null(row) || starts.is_null(row) || count == Some(None) {
                        out.append_null();
                        continue;
                    }
                    let range = substring_range(
                        values.value(row).len(),
                        starts.value(row),
                        count.flatten(),
                    )?;
                    out.append_value(&values.value(row)[range]);
                }
                Arc::new(out.finish())
            }
        };
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&result, 0)?)
        } else {
            ColumnarValue::Array(result)
        })
    }
}

/// The bytes of a value `len` long that `substr(value, start, count)`
/// takes: positions count from 1, a start before 1 still counts toward
/// `count`, and a negative count is an error, as in PostgreSQL.
fn substring_range(len: usize, start: i64, count: Option<i64>) -> Result<std::ops::Range<usize>> {
    let end = match count {
        Some(count) if count < 0 => {
            return Err(DataFusionError::External(Box::new(PgError::new(
                SUBSTRING_ERROR,
                "negative substring length not allowed",
            ))));
        }
        Some(count) => start.saturating_add(count),
        None => i64::MAX,
    };
    let clamp = |position: i64| (position.max(1) - 1).min(len as i64) as usize;
    let (from, to) = (clamp(start), clamp(end));
    Ok(from..to.max(from))
}

#[cfg(test)]
mod tests {
    use super::substring_range;
    use crate::query::sqlstate;

    #[test]
    fn a_substring_counts_positions_from_one_and_before_the_start() {
        assert_eq!(substring_range(5, 2, Some(2)).unwrap(), 1..3);
        assert_eq!(substring_range(5, 0, Some(2)).unwrap(), 0..1);
        assert_eq!(substring_range(5, -3, Some(2)).unwrap(), 0..0);
        assert_eq!(substring_range(5, 4, None).unwrap(), 3..5);
        assert_eq!(substring_range(5, 9, Some(3)).unwrap(), 5..5);
        assert_eq!(substring_range(5, 2, Some(i64::MAX)).unwrap(), 1..5);
    }

    #[test]
    fn a_negative_substring_length_is_sqlstate_22011() {
        let error = sqlstate::from_datafusion(substring_range(5, 1, Some(-1)).unwrap_err());
        assert_eq!(error.code, "22011");
        assert_eq!(error.message, "negative substring length not allowed");
    }
}
