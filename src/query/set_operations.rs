//! `INTERSECT ALL` and `EXCEPT ALL` as PostgreSQL computes them: a row that
//! appears m times on the left and n times on the right appears
//! min(m, n) times in `INTERSECT ALL` and max(m - n, 0) times in
//! `EXCEPT ALL`.
//!
//! DataFusion plans both as a semi (anti) join on every column, which keeps
//! all m copies of a row that matches at all (none for `EXCEPT ALL`). Each
//! side's rows are numbered within their group of equal rows first, and the
//! number joins too: the k-th copy on the left matches the k-th on the
//! right. The distinct forms (`INTERSECT`, `EXCEPT`), whose left side is
//! deduplicated, keep their answer (every left row is copy 1).

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, NullEquality, Result};
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{Expr, ExprFunctionExt, JoinType, LogicalPlan, LogicalPlanBuilder};

const LEFT_COPY: &str = "__pgaccel_left_copy";
const RIGHT_COPY: &str = "__pgaccel_right_copy";

/// Rewrites every set-operation join of `plan` (see the module comment).
pub fn postgres_set_operations(plan: LogicalPlan) -> Result<LogicalPlan> {
    // Once a set operation's columns are widened, the nodes above it take
    // the new types.
    let mut widened = false;
    plan.transform_up(|node| {
        let LogicalPlan::Join(join) = &node else {
            if widened {
                return super::numeric::recompute_schema(node).map(Transformed::yes);
            }
            return Ok(Transformed::no(node));
        };
        // Only the SQL planner's INTERSECT/EXCEPT join: semi or anti, on
        // every column, NULLs equal, nothing else.
        let set_operation = matches!(join.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
            && join.null_equality == NullEquality::NullEqualsNull
            && join.filter.is_none()
            && join.on.len() == join.left.schema().fields().len();
        if !set_operation {
            return Ok(Transformed::no(node));
        }
        // PostgreSQL prints a numeric at its own scale, and INTERSECT
        // returns either side's copy of an equal value: the printed scale
        // of a column whose sides differ in it is the plan's choice, which
        // pgaccel cannot follow. EXCEPT returns the left side's rows, and
        // a double precision has no scale.
        let decimal = |t: &DataType| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..));
        let float = |t: &DataType| matches!(t, DataType::Float32 | DataType::Float64);
        for (left, right) in join.left.schema().fields().iter().zip(join.right.schema().fields()) {
            let (l, r) = (left.data_type(), right.data_type());
            if join.join_type == JoinType::LeftSemi
                && (decimal(l) || decimal(r))
                && !(float(l) || float(r))
                && l != r
            {
                return Err(datafusion::error::DataFusionError::External(Box::new(
                    super::PgError::new(
                        super::sqlstate::FEATURE_NOT_SUPPORTED,
                        "INTERSECT or EXCEPT of numerics of different scales is not supported: cast both sides to one numeric(p,s)",
                    ),
                )));
            }
        }
        let (left_keys, right_keys): (Vec<Column>, Vec<Column>) = join
            .on
            .iter()
            .filter_map(|(left, right)| match (left, right) {
                (Expr::Column(left), Expr::Column(right)) => Some((left.clone(), right.clone())),
                _ => None,
            })
            .unzip();
        if left_keys.len() != join.on.len() {
            return Ok(Transformed::no(node));
        }
        // Integers of two widths are the wider, as PostgreSQL resolves the
        // column's type (`int2 EXCEPT int4` is int4); DataFusion keeps the
        // left side's.
        let width = |t: &DataType| match t {
            DataType::Int16 => Some(2),
            DataType::Int32 => Some(4),
            DataType::Int64 => Some(8),
            _ => None,
        };
        let targets: Vec<Option<DataType>> = join
            .left
            .schema()
            .fields()
            .iter()
            .zip(join.right.schema().fields())
            .map(|(left, right)| {
                let (l, r) = (left.data_type(), right.data_type());
                match (width(l), width(r)) {
                    (Some(a), Some(b)) if a < b => Some(r.clone()),
                    (Some(a), Some(b)) if a > b => Some(l.clone()),
                    _ => None,
                }
            })
            .collect();
        let (left_input, right_input) = if targets.iter().any(Option::is_some) {
            widened = true;
            (
                widen(&join.left, &targets)?,
                widen(&join.right, &targets)?,
            )
        } else {
            (Arc::clone(&join.left), Arc::clone(&join.right))
        };
        // An untyped literal on the left takes the right's type (`SELECT
        // 'x' INTERSECT SELECT c` is of c's type).
        let literal_left: Vec<Option<std::collections::HashMap<String, String>>> = (0..left_keys
            .len())
            .map(|index| {
                let mut left = join.left.as_ref();
                while let LogicalPlan::Distinct(datafusion::logical_expr::Distinct::All(input)) =
                    left
                {
                    left = input.as_ref();
                }
                let metadata = right_input.schema().field(index).metadata();
                (untyped_literal(left, index)
                    && metadata.contains_key(crate::accelerator::PG_TYPE_METADATA))
                .then(|| {
                    metadata
                        .iter()
                        .filter(|(key, _)| *key == crate::accelerator::PG_TYPE_METADATA)
                        .map(|(key, value)| (key.clone(), value.clone()))
                        .collect()
                })
            })
            .collect();
        let output: Vec<Expr> = left_input
            .schema()
            .iter()
            .zip(&literal_left)
            .map(|((qualifier, field), typed)| {
                let column = Expr::Column(Column::from((qualifier, field)));
                match typed {
                    Some(metadata) => Expr::Cast(datafusion::logical_expr::Cast::new_from_field(
                        Box::new(column),
                        Arc::new(field.as_ref().clone().with_metadata(metadata.clone())),
                    ))
                    .alias_qualified(qualifier.cloned(), field.name()),
                    None => column,
                }
            })
            .collect();
        let literal_left: Vec<bool> = literal_left.iter().map(Option::is_some).collect();
        let (left_input, left_keys, right_input, right_keys) =
            character_keys(left_input, left_keys, right_input, right_keys, &literal_left)?;
        let left = numbered(left_input, &left_keys, LEFT_COPY)?;
        let right = numbered(right_input, &right_keys, RIGHT_COPY)?;
        let mut left_on = left_keys;
        left_on.push(Column::from_name(LEFT_COPY));
        let mut right_on = right_keys;
        right_on.push(Column::from_name(RIGHT_COPY));
        let rewritten = LogicalPlanBuilder::from(left)
            .join_detailed(
                right,
                join.join_type,
                (left_on, right_on),
                None,
                NullEquality::NullEqualsNull,
            )?
            .project(output)?
            .build()?;
        Ok(Transformed::yes(rewritten))
    })
    .map(|transformed| transformed.data)
}

