// Generated from memviz-viewer's list of views (crates/memviz-viewer/src/kinds.rs, `VIEWS`).
// Do not edit: `cargo xtask gen-types` writes it.

/** @typedef {import('./ViewInfo').ViewInfo} ViewInfo */

/** Every view, in the view selector's order. @type {ReadonlyArray<Readonly<ViewInfo>>} */
export const VIEWS = Object.freeze([
  Object.freeze({"kind":"active","label":"Active Memory Timeline","hint":"Wheel: zoom · drag: pan · click: pin the details · double-click: fit","note":"","drawn":"allocations","details":"Hover an allocation to see its stack here; click to pin it.","x_axis":true,"legend":true,"peak":true,"fit":true,"search":true}),
  Object.freeze({"kind":"segments","label":"Active Cached Segment Timeline","hint":"Wheel: zoom · drag: pan · click: pin the details · double-click: fit","note":"Each segment (cudaMalloc, or an expandable segment's mapped range) as one band, from its allocation to its free.","drawn":"segments (or mapped ranges)","details":"Hover an allocation to see its stack here; click to pin it.","x_axis":true,"legend":true,"peak":true,"fit":true,"search":true}),
  Object.freeze({"kind":"pools","label":"Allocated Memory incl. Private Pools","hint":"Wheel: zoom · drag: pan · click: pin the details · double-click: fit","note":"Allocations, and each private pool (CUDA graphs, graph-safe allocators) as an envelope of the memory it reserved.","drawn":"allocations and pool envelopes","details":"Hover an allocation to see its stack here; click to pin it.","x_axis":true,"legend":true,"peak":true,"fit":true,"search":true}),
  Object.freeze({"kind":"state","label":"Allocator State History","hint":"Wheel: zoom · drag: pan · click a block: pin its details · ↑ ↓ in the list: step through the events","note":"","drawn":"allocations","details":"Select an event to see its stack here; hover a block of the map for its own.","x_axis":false,"legend":false,"peak":false,"fit":true,"search":false}),
  Object.freeze({"kind":"flame","label":"Memory flamegraph","hint":"Wheel: zoom · drag: pan · click a frame: zoom into it · the path above: zoom out","note":"","drawn":"allocations","details":"Hover a frame to see its stack here; click it to zoom.","x_axis":false,"legend":false,"peak":true,"fit":false,"search":true}),
]);
