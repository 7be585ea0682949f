//! The key strings the builder recognises.

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
