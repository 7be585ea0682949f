//! Hit testing, tooltips, focus, and the [`DrawableView`] input and overlay.

use memviz_present::segmap::Item;
use memviz_render::{rgba, View};
use memviz_snapshot::Snapshot;

use super::StateView;
use crate::answer::{ItemTip, MapItem, MapItemKind, TipLines, Tooltip};
use crate::pane::push_outline;
use crate::scene::Batch;
use crate::theme::Theme;
use crate::view::DrawableView;

/// Segment borders are drawn once a row is at least this many CSS px tall.
const BORDER_MIN_ROW_CSS: f64 = 5.0;
/// The selected event's block: a 2 px outline in the page's selection orange (both themes).
const EVENT_EDGE: u32 = rgba(240, 120, 0, 255);

impl StateView {
    /// The item under a canvas point.
    #[must_use]
    pub fn item_at(&self, css_x: f64, css_y: f64) -> Option<Item> {
        let [x, y] = self.pane.data_in_plot(css_x, css_y)?;
        self.map.hit(x, -y)
    }

    /// Canvas CSS px of an item's rect centre (for tests and jumps).
    #[must_use]
    pub fn item_center_css(&self, item: Item) -> Option<[f64; 2]> {
        let r = self.map.rect_of(item)?;
        Some(
            self.pane
                .camera
                .css_px_from_data(&self.pane.geom, [(r.x0 + r.x1) * 0.5, -(r.y0 + r.y1) * 0.5]),
        )
    }

    /// The tooltip of `item` ([`Tooltip::Item`]): its first line is the title, the rest the
    /// frames.
    #[must_use]
    pub fn item_tip(&self, snap: &Snapshot, item: Item, pinned: bool) -> Option<Tooltip> {
        let text = self.map.item_text(snap, &self.ctx, &self.state, item)?;
        let mut lines = text.lines().map(str::to_string);
        let title = lines.next().unwrap_or_default();
        let frames: Vec<String> = lines.collect();
        let (kind, addr) = match item {
            Item::Segment(a) => (MapItemKind::Segment, a),
            Item::Block(a) => (MapItemKind::Block, a),
            Item::Waste(a) => (MapItemKind::Waste, a),
        };
        Some(Tooltip::Item(ItemTip {
            lines: TipLines {
                title,
                python: memviz_analysis::frames::python_flags(&frames),
                explanation_lines: crate::answer::explanation_lines(&frames),
                frames,
                text,
                pinned,
                ..TipLines::default()
            },
            item: MapItem {
                kind,
                addr: addr.to_string(),
            },
            // The app adds the block's site and the frame kinds (it has the site cache).
            site: None,
        }))
    }

    /// Pins the block at `addr` (or the segment, when no block starts there) and centres the
    /// camera on it, zoomed so that it is at least a fifth of the plot wide. Returns its
    /// tooltip.
    pub fn focus(&mut self, snap: &Snapshot, addr: u64) -> Option<Tooltip> {
        let item = if self.state.blocks.contains_key(&addr) {
            Item::Block(addr)
        } else {
            Item::Segment(addr)
        };
        let r = self.map.rect_of(item)?;
        let cx = (r.x0 + r.x1) * 0.5;
        let cy = -(r.y0 + r.y1) * 0.5;
        let w = ((r.x1 - r.x0) * 5.0)
            .max(self.pane.camera.min_span.0)
            .min(self.pane.camera.x_range.1 - self.pane.camera.x_range.0);
        let h = (self.pane.camera.y_range.1 - self.pane.camera.y_range.0).min(w.max(8.0));
        self.pane.camera.x_range = (cx - w * 0.5, cx + w * 0.5);
        self.pane.camera.y_range = (cy - h * 0.5, cy + h * 0.5);
        self.pane.camera.clamp();
        self.pinned = Some(item);
        self.hover = Some(item);
        self.pane.needs_redraw = true;
        self.item_tip(snap, item, true)
    }
}

