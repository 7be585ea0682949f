//! [`Theme`]: the colours of everything drawn on the canvas that is not data (clear colour,
//! gutter masks, axes, grid, peak marker, overview strip and brush, hover outlines, the State
//! History map's segments and borders), light or dark. Data colours (allocation sites, the
//! pool grey) are the same in both: a site keeps its colour when the page switches.
//!
//! The dark palette follows the page's dark stylesheet (`www/styles/main.css`: background
//! `#15181e`, panels `#1e222a`, muted text `#9aa3b5`, accent `#7aa2f7`), so the canvas and the
//! page around it match.

use memviz_render::rgba;

/// Non-data colours of the canvas (sRGB RGBA8 as `memviz_render::rgba` packs them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    /// True for [`Theme::DARK`].
    pub dark: bool,
    /// The clear colour and the gutter masks.
    pub bg: u32,
    /// Axis lines and tick marks.
    pub axis: u32,
    /// Horizontal grid lines (translucent).
    pub grid: u32,
    /// The peak marker (triangle) and its line.
    pub peak: u32,
    pub peak_line: u32,
    /// The overview strip's background and its fill (total memory per column).
    pub overview_bg: u32,
    pub overview_fill: u32,
    /// The overview brush (translucent) and its edges.
    pub brush: u32,
    pub brush_edge: u32,
    /// The outline of the hovered or pinned timeline element.
    pub hover_edge: u32,
    /// The State History map: segment borders, a segment's free space, the hover outline.
    pub map_border: u32,
    pub segment_fill: u32,
    pub map_hover: u32,
}

impl Theme {
    /// The light theme (the page's default).
    pub const LIGHT: Theme = Theme {
        dark: false,
        bg: rgba(255, 255, 255, 255),
        axis: rgba(90, 90, 90, 255),
        grid: rgba(0, 0, 0, 28),
        peak: rgba(220, 30, 30, 230),
        peak_line: rgba(220, 30, 30, 110),
        overview_bg: rgba(244, 244, 246, 255),
        overview_fill: rgba(70, 110, 170, 255),
        brush: rgba(30, 100, 220, 50),
        brush_edge: rgba(30, 100, 220, 220),
        hover_edge: rgba(0, 0, 0, 255),
        map_border: rgba(0, 0, 0, 255),
        segment_fill: rgba(238, 238, 238, 255),
        map_hover: rgba(30, 100, 220, 255),
    };

    /// The dark theme (`prefers-color-scheme: dark`, or the page's toggle).
    pub const DARK: Theme = Theme {
        dark: true,
        bg: rgba(21, 24, 30, 255),
        axis: rgba(154, 163, 181, 255),
        grid: rgba(255, 255, 255, 30),
        peak: rgba(255, 95, 95, 235),
        peak_line: rgba(255, 95, 95, 120),
        overview_bg: rgba(30, 34, 42, 255),
        overview_fill: rgba(95, 135, 205, 255),
        brush: rgba(122, 162, 247, 60),
        brush_edge: rgba(122, 162, 247, 230),
        hover_edge: rgba(255, 255, 255, 255),
        map_border: rgba(154, 163, 181, 255),
        segment_fill: rgba(44, 49, 59, 255),
        map_hover: rgba(122, 162, 247, 255),
    };

    /// [`Theme::DARK`] when `dark`, else [`Theme::LIGHT`].
    #[must_use]
    pub const fn of(dark: bool) -> Theme {
        if dark {
            Theme::DARK
        } else {
            Theme::LIGHT
        }
    }

    /// The clear colour: [`Theme::bg`] as sRGB RGBA in 0..1 (what the renderer takes).
    #[must_use]
    pub fn clear(&self) -> [f64; 4] {
        let [r, g, b, a] = self.bg.to_le_bytes();
        [r, g, b, a].map(|c| f64::from(c) / 255.0)
    }
}

impl Default for Theme {
    fn default() -> Self {
        Theme::LIGHT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_is_the_background() {
        assert_eq!(Theme::LIGHT.clear(), [1.0, 1.0, 1.0, 1.0]);
        let [r, g, b, a] = Theme::DARK.clear();
        assert_eq!(
            [r, g, b, a].map(|c| (c * 255.0).round() as u8),
            [21, 24, 30, 255]
        );
        assert!(Theme::of(true).dark && !Theme::of(false).dark);
        // Every colour differs between the themes, and none is a data colour.
        let colors = |t: &Theme| {
            [
                t.bg,
                t.axis,
                t.grid,
                t.overview_bg,
                t.overview_fill,
                t.hover_edge,
                t.map_border,
                t.segment_fill,
            ]
        };
        for (l, d) in colors(&Theme::LIGHT).iter().zip(colors(&Theme::DARK)) {
            assert_ne!(*l, d);
        }
    }
}
