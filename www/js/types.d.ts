// types.d.ts: the shapes of the answers the shell reads from the worker (Rust's JSON, parsed),
// for `tsc --checkJs` (`cargo xtask lint-js`). Hand-written for now, from what the shell reads;
// to be replaced by a file generated from the Rust structs that produce them (issue 15), so it
// stays a plain list of interfaces named after what they describe. Only type declarations: no
// module imports it at run time (JSDoc `@typedef {import('./types').X}`).

/** A panel or view that cannot fit in the memory left: Rust's sentence saying so. */
export interface Unavailable {
  unavailable: string;
}

/** The hover / pinned tooltip of a timeline element, a map block or a flamegraph frame. */
export interface Tooltip {
  title: string;
  details: string[];
  frames: string[];
  forward_frames: string[];
  pinned: boolean;
  /** The timeline element it names (a flamegraph tooltip names `node` instead). */
  element?: number | null;
  node?: number | null;
}

/** One entry of the legend: an allocation site holding memory at the peak. */
export interface LegendEntry {
  rgba: number[];
  label: string;
  size: string;
  elements: number;
}

export interface Tick {
  label: string;
  pos_css_px: number;
}

/** An annotation phase's band along the top of the timeline (CSS px). */
export interface PhaseLabel {
  name: string;
  left: number;
  right: number;
  top: number;
}

/** The axis labels after a frame. */
export interface Ticks {
  x: Tick[];
  y: Tick[];
  phases?: PhaseLabel[];
}

/** The plot rectangle in the canvas (CSS px). */
export interface PlotRect {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export interface Geometry {
  plot: PlotRect;
}

export interface StateViewState {
  event: number | null;
}

export interface FlameViewState {
  root: number;
}

/** The viewer state (`state`): camera, counts, scene, and what is selected. */
export interface ViewerState {
  view: string;
  file: number;
  device: number;
  files: string[];
  x_range: [number, number];
  y_range: [number, number];
  pinned: number | null;
  state_view: StateViewState | null;
  flame_view: FlameViewState | null;
  geometry: Geometry;
  x_axis: string;
  has_time: boolean;
  elements: number;
}

export interface DeviceEntry {
  device: number;
  events: number;
  current: boolean;
}

/** One row of the Allocator settings table. */
export interface SettingRow {
  key: string;
  value: string;
  meaning: string;
}

/** What the page shows around the plot after a file, device or view change. */
export interface Panel {
  state: ViewerState | null;
  files: string[];
  file: number;
  devices: DeviceEntry[];
  view: string;
  peak: string;
  legend: LegendEntry[];
  notice?: string;
  settings?: SettingRow[];
  ticks: Ticks;
}

/** The search box's answer. */
export interface Search {
  query: string;
  count: number;
  bytes: number;
  size: string;
  error?: string | null;
}

/** One row of the per-source-line table. */
export interface LinesRow {
  file: string;
  line: number;
  name: string;
  live: string;
  total: string;
  count: number;
  largest: string;
  live_at_peak_bytes: number;
  total_bytes: number;
  largest_bytes: number;
}

/** One allocation alive at a moment. */
export interface LiveRow {
  label: string;
  size_text: string;
  age_steps: number;
  age_us: number | null;
  stream: number;
  top_frame: string;
}

/** "Alive at a moment". */
export interface Live {
  step: number;
  count: number;
  total: string;
  rows: LiveRow[];
}

/** One leak suspect, explained. */
export interface LeakRow {
  kind: string;
  explanation: string;
  shown: string[];
}

export interface Leaks {
  settled_step: number;
  settled_rule: string;
  suspects: LeakRow[];
}

/** One opened file (`files`). */
export interface FileRow {
  file: number;
  name: string;
  device: number;
  peak: string;
  final: string;
  reserved: string;
  current: boolean;
}

/** One stack group of a comparison of two files. */
export interface DiffGroup {
  shown: string[];
  a: string;
  b: string;
  delta: string;
  count_a: number;
  count_b: number;
}

/** Two files compared (`diff`). */
export interface Diff {
  group_count: number;
  segments_only_a: number;
  segments_only_a_bytes: string;
  segments_only_b: number;
  segments_only_b_bytes: string;
  groups: DiffGroup[];
}

/** An annotation phase the flamegraph can be built within. */
export interface FlamePhase {
  index: number;
  name: string;
}

export interface FlameDiffState {
  a: string;
  b: string;
  a_text: string;
  b_text: string;
  delta_text: string;
}

/** The flamegraph's state (`flame_set`, `flame_diff`, `flame_info().state`). */
export interface FlameState {
  total_text: string;
  nodes: number;
  matched_text?: string | null;
  diff?: FlameDiffState | null;
}

export interface FlameCrumb {
  node: number;
  name: string;
  size: string;
}

/** A frame name drawn over a wide rect (CSS px). */
export interface FlameLabel {
  text: string;
  short?: string;
  x_css: number;
  y_css: number;
  w_css: number;
  h_css: number;
}

export interface FlameInfo {
  state: FlameState;
  breadcrumb: FlameCrumb[];
  labels: FlameLabel[];
}

/** One row of the State History's event list. */
export interface StateRow {
  k: number;
  kind: string;
  text: string;
}

/** A biggest live block listed by the OOM panel. */
export interface OomBlock {
  addr: string;
  size: string;
  text?: string;
}

/** Why an `oom` event happened. */
export interface Oom {
  verdict: string;
  kind: string;
  requested: string;
  device_free: string | null;
  reserved_free: string;
  largest_free: string;
  biggest_live_text: OomBlock[];
}

/** The State History's selected event (`state_select`). */
export interface StateSelection {
  count: number;
  event: number | null;
  header: string;
  text: string | null;
  oom: Oom | null;
}
