// Instanced trapezoids in data space (see src/gpu_data.rs for the Rust side of every struct here).
//
// One instance = one quad whose left edge spans [bottom0, top0] at x0 and whose right edge spans
// [bottom1, top1] at x1, linear in between. Coordinates are f32 *relative to the batch origin*;
// `view` maps them to clip space (composed in f64 on the CPU, then rounded to f32 once).
//
// WebGL2 baseline: per-trapezoid data comes from a vertex buffer, never from a storage buffer;
// 6 vertices per trapezoid, no index buffer. The buffer holds each trapezoid once per vertex
// (step mode Vertex, not Instance): software rasterisers such as SwiftShader run an instanced
// draw one instance at a time, which made a 30k-trapezoid frame cost ~250 ms there.

struct ViewUniform {
    // clip = rel * clip_from_rel_scale + clip_from_rel_offset   (per axis; rel = data - origin)
    clip_from_rel_scale: vec2<f32>,
    clip_from_rel_offset: vec2<f32>,
    // Size of the render target in device pixels.
    viewport_px: vec2<f32>,
    // Bit 0: the render target encodes sRGB on write (…Srgb format), so the shader must output
    // linear colour. Other bits reserved (0).
    flags: u32,
    _pad: u32,
};

@group(0) @binding(0) var<uniform> view: ViewUniform;

const VIEW_FLAG_TARGET_IS_SRGB: u32 = 1u;

// Must match `Trapezoid::FLAG_*` in src/gpu_data.rs.
const FLAG_EXACT_WIDTH: u32 = 1u;
const FLAG_EXACT_HEIGHT: u32 = 2u;
const FLAG_EDGE_TOP: u32 = 4u;

// The edge of FLAG_EDGE_TOP: one device pixel row at the top (in data y) of the quad, this much
// darker (sRGB factor), fading in as the quad grows from EDGE_FADE.x to EDGE_FADE.y device px
// tall, so thin quads keep their colour instead of turning dark.
const EDGE_SHADE: f32 = 0.62;
const EDGE_FADE: vec2<f32> = vec2<f32>(2.0, 4.0);

struct Instance {
    @location(0) x0_x1: vec2<f32>,
    @location(1) bottom0_top0: vec2<f32>,
    @location(2) bottom1_top1: vec2<f32>,
    // RGBA8, sRGB-encoded, unpacked by the vertex fetch (Unorm8x4).
    @location(3) color: vec4<f32>,
    @location(4) flags: u32,
};

struct VertexOut {
    @builtin(position) position: vec4<f32>,
    @location(0) color: vec4<f32>,
    // The colour of the top edge (FLAG_EDGE_TOP; else the fill colour).
    @location(1) edge_color: vec4<f32>,
    // Device px from this point down to the quad's bottom and up to its top (in screen order),
    // and 1.0 when the data top is the screen top (else 0.0). Both distances are affine over
    // the quad (its top and bottom are straight lines), so interpolating them is exact.
    @location(2) edge: vec3<f32>,
};

fn srgb_to_linear(c: vec3<f32>) -> vec3<f32> {
    let lo = c / 12.92;
    let hi = pow((c + vec3<f32>(0.055)) / 1.055, vec3<f32>(2.4));
    return select(hi, lo, c <= vec3<f32>(0.04045));
}

// Widens the clip-space interval [a, b] (a <= b) around its centre so that it is at least
// `min_len` long. Degenerate input (a == b) becomes exactly `min_len`.
fn at_least(a: f32, b: f32, min_len: f32) -> vec2<f32> {
    let len = b - a;
    if (len >= min_len) {
        return vec2<f32>(a, b);
    }
    let c = 0.5 * (a + b);
    return vec2<f32>(c - 0.5 * min_len, c + 0.5 * min_len);
}

@vertex
fn vs_main(@builtin(vertex_index) vertex_index: u32, inst: Instance) -> VertexOut {
    // Two triangles: (0,0) (1,0) (0,1) | (0,1) (1,0) (1,1); u = left/right edge, v = bottom/top.
    var corner_u = array<f32, 6>(0.0, 1.0, 0.0, 0.0, 1.0, 1.0);
    var corner_v = array<f32, 6>(0.0, 0.0, 1.0, 1.0, 0.0, 1.0);
    let u = corner_u[vertex_index % 6u];
    let v = corner_v[vertex_index % 6u];

    let scale = view.clip_from_rel_scale;
    let offset = view.clip_from_rel_offset;
    // One device pixel in clip units (clip space spans 2 units across the viewport).
    let px = vec2<f32>(2.0) / max(view.viewport_px, vec2<f32>(1.0));

    // x: order the edges (a negative scale or x1 < x0 must not defeat the minimum), then widen.
    var xs = vec2<f32>(inst.x0_x1.x * scale.x + offset.x, inst.x0_x1.y * scale.x + offset.x);
    let flipped_x = xs.x > xs.y;
    if (flipped_x) {
        xs = xs.yx;
    }
    if ((inst.flags & FLAG_EXACT_WIDTH) == 0u) {
        xs = at_least(xs.x, xs.y, px.x);
    }
    // The vertex's edge in screen order (left = 0, right = 1), and the data edge it carries.
    let x = mix(xs.x, xs.y, u);
    let data_edge_is_right = (u > 0.5) != flipped_x;

    // y: the span of the data edge this vertex sits on, widened to >= 1 px on its own.
    let span = select(inst.bottom0_top0, inst.bottom1_top1, data_edge_is_right);
    var ys = vec2<f32>(span.x * scale.y + offset.y, span.y * scale.y + offset.y);
    if (ys.x > ys.y) {
        ys = ys.yx;
    }
    if ((inst.flags & FLAG_EXACT_HEIGHT) == 0u) {
        ys = at_least(ys.x, ys.y, px.y);
    }
    let y = mix(ys.x, ys.y, v);
    let height_px = (ys.y - ys.x) / px.y;

    var out: VertexOut;
    out.position = vec4<f32>(x, y, 0.0, 1.0);
    var rgb = inst.color.rgb;
    var edge_rgb = rgb;
    if ((inst.flags & FLAG_EDGE_TOP) != 0u) {
        edge_rgb = rgb * EDGE_SHADE;
    }
    if ((view.flags & VIEW_FLAG_TARGET_IS_SRGB) != 0u) {
        rgb = srgb_to_linear(rgb);
        edge_rgb = srgb_to_linear(edge_rgb);
    }
    out.color = vec4<f32>(rgb, inst.color.a);
    out.edge_color = vec4<f32>(edge_rgb, inst.color.a);
    let top_is_up = select(0.0, 1.0, scale.y >= 0.0);
    out.edge = vec3<f32>(v * height_px, (1.0 - v) * height_px, top_is_up);
    return out;
}

@fragment
fn fs_main(in: VertexOut) -> @location(0) vec4<f32> {
    // Distance to the data top: up on screen unless the y axis is flipped.
    let to_top = select(in.edge.x, in.edge.y, in.edge.z > 0.5);
    let height = in.edge.x + in.edge.y;
    let fade = smoothstep(EDGE_FADE.x, EDGE_FADE.y, height);
    let on_edge = select(0.0, fade, to_top < 1.0);
    return mix(in.color, in.edge_color, on_edge);
}
