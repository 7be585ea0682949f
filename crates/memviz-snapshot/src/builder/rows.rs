//! Event rows in file order, written straight into the compact columns of the model.

use crate::columns::{ActionColumn, TimeColumn, U64Column};
use crate::model::*;
use memviz_pickle::StrId;
use rustc_hash::FxHashMap;
use std::collections::TryReserveError;

/// Event rows in file order, before they are split by device: written straight into the
/// compact columns of the model (so a whole trace in file order moves into its
/// [`DeviceTrace`] without a copy).
pub(super) struct Rows {
    pub(super) action: Vec<u8>,
    pub(super) addr: U64Column,
    pub(super) size: U64Column,
    pub(super) time_us: TimeColumn,
    pub(super) stack: Vec<StackId>,
    pub(super) stream: Column<u64>,
    pub(super) compile_context: Column<StrId>,
    pub(super) user_metadata: Column<StrId>,
    /// Rows expected in all (reserved); a column that stops being constant reserves this many.
    pub(super) hint: usize,
    /// Codes of the values of `stream`, `compile_context`, `user_metadata` while coded.
    pub(super) stream_codes: FxHashMap<u64, u16>,
    pub(super) cc_codes: FxHashMap<StrId, u16>,
    pub(super) um_codes: FxHashMap<StrId, u16>,
    pub(super) device_free: Vec<(u32, u64)>,
    pub(super) pool_id: Vec<(u32, (i64, i64))>,
    pub(super) internal_metadata: Vec<(u32, StrId)>,
    pub(super) category: Vec<(u32, StrId)>,
    pub(super) forward_frames: Vec<(u32, Vec<StrId>)>,
}

impl Default for Rows {
    fn default() -> Self {
        Rows {
            action: Vec::new(),
            addr: U64Column::with_unit_shift(9),
            size: U64Column::default(),
            time_us: TimeColumn::default(),
            stack: Vec::new(),
            stream: Column::constant(0, 0),
            compile_context: Column::constant(NO_STR, 0),
            user_metadata: Column::constant(NO_STR, 0),
            hint: 0,
            stream_codes: FxHashMap::default(),
            cc_codes: FxHashMap::default(),
            um_codes: FxHashMap::default(),
            device_free: Vec::new(),
            pool_id: Vec::new(),
            internal_metadata: Vec::new(),
            category: Vec::new(),
            forward_frames: Vec::new(),
        }
    }
}

/// The dense fields of one event row.
#[derive(Clone, Copy)]
pub(super) struct Row {
    /// [`Action::code`].
    pub(super) action: u8,
    pub(super) addr: u64,
    pub(super) size: u64,
    pub(super) stream: u64,
    pub(super) time_us: i64,
    pub(super) stack: StackId,
    pub(super) compile_context: StrId,
    pub(super) user_metadata: StrId,
}

impl Row {
    pub(super) const EMPTY: Row = Row {
        action: 10, // Action::Unknown(UnknownAction(0)).code()
        addr: 0,
        size: 0,
        stream: 0,
        time_us: NO_TIME,
        stack: StackId::EMPTY,
        compile_context: NO_STR,
        user_metadata: NO_STR,
    };
}

impl Rows {
    pub(super) fn len(&self) -> usize {
        self.action.len()
    }

    /// Room for exactly `more` rows in the dense columns, fallibly; the columns that change
    /// from constant to coded reserve up to the new `hint`.
    pub(super) fn try_reserve(&mut self, more: usize) -> Result<(), TryReserveError> {
        self.hint = self.len().saturating_add(more);
        self.action.try_reserve_exact(more)?;
        self.addr.reserve(more)?;
        self.size.reserve(more)?;
        self.time_us.reserve(more)?;
        self.stack.try_reserve_exact(more)
    }

    /// True when a row has one of the rarely present fields.
    pub(super) fn has_sparse(&self) -> bool {
        !(self.device_free.is_empty()
            && self.pool_id.is_empty()
            && self.internal_metadata.is_empty()
            && self.category.is_empty()
            && self.forward_frames.is_empty())
    }