/// Each side of a set operation with the columns its rows are matched on.
type Sides = (Arc<LogicalPlan>, Vec<Column>, Arc<LogicalPlan>, Vec<Column>);

/// The sides of an `INTERSECT` or `EXCEPT` with the keys their rows are
/// matched on: a column of type `character` on the left (or an untyped
/// literal there, read as the right's `character`) makes the column
/// `character`, compared without trailing spaces on either side; a
/// `character` value kept padded on the right, read as the left's text,
/// drops its trailing spaces (PostgreSQL's cast). Other keys are the
/// columns themselves.
fn character_keys(
    left: Arc<LogicalPlan>,
    left_keys: Vec<Column>,
    right: Arc<LogicalPlan>,
    right_keys: Vec<Column>,
    literal_left: &[bool],
) -> Result<Sides> {
    use crate::accelerator::{PG_TYPE_METADATA, TYPMOD_METADATA};
    let kind = |plan: &LogicalPlan, column: &Column| {
        let (_, field) = plan.schema().qualified_field_from_column(column).ok()?;
        let text = matches!(
            field.data_type(),
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
        );
        let character =
            field.metadata().get(PG_TYPE_METADATA).map(String::as_str) == Some("bpchar");
        Some((
            text,
            character,
            character && !field.metadata().contains_key(TYPMOD_METADATA),
        ))
    };
    let mut trims = Vec::with_capacity(left_keys.len());
    for (index, (l, r)) in left_keys.iter().zip(&right_keys).enumerate() {
        let (
            Some((_, left_character, left_padded)),
            Some((right_text, right_character, right_padded)),
        ) = (kind(&left, l), kind(&right, r))
        else {
            trims.push((false, false));
            continue;
        };
        // A literal read as the right's `character`.
        if literal_left.get(index).copied().unwrap_or(false) && right_character {
            trims.push((true, right_padded));
            continue;
        }
        trims.push(if left_character {
            (
                left_padded,
                right_text && (right_padded || !right_character),
            )
        } else {
            (false, right_padded)
        });
    }
    if trims.iter().all(|(l, r)| !l && !r) {
        return Ok((left, left_keys, right, right_keys));
    }
    let keyed = |input: Arc<LogicalPlan>, keys: Vec<Column>, trim: Vec<bool>, side: &str| {
        let mut exprs: Vec<Expr> = input
            .schema()
            .columns()
            .into_iter()
            .map(Expr::Column)
            .collect();
        let mut columns = Vec::with_capacity(keys.len());
        for (index, (key, trim)) in keys.into_iter().zip(trim).enumerate() {
            if !trim {
                columns.push(key);
                continue;
            }
            let name = format!("__pgaccel_{side}_key_{index}");
            exprs.push(
                Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
                    datafusion::functions::string::rtrim(),
                    vec![Expr::Column(key)],
                ))
                .alias(&name),
            );
            columns.push(Column::from_name(name));
        }
        let plan = LogicalPlanBuilder::from(input).project(exprs)?.build()?;
        Ok::<_, datafusion::error::DataFusionError>((Arc::new(plan), columns))
    };
    let (left_trim, right_trim): (Vec<bool>, Vec<bool>) = trims.into_iter().unzip();
    let (left, left_keys) = keyed(left, left_keys, left_trim, "left")?;
    let (right, right_keys) = keyed(right, right_keys, right_trim, "right")?;
    Ok((left, left_keys, right, right_keys))
}

