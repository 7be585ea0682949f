//! Building a [`Layout`]: the step model's replay, then (exact mode) the points.
//!
//! *Memory.* The step model's replay ([`Steps::build_counting`]) keeps, when exact mode is
//! possible, each element's slides below it (4 bytes per element) for pass 2's offsets; pass 2
//! then reads the packed step model, with the push orders, end steps and start steps unpacked
//! per element or push order (12 bytes per element, beside the points' 12 bytes each).

use super::exact;
use super::*;

impl Layout {
    pub fn build(timeline: &Timeline, options: LayoutOptions) -> Layout {
        let (steps, counts) = Steps::build_counting(timeline, exact_limit(options));
        Layout::with_geometry(steps, counts, &timeline.elements, options)
    }

    /// [`Layout::build`] taking the timeline's steps as they are replayed (they are empty
    /// afterwards, as after [`Timeline::drop_steps`]): their memory goes back while the layout
    /// grows, so building it costs about the layout's size more than the timeline held, not
    /// the layout plus the steps.
    pub fn build_dropping_steps(timeline: &mut Timeline, options: LayoutOptions) -> Layout {
        let (steps, counts) = Steps::build_dropping_steps_counting(timeline, exact_limit(options));
        Layout::with_geometry(steps, counts, &timeline.elements, options)
    }

    /// The geometry of `steps`: the exact polylines when the options allow them, else the
    /// compact mode's slide tree.
    fn with_geometry(
        steps: Steps,
        counts: Option<Vec<u32>>,
        elements: &[memviz_analysis::timeline::Element],
        options: LayoutOptions,
    ) -> Layout {
        let points = 2 * u64::from(steps.drawn_count()) + 2 * steps.slides_below_total();
        let exact = options.mode == PointMode::Exact
            && points <= options.max_exact_points
            && points < u32::MAX as u64;
        let mut layout = Layout {
            mode: if exact {
                PointMode::Exact
            } else {
                PointMode::Compact
            },
            exact_point_count: points,
            fell_back: options.mode == PointMode::Exact && !exact,
            steps,
            ..Layout::default()
        };
        if exact {
            let p = exact::points(&layout.steps, elements, counts);
            layout.point_offsets = p.offsets;
            layout.point_steps = p.steps;
            layout.point_bottoms = p.bottoms;
        } else {
            layout.build_slide_tree();
        }
        layout
    }

    pub(super) fn build_slide_tree(&mut self) {
        let size = self.slides.len().div_ceil(SLIDE_BLOCK).next_power_of_two();
        let mut tree = vec![NO_ORDER; 2 * size];
        for (i, s) in self.slides.iter().enumerate() {
            let leaf = &mut tree[size + i / SLIDE_BLOCK];
            *leaf = (*leaf).min(s.order);
        }
        for i in (1..size).rev() {
            tree[i] = tree[2 * i].min(tree[2 * i + 1]);
        }
        self.slide_tree = tree;
        self.slide_tree_size = size;
    }
}

/// The point count up to which the step model's replay keeps the slide counts exact mode needs.
fn exact_limit(options: LayoutOptions) -> Option<u64> {
    (options.mode == PointMode::Exact)
        .then(|| options.max_exact_points.min(u64::from(u32::MAX) - 1))
}
