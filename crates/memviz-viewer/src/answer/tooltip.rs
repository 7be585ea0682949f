//! The hover / pinned tooltips: of a timeline element, a State History map item and a
//! flamegraph frame.

use memviz_present::tooltip::TooltipInfo;
use serde::Serialize;
use ts_rs::TS;

use super::{FlameNodeInfo, SiteText, Unavailable};
// Named by the doc comments' links only.
#[cfg(doc)]
use super::{explanation_lines, line_kinds};

/// The hover / pinned tooltip: of a timeline element, a State History map item or a flamegraph
/// frame. All three have `title`, `details`, `frames`, `forward_frames`, `text` (everything as
/// lines) and `pinned`.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
#[serde(untagged)]
pub enum Tooltip {
    Element(ElementTip),
    Item(ItemTip),
    Node(NodeTip),
    /// The tooltips' context cannot fit in memory.
    Unavailable(Unavailable),
}

impl Tooltip {
    /// The title line (empty for [`Tooltip::Unavailable`]).
    #[must_use]
    pub fn title(&self) -> &str {
        match self {
            Tooltip::Element(t) => &t.info.title,
            Tooltip::Item(t) => &t.lines.title,
            Tooltip::Node(t) => &t.lines.title,
            Tooltip::Unavailable(_) => "",
        }
    }

    /// The whole tooltip as lines (the sentence for [`Tooltip::Unavailable`]).
    #[must_use]
    pub fn text(&self) -> &str {
        match self {
            Tooltip::Element(t) => &t.text,
            Tooltip::Item(t) => &t.lines.text,
            Tooltip::Node(t) => &t.lines.text,
            Tooltip::Unavailable(u) => &u.unavailable,
        }
    }

    /// True when pinned.
    #[must_use]
    pub fn pinned(&self) -> bool {
        match self {
            Tooltip::Element(t) => t.pinned,
            Tooltip::Item(t) => t.lines.pinned,
            Tooltip::Node(t) => t.lines.pinned,
            Tooltip::Unavailable(_) => false,
        }
    }
}

/// A timeline element's tooltip: [`TooltipInfo`] (its `element`, address label, size, stack…).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct ElementTip {
    #[serde(flatten)]
    pub info: TooltipInfo,
    pub text: String,
    pub pinned: bool,
    /// See [`TipLines::explanation_lines`].
    pub explanation_lines: u32,
    /// What each `frames` line is ([`line_kinds`]).
    pub kinds: Vec<String>,
    /// The site of the element's stack ([`crate::answer::SiteText`]; `null` for a pool
    /// envelope).
    pub site: Option<SiteText>,
}

/// What a State History map item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum MapItemKind {
    Segment,
    Block,
    Waste,
}

/// A State History map item: its kind and address (decimal text: addresses pass 2^53).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct MapItem {
    pub kind: MapItemKind,
    pub addr: String,
}

/// What every map item's and frame's tooltip says: the title line, notes, the stack (one
/// frame a line), the forward-pass stack, all of it as lines (`text`) and whether it is pinned.
#[derive(Clone, Debug, Default, PartialEq, Serialize, TS)]
pub struct TipLines {
    pub title: String,
    pub details: Vec<String>,
    pub frames: Vec<String>,
    /// Whether each `frames` line is a Python frame (empty: no grouping, e.g. a flamegraph path).
    pub python: Vec<bool>,
    pub forward_frames: Vec<String>,
    pub text: String,
    pub pinned: bool,
    /// How many of the last `frames` lines are memory_viz's explanation of a missing stack
    /// ([`explanation_lines`]): 0 when a stack was recorded.
    pub explanation_lines: u32,
    /// What each `frames` line is ([`line_kinds`]; empty when not classified).
    pub kinds: Vec<String>,
}

/// A State History map item's tooltip (`details` and `forward_frames` are empty).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct ItemTip {
    #[serde(flatten)]
    pub lines: TipLines,
    pub item: MapItem,
    /// A block's site: of the stack that allocated it (`null` for a segment or waste).
    pub site: Option<SiteText>,
}

/// A flamegraph frame's tooltip: `frames` is the stack from the node to the root (innermost
/// first, as the details pane's heading says); `pinned` is false (a click zooms).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct NodeTip {
    #[serde(flatten)]
    pub lines: TipLines,
    pub node: u32,
    pub info: Option<FlameNodeInfo>,
}