impl DrawableView for StateView {
    /// Sets the canvas size.
    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        self.pane.resize(css_w, css_h, dpr);
        self.rebuild_scene(false);
        self.pane.camera.clamp();
    }

    fn fit(&mut self) {
        self.pane.fit();
    }

    fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        self.pane.zoom_at(css_x, css_y, factor);
    }

    fn pan_by(&mut self, dx: f64, dy: f64) {
        self.pane.pan_by(dx, dy);
    }

    /// Keys: `+`/`-` zoom, `0` fits, WASD / arrows pan.
    fn key(&mut self, key: &str) -> bool {
        self.pane.key(key)
    }

    fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        self.pane.pointer_down(css_x, css_y);
    }

    fn pointer_move(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        if self.pane.drag_move(css_x, css_y) {
            None
        } else {
            self.hover(snap, css_x, css_y)
        }
    }

    fn pointer_up(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        if self.pane.release(css_x, css_y) {
            self.click(snap, css_x, css_y)
        } else {
            self.hover(snap, css_x, css_y)
        }
    }

    fn hover(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let hit = self.item_at(css_x, css_y);
        if hit != self.hover {
            self.hover = hit;
            self.pane.needs_redraw = true;
        }
        match self.pinned {
            Some(p) => self.item_tip(snap, p, true),
            None => self.item_tip(snap, hit?, false),
        }
    }

    fn pointer_leave(&mut self) {
        self.pane.cancel_drag();
        if self.hover.take().is_some() {
            self.pane.needs_redraw = true;
        }
    }

    fn click(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        self.pane.needs_redraw = true;
        if self.pinned.take().is_some() {
            return self.hover(snap, css_x, css_y);
        }
        let hit = self.item_at(css_x, css_y)?;
        self.pinned = Some(hit);
        self.hover = Some(hit);
        self.item_tip(snap, hit, true)
    }

    /// Hover/pinned outline and the margin masks.
    fn overlay(&mut self) -> Batch {
        let cam = self.pane.camera;
        let geom = self.pane.geom;
        let origin = self.pane.overlay_origin();
        let mut out = Vec::new();
        let rel = |x: f64, y: f64| ((x - origin[0]) as f32, (y - origin[1]) as f32);
        // Segment borders (black, 1 px) of the visible segments, when rows are tall enough.
        let row_css = geom.plot.height() / (cam.y_range.1 - cam.y_range.0).max(1e-9);
        if row_css >= BORDER_MIN_ROW_CSS {
            let (xl, xh) = cam.x_range;
            let (yl, yh) = (-cam.y_range.1, -cam.y_range.0);
            for r in self
                .map
                .rects()
                .take_while(|r| matches!(r.item, Item::Segment(_)))
            {
                if r.x1 < xl || r.x0 > xh || r.y1 < yl || r.y0 > yh {
                    continue;
                }
                let (x0, b) = rel(r.x0, -r.y1);
                let (x1, t) = rel(r.x1, -r.y0);
                push_outline(&mut out, [x0, x1, b, t], self.theme.map_border);
            }
        }
        if let Some(r) = self.event_item.and_then(|i| self.map.rect_of(i)) {
            let (x0, b) = rel(r.x0, -r.y1);
            let (x1, t) = rel(r.x1, -r.y0);
            push_outline(&mut out, [x0 - 1.0, x1 + 1.0, b - 1.0, t + 1.0], EVENT_EDGE);
            push_outline(&mut out, [x0, x1, b, t], EVENT_EDGE);
        }
        if let Some(r) = self.pinned.or(self.hover).and_then(|i| self.map.rect_of(i)) {
            let (x0, b) = rel(r.x0, -r.y1);
            let (x1, t) = rel(r.x1, -r.y0);
            push_outline(&mut out, [x0, x1, b, t], self.theme.map_hover);
        }
        self.pane.margin_masks(&mut out, origin);
        Batch::unbounded(origin, out)
    }

    /// Segments' fill, borders, hover outline and masks in `theme`'s colours (the map is
    /// rebuilt once when it changes).
    fn set_theme(&mut self, theme: &Theme) {
        if self.theme != *theme {
            self.theme = *theme;
            self.pane.bg = theme.bg;
            self.rebuild_scene(false);
        }
    }

    crate::pane::pane_view_methods!();
}
