//! Grouping on several short columns by one integer key.
//!
//! DataFusion groups on two or more columns by hashing and comparing each
//! column apart, and text columns by their bytes: TPC-H Q1's
//! `GROUP BY l_returnflag, l_linestatus` (two `char(1)` columns) spent about
//! a fifth of the query there. Where every grouping column is a short text
//! (`char(n)` or `varchar(n)` as the source declared it, so at most 4n
//! bytes) or an integer, and together they fit in 125 bits, [`PackedGroups`]
//! makes the aggregate over raw rows group by one 128-bit integer instead:
//! each column's value is packed into its own bits with its length and
//! whether it is NULL, so distinct rows keep distinct keys. The aggregate's
//! output unpacks the key back into the columns; it is otherwise the same
//! operator, with the same functions, schema and plan properties.
//!
//! A text longer than its column's declared bound (a source such as SQLite
//! does not enforce it) cannot be packed; such rows are numbered in a table
//! kept for the one execution, above every packed key. Correctness never
//! depends on the declared bounds, only speed does.
//!
//! The rule is off unless `PGACCEL_PACKED_GROUPS=on` (see [`enabled`]).

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Decimal128Array, Int64Array, StringArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::compute::kernels::zip::zip;
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Int64Type, Schema};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateInputMode, PhysicalGroupBy};
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, InputDistributionRequirements, InputOrderMode,
    PlanProperties,
};
use futures::StreamExt;

use crate::accelerator::{PG_TYPE_METADATA, TYPMOD_METADATA};

/// The name of the packed key in the inner aggregate's output.
const KEY_NAME: &str = "__pgaccel_group_key";
/// Packed keys use the bits below this one; keys of rows that could not be
/// packed are this bit plus their number. Every key stays below 2^126, so
/// it is a valid `numeric(38, 0)`, the type DataFusion groups 128-bit
/// integers as.
const INTERNED_BIT: u32 = 125;
const INTERNED: u128 = 1 << INTERNED_BIT;

/// The physical optimizer rule (see the module comment); it changes
/// nothing unless `on`.
#[derive(Debug)]
pub struct PackedGroups {
    on: bool,
}

impl PackedGroups {
    /// On where the environment asks for it (see [`enabled`]).
    pub fn from_environment() -> Self {
        PackedGroups { on: enabled() }
    }
}

impl PhysicalOptimizerRule for PackedGroups {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !self.on {
            return Ok(plan);
        }
        plan.transform_up(|node| {
            let Some(aggregate) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            let Some(layout) = Layout::of(aggregate) else {
                return Ok(Transformed::no(node));
            };
            let packed = PackedGroupsExec::new(Arc::new(aggregate.clone()), Arc::new(layout));
            Ok(Transformed::yes(Arc::new(packed) as Arc<dyn ExecutionPlan>))
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "pgaccel_packed_groups"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether the rule applies: only where the environment sets
/// `PGACCEL_PACKED_GROUPS=on`. Measured on TPC-H Q1 (two servers side by
/// side, SF1), packing cost more than the cheaper hash saved: 204-217 ms
/// with it against 166-185 ms without. It stays, off, to be measured
/// again with a cheaper packing.
fn enabled() -> bool {
    static ENABLED: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        std::env::var("PGACCEL_PACKED_GROUPS").is_ok_and(|value| value == "on")
    });
    *ENABLED
}

/// Where each grouping column's value lies in the key.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Layout {
    slots: Vec<Slot>,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Slot {
    /// The grouping column in the aggregate's input.
    column: Arc<Column>,
    data_type: DataType,
    /// Whether the column may hold NULL (which then takes a state of its own).
    nullable: bool,
    kind: Kind,
    /// The slot's lowest bit in the key.
    shift: u32,
}

#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Kind {
    /// Text of at most `capacity` bytes: `header` bits holding its length
    /// (plus one if the column is nullable, 0 being NULL), then its bytes.
    Text { capacity: usize, header: u32 },
    /// An integer's low `width` bits (two's complement), above a bit that
    /// is 1 for a value if the column is nullable.
    Integer { width: u32, signed: bool },
}

