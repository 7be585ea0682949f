//! The key strings the builder recognises, interned first (so their ids are small and known)
//! and a table from id to meaning for the hot path, trace entries.

use memviz_pickle::{Atoms, StrId};

macro_rules! keys {
    ($($field:ident),* $(,)?) => {
        /// Ids of the key strings the builder recognises (interned before parsing starts).
        #[allow(non_snake_case)]
        pub(crate) struct Keys { $(pub(crate) $field: StrId,)* }
        impl Keys {
            pub(super) fn new(atoms: &mut Atoms) -> Keys {
                Keys { $($field: atoms.strings.intern(stringify!($field)),)* }
            }
        }
    };
}

keys!(
    action,
    addr,
    size,
    stream,
    time_us,
    frames,
    compile_context,
    user_metadata,
    device_free,
    internal_metadata,
    category,
    forward_frames,
    pool_id,
    segment_pool_id,
    name,
    filename,
    line,
    fx_node_op,
    fx_node_name,
    fx_node_target,
    fx_original_trace,
    segments,
    device_traces,
    allocator_settings,
    external_annotations,
    host_segments,
    host_traces,
    categories,
    device,
    address,
    total_size,
    allocated_size,
    active_size,
    requested_size,
    segment_type,
    is_expandable,
    blocks,
    state,
    history,
    real_size,
    stage,
    active_allocated,
    active_pending_free,
    inactive,
);

/// What a key of a trace entry means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EventKey {
    Action,
    Addr,
    Size,
    Stream,
    TimeUs,
    Frames,
    CompileContext,
    UserMetadata,
    DeviceFree,
    PoolId,
    InternalMetadata,
    Category,
    ForwardFrames,
    /// Any other key (a warning).
    Other,
}

/// [`EventKey`] by string id: the keys are interned before anything else, so a trace entry's
/// key is one table read instead of a chain of comparisons.
pub(super) struct EventKeys(Vec<EventKey>);

impl EventKeys {
    pub(super) fn new(k: &Keys) -> EventKeys {
        let pairs = [
            (k.action, EventKey::Action),
            (k.addr, EventKey::Addr),
            (k.size, EventKey::Size),
            (k.stream, EventKey::Stream),
            (k.time_us, EventKey::TimeUs),
            (k.frames, EventKey::Frames),
            (k.compile_context, EventKey::CompileContext),
            (k.user_metadata, EventKey::UserMetadata),
            (k.device_free, EventKey::DeviceFree),
            (k.pool_id, EventKey::PoolId),
            (k.segment_pool_id, EventKey::PoolId),
            (k.internal_metadata, EventKey::InternalMetadata),
            (k.category, EventKey::Category),
            (k.forward_frames, EventKey::ForwardFrames),
        ];
        let len = pairs.iter().map(|p| p.0 .0 as usize + 1).max().unwrap_or(0);
        let mut t = vec![EventKey::Other; len];
        for (id, key) in pairs {
            if let Some(slot) = t.get_mut(id.0 as usize) {
                *slot = key;
            }
        }
        EventKeys(t)
    }

    #[inline]
    pub(super) fn get(&self, key: StrId) -> EventKey {
        self.0
            .get(key.0 as usize)
            .copied()
            .unwrap_or(EventKey::Other)
    }
}
