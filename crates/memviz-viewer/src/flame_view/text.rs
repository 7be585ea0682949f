//! [`FlameView`]'s text for the shell, which the GPU does not draw: the names to overlay, the
//! breadcrumb, tooltips and the view's state, as JSON.

use super::*;

impl FlameView {
    /// Names for the shell to overlay: JSON `[{x_css, y_css, w_css, h_css, text, short, node}]`
    /// (`text` the frame, `short` its function name, see [`short_name`]), one
    /// per drawn rect whose visible part is at least [`LABEL_MIN_CSS`] wide (in a row at least
    /// 10 CSS px tall), clipped to the plot (`x_css`, `w_css` are the visible part; `y_css` is
    /// the rect's top, `h_css` its height without the row gap). At most 4000, in tree order
    /// (depth first, parents first).
    #[must_use]
    pub fn labels_json(&self) -> String {
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
                out.push(json!({
                    "x_css": left,
                    "y_css": tl[1],
                    "w_css": right - left,
                    "h_css": br[1] - tl[1],
                    "text": n.name,
                    "short": short_name(&n.name),
                    "node": r.node,
                }));
                if out.len() >= MAX_LABELS {
                    break;
                }
            }
        }
        json!(out).to_string()
    }

    /// The path from the full tree's root to the zoom root, JSON `[{node, name, total, size}]`
    /// (`size`: the total as text; bytes or byte·steps).
    #[must_use]
    pub fn breadcrumb_json(&self) -> String {
        let path: Vec<serde_json::Value> = self
            .tree
            .breadcrumb(self.zoom_root)
            .into_iter()
            .filter_map(|id| {
                let n = self.tree.node(id)?;
                Some(json!({
                    "node": id,
                    "name": n.name,
                    "total": n.total,
                    "size": value_text(self.tree.unit, n.total),
                }))
            })
            .collect();
        json!(path).to_string()
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
    /// the total), `details` (empty), `frames` (the stack root → node, one frame each),
    /// `forward_frames` (empty), `text` (all of it as lines), `pinned` (false: a click zooms),
    /// `node` (the id), `info` ([`FlameTree::node_json`]).
    #[must_use]
    pub fn node_tooltip_json(&self, node: NodeId) -> Option<String> {
        let n = self.tree.node(node)?;
        let value = value_text(self.tree.unit, n.total);
        let share = self.tree.share(node) * 100.0;
        let title = format!("{} — {value} ({share:.2}% of total)", n.name);
        let frames = self.stack_of(node);
        let mut text = self.tree.tooltip(node).unwrap_or_default();
        if !frames.is_empty() {
            text.push('\n');
            for f in &frames {
                text.push('\n');
                text.push_str(f);
            }
        }
        Some(
            json!({
                "title": title,
                "details": [],
                "frames": frames,
                "forward_frames": [],
                "text": text,
                "pinned": false,
                "node": node,
                "info": self.tree.node_json(node),
            })
            .to_string(),
        )
    }

    // ----- zoom ------------------------------------------------------------------------------

    /// State JSON (tests, the shell's status line): the moment, options, totals, zoom, camera.
    #[must_use]
    pub fn state_value(&self) -> serde_json::Value {
        let (at_kind, at_value) = match self.at {
            At::Peak => ("peak", None),
            At::Step(s) => ("step", Some(s)),
            At::Event(k) => ("event", Some(k)),
        };
        let root = self.tree.node(self.zoom_root);
        json!({
            "at": at_kind,
            "at_value": at_value,
            "at_step": self.at_step,
            "lifetime": self.opts.lifetime,
            "all_frames": self.opts.all_frames,
            "step_range": self.opts.step_range.map(|(a, b)| [a, b]),
            "unit": match self.tree.unit {
                ValueUnit::Bytes => "bytes",
                ValueUnit::ByteSteps => "byte_steps",
            },
            "total_bytes": self.tree.grand_total,
            "total_text": value_text(self.tree.unit, self.tree.grand_total),
            "root": self.zoom_root,
            "root_name": root.map_or(ROOT_NAME, |n| n.name.as_str()),
            "root_total": root.map_or(0, |n| n.total),
            "zoom_path": self.tree.breadcrumb(self.zoom_root),
            "nodes": self.tree.nodes.len(),
            "rects": self.rects.len(),
            "rows": self.rows,
            "x_range": [self.pane.camera.x_range.0, self.pane.camera.x_range.1],
            "y_range": [self.pane.camera.y_range.0, self.pane.camera.y_range.1],
            "hover": self.hover,
            "generation": self.generation,
            "build_ms": self.build_ms,
            "matched": self.tree.marked.then(|| self.tree.root().matched),
            "matched_text": self.tree.marked.then(|| value_text(self.tree.unit, self.tree.root().matched)),
            "only_matches": self.matches.as_ref().map(|m| m.1),
            "diff": self.diff.as_ref().map(|(a, b)| json!({
                "a": a,
                "b": b,
                "a_total": self.tree.root().pair[0],
                "b_total": self.tree.root().pair[1],
                "a_text": value_text(self.tree.unit, self.tree.root().pair[0]),
                "b_text": value_text(self.tree.unit, self.tree.root().pair[1]),
                "delta_text": self.tree.delta_text(self.tree.root().pair[0], self.tree.root().pair[1]),
            })),
        })
    }
}