impl Kind {
    fn bits(self, nullable: bool) -> u32 {
        match self {
            Kind::Text { capacity, header } => header + 8 * capacity as u32,
            Kind::Integer { width, .. } => width + u32::from(nullable),
        }
    }
}

impl Layout {
    /// The layout of `aggregate`'s grouping columns, if it groups raw rows
    /// by two or more plain columns that all fit, in no order that the
    /// aggregate relies on.
    fn of(aggregate: &AggregateExec) -> Option<Layout> {
        let group_by = aggregate.group_expr();
        if aggregate.mode().input_mode() != AggregateInputMode::Raw
            || group_by.has_grouping_set()
            || group_by.groups().len() != 1
            || group_by.groups()[0].iter().any(|null| *null)
            || group_by.expr().len() < 2
            || *aggregate.input_order_mode() != InputOrderMode::Linear
            || aggregate.limit_options().is_some()
            || !aggregate.dynamic_expressions_produced().is_empty()
            || aggregate
                .aggr_expr()
                .iter()
                .any(|function| !function.order_bys().is_empty())
        {
            return None;
        }
        let schema = aggregate.input_schema();
        let mut slots = Vec::with_capacity(group_by.expr().len());
        let mut shift = 0;
        for (expr, _) in group_by.expr() {
            let column = expr.downcast_ref::<Column>()?;
            let field = schema.fields().get(column.index())?;
            if field.name() != column.name() {
                return None;
            }
            let nullable = field.is_nullable();
            let kind = match field.data_type() {
                DataType::Utf8 => {
                    let declared = field.metadata().get(PG_TYPE_METADATA)?;
                    if declared != "bpchar" && declared != "varchar" {
                        return None;
                    }
                    // The type modifier of char(n) and varchar(n) is n + 4.
                    let typmod: usize = field.metadata().get(TYPMOD_METADATA)?.parse().ok()?;
                    let capacity = 4 * typmod.checked_sub(4).filter(|n| *n > 0)?;
                    if capacity > 15 {
                        return None;
                    }
                    let states = capacity + 1 + usize::from(nullable);
                    Kind::Text {
                        capacity,
                        header: usize::BITS - (states - 1).leading_zeros(),
                    }
                }
                DataType::Boolean => Kind::Integer {
                    width: 1,
                    signed: false,
                },
                DataType::Int8 => Kind::Integer {
                    width: 8,
                    signed: true,
                },
                DataType::UInt8 => Kind::Integer {
                    width: 8,
                    signed: false,
                },
                DataType::Int16 => Kind::Integer {
                    width: 16,
                    signed: true,
                },
                DataType::UInt16 => Kind::Integer {
                    width: 16,
                    signed: false,
                },
                DataType::Int32 | DataType::Date32 => Kind::Integer {
                    width: 32,
                    signed: true,
                },
                DataType::UInt32 => Kind::Integer {
                    width: 32,
                    signed: false,
                },
                DataType::Int64 => Kind::Integer {
                    width: 64,
                    signed: true,
                },
                _ => return None,
            };
            slots.push(Slot {
                column: Arc::new(column.clone()),
                data_type: field.data_type().clone(),
                nullable,
                kind,
                shift,
            });
            shift += kind.bits(nullable);
            if shift > INTERNED_BIT {
                return None;
            }
        }
        Some(Layout { slots })
    }
}

