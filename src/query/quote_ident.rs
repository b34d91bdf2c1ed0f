//! `quote_ident(text)` as PostgreSQL's `quote_identifier` decides: a name
//! is left bare only when it is lower-case ASCII letters, digits and
//! underscores, not starting with a digit, and no keyword that must be
//! quoted. The catalog crate's function leaves upper-case and non-ASCII
//! letters bare (`Abc`, `é`), which PostgreSQL would fold or refuse; its
//! keyword list is kept for the names that pass the character test.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// PostgreSQL's `quote_ident`, deferring to `keywords` (the catalog crate's
/// function) for the keyword test.
pub fn function(keywords: Arc<ScalarUDF>) -> ScalarUDF {
    ScalarUDF::new_from_impl(QuoteIdent {
        signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        keywords,
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct QuoteIdent {
    signature: Signature,
    keywords: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for QuoteIdent {
    fn name(&self) -> &str {
        "quote_ident"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let names = args.args[0].to_array(args.number_rows)?;
        let keyword_checked = self
            .keywords
            .invoke_with_args(args)?
            .to_array(names.len())?;
        let (names, keyword_checked) =
            (names.as_string::<i32>(), keyword_checked.as_string::<i32>());
        let mut out = StringBuilder::with_capacity(names.len(), names.value_data().len() + 8);
        for row in 0..names.len() {
            if names.is_null(row) {
                out.append_null();
                continue;
            }
            let name = names.value(row);
            let quoted = super::statement::quote_identifier(name);
            if quoted == name {
                out.append_value(keyword_checked.value(row));
            } else {
                out.append_value(quoted);
            }
        }
        let array: ArrayRef = Arc::new(out.finish());
        Ok(if scalar {
            ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&array, 0)?)
        } else {
            ColumnarValue::Array(array)
        })
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    use super::*;

    #[tokio::test]
    async fn names_postgresql_folds_or_refuses_are_quoted() {
        let ctx = SessionContext::new();
        datafusion_pg_catalog::pg_catalog::setup_pg_catalog(
            &ctx,
            "datafusion",
            datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider,
        )
        .unwrap();
        let keywords = ctx
            .state()
            .scalar_functions()
            .get("quote_ident")
            .cloned()
            .unwrap();
        ctx.register_udf(function(keywords));
        let batches = ctx
            .sql("SELECT quote_ident('select'), quote_ident('name'), quote_ident('Abc'), quote_ident('é'), quote_ident('a\"b')")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let row: Vec<String> = batches[0]
            .columns()
            .iter()
            .map(|column| column.as_string::<i32>().value(0).to_owned())
            .collect();
        assert_eq!(
            row,
            ["\"select\"", "name", "\"Abc\"", "\"é\"", "\"a\"\"b\""]
        );
    }
}
