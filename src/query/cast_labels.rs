//! DataFusion names a cast after the value it casts (`max(qty)` and
//! `max(qty::float8)` are both `max(qty)`), and refuses a plan in which two
//! aggregates or grouping expressions share a name, where PostgreSQL has no
//! such rule. A statement refused for that is planned again with its casts
//! (see [`label_casts`]) wrapped in [`LABEL`], a function that returns its first argument as it
//! is and whose second argument, the cast's own text, tells the names
//! apart; so is one whose aggregate groups by two such expressions, which
//! DataFusion plans but its optimizer refuses. Only such statements pay for
//! it: the label keeps a filter on a cast from going to a source or a file.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, Statement, Value, VisitMut, VisitorMut,
};

/// The labelling function's name.
pub const LABEL: &str = "pgaccel_cast_label";

pub fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(Label {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Label {
    signature: Signature,
}

impl ScalarUDFImpl for Label {
    fn name(&self) -> &str {
        LABEL
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    /// The cast's own field, with its type annotations.
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::clone(&args.arg_fields[0]))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(args.args[0].clone())
    }
}

/// Whether DataFusion refused a plan because two expressions share a name.
pub fn names_collide(message: &str) -> bool {
    message.contains("duplicate unqualified field name")
        || message.contains("require unique expression names")
}

/// Whether an aggregate of `plan` groups by, or computes, two expressions of
/// one name (`GROUP BY qty, qty::text`): planned, but refused by
/// DataFusion's optimizer.
pub fn groups_share_names(plan: &LogicalPlan) -> bool {
    let mut shared = false;
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Aggregate(aggregate) = node {
            // The same expression twice (`GROUP BY grp, grp`) is one.
            let mut names = std::collections::HashMap::new();
            shared = aggregate
                .group_expr
                .iter()
                .chain(&aggregate.aggr_expr)
                .any(|expr| {
                    names
                        .insert(expr.schema_name().to_string(), expr)
                        .is_some_and(|other| other != expr)
                });
        }
        Ok(if shared {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    shared
}

/// `statement` with its casts labelled by their own text: those that are
/// arguments of a function (an aggregate's among them) or `GROUP BY` items,
/// and every other cast of the same text, so that a select item still
/// matches the group it names.
pub fn label_casts(mut statement: Statement) -> Statement {
    use datafusion::sql::sqlparser::ast::{GroupByExpr, Query, SetExpr, Visit, Visitor};
    struct Colliding(std::collections::HashSet<String>);
    impl Visitor for Colliding {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if let Expr::Function(function) = expr
                && let FunctionArguments::List(list) = &function.args
            {
                for arg in &list.args {
                    if let FunctionArg::Unnamed(FunctionArgExpr::Expr(cast @ Expr::Cast { .. })) =
                        arg
                    {
                        self.0.insert(cast.to_string());
                    }
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if let SetExpr::Select(select) = query.body.as_ref()
                && let GroupByExpr::Expressions(exprs, _) = &select.group_by
            {
                for expr in exprs {
                    if matches!(expr, Expr::Cast { .. }) {
                        self.0.insert(expr.to_string());
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut colliding = Colliding(std::collections::HashSet::new());
    let _ = Visit::visit(&statement, &mut colliding);
    struct Labels(std::collections::HashSet<String>);
    impl VisitorMut for Labels {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if matches!(expr, Expr::Cast { .. }) && self.0.contains(&expr.to_string()) {
                let text = expr.to_string();
                let cast = std::mem::replace(expr, Expr::value(Value::Null));
                let arg = |expr| FunctionArg::Unnamed(FunctionArgExpr::Expr(expr));
                *expr = Expr::Function(Function {
                    name: ObjectName::from(vec![Ident::new(LABEL)]),
                    uses_odbc_syntax: false,
                    parameters: FunctionArguments::None,
                    args: FunctionArguments::List(FunctionArgumentList {
                        duplicate_treatment: None,
                        args: vec![arg(cast), arg(Expr::value(Value::SingleQuotedString(text)))],
                        clauses: Vec::new(),
                    }),
                    filter: None,
                    null_treatment: None,
                    over: None,
                    within_group: Vec::new(),
                });
            }
            ControlFlow::Continue(())
        }
    }
    let _ = VisitMut::visit(&mut statement, &mut Labels(colliding.0));
    statement
}