/// Low `bits` bits set.
fn mask(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

impl Slot {
    /// ORs this slot's part of every row's key into `keys`; rows whose
    /// value does not fit go to `unfit`.
    fn pack(&self, array: &ArrayRef, keys: &mut [u128], unfit: &mut Vec<usize>) -> Result<()> {
        match self.kind {
            Kind::Text { capacity, header } => {
                let text = array.as_string_opt::<i32>().ok_or_else(|| {
                    DataFusionError::Internal(format!("{} is not text", self.column))
                })?;
                let offsets = text.value_offsets();
                let bytes = text.values().as_slice();
                let nulls = text.nulls().filter(|nulls| nulls.null_count() > 0);
                if capacity <= 7 && nulls.is_none() {
                    self.pack_short(offsets, bytes, capacity, header, keys, unfit);
                    return Ok(());
                }
                let nullable = u128::from(self.nullable);
                for (row, (key, ends)) in keys.iter_mut().zip(offsets.windows(2)).enumerate() {
                    if nulls.is_some_and(|nulls| nulls.is_null(row)) {
                        // NULL is state 0 where the column is nullable.
                        if !self.nullable {
                            unfit.push(row);
                        }
                        continue;
                    }
                    let (start, end) = (ends[0] as usize, ends[1] as usize);
                    let length = end - start;
                    if length > capacity {
                        unfit.push(row);
                        continue;
                    }
                    // One 16-byte load and a mask where the buffer reaches
                    // that far (a copy of `length` bytes costs a call).
                    let content = match bytes.get(start..start + 16) {
                        Some(window) => {
                            let window: [u8; 16] = window.try_into().unwrap_or_default();
                            u128::from_le_bytes(window) & mask(8 * length as u32)
                        }
                        None => {
                            let mut content = [0u8; 16];
                            content[..length].copy_from_slice(&bytes[start..end]);
                            u128::from_le_bytes(content)
                        }
                    };
                    let state = length as u128 + nullable;
                    *key |= ((content << header) | state) << self.shift;
                }
            }
            Kind::Integer { width, .. } => {
                let values = cast(array, &DataType::Int64)?;
                let values = values.as_primitive::<Int64Type>();
                let null_bit = u32::from(self.nullable);
                for (row, key) in keys.iter_mut().enumerate() {
                    if values.is_null(row) {
                        if !self.nullable {
                            unfit.push(row);
                        }
                        continue;
                    }
                    let bits = values.value(row) as u64 as u128 & mask(width);
                    *key |= ((bits << null_bit) | u128::from(self.nullable)) << self.shift;
                }
            }
        }
        Ok(())
    }

    /// [`Slot::pack`] for a text column without NULLs whose values fit in
    /// 7 bytes (`char(1)`): the slot's bits are worked out in 64 bits, from
    /// one 8-byte load a row.
    fn pack_short(
        &self,
        offsets: &[i32],
        bytes: &[u8],
        capacity: usize,
        header: u32,
        keys: &mut [u128],
        unfit: &mut Vec<usize>,
    ) {
        // The low `n` bytes of a word, for n up to 7.
        const LOW_BYTES: [u64; 8] = {
            let mut masks = [0u64; 8];
            let mut n = 1;
            while n < 8 {
                masks[n] = (1u64 << (8 * n)) - 1;
                n += 1;
            }
            masks
        };
        let nullable = u64::from(self.nullable);
        for (row, (key, ends)) in keys.iter_mut().zip(offsets.windows(2)).enumerate() {
            let (start, end) = (ends[0] as usize, ends[1] as usize);
            let length = end - start;
            if length > capacity {
                unfit.push(row);
                continue;
            }
            let content = match bytes.get(start..start + 8) {
                Some(window) => {
                    let window: [u8; 8] = window.try_into().unwrap_or_default();
                    u64::from_le_bytes(window) & LOW_BYTES[length]
                }
                None => {
                    let mut content = [0u8; 8];
                    content[..length].copy_from_slice(&bytes[start..end]);
                    u64::from_le_bytes(content)
                }
            };
            let slot = (content << header) | (length as u64 + nullable);
            *key |= u128::from(slot) << self.shift;
        }
    }

    /// This slot's column for packed `keys`; keys of numbered rows give
    /// NULL here (the caller puts their values in).
    fn unpack(&self, keys: &[i128]) -> Result<ArrayRef> {
        let nullable = u128::from(self.nullable);
        match self.kind {
            Kind::Text { capacity, header } => {
                let mut values = Vec::with_capacity(keys.len());
                for &key in keys {
                    let key = key as u128;
                    let state = (key >> self.shift) & mask(header);
                    if key & INTERNED != 0 || state < nullable {
                        values.push(None);
                        continue;
                    }
                    let length = (state - nullable) as usize;
                    let content = (key >> (self.shift + header)) & mask(8 * capacity as u32);
                    let bytes = content.to_le_bytes();
                    let text = std::str::from_utf8(&bytes[..length]).map_err(|_| {
                        DataFusionError::Internal(format!(
                            "a packed grouping key of {} does not hold text",
                            self.column
                        ))
                    })?;
                    values.push(Some(text.to_owned()));
                }
                Ok(Arc::new(StringArray::from(values)))
            }
            Kind::Integer { width, signed } => {
                let values: Int64Array = keys
                    .iter()
                    .map(|&key| {
                        let key = key as u128;
                        let slot = key >> self.shift;
                        if key & INTERNED != 0 || slot & nullable != nullable {
                            return None;
                        }
                        let bits = ((slot >> nullable) & mask(width)) as u64;
                        Some(if signed && width < 64 {
                            // Sign-extend from the value's own width.
                            ((bits << (64 - width)) as i64) >> (64 - width)
                        } else {
                            bits as i64
                        })
                    })
                    .collect();
                Ok(cast(&values, &self.data_type)?)
            }
        }
    }
}

/// The rows that could not be packed, numbered in the order first seen.
#[derive(Debug, Default)]
struct Numbered {
    numbers: HashMap<Vec<ScalarValue>, u128>,
    rows: Vec<Vec<ScalarValue>>,
}

impl Numbered {
    fn number(&mut self, values: Vec<ScalarValue>) -> u128 {
        if let Some(number) = self.numbers.get(&values) {
            return *number;
        }
        let number = INTERNED | self.rows.len() as u128;
        self.rows.push(values.clone());
        self.numbers.insert(values, number);
        number
    }
}

/// The packed key of one execution: the grouping expression of the inner
/// aggregate.
#[derive(Debug)]
struct PackedKey {
    layout: Arc<Layout>,
    columns: Vec<Arc<dyn PhysicalExpr>>,
    numbered: Arc<Mutex<Numbered>>,
}

impl PartialEq for PackedKey {
    fn eq(&self, other: &Self) -> bool {
        self.layout == other.layout && Arc::ptr_eq(&self.numbered, &other.numbered)
    }
}

impl Eq for PackedKey {}

impl Hash for PackedKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.layout.hash(state);
        Arc::as_ptr(&self.numbered).hash(state);
    }
}

