//! Statements answered without DataFusion planning at execution: primary-key
//! lookups ([`LookupPlan`]) and select lists without a table
//! (`SELECT 1`, `SELECT 'a' || 'b'`), which clients send as health checks
//! and which cost far more to plan than to compute.
//!
//! Both are compiled once when the statement is prepared; the scan path
//! answers everything else, with the same results.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::{ParamValues, Result};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::PhysicalExpr;

use super::lookup::{LookupPlan, varies_per_execution};
use super::table::Pins;

/// A statement with a direct answer.
#[derive(Debug)]
pub enum DirectPlan {
    Lookup(LookupPlan),
    Constant(ConstantPlan),
}

impl DirectPlan {
    /// `analyzed` is `plan` after the analyzer's rules, where they pass.
    pub fn try_new(
        plan: &LogicalPlan,
        analyzed: Option<&LogicalPlan>,
        state: &SessionState,
    ) -> Option<DirectPlan> {
        if let Some(constant) = ConstantPlan::try_new(plan, analyzed?, state) {
            return Some(DirectPlan::Constant(constant));
        }
        LookupPlan::try_new(plan, analyzed?, state).map(DirectPlan::Lookup)
    }

    /// The result; `None` when the statement must be planned after all.
    pub fn execute(
        &self,
        params: Option<&ParamValues>,
        pins: Option<&Pins>,
    ) -> Result<Option<RecordBatch>> {
        match self {
            DirectPlan::Lookup(lookup) => lookup.execute(params, pins),
            DirectPlan::Constant(constant) => constant.execute().map(Some),
        }
    }

    pub fn is_lookup(&self) -> bool {
        matches!(self, DirectPlan::Lookup(_))
    }

    /// The schema of every batch [`Self::execute`] returns.
    pub fn schema(&self) -> &SchemaRef {
        match self {
            DirectPlan::Lookup(lookup) => lookup.schema(),
            DirectPlan::Constant(constant) => &constant.output,
        }
    }
}

/// `SELECT <expressions>` with no table, no parameter and only functions
/// whose value never changes.
#[derive(Debug)]
pub struct ConstantPlan {
    select: Vec<Arc<dyn PhysicalExpr>>,
    output: SchemaRef,
}

impl ConstantPlan {
    fn try_new(
        plan: &LogicalPlan,
        analyzed: &LogicalPlan,
        state: &SessionState,
    ) -> Option<ConstantPlan> {
        let LogicalPlan::Projection(projection) = plan else {
            return None;
        };
        let LogicalPlan::EmptyRelation(empty) = projection.input.as_ref() else {
            return None;
        };
        if !empty.produce_one_row || projection.expr.iter().any(varies_per_execution) {
            return None;
        }
        let LogicalPlan::Projection(projection) = analyzed else {
            return None;
        };
        let input = projection.input.schema();
        let select = projection
            .expr
            .iter()
            .map(|expr| super::lookup::compile(state, expr.clone(), input))
            .collect::<Option<Vec<_>>>()?;
        Some(ConstantPlan {
            select,
            output: Arc::new(projection.schema.as_arrow().clone()),
        })
    }

    fn execute(&self) -> Result<RecordBatch> {
        let options = RecordBatchOptions::new().with_row_count(Some(1));
        let one_row =
            RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &options)?;
        let columns = self
            .select
            .iter()
            .map(|expr| expr.evaluate(&one_row)?.into_array(1))
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.output),
            columns,
            &options,
        )?)
    }
}