/// `input` with its columns cast to `targets` where one is given, under
/// their own names.
fn widen(input: &Arc<LogicalPlan>, targets: &[Option<DataType>]) -> Result<Arc<LogicalPlan>> {
    let exprs = input
        .schema()
        .iter()
        .zip(targets)
        .map(|((qualifier, field), target)| {
            let column = Expr::Column(Column::from((qualifier, field.as_ref())));
            match target {
                Some(data_type) => Expr::Cast(datafusion::logical_expr::Cast::new(
                    Box::new(column),
                    data_type.clone(),
                ))
                .alias_qualified(qualifier.cloned(), field.name()),
                None => column,
            }
        })
        .collect::<Vec<_>>();
    Ok(Arc::new(LogicalPlan::Projection(
        datafusion::logical_expr::Projection::try_new(exprs, Arc::clone(input))?,
    )))
}

/// `input` with each row's copy number among the rows equal to it.
fn numbered(input: Arc<LogicalPlan>, columns: &[Column], name: &str) -> Result<LogicalPlan> {
    let copy = row_number()
        .partition_by(columns.iter().cloned().map(Expr::Column).collect())
        .build()?
        .alias(name);
    LogicalPlanBuilder::from(input).window(vec![copy])?.build()
}

/// The annotations every one of `fields` has.
fn shared(
    fields: &[std::sync::Arc<datafusion::arrow::datatypes::Field>],
) -> std::collections::HashMap<String, String> {
    let Some(first) = fields.first() else {
        return std::collections::HashMap::new();
    };
    first
        .metadata()
        .iter()
        .filter(|(key, value)| fields.iter().all(|f| f.metadata().get(*key) == Some(value)))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// A `UNION` column typed as PostgreSQL resolves it (`select_common_type`):
/// integers of several widths are the widest; text-like values take the
/// first branch's type, so a `character(n)` value under a text first branch
/// is text (unpadded), and text under a `character(n)` first branch is
/// `character` with the `character(n)` values padded (their stored form).
/// DataFusion keeps the first branch's integer width and merges the
/// branches' annotations.
///
/// Other columns get the annotations all branches share, set now: a branch
/// may gain its column's annotations later, when `coalesce(not_null_column,
/// 0)` is simplified to the column, and DataFusion's physical union would
/// keep them, unlike its logical plan.
/// Whether output column `index` of `input` is a string literal written
/// without a type (`SELECT ''`), which takes the type of the other inputs.
fn untyped_literal(input: &LogicalPlan, index: usize) -> bool {
    let LogicalPlan::Projection(projection) = input else {
        return false;
    };
    let mut expr = projection.expr.get(index);
    while let Some(Expr::Alias(alias)) = expr {
        expr = Some(alias.expr.as_ref());
    }
    matches!(
        expr,
        Some(Expr::Literal(
            datafusion::common::ScalarValue::Utf8(_) | datafusion::common::ScalarValue::Utf8View(_),
            None
        ))
    )
}

pub fn postgres_union_types(plan: LogicalPlan) -> Result<LogicalPlan> {
    use crate::accelerator::{PG_TYPE_METADATA, TYPMOD_METADATA};
    use datafusion::arrow::datatypes::Field;
    use datafusion::logical_expr::{Cast, Projection, Union};
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
    let width = |t: &DataType| match t {
        DataType::Int16 => Some(2),
        DataType::Int32 => Some(4),
        DataType::Int64 => Some(8),
        _ => None,
    };
    plan.transform_up_with_subqueries(|node| {
        let LogicalPlan::Union(union) = &node else {
            return Ok(Transformed::no(node));
        };
        let columns = union.schema.fields().len();
        let mut targets: Vec<Option<Field>> = vec![None; columns];
        for (index, target) in targets.iter_mut().enumerate() {
            let fields: Vec<_> = union
                .inputs
                .iter()
                .map(|input| input.schema().field(index).clone())
                .collect();
            let first = &fields[0];
            // As DataFusion's physical union has it.
            let nullable = fields.iter().any(|f| f.is_nullable());
            if fields.iter().all(|f| width(f.data_type()).is_some()) {
                let widest = fields
                    .iter()
                    .max_by_key(|f| width(f.data_type()))
                    .map(|f| f.data_type().clone())
                    .unwrap_or(DataType::Int64);
                *target =
                    Some(Field::new(first.name(), widest, nullable).with_metadata(shared(&fields)));
            } else if fields.iter().all(|f| f.data_type() == first.data_type())
                && !text(first.data_type())
            {
                *target = Some(
                    Field::new(first.name(), first.data_type().clone(), nullable)
                        .with_metadata(shared(&fields)),
                );
            } else if fields.iter().all(|f| text(f.data_type())) {
                let kind = |f: &Field| f.metadata().get(PG_TYPE_METADATA).cloned();
                let same = fields.iter().all(|f| f.metadata() == first.metadata());
                // PostgreSQL types the column as its first input that is
                // not an untyped literal (`SELECT '' UNION SELECT c` is of
                // c's type).
                let deciding = union
                    .inputs
                    .iter()
                    .zip(&fields)
                    .find(|(input, _)| !untyped_literal(input, index))
                    .map_or(first, |(_, field)| field);
                if !same {
                    let mut metadata = std::collections::HashMap::new();
                    if let Some(pg_type) = kind(deciding) {
                        metadata.insert(PG_TYPE_METADATA.to_owned(), pg_type);
                    }
                    *target = Some(
                        Field::new(first.name(), first.data_type().clone(), nullable)
                            .with_metadata(metadata),
                    );
                }
            }
        }
        if targets.iter().all(Option::is_none) {
            return Ok(Transformed::no(node));
        }
        let rpad = datafusion::functions::unicode::rpad();
        let mut inputs = Vec::with_capacity(union.inputs.len());
        for input in &union.inputs {
            let exprs = input
                .schema()
                .iter()
                .zip(&targets)
                .map(|((qualifier, field), target)| {
                    let column = Expr::Column(Column::from((qualifier, field.as_ref())));
                    let Some(target) = target else {
                        return column;
                    };
                    // A character(n) value read as `character` keeps its
                    // padding.
                    let width = field
                        .metadata()
                        .get(TYPMOD_METADATA)
                        .and_then(|typmod| typmod.parse::<i64>().ok())
                        .filter(|_| {
                            target.metadata().get(PG_TYPE_METADATA).map(String::as_str)
                                == Some("bpchar")
                        });
                    // A padded `character` of no width (what coalesce()
                    // gives) read as text drops its trailing spaces.
                    let to_text = target.metadata().get(PG_TYPE_METADATA).map(String::as_str)
                        != Some("bpchar")
                        && field.metadata().get(PG_TYPE_METADATA).map(String::as_str)
                            == Some("bpchar")
                        && !field.metadata().contains_key(TYPMOD_METADATA);
                    let value = match width {
                        Some(typmod) => Expr::ScalarFunction(
                            datafusion::logical_expr::expr::ScalarFunction::new_udf(
                                Arc::clone(&rpad),
                                vec![column, datafusion::logical_expr::lit(typmod - 4)],
                            ),
                        ),
                        None if to_text => Expr::ScalarFunction(
                            datafusion::logical_expr::expr::ScalarFunction::new_udf(
                                datafusion::functions::string::rtrim(),
                                vec![column],
                            ),
                        ),
                        None => column,
                    };
                    Expr::Cast(Cast::new_from_field(
                        Box::new(value),
                        Arc::new(target.clone()),
                    ))
                    .alias_qualified(qualifier.cloned(), field.name())
                })
                .collect::<Vec<_>>();
            inputs.push(Arc::new(LogicalPlan::Projection(Projection::try_new(
                exprs,
                Arc::clone(input),
            )?)));
        }
        Ok(Transformed::yes(LogicalPlan::Union(
            Union::try_new_with_loose_types(inputs)?,
        )))
    })
    .map(|transformed| transformed.data)
}

/// The type of an `INTERSECT` or `EXCEPT` column whose sides are numbers of
/// two kinds, as PostgreSQL resolves the pair: beside a float, the float
/// (the wider of two), the keys compared as such (DataFusion would compare
/// a numeric and a double as decimals, which overflow); integers beside a
/// numeric are numerics (`integer EXCEPT numeric`). The rows are the left
/// side's, which DataFusion types as they came. Runs after the numeric
/// pass, which settles each side's type (`round(0, 2)` is a numeric only
/// from then on).
pub fn postgres_set_operation_types(plan: LogicalPlan) -> Result<LogicalPlan> {
    use datafusion::logical_expr::{Cast, Projection};
    let integer = |t: &DataType| matches!(t, DataType::Int16 | DataType::Int32 | DataType::Int64);
    let decimal = |t: &DataType| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..));
    let float = |t: &DataType| matches!(t, DataType::Float32 | DataType::Float64);
    let number = |t: &DataType| integer(t) || decimal(t) || float(t);
    let mut retyped = false;
    plan.transform_up_with_subqueries(|node| {
        let LogicalPlan::Projection(projection) = &node else {
            if retyped {
                return super::numeric::recompute_schema(node).map(Transformed::yes);
            }
            return Ok(Transformed::no(node));
        };
        let LogicalPlan::Join(join) = projection.input.as_ref() else {
            return Ok(Transformed::no(node));
        };
        let set_operation = join
            .on
            .iter()
            .any(|(left, _)| matches!(left, Expr::Column(c) if c.name == LEFT_COPY));
        if !set_operation {
            return Ok(Transformed::no(node));
        }
        let mut exprs = projection.expr.clone();
        let mut on = join.on.clone();
        let mut changed = false;
        for (index, expr) in exprs.iter_mut().enumerate() {
            let Some((left_key, right_key)) = on.get_mut(index) else {
                continue;
            };
            let (Expr::Column(left), Expr::Column(right)) = (&*left_key, &*right_key) else {
                continue;
            };
            let (Ok((_, left)), Ok((_, right))) = (
                join.left.schema().qualified_field_from_column(left),
                join.right.schema().qualified_field_from_column(right),
            ) else {
                continue;
            };
            let (l, r) = (left.data_type().clone(), right.data_type().clone());
            if l == r || !number(&l) || !number(&r) {
                continue;
            }
            let target = if float(&l) || float(&r) {
                let target = if l == DataType::Float64 || r == DataType::Float64 {
                    DataType::Float64
                } else {
                    DataType::Float32
                };
                for (key, data_type) in [(&mut *left_key, &l), (&mut *right_key, &r)] {
                    if *data_type != target {
                        *key = Expr::Cast(Cast::new(Box::new(key.clone()), target.clone()));
                    }
                }
                target
            } else if integer(&l) && decimal(&r) {
                // A numeric of any scale: the left's integers print as such.
                DataType::Decimal128(38, 0)
            } else if decimal(&l) && decimal(&r) {
                // Numerics of two widths (`id::numeric EXCEPT 2.25 * 0`):
                // compared as one decimal wide enough for either side's
                // integer digits; the rows stay the left side's.
                let (DataType::Decimal128(lp, ls) | DataType::Decimal256(lp, ls)) = l else {
                    continue;
                };
                let (DataType::Decimal128(rp, rs) | DataType::Decimal256(rp, rs)) = r else {
                    continue;
                };
                let digits = (i16::from(lp) - i16::from(ls))
                    .max(i16::from(rp) - i16::from(rs))
                    .max(0);
                let scale = i16::from(ls.max(rs)).min(76 - digits).max(0);
                let common = DataType::Decimal256(76, i8::try_from(scale).unwrap_or(0));
                for (key, data_type) in [(&mut *left_key, &l), (&mut *right_key, &r)] {
                    if *data_type != common {
                        *key = Expr::Cast(Cast::new(Box::new(key.clone()), common.clone()));
                    }
                }
                l.clone()
            } else {
                continue;
            };
            changed = true;
            if l == target {
                continue;
            }
            let (qualifier, field) = projection.schema.qualified_field(index);
            let metadata = right
                .metadata()
                .iter()
                .filter(|(key, _)| *key == crate::accelerator::PG_TYPE_METADATA)
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            *expr = Expr::Cast(Cast::new_from_field(
                Box::new(expr.clone()),
                Arc::new(
                    datafusion::arrow::datatypes::Field::new(field.name(), target, true)
                        .with_metadata(metadata),
                ),
            ))
            .alias_qualified(qualifier.cloned(), field.name());
        }
        if !changed {
            return Ok(Transformed::no(node));
        }
        retyped = true;
        let mut join = join.clone();
        join.on = on;
        Ok(Transformed::yes(LogicalPlan::Projection(
            Projection::try_new(exprs, Arc::new(LogicalPlan::Join(join)))?,
        )))
    })
    .map(|transformed| transformed.data)
}
