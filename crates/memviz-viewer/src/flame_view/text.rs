//! [`FlameView`]'s text for the shell, which the GPU does not draw: the names to overlay, the
//! breadcrumb, tooltips and the view's state.

use super::*;

impl FlameView {
    /// Names for the shell to overlay (`text` the frame, `short` its function name, see
    /// [`short_name`]), one
    /// per drawn rect whose visible part is at least [`LABEL_MIN_CSS`] wide (in a row at least
    /// 10 CSS px tall), clipped to the plot (`x_css`, `w_css` are the visible part; `y_css` is
    /// the rect's top, `h_css` its height without the row gap). At most 4000, in tree order
    /// (depth first, parents first).
    #[must_use]
    pub fn labels(&self) -> Vec<FlameLabel> {
        let p = self.pane.geom.plot;
        let (_, sy) = self.css_per_unit();
        let mut out = Vec::new();
        if sy * (1.0 - ROW_GAP) >= LABEL_MIN_ROW_CSS {
            for r in &self.rects {
                let (x0, x1, b, t) = rect_data(r.x0, r.x1, r.depth);
                let tl = self.pane.camera.css_px_from_data(&self.pane.geom, [x0, t]);
                let br = self.pane.camera.css_px_from_data(&self.pane.geom, [x1, b]);
                let left = tl[0].max(p.left);
                let right = br[0].min(p.right);
                if right - left < LABEL_MIN_CSS || br[1] < p.top || tl[1] > p.bottom {
                    continue;
                }
                let Some(n) = self.tree.node(r.node) else {
                    continue;
                };
                out.push(FlameLabel {
                    x_css: left,
                    y_css: tl[1],
                    w_css: right - left,
                    h_css: br[1] - tl[1],
                    text: n.name.clone(),
                    short: label_name(&n.name),
                    node: r.node,
                });
                if out.len() >= MAX_LABELS {
                    break;
                }
            }
        }
        out
    }

    /// The path from the full tree's root to the zoom root (`size`: the total as text; bytes
    /// or byte·steps).
    #[must_use]
    pub fn breadcrumb(&self) -> Vec<Crumb> {
        self.tree
            .breadcrumb(self.zoom_root)
            .into_iter()
            .filter_map(|id| {
                let n = self.tree.node(id)?;
                Some(Crumb {
                    node: id,
                    chip: crumb_chip(&n.name),
                    name: n.name.clone(),
                    total: n.total,
                    size: value_text(self.tree.unit, n.total),
                })
            })
            .collect()
    }

    /// The frames from the root to `node` (the root's own name left out).
    pub(super) fn stack_of(&self, node: NodeId) -> Vec<String> {
        self.tree
            .breadcrumb(node)
            .into_iter()
            .filter(|&id| id != 0)
            .filter_map(|id| self.tree.node(id).map(|n| n.name.clone()))
            .collect()
    }

    /// The tooltip of `node` in the timeline tooltip's shape: `title` (name, value, share of
    /// the total), `details` (a note on a node that stands for collapsed library calls, else
    /// empty), `frames` (the stack node → root, innermost first as the details pane's heading
    /// says, one frame each),
    /// `forward_frames` (empty), `text` (all of it as lines), `pinned` (false: a click zooms),
    /// `node` (the id), `info` ([`FlameTree::node_info`]).
    #[must_use]
    pub fn node_tooltip(&self, node: NodeId) -> Option<Tooltip> {
        let n = self.tree.node(node)?;
        let value = value_text(self.tree.unit, n.total);
        let share = self.tree.share(node) * 100.0;
        let title = format!("{} — {value} ({share:.2}% of total)", n.name);
        let mut frames = self.stack_of(node);
        frames.reverse();
        // A collapsed run's frames differ per stack it merged: the name is the library line
        // they reached; the "all frames" mode shows each of them.
        let details: Vec<String> = frames
            .iter()
            .any(|f| flame::is_collapsed(f))
            .then(|| {
                "[package] nodes stand for library calls collapsed into the line they reached: \
                 choose \"all frames\" to see every frame"
                    .to_string()
            })
            .into_iter()
            .collect();
        let mut text = self.tree.tooltip(node).unwrap_or_default();
        if !frames.is_empty() {
            text.push('\n');
            for f in &frames {
                text.push('\n');
                text.push_str(f);
            }
        }
        Some(Tooltip::Node(NodeTip {
            lines: TipLines {
                title,
                details,
                frames,
                text,
                ..TipLines::default()
            },
            node,
            info: self.tree.node_info(node),
        }))
    }

    // ----- zoom ------------------------------------------------------------------------------

