//! DataFusion's `single_distinct_aggregation_to_group_by`, except over a
//! `sum` of a numeric.
//!
//! The rule computes `sum(x), count(DISTINCT y)` per group as a sum of
//! sums over the distinct values of `y`, and the outer `sum` widens a
//! decimal's precision a second time. A `HAVING sum(x) > 100` above it was
//! typed for the first width and then failed while running (`Invalid
//! comparison operation: Decimal128(27, 2) > Decimal128(17, 2)`, XX000).
//! Such an aggregate is left to DataFusion's distinct accumulators; every
//! other one still takes the rule.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::common::tree_node::Transformed;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

/// The name of the rule this one takes the place of.
pub const REPLACED_RULE: &str = "single_distinct_aggregation_to_group_by";

#[derive(Debug)]
pub struct SingleDistinctUnlessDecimalSum {
    inner: Arc<dyn OptimizerRule + Send + Sync>,
}

impl SingleDistinctUnlessDecimalSum {
    pub fn new(inner: Arc<dyn OptimizerRule + Send + Sync>) -> Self {
        Self { inner }
    }
}

impl OptimizerRule for SingleDistinctUnlessDecimalSum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        self.inner.apply_order()
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        if let LogicalPlan::Aggregate(aggregate) = &plan {
            let schema = aggregate.input.schema();
            let decimal_sum = aggregate.aggr_expr.iter().any(|expr| {
                let Expr::AggregateFunction(AggregateFunction { func, params }) =
                    expr.clone().unalias()
                else {
                    return false;
                };
                func.name() == "sum"
                    && !params.distinct
                    && params.args.iter().any(|arg| {
                        matches!(
                            arg.get_type(schema),
                            Ok(DataType::Decimal32(..)
                                | DataType::Decimal64(..)
                                | DataType::Decimal128(..)
                                | DataType::Decimal256(..))
                        )
                    })
            });
            if decimal_sum {
                return Ok(Transformed::no(plan));
            }
        }
        self.inner.rewrite(plan, config)
    }
}