impl fmt::Display for PackedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "packed(")?;
        for (i, slot) in self.layout.slots.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{}", slot.column)?;
        }
        write!(f, ")")
    }
}

impl PhysicalExpr for PackedKey {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(key_type())
    }

    fn nullable(&self, _input_schema: &Schema) -> Result<bool> {
        Ok(false)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let rows = batch.num_rows();
        let arrays = self
            .columns
            .iter()
            .map(|column| column.evaluate(batch)?.into_array(rows))
            .collect::<Result<Vec<_>>>()?;
        let mut keys = vec![0u128; rows];
        let mut unfit = Vec::new();
        for (slot, array) in self.layout.slots.iter().zip(&arrays) {
            slot.pack(array, &mut keys, &mut unfit)?;
        }
        if !unfit.is_empty() {
            unfit.sort_unstable();
            unfit.dedup();
            let mut numbered = self
                .numbered
                .lock()
                .map_err(|_| DataFusionError::Internal("packed grouping keys poisoned".into()))?;
            for row in unfit {
                let values = arrays
                    .iter()
                    .map(|array| ScalarValue::try_from_array(array, row))
                    .collect::<Result<Vec<_>>>()?;
                keys[row] = numbered.number(values);
            }
        }
        let keys = Decimal128Array::from_iter_values(keys.into_iter().map(|key| key as i128))
            .with_data_type(key_type());
        Ok(ColumnarValue::Array(Arc::new(keys)))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        self.columns.iter().collect()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        if children.len() != self.columns.len() {
            return Err(DataFusionError::Internal(format!(
                "{self} takes {} columns",
                self.columns.len()
            )));
        }
        Ok(Arc::new(PackedKey {
            layout: Arc::clone(&self.layout),
            columns: children,
            numbered: Arc::clone(&self.numbered),
        }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

fn key_type() -> DataType {
    DataType::Decimal128(38, 0)
}

/// An aggregate over raw rows that groups by a packed key (see the module
/// comment). Each execution builds the aggregate anew around a key with
/// its own table of numbered rows, so nothing outlives the query.
#[derive(Debug)]
pub struct PackedGroupsExec {
    aggregate: Arc<AggregateExec>,
    layout: Arc<Layout>,
}

impl PackedGroupsExec {
    fn new(aggregate: Arc<AggregateExec>, layout: Arc<Layout>) -> Self {
        PackedGroupsExec { aggregate, layout }
    }

    /// The key's columns back in place of the key, in `schema`.
    fn unpack(
        batch: RecordBatch,
        layout: &Layout,
        numbered: &Mutex<Numbered>,
        schema: &Arc<Schema>,
    ) -> Result<RecordBatch> {
        let keys = batch.column(0).as_primitive::<Decimal128Type>();
        let keys = keys.values();
        let interned: BooleanArray = keys
            .iter()
            .map(|key| Some(*key as u128 & INTERNED != 0))
            .collect();
        let mut columns = Vec::with_capacity(schema.fields().len());
        for (index, slot) in layout.slots.iter().enumerate() {
            let mut column = slot.unpack(keys)?;
            if interned.true_count() > 0 {
                let numbered = numbered.lock().map_err(|_| {
                    DataFusionError::Internal("packed grouping keys poisoned".into())
                })?;
                let values = keys
                    .iter()
                    .map(|key| {
                        let key = *key as u128;
                        if key & INTERNED == 0 {
                            return ScalarValue::try_from(&slot.data_type);
                        }
                        Ok(numbered.rows[(key & !INTERNED) as usize][index].clone())
                    })
                    .collect::<Result<Vec<_>>>()?;
                let values = ScalarValue::iter_to_array(values)?;
                column = zip(&interned, &values, &column)?;
            }
            columns.push(column);
        }
        columns.extend(batch.columns()[1..].iter().cloned());
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(schema),
            columns,
            &options,
        )?)
    }
}

impl DisplayAs for PackedGroupsExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.aggregate.fmt_as(t, f)?;
        write!(f, ", packed_key=true")
    }
}

