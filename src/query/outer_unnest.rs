//! `LEFT JOIN LATERAL f(t.x) e ON true`, where `f` is `unnest()` or a JSON
//! set function: a row of `t` for which `f` gives no rows is kept once,
//! with NULLs for `e`'s columns. The compatibility rewrites answer a
//! lateral set function with `unnest()` in a select list over `t` (see
//! `compat`), which drops such a row; for the left join they unnest
//! `pgaccel_or_null_element(list)` instead, which is the list, or a list of
//! one NULL where the list is NULL or empty.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray, MutableArrayData, make_array};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

pub const OR_NULL_ELEMENT: &str = "pgaccel_or_null_element";

pub fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(OrNullElement {
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct OrNullElement {
    signature: Signature,
}

/// The list type of the result: the argument's elements, which may be NULL.
fn list_type(arg: &DataType) -> Option<DataType> {
    match arg {
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            Some(DataType::List(nullable(item)))
        }
        _ => None,
    }
}

fn nullable(item: &FieldRef) -> FieldRef {
    Arc::new(Field::clone(item).with_nullable(true))
}

impl ScalarUDFImpl for OrNullElement {
    fn name(&self) -> &str {
        OR_NULL_ELEMENT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [arg] => match list_type(arg) {
                Some(list) => Ok(list),
                None => plan_err!("{OR_NULL_ELEMENT} takes an array, not {arg}"),
            },
            _ => plan_err!("{OR_NULL_ELEMENT} takes one array"),
        }
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        Ok(vec![self.return_type(arg_types)?])
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let padded = or_null_element(arrays[0].as_list::<i32>())?;
        super::functions::columnar(Arc::new(padded) as ArrayRef, scalar)
    }
}

/// Each row's list, or `[NULL]` where it is NULL or empty.
fn or_null_element(list: &ListArray) -> Result<ListArray> {
    let values = list.values().to_data();
    let mut data = MutableArrayData::new(vec![&values], true, values.len() + list.len());
    let mut offsets = Vec::with_capacity(list.len() + 1);
    offsets.push(0_i32);
    let mut length = 0_i32;
    for row in 0..list.len() {
        let (start, end) = (list.value_offsets()[row], list.value_offsets()[row + 1]);
        if list.is_valid(row) && end > start {
            data.try_extend(0, start as usize, end as usize)?;
            length += end - start;
        } else {
            data.try_extend_nulls(1)?;
            length += 1;
        }
        offsets.push(length);
    }
    let DataType::List(item) = list.data_type() else {
        unreachable!("the argument is coerced to a list")
    };
    Ok(ListArray::new(
        nullable(item),
        OffsetBuffer::new(offsets.into()),
        make_array(data.freeze()),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::Int32Type;

    use super::*;

    #[test]
    fn empty_and_null_lists_become_one_null() {
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![]),
            None,
            Some(vec![None, Some(3)]),
        ]);
        let padded = or_null_element(&list).unwrap();
        let rows: Vec<Vec<Option<i32>>> = padded
            .iter()
            .map(|row| {
                row.unwrap()
                    .as_primitive::<Int32Type>()
                    .iter()
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(
            rows,
            vec![
                vec![Some(1), Some(2)],
                vec![None],
                vec![None],
                vec![None, Some(3)]
            ]
        );
    }
}
