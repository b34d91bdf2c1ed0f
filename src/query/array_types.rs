//! `array_agg()` (or `percentile_disc()` of an array of fractions) of an
//! OID column (`oid`, `regtype`, ...) is an array of that type, as in PostgreSQL (`oid[]`, not `int4[]`). DataFusion's
//! `array_agg` drops its input's annotations, so clients would see
//! `int4[]`; asyncpg, whose type introspection reads such arrays, knows
//! `oid[]` without asking but must introspect `int4[]` with the very query
//! that returns it.
//!
//! A `CASE` whose results all carry one annotation (`CASE WHEN ... THEN
//! (SELECT array_agg(oid) ...) END`) carries it too.
//!
//! Right after planning (so the row description of a prepared statement
//! shows it too), a projection goes over each aggregation with such a
//! column, giving the column the array type's annotation.

use std::collections::HashMap;

use datafusion::common::Result;
use datafusion::common::metadata::FieldMetadata;
use datafusion::common::tree_node::Transformed;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, Projection};

use crate::accelerator::PG_TYPE_METADATA;

/// The key datafusion-pg-catalog marks OID columns with.
const OID_ALIAS_KEY: &str = "pg.oid_alias";

/// `plan` with its OID arrays annotated.
pub fn annotate_arrays(plan: LogicalPlan) -> Result<LogicalPlan> {
    // Nodes above an annotated aggregation take their schema anew.
    plan.transform_up_with_subqueries(|node| annotate(node.recompute_schema()?))
        .map(|transformed| transformed.data)
}

fn annotate(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    if let LogicalPlan::Projection(projection) = &node {
        return case_annotations(projection).map(|annotated| match annotated {
            Some(projection) => Transformed::yes(LogicalPlan::Projection(projection)),
            None => Transformed::no(node),
        });
    }
    let LogicalPlan::Aggregate(aggregate) = &node else {
        return Ok(Transformed::no(node));
    };
    let input = aggregate.input.schema();
    // Output position of each aggregate expression -> the array type.
    // The aggregates follow the grouping columns (a key grouped twice is
    // one column).
    let groups = aggregate.schema.fields().len() - aggregate.aggr_expr.len();
    let mut arrays: HashMap<usize, String> = HashMap::new();
    for (index, expr) in aggregate.aggr_expr.iter().enumerate() {
        let mut inner = expr;
        while let Expr::Alias(alias) = inner {
            inner = &alias.expr;
        }
        let Expr::AggregateFunction(AggregateFunction { func, params }) = inner else {
            continue;
        };
        // An array of the argument's values: array_agg(), and a
        // percentile_disc() of an array of fractions.
        let array = func.name() == "array_agg"
            || func.name() == "percentile_disc"
                && params.args.get(1).is_some_and(|fractions| {
                    fractions
                        .get_type(input)
                        .is_ok_and(|t| matches!(t, datafusion::arrow::datatypes::DataType::List(_)))
                });
        if !array {
            continue;
        }
        let Some(argument) = params.args.first() else {
            continue;
        };
        let Ok(field) = argument.to_field(input) else {
            continue;
        };
        if let Some(kind) = field.1.metadata().get(OID_ALIAS_KEY) {
            arrays.insert(groups + index, format!("_{kind}"));
        } else if let Some(kind @ ("bpchar" | "varchar")) =
            field.1.metadata().get(PG_TYPE_METADATA).map(String::as_str)
        {
            // `character(n)[]` and `varchar[]`, not `text[]`.
            arrays.insert(groups + index, format!("_{kind}"));
        }
    }
    if arrays.is_empty() {
        return Ok(Transformed::no(node));
    }
    let schema = node.schema().clone();
    let columns = schema
        .columns()
        .into_iter()
        .enumerate()
        .map(|(index, column)| {
            let name = column.name.clone();
            let expr = Expr::Column(column);
            match arrays.get(&index) {
                Some(array_type) => {
                    let metadata = FieldMetadata::from(HashMap::from([(
                        PG_TYPE_METADATA.to_owned(),
                        array_type.clone(),
                    )]));
                    expr.alias_with_metadata(name, Some(metadata))
                }
                None => expr,
            }
        })
        .collect();
    let projection = Projection::try_new(columns, std::sync::Arc::new(node))?;
    Ok(Transformed::yes(LogicalPlan::Projection(projection)))
}

/// The projection with each `CASE` annotated as its results agree, if any
/// is.
fn case_annotations(projection: &Projection) -> Result<Option<Projection>> {
    let input = projection.input.schema();
    let mut changed = false;
    let exprs = projection
        .expr
        .iter()
        .map(|expr| {
            let (inner, alias) = match expr {
                Expr::Alias(alias) => (alias.expr.as_ref(), Some(alias)),
                other => (other, None),
            };
            let Expr::Case(case) = inner else {
                return expr.clone();
            };
            let results: Vec<HashMap<String, String>> = case
                .when_then_expr
                .iter()
                .map(|(_, then)| then.as_ref())
                .chain(case.else_expr.as_deref())
                .filter(|result| !matches!(result, Expr::Literal(value, _) if value.is_null()))
                .filter_map(|result| result.to_field(input).ok())
                .map(|(_, field)| field.metadata().clone())
                .collect();
            let Some(first) = results.first() else {
                return expr.clone();
            };
            if first.is_empty() || results.iter().any(|other| other != first) {
                return expr.clone();
            }
            changed = true;
            let metadata = Some(FieldMetadata::from(first.clone()));
            match alias {
                Some(alias) => Expr::Alias(datafusion::logical_expr::expr::Alias {
                    metadata,
                    ..alias.clone()
                }),
                None => inner
                    .clone()
                    .alias_with_metadata(inner.schema_name().to_string(), metadata),
            }
        })
        .collect();
    if !changed {
        return Ok(None);
    }
    Projection::try_new(exprs, std::sync::Arc::clone(&projection.input)).map(Some)
}