impl ExecutionPlan for PackedGroupsExec {
    fn name(&self) -> &str {
        "PackedGroupsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.aggregate.properties()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.aggregate.apply_expressions(f)
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.aggregate.input()]
    }

    fn input_distribution_requirements(&self) -> InputDistributionRequirements {
        self.aggregate.input_distribution_requirements()
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        self.aggregate.benefits_from_input_partitioning()
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        self.aggregate.maintains_input_order()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let aggregate = Arc::clone(&self.aggregate).replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )?;
        let aggregate = aggregate.downcast_ref::<AggregateExec>().ok_or_else(|| {
            DataFusionError::Internal("an aggregate rebuilt as another operator".into())
        })?;
        // The new input's columns may lie elsewhere: lay the key out anew.
        Ok(match Layout::of(aggregate) {
            Some(layout) => Arc::new(PackedGroupsExec::new(
                Arc::new(aggregate.clone()),
                Arc::new(layout),
            )),
            None => Arc::new(aggregate.clone()),
        })
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let numbered = Arc::new(Mutex::new(Numbered::default()));
        let key = PackedKey {
            layout: Arc::clone(&self.layout),
            columns: self
                .layout
                .slots
                .iter()
                .map(|slot| Arc::clone(&slot.column) as Arc<dyn PhysicalExpr>)
                .collect(),
            numbered: Arc::clone(&numbered),
        };
        let aggregate = &self.aggregate;
        let inner = AggregateExec::try_new(
            *aggregate.mode(),
            PhysicalGroupBy::new_single(vec![(
                Arc::new(key) as Arc<dyn PhysicalExpr>,
                KEY_NAME.to_owned(),
            )]),
            aggregate.aggr_expr().to_vec(),
            aggregate.filter_expr().to_vec(),
            Arc::clone(aggregate.input()),
            aggregate.input_schema(),
        )?;
        let stream = inner.execute(partition, context)?;
        let schema = aggregate.schema();
        let layout = Arc::clone(&self.layout);
        let target = Arc::clone(&schema);
        let stream =
            stream.map(move |batch| PackedGroupsExec::unpack(batch?, &layout, &numbered, &target));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{BooleanArray, Date32Array, Int8Array, Int32Array};
    use datafusion::arrow::datatypes::Field;
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::datasource::MemTable;
    use datafusion::execution::session_state::SessionStateBuilder;
    use datafusion::prelude::{SessionConfig, SessionContext};

    fn character(name: &str, pg_type: &str, n: usize, nullable: bool) -> Field {
        Field::new(name, DataType::Utf8, nullable).with_metadata(
            [
                (PG_TYPE_METADATA.to_owned(), pg_type.to_owned()),
                (TYPMOD_METADATA.to_owned(), (n + 4).to_string()),
            ]
            .into(),
        )
    }

    /// Rows with NULLs, empty and multi-byte texts, negative and extreme
    /// integers, and texts longer than their declared bound.
    fn table() -> Arc<MemTable> {
        let schema = Arc::new(Schema::new(vec![
            character("flag", "bpchar", 1, true),
            character("code", "varchar", 2, false),
            Field::new("small", DataType::Int8, true),
            Field::new("day", DataType::Date32, true),
            Field::new("yes", DataType::Boolean, true),
            Field::new("wide", DataType::Int32, false),
            Field::new("x", DataType::Int32, false),
        ]));
        let flags = [
            Some("A"),
            None,
            Some(""),
            Some("é"),
            Some("日"),
            Some("too long"),
        ];
        let codes = ["", "ab", "ü", "x", "日本", "longer than two"];
        let mut columns: (Vec<_>, Vec<_>, Vec<_>, Vec<_>, Vec<_>, Vec<_>, Vec<_>) =
            Default::default();
        for row in 0..2000i32 {
            let r = row as usize;
            columns.0.push(flags[r % flags.len()]);
            columns.1.push(codes[(r / 3) % codes.len()]);
            columns.2.push(match r % 4 {
                0 => None,
                1 => Some(i8::MIN),
                2 => Some(-1),
                _ => Some(i8::MAX),
            });
            columns
                .3
                .push((!r.is_multiple_of(5)).then_some(-800_000 + (row % 3) * 400_000));
            columns.4.push(match r % 3 {
                0 => None,
                1 => Some(true),
                _ => Some(false),
            });
            columns.5.push([i32::MIN, -1, 0, i32::MAX][r % 4]);
            columns.6.push(row);
        }
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from(columns.0)),
                Arc::new(StringArray::from(columns.1)),
                Arc::new(Int8Array::from(columns.2)),
                Arc::new(Date32Array::from(columns.3)),
                Arc::new(BooleanArray::from(columns.4)),
                Arc::new(Int32Array::from(columns.5)),
                Arc::new(Int32Array::from(columns.6)),
            ],
        )
        .unwrap();
        // Several batches in two partitions, so that the aggregate is split
        // into partial and final stages.
        let batches: Vec<RecordBatch> = (0..4).map(|i| batch.slice(i * 500, 500)).collect();
        Arc::new(
            MemTable::try_new(schema, vec![batches[..2].to_vec(), batches[2..].to_vec()]).unwrap(),
        )
    }

    fn context(packed: bool) -> SessionContext {
        let config = SessionConfig::new()
            .with_target_partitions(2)
            .with_batch_size(128);
        let mut builder = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features();
        if packed {
            builder = builder.with_physical_optimizer_rule(Arc::new(PackedGroups { on: true }));
        }
        let context = SessionContext::new_with_state(builder.build());
        context.register_table("t", table()).unwrap();
        context
    }

    async fn answer(context: &SessionContext, sql: &str) -> String {
        let batches = context.sql(sql).await.unwrap().collect().await.unwrap();
        pretty_format_batches(&batches).unwrap().to_string()
    }

    async fn plan(context: &SessionContext, sql: &str) -> String {
        answer(context, &format!("EXPLAIN {sql}")).await
    }

    #[tokio::test]
    async fn groups_as_the_separate_columns_do() {
        let (plain, packed) = (context(false), context(true));
        for sql in [
            "SELECT flag, code, count(*), sum(x), min(x) FROM t GROUP BY flag, code ORDER BY 1, 2",
            "SELECT small, day, yes, count(*) FROM t GROUP BY small, day, yes ORDER BY 1, 2, 3",
            "SELECT wide, flag, yes, avg(x) FROM t GROUP BY wide, flag, yes ORDER BY 1, 2, 3",
            "SELECT code, small, count(*) FILTER (WHERE x > 100) FROM t \
             GROUP BY code, small ORDER BY 1, 2",
            "SELECT flag, code FROM t WHERE x < 7 GROUP BY flag, code ORDER BY 1, 2",
        ] {
            assert!(
                plan(&packed, sql).await.contains("packed_key=true"),
                "{sql} is not packed:\n{}",
                plan(&packed, sql).await
            );
            assert_eq!(
                answer(&plain, sql).await,
                answer(&packed, sql).await,
                "{sql}"
            );
        }
    }

    #[tokio::test]
    async fn leaves_what_it_cannot_pack() {
        let packed = context(true);
        for sql in [
            // One column: DataFusion's own single-column grouping.
            "SELECT flag, count(*) FROM t GROUP BY flag",
            // An expression, not a column.
            "SELECT upper(flag), code, count(*) FROM t GROUP BY upper(flag), code",
            // Grouping sets.
            "SELECT flag, code, count(*) FROM t GROUP BY ROLLUP (flag, code)",
            // An aggregate that depends on the order of its rows.
            "SELECT flag, code, array_agg(x ORDER BY x) FROM t GROUP BY flag, code",
            // A column of more than 125 bits with the others.
            "SELECT x, wide, small, day, count(*) FROM t GROUP BY x, wide, small, day, code, flag",
        ] {
            assert!(!plan(&packed, sql).await.contains("packed_key"), "{sql}");
        }
    }

    #[test]
    fn keys_unpack_to_the_values_packed() {
        let slot = |kind, nullable, data_type| Slot {
            column: Arc::new(Column::new("c", 0)),
            data_type,
            nullable,
            kind,
            shift: 7,
        };
        let text = slot(
            Kind::Text {
                capacity: 8,
                header: 4,
            },
            true,
            DataType::Utf8,
        );
        let array: ArrayRef = Arc::new(StringArray::from(vec![
            Some("abcdefgh"),
            None,
            Some(""),
            Some("ß"),
            Some("abcdefghi"),
        ]));
        let mut keys = vec![0u128; 5];
        let mut unfit = Vec::new();
        text.pack(&array, &mut keys, &mut unfit).unwrap();
        assert_eq!(unfit, vec![4]);
        let keys: Vec<i128> = keys.iter().map(|k| *k as i128).collect();
        let back = text.unpack(&keys[..4]).unwrap();
        assert_eq!(back.as_ref(), &array.slice(0, 4));

        // Short texts without NULLs take the 64-bit path; the last values
        // end the buffer, where no 8-byte load fits.
        let short = slot(
            Kind::Text {
                capacity: 4,
                header: 3,
            },
            false,
            DataType::Utf8,
        );
        let array: ArrayRef = Arc::new(StringArray::from(vec![
            "A", "", "ab", "日", "toolong", "xyz", "wxyz", "é", "",
        ]));
        let mut keys = vec![0u128; 9];
        unfit.clear();
        short.pack(&array, &mut keys, &mut unfit).unwrap();
        assert_eq!(unfit, vec![4]);
        let keys: Vec<i128> = keys.iter().map(|k| *k as i128).collect();
        let expected: ArrayRef = Arc::new(StringArray::from(vec![
            "A", "", "ab", "日", "xyz", "wxyz", "é", "",
        ]));
        let packed: Vec<i128> = [0, 1, 2, 3, 5, 6, 7, 8].iter().map(|i| keys[*i]).collect();
        assert_eq!(short.unpack(&packed).unwrap().as_ref(), expected.as_ref());
        let distinct: std::collections::HashSet<i128> = packed.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            7,
            "the two empty texts share a key: {packed:?}"
        );

        let integer = slot(
            Kind::Integer {
                width: 16,
                signed: true,
            },
            true,
            DataType::Int16,
        );
        let array: ArrayRef = Arc::new(datafusion::arrow::array::Int16Array::from(vec![
            Some(i16::MIN),
            None,
            Some(-1),
            Some(0),
            Some(i16::MAX),
        ]));
        let mut keys = vec![0u128; 5];
        unfit.clear();
        integer.pack(&array, &mut keys, &mut unfit).unwrap();
        assert!(unfit.is_empty(), "{unfit:?}");
        let keys: Vec<i128> = keys.iter().map(|k| *k as i128).collect();
        assert_eq!(integer.unpack(&keys).unwrap().as_ref(), array.as_ref());
    }
}
