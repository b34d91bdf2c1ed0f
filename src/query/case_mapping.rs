//! `upper()` and `lower()` as PostgreSQL maps case in a UTF-8 database:
//! character by character (the C library's `towupper`/`towlower`), so a
//! character whose case mapping is several characters stays as it is
//! (`upper('straße')` is `STRAßE`). Rust's `to_uppercase` applies the
//! full Unicode mappings (`STRASSE`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

pub fn functions() -> Vec<Arc<ScalarUDF>> {
    [true, false]
        .map(|upper| {
            Arc::new(ScalarUDF::new_from_impl(CaseMapping {
                upper,
                signature: Signature::string(1, Volatility::Immutable),
            }))
        })
        .into()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CaseMapping {
    upper: bool,
    signature: Signature,
}

/// One character mapped alone: its mapping when that is one character,
/// itself otherwise.
fn map_char(c: char, upper: bool) -> char {
    let mut mapped = if upper {
        CaseIter::Upper(c.to_uppercase())
    } else {
        CaseIter::Lower(c.to_lowercase())
    };
    match (mapped.next(), mapped.next()) {
        (Some(single), None) => single,
        // `İ` lowers to `i` plus a combining dot in Unicode; one `i` in C.
        _ if c == 'İ' && !upper => 'i',
        _ => c,
    }
}

enum CaseIter {
    Upper(std::char::ToUppercase),
    Lower(std::char::ToLowercase),
}

impl Iterator for CaseIter {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        match self {
            CaseIter::Upper(chars) => chars.next(),
            CaseIter::Lower(chars) => chars.next(),
        }
    }
}

fn map_text(text: &str, upper: bool) -> String {
    if text.is_ascii() {
        return if upper {
            text.to_ascii_uppercase()
        } else {
            text.to_ascii_lowercase()
        };
    }
    text.chars().map(|c| map_char(c, upper)).collect()
}

impl ScalarUDFImpl for CaseMapping {
    fn name(&self) -> &str {
        if self.upper { "upper" } else { "lower" }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let values = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
        let values = values.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(values.len(), values.value_data().len());
        for value in values.iter() {
            match value {
                Some(text) => out.append_value(map_text(text, self.upper)),
                None => out.append_null(),
            }
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_map_one_by_one() {
        assert_eq!(map_text("straße ﬁ ŉ", true), "STRAßE ﬁ ŉ");
        assert_eq!(map_text("İSTANBUL", false), "istanbul");
        assert_eq!(map_text("ǆ", true), "Ǆ");
        assert_eq!(map_text("Hello", false), "hello");
    }
}