    /// Sort the rarely present fields by row (stable: a row set twice keeps its file order);
    /// rows are pushed in order, so this is a check unless an entry got items in two batches.
    pub(super) fn sort_sparse(&mut self) {
        fn sort<T>(v: &mut [(u32, T)]) {
            if !v.is_sorted_by_key(|e| e.0) {
                v.sort_by_key(|e| e.0);
            }
        }
        sort(&mut self.device_free);
        sort(&mut self.pool_id);
        sort(&mut self.internal_metadata);
        sort(&mut self.category);
        sort(&mut self.forward_frames);
    }

    /// Copy the rarely present fields of row `row` (sorted: [`Self::sort_sparse`]) to row
    /// `pos` of `out`: a binary search per field. Returns the `forward_frames` lines copied.
    pub(super) fn copy_sparse(&self, row: u32, pos: u32, out: &mut Rows) -> usize {
        fn copy<T: Clone>(src: &[(u32, T)], row: u32, pos: u32, dst: &mut Vec<(u32, T)>) {
            let from = src.partition_point(|e| e.0 < row);
            for e in src
                .get(from..)
                .unwrap_or(&[])
                .iter()
                .take_while(|e| e.0 == row)
            {
                dst.push((pos, e.1.clone()));
            }
        }
        copy(&self.device_free, row, pos, &mut out.device_free);
        copy(&self.pool_id, row, pos, &mut out.pool_id);
        copy(
            &self.internal_metadata,
            row,
            pos,
            &mut out.internal_metadata,
        );
        copy(&self.category, row, pos, &mut out.category);
        let before = out.forward_frames.len();
        copy(&self.forward_frames, row, pos, &mut out.forward_frames);
        out.forward_frames
            .get(before..)
            .map_or(0, |f| f.iter().map(|x| x.1.len()).sum())
    }

    /// True when the next row needs the columns to grow.
    #[inline]
    pub(super) fn full(&self) -> bool {
        self.stack.len() == self.stack.capacity()
    }

    pub(super) fn read(&self, r: usize) -> Row {
        Row {
            action: self.action.get(r).copied().unwrap_or(Row::EMPTY.action),
            addr: self.addr.get(r).unwrap_or(0),
            size: self.size.get(r).unwrap_or(0),
            stream: self.stream.get(r).unwrap_or(0),
            time_us: self.time_us.get(r).unwrap_or(NO_TIME),
            stack: self.stack.get(r).copied().unwrap_or(StackId::EMPTY),
            compile_context: self.compile_context.get(r).unwrap_or(NO_STR),
            user_metadata: self.user_metadata.get(r).unwrap_or(NO_STR),
        }
    }

    #[inline]
    pub(super) fn push(&mut self, e: &Row) {
        self.action.push(e.action);
        self.addr.push(e.addr);
        self.size.push(e.size);
        self.time_us.push(e.time_us);
        self.stack.push(e.stack);
        self.stream
            .push(e.stream, self.hint, &mut self.stream_codes);
        self.compile_context
            .push(e.compile_context, self.hint, &mut self.cc_codes);
        self.user_metadata
            .push(e.user_metadata, self.hint, &mut self.um_codes);
    }

    pub(super) fn set(&mut self, r: usize, e: &Row) {
        if let Some(a) = self.action.get_mut(r) {
            *a = e.action;
        }
        self.addr.set(r, e.addr);
        self.size.set(r, e.size);
        self.time_us.set(r, e.time_us);
        if let Some(s) = self.stack.get_mut(r) {
            *s = e.stack;
        }
        self.stream.set(r, e.stream);
        self.compile_context.set(r, e.compile_context);
        self.user_metadata.set(r, e.user_metadata);
    }

    /// Seal the columns into a device trace.
    pub(super) fn into_trace(mut self) -> DeviceTrace {
        self.action.shrink_to_fit();
        self.stack.shrink_to_fit();
        self.addr.seal();
        self.size.seal();
        self.time_us.seal();
        DeviceTrace {
            action: ActionColumn(self.action),
            addr: self.addr,
            size: self.size,
            time_us: self.time_us,
            stack: self.stack,
            stream: self.stream.sealed(),
            compile_context: self.compile_context.sealed(),
            user_metadata: self.user_metadata.sealed(),
            device_free: self.device_free,
            pool_id: self.pool_id,
            internal_metadata: self.internal_metadata,
            category: self.category,
            forward_frames: self.forward_frames,
        }
    }
}