    /// The view's state (tests, the shell's status line): the moment, options, totals, zoom,
    /// camera.
    #[must_use]
    pub fn state(&self) -> FlameState {
        let (at, at_value) = match self.at {
            At::Peak => (FlameMoment::Peak, None),
            At::Step(s) => (FlameMoment::Step, Some(s)),
            At::Event(k) => (FlameMoment::Event, Some(k)),
        };
        let root = self.tree.node(self.zoom_root);
        let unit = self.tree.unit;
        let marked = self.tree.marked;
        let [a_total, b_total] = self.tree.root().pair;
        FlameState {
            at,
            at_value,
            at_step: self.at_step,
            lifetime: self.opts.lifetime,
            frames: self.opts.frames,
            has_user_frames: self.has_user,
            step_range: self.opts.step_range.map(|(a, b)| [a, b]),
            unit,
            total_bytes: self.tree.grand_total,
            total_text: value_text(unit, self.tree.grand_total),
            root: self.zoom_root,
            root_name: root.map_or(ROOT_NAME, |n| n.name.as_str()).to_owned(),
            root_total: root.map_or(0, |n| n.total),
            zoom_path: self.tree.breadcrumb(self.zoom_root),
            nodes: self.tree.nodes.len(),
            rects: self.rects.len(),
            rows: self.rows,
            x_range: [self.pane.camera.x_range.0, self.pane.camera.x_range.1],
            y_range: [self.pane.camera.y_range.0, self.pane.camera.y_range.1],
            hover: self.hover,
            generation: self.generation,
            build_ms: self.build_ms,
            matched: marked.then(|| self.tree.root().matched),
            matched_text: marked.then(|| value_text(unit, self.tree.root().matched)),
            only_matches: self.matches.as_ref().map(|m| m.1),
            diff: self.diff.as_ref().map(|(a, b)| FlameDiffTotals {
                a: a.clone(),
                b: b.clone(),
                a_total,
                b_total,
                a_text: value_text(unit, a_total),
                b_text: value_text(unit, b_total),
                delta_text: self.tree.delta_text(a_total, b_total),
            }),
        }
    }
}

/// A label's text: the function name of a `file:line:name` frame ([`short_name`]); a segment
/// of the reserved memory's flamegraph (`seg_<decimal address>`, `memviz segments`) by its
/// address in hex, as the State History and memory_viz name segments (`segment 0x7f…`),
/// `stream_N` as `stream N`.
fn label_name(frame: &str) -> String {
    let number = |prefix: &str| {
        frame
            .strip_prefix(prefix)
            .filter(|d| !d.is_empty() && d.len() <= 20 && d.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|d| d.parse::<u64>().ok())
    };
    if let Some(addr) = number("seg_") {
        return format!("segment {addr:#x}");
    }
    if let Some(s) = number("stream_") {
        return format!("stream {s}");
    }
    match collapsed_package(frame) {
        Some(pkg) if short_name(frame).len() < frame.len() => {
            format!("{pkg} {}", short_name(frame))
        }
        _ => short_name(frame).to_string(),
    }
}

/// `[torch]` of a collapsed run's name (`[torch] nn/functional.py:1701:relu`), else `None`.
fn collapsed_package(frame: &str) -> Option<&str> {
    if !flame::is_collapsed(frame) {
        return None;
    }
    frame.find(']').and_then(|i| frame.get(..=i))
}

/// A breadcrumb chip's text: `name · basename:line` for a `file:line:name` frame, else the text.
fn crumb_chip(frame: &str) -> String {
    let name = short_name(frame);
    if name.len() == frame.len() {
        return frame.to_string();
    }
    let place = frame.get(..frame.len() - name.len() - 1).unwrap_or(frame);
    match collapsed_package(frame) {
        Some(pkg) => format!(
            "{pkg} {name} · {}",
            memviz_analysis::frames::basename(place)
        ),
        None => format!("{name} · {}", memviz_analysis::frames::basename(place)),
    }
}

#[cfg(test)]
mod chip_tests {
    #[test]
    fn chip_puts_the_function_first() {
        assert_eq!(
            super::crumb_chip("/a/b/model.py:12:forward"),
            "forward · model.py:12"
        );
        assert_eq!(super::crumb_chip("all"), "all");
        assert_eq!(super::crumb_chip("C:\\x\\m.py:3:f"), "f · m.py:3");
        assert_eq!(
            super::crumb_chip("[torch] nn/functional.py:1701:relu"),
            "[torch] relu · functional.py:1701"
        );
        assert_eq!(
            super::label_name("[torch] nn/functional.py:1701:relu"),
            "[torch] relu"
        );
        assert_eq!(
            super::label_name("[native] at::native::mm"),
            "[native] at::native::mm"
        );
    }

    #[test]
    fn reserved_memory_labels_name_segments_by_hex_address() {
        assert_eq!(
            super::label_name("seg_242657263616"),
            "segment 0x387f800000"
        );
        assert_eq!(super::label_name("stream_0"), "stream 0");
        assert_eq!(super::label_name("/a/m.py:3:forward"), "forward");
        // Not a segment's level: unchanged.
        assert_eq!(super::label_name("seg_"), "seg_");
        assert_eq!(super::label_name("seg_12x"), "seg_12x");
        assert_eq!(
            super::label_name("seg_99999999999999999999999"),
            "seg_99999999999999999999999"
        );
        assert_eq!(super::label_name("inactive"), "inactive");
    }
}
