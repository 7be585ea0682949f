//! Plain-old-data structs shared with `shader/trapezoid.wgsl`, byte for byte.
//!
//! Every struct here is `#[repr(C)]`, `Pod`, and has its size asserted at compile time, so a field
//! added on one side only fails the build instead of drawing garbage.

use bytemuck::{Pod, Zeroable};

/// One instanced quad in data space, relative to its batch's origin.
///
/// The left edge spans `[bottom0, top0]` at `x0`, the right edge spans `[bottom1, top1]` at `x1`,
/// and the top and bottom are straight lines between them. A rectangle has `bottom0 == bottom1`
/// and `top0 == top1` (see [`Trapezoid::rect`]). Edges given in the "wrong" order (`x1 < x0`,
/// `top < bottom`) are drawn all the same.
///
/// Unless a `FLAG_EXACT_*` bit says otherwise, the vertex shader widens the quad to at least one
/// device pixel in x and each edge to at least one device pixel in y, so tiny items stay visible
/// and a zero-height rect is a 1 px hairline.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Trapezoid {
    /// x of the left edge, relative to the batch origin.
    pub x0: f32,
    /// x of the right edge, relative to the batch origin.
    pub x1: f32,
    /// Bottom of the left edge, relative to the batch origin.
    pub bottom0: f32,
    /// Top of the left edge, relative to the batch origin.
    pub top0: f32,
    /// Bottom of the right edge, relative to the batch origin.
    pub bottom1: f32,
    /// Top of the right edge, relative to the batch origin.
    pub top1: f32,
    /// sRGB-encoded RGBA8, bytes in memory order R, G, B, A: build it with [`rgba`].
    /// Alpha is straight (not premultiplied).
    pub color: u32,
    /// `FLAG_*` bits; other bits are reserved and must be 0.
    pub flags: u32,
}

const _: () = assert!(core::mem::size_of::<Trapezoid>() == 32);
const _: () = assert!(core::mem::align_of::<Trapezoid>() == 4);

impl Trapezoid {
    /// Do not widen this quad to the 1 device pixel minimum in x.
    pub const FLAG_EXACT_WIDTH: u32 = 1;
    /// Do not widen this quad's edges to the 1 device pixel minimum in y.
    pub const FLAG_EXACT_HEIGHT: u32 = 2;
    /// Darken the one device-pixel row at the quad's top (its larger data y): adjacent items
    /// of one colour stay apart. The row fades in as the quad grows from 2 to 4 device px
    /// tall, so thin quads keep their colour.
    pub const FLAG_EDGE_TOP: u32 = 4;

    /// An axis-aligned rectangle `[x0, x1] × [bottom, top]` (relative to the batch origin).
    #[must_use]
    pub const fn rect(x0: f32, x1: f32, bottom: f32, top: f32, color: u32) -> Self {
        Self {
            x0,
            x1,
            bottom0: bottom,
            top0: top,
            bottom1: bottom,
            top1: top,
            color,
            flags: 0,
        }
    }

    /// A trapezoid: left edge `left = [bottom, top]` at `x0`, right edge `right` at `x1`.
    #[must_use]
    pub const fn new(x0: f32, x1: f32, left: [f32; 2], right: [f32; 2], color: u32) -> Self {
        Self {
            x0,
            x1,
            bottom0: left[0],
            top0: left[1],
            bottom1: right[0],
            top1: right[1],
            color,
            flags: 0,
        }
    }

    /// The same quad with `flags` set.
    #[must_use]
    pub const fn with_flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }
}

/// Packs sRGB-encoded RGBA8 into [`Trapezoid::color`] (memory order R, G, B, A).
#[must_use]
pub const fn rgba(r: u8, g: u8, b: u8, a: u8) -> u32 {
    u32::from_le_bytes([r, g, b, a])
}

/// The per-batch uniform of `shader/trapezoid.wgsl`: `clip = rel * scale + offset` per axis,
/// where `rel` is an instance coordinate (data minus the batch origin).
///
/// Built by [`crate::ClipFromData::view_uniform`], which composes everything in `f64` and rounds
/// to `f32` once.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ViewUniform {
    /// Clip units per data unit, (x, y).
    pub clip_from_rel_scale: [f32; 2],
    /// Clip position of the batch origin, (x, y).
    pub clip_from_rel_offset: [f32; 2],
    /// Render target size in device pixels, (width, height).
    pub viewport_px: [f32; 2],
    /// `VIEW_FLAG_*` bits.
    pub flags: u32,
    /// Padding to a 16-byte multiple (uniform layout rules).
    pub _pad: u32,
}

const _: () = assert!(core::mem::size_of::<ViewUniform>() == 32);

impl ViewUniform {
    /// The render target stores sRGB-encoded colour and encodes on write (a `…Srgb` format): the
    /// shader decodes the instance colours to linear first.
    pub const FLAG_TARGET_IS_SRGB: u32 = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rgba_is_memory_order() {
        let t = Trapezoid::rect(0.0, 1.0, 0.0, 1.0, rgba(1, 2, 3, 4));
        let bytes: &[u8] = bytemuck::bytes_of(&t);
        assert_eq!(&bytes[24..28], &[1, 2, 3, 4]);
        assert_eq!(bytes.len(), 32);
    }
}
