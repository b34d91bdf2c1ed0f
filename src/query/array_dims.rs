//! `array_dims(a)` as PostgreSQL prints it: the text `[1:3]` (`[1:2][1:2]`
//! for two dimensions), NULL for an empty array. DataFusion's returns a
//! list of lengths.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

pub fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(ArrayDims {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayDims {
    signature: Signature,
}

/// The lengths of each dimension of the array at `row` of `array`, read
/// along its first elements (PostgreSQL's arrays are rectangular).
fn dimensions(array: &ArrayRef, row: usize) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut current = array.as_list::<i32>().value(row);
    loop {
        lengths.push(current.len());
        if current.is_empty() || !matches!(current.data_type(), DataType::List(_)) {
            return lengths;
        }
        let first = current.as_list::<i32>().value(0);
        current = first;
    }
}

impl ScalarUDFImpl for ArrayDims {
    fn name(&self) -> &str {
        "array_dims"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(DataType::List(_) | DataType::Null) => Ok(DataType::Utf8),
            _ => Err(DataFusionError::Plan(
                "function array_dims() takes an array".to_owned(),
            )),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let array = &arrays[0];
        let mut out = StringBuilder::with_capacity(array.len(), array.len() * 8);
        if array.data_type() == &DataType::Null {
            (0..array.len()).for_each(|_| out.append_null());
        } else {
            for row in 0..array.len() {
                let lengths = if array.is_null(row) {
                    Vec::new()
                } else {
                    dimensions(array, row)
                };
                if lengths.first().is_none_or(|length| *length == 0) {
                    out.append_null();
                    continue;
                }
                let text: String = lengths.iter().map(|n| format!("[1:{n}]")).collect();
                out.append_value(text);
            }
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}
