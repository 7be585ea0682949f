//! The flame/icicle tree of folded stacks ([`FlameTree`]): build (plain, marked, diff), zoom,
//! breadcrumb, rectangles, hit test and tooltips.

use std::collections::BTreeMap;

use super::{FoldedEntry, ROOT_NAME};
use crate::format::{count, size_long};

/// A node of a [`FlameTree`].
pub type NodeId = u32;

/// What a tree's values are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ValueUnit {
    /// Live bytes at a moment.
    #[default]
    Bytes,
    /// Bytes × timesteps ([`super::FlameOptions::lifetime`]).
    ByteSteps,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlameNode {
    /// A frame (unescaped), or [`ROOT_NAME`] for the root of an unzoomed tree.
    pub name: String,
    /// Σ values of every stack through this node.
    pub total: u64,
    /// Values of stacks ending here.
    pub self_value: u64,
    /// 0 for the tree's root.
    pub depth: u32,
    /// Offset from the tree root's left edge, in value units. Children are laid out left to
    /// right by descending total, then name; a node's self value is the gap at its right end.
    pub x0: u64,
    pub children: Vec<NodeId>,
    pub parent: Option<NodeId>,
    /// This node's id in the unzoomed tree (itself there).
    pub origin: NodeId,
    /// The part of `total` from marked stacks ([`FlameTree::build_marked`], e.g. search
    /// matches); 0 in other trees.
    pub matched: u64,
    /// A diff tree's values ([`FlameTree::build_diff`]): Σ of the stacks through this node in
    /// A and in B; `[0, 0]` in other trees.
    pub pair: [u64; 2],
}

/// A flame/icicle tree: node 0 is the root; `depth` grows away from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlameTree {
    pub nodes: Vec<FlameNode>,
    pub unit: ValueUnit,
    /// The unzoomed root's total ("share of total" is relative to it).
    pub grand_total: u64,
    /// Built by [`FlameTree::build_marked`]: [`FlameNode::matched`] is meaningful.
    pub marked: bool,
    /// Built by [`FlameTree::build_diff`]: [`FlameNode::pair`] is meaningful.
    pub diff: bool,
}

/// A stack with its width, marked part and diff pair, for [`FlameTree::build_rows`].
type Row<'a> = (&'a [String], u64, u64, [u64; 2]);

/// One rectangle for a renderer: `[x0, x1)` in units of the root's width (root = `[0, 1)`),
/// `depth` rows below the root.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlameRect {
    pub x0: f64,
    pub x1: f64,
    pub depth: u32,
    pub node: NodeId,
    /// A stable hash of the node's name (FNV-1a, folded to 32 bits) for colouring.
    pub color_hash: u32,
}

/// FNV-1a of `name`, xor-folded to 32 bits.
pub fn color_hash(name: &str) -> u32 {
    let h = crate::site::fnv1a(&[name.as_bytes()]);
    (h ^ (h >> 32)) as u32
}

impl FlameTree {
    /// The tree of `entries` (stacks root first; duplicates are summed, any order).
    pub fn build(entries: &[FoldedEntry], unit: ValueUnit) -> FlameTree {
        let rows: Vec<Row> = entries
            .iter()
            .map(|(f, v)| (f.as_slice(), *v, 0, [0, 0]))
            .collect();
        Self::build_rows(rows, unit)
    }

    /// The tree of `entries` where each node also knows the part of its total that comes from
    /// `matched` ([`FlameNode::matched`]): stacks of `matched` are summed into the stacks of
    /// `entries` they equal; a matched value is capped at its stack's value, and a stack only
    /// in `matched` is ignored (it is meant to be a subset, e.g. [`super::folded_of`] the matches).
    pub fn build_marked(
        entries: &[FoldedEntry],
        matched: &[FoldedEntry],
        unit: ValueUnit,
    ) -> FlameTree {
        let mut by: BTreeMap<&[String], (u64, u64)> = BTreeMap::new();
        for (f, v) in entries {
            let slot = by.entry(f.as_slice()).or_insert((0, 0));
            slot.0 = slot.0.saturating_add(*v);
        }
        for (f, v) in matched {
            if let Some(slot) = by.get_mut(f.as_slice()) {
                slot.1 = slot.1.saturating_add(*v);
            }
        }
        let rows: Vec<Row> = by
            .into_iter()
            .map(|(f, (v, m))| (f, v, m.min(v), [0, 0]))
            .collect();
        let mut t = Self::build_rows(rows, unit);
        t.marked = true;
        t
    }

    /// A differential tree of two folded profiles: a stack's width is the larger of its values
    /// in `a` and `b` (so stacks that shrank or vanished stay visible), and every node carries
    /// both sums in [`FlameNode::pair`].
    pub fn build_diff(a: &[FoldedEntry], b: &[FoldedEntry], unit: ValueUnit) -> FlameTree {
        let mut by: BTreeMap<&[String], [u64; 2]> = BTreeMap::new();
        for (i, side) in [a, b].into_iter().enumerate() {
            for (f, v) in side {
                let slot = by.entry(f.as_slice()).or_insert([0, 0]);
                slot[i] = slot[i].saturating_add(*v);
            }
        }
        let rows: Vec<Row> = by
            .into_iter()
            .map(|(f, p)| (f, p[0].max(p[1]), 0, p))
            .collect();
        let mut t = Self::build_rows(rows, unit);
        t.diff = true;
        t
    }

    fn build_rows(mut rows: Vec<Row<'_>>, unit: ValueUnit) -> FlameTree {
        let node = |name: String, depth: u32, parent: Option<NodeId>, id: NodeId| FlameNode {
            name,
            total: 0,
            self_value: 0,
            depth,
            x0: 0,
            children: Vec::new(),
            parent,
            origin: id,
            matched: 0,
            pair: [0, 0],
        };
        let mut nodes = vec![node(ROOT_NAME.to_string(), 0, None, 0)];
        // Leaf values: (self value, matched, pair) per node.
        let mut leaf: Vec<(u64, u64, [u64; 2])> = vec![(0, 0, [0, 0])];
        // Sorted, rows sharing a prefix are adjacent: walk with the current path.
        rows.sort_by(|a, b| a.0.cmp(b.0));
        let mut path: Vec<NodeId> = vec![0];
        let mut prev: &[String] = &[];
        for (frames, v, m, p) in &rows {
            let common = prev
                .iter()
                .zip(frames.iter())
                .take_while(|(a, b)| a == b)
                .count();
            path.truncate(common + 1);
            for (d, f) in frames.iter().enumerate().skip(common) {
                let parent = path[d];
                let id = nodes.len() as NodeId;
                nodes.push(node(f.clone(), d as u32 + 1, Some(parent), id));
                leaf.push((0, 0, [0, 0]));
                nodes[parent as usize].children.push(id);
                path.push(id);
            }
            let l = &mut leaf[path[frames.len()] as usize];
            l.0 = l.0.saturating_add(*v);
            l.1 = l.1.saturating_add(*m);
            l.2 = [l.2[0].saturating_add(p[0]), l.2[1].saturating_add(p[1])];
            prev = frames;
        }
        // Sums bottom-up: children always have larger ids than their parent.
        for i in (0..nodes.len()).rev() {
            let (sv, mut m, mut p) = leaf[i];
            let mut t = sv;
            for &c in &nodes[i].children {
                let c = &nodes[c as usize];
                t = t.saturating_add(c.total);
                m = m.saturating_add(c.matched);
                p = [
                    p[0].saturating_add(c.pair[0]),
                    p[1].saturating_add(c.pair[1]),
                ];
            }
            let n = &mut nodes[i];
            n.self_value = sv;
            n.total = t;
            n.matched = m;
            n.pair = p;
        }
        let mut tree = FlameTree {
            grand_total: nodes[0].total,
            nodes,
            unit,
            marked: false,
            diff: false,
        };
        tree.layout_children();
        tree
    }

    /// Sort every node's children (descending total, then name) and set `x0`.
    fn layout_children(&mut self) {
        for i in 0..self.nodes.len() {
            let mut ch = std::mem::take(&mut self.nodes[i].children);
            ch.sort_by(|&a, &b| {
                let (a, b) = (&self.nodes[a as usize], &self.nodes[b as usize]);
                b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name))
            });
            let mut x = self.nodes[i].x0;
            for &c in &ch {
                self.nodes[c as usize].x0 = x;
                x = x.saturating_add(self.nodes[c as usize].total);
            }
            self.nodes[i].children = ch;
        }
    }

    pub fn root(&self) -> &FlameNode {
        &self.nodes[0]
    }

    pub fn node(&self, id: NodeId) -> Option<&FlameNode> {
        self.nodes.get(id as usize)
    }

    /// The subtree rooted at `node` as a tree of its own: that node becomes the root (depth 0,
    /// `x0` 0, full width), ids renumbered depth-first, [`FlameNode::origin`] kept.
    pub fn zoom(&self, node: NodeId) -> Option<FlameTree> {
        let top = self.node(node)?;
        let (dx, dd) = (top.x0, top.depth);
        let mut nodes: Vec<FlameNode> = Vec::new();
        // (old id, new parent)
        let mut todo: Vec<(NodeId, Option<NodeId>)> = vec![(node, None)];
        while let Some((old, parent)) = todo.pop() {
            let Some(n) = self.node(old) else {
                continue;
            };
            let id = nodes.len() as NodeId;
            if let Some(p) = parent.and_then(|p| nodes.get_mut(p as usize)) {
                p.children.push(id);
            }
            nodes.push(FlameNode {
                name: n.name.clone(),
                total: n.total,
                self_value: n.self_value,
                depth: n.depth.saturating_sub(dd),
                x0: n.x0.saturating_sub(dx),
                children: Vec::with_capacity(n.children.len()),
                parent,
                origin: n.origin,
                matched: n.matched,
                pair: n.pair,
            });
            for &c in n.children.iter().rev() {
                todo.push((c, Some(id)));
            }
        }
        Some(FlameTree {
            nodes,
            unit: self.unit,
            grand_total: self.grand_total,
            marked: self.marked,
            diff: self.diff,
        })
    }

    /// The path from the root to `node`, both included (empty for an unknown node).
    pub fn breadcrumb(&self, node: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut cur = self.node(node).map(|_| node);
        while let Some(id) = cur {
            if out.len() > self.nodes.len() {
                break; // not a tree: never loop
            }
            out.push(id);
            cur = self.node(id).and_then(|n| n.parent);
        }
        out.reverse();
        out
    }

    /// Rectangles of the subtree at `root`, which spans `[0, 1)`; nodes with a zero total are
    /// left out (except the root itself). Depth-first, parents before children.
    pub fn rects(&self, root: NodeId) -> Vec<FlameRect> {
        let Some(r) = self.node(root) else {
            return Vec::new();
        };
        let w = r.total as f64;
        let mut out = Vec::new();
        let mut todo = vec![root];
        while let Some(id) = todo.pop() {
            let Some(n) = self.node(id) else {
                continue;
            };
            if n.total == 0 && id != root {
                continue;
            }
            let (x0, x1) = if w > 0.0 {
                let x0 = n.x0.saturating_sub(r.x0) as f64 / w;
                (x0, x0 + n.total as f64 / w)
            } else {
                (0.0, 1.0)
            };
            out.push(FlameRect {
                x0,
                x1,
                depth: n.depth.saturating_sub(r.depth),
                node: id,
                color_hash: color_hash(&n.name),
            });
            todo.extend(n.children.iter().rev());
        }
        out
    }

    /// The node at `x` (root width = 1) and `depth` rows below the root, if any.
    pub fn hit(&self, x: f64, depth: u32) -> Option<NodeId> {
        self.hit_in(0, x, depth)
    }

    /// [`FlameTree::hit`] within the subtree at `root` (as laid out by [`FlameTree::rects`]).
    pub fn hit_in(&self, root: NodeId, x: f64, depth: u32) -> Option<NodeId> {
        let r = self.node(root)?;
        if !(0.0..1.0).contains(&x) || r.total == 0 {
            return None;
        }
        let xv = r.x0 as f64 + x * r.total as f64;
        let mut cur = root;
        for _ in 0..depth {
            let n = self.node(cur)?;
            // Children are left to right by x0; the last one starting at or before xv.
            let i = n
                .children
                .partition_point(|&c| self.node(c).is_some_and(|c| c.x0 as f64 <= xv));
            let c = *n.children.get(i.checked_sub(1)?)?;
            let cn = self.node(c)?;
            if xv >= cn.x0 as f64 + cn.total as f64 || cn.total == 0 {
                return None;
            }
            cur = c;
        }
        Some(cur)
    }

    fn value_text(&self, v: u64) -> String {
        match self.unit {
            ValueUnit::Bytes => size_long(v),
            ValueUnit::ByteSteps => format!("{} byte·steps", count(v)),
        }
    }

    /// `node.total / grand_total` in `[0, 1]` (0 for an empty tree).
    pub fn share(&self, node: NodeId) -> f64 {
        match self.node(node) {
            Some(n) if self.grand_total > 0 => n.total as f64 / self.grand_total as f64,
            _ => 0.0,
        }
    }

    /// A signed difference as text: `+<value>`, `-<value>` or `±0`.
    pub fn delta_text(&self, a: u64, b: u64) -> String {
        if b > a {
            format!("+{}", self.value_text(b - a))
        } else if a > b {
            format!("-{}", self.value_text(a - b))
        } else {
            "±0".to_string()
        }
    }

    /// The tooltip's numbers ([`NodeInfo`]).
    pub fn node_info(&self, node: NodeId) -> Option<NodeInfo> {
        let n = self.node(node)?;
        let share = self.share(node);
        let [a, b] = n.pair;
        Some(NodeInfo {
            node,
            name: n.name.clone(),
            value: n.total,
            value_text: self.value_text(n.total),
            share,
            share_text: format!("{:.2}%", share * 100.0),
            self_value: n.self_value,
            self_text: self.value_text(n.self_value),
            depth: n.depth,
            children: n.children.len(),
            unit: self.unit,
            matched: self.marked.then_some(n.matched),
            matched_text: self.marked.then(|| self.value_text(n.matched)),
            a: self.diff.then_some(a),
            b: self.diff.then_some(b),
            a_text: self.diff.then(|| self.value_text(a)),
            b_text: self.diff.then(|| self.value_text(b)),
            delta_text: self.diff.then(|| self.delta_text(a, b)),
        })
    }

    /// [`FlameTree::node_info`] as JSON (the fields of a marked or diff tree only there).
    pub fn node_json(&self, node: NodeId) -> Option<serde_json::Value> {
        serde_json::to_value(self.node_info(node)?).ok()
    }

    /// The tooltip as text: the name, then `<value> (<share> of total)`, then `self: <value>`;
    /// a marked tree adds `matched: <value>`, a diff tree `A: <a>, B: <b> (<delta>)` (the value
    /// line of a diff tree is the larger of the two).
    pub fn tooltip(&self, node: NodeId) -> Option<String> {
        let n = self.node(node)?;
        let mut t = format!(
            "{}\n{} ({:.2}% of total)\nself: {}",
            n.name,
            self.value_text(n.total),
            self.share(node) * 100.0,
            self.value_text(n.self_value)
        );
        if self.marked {
            t.push_str(&format!("\nmatched: {}", self.value_text(n.matched)));
        }
        if self.diff {
            let [a, b] = n.pair;
            t.push_str(&format!(
                "\nA: {}, B: {} ({})",
                self.value_text(a),
                self.value_text(b),
                self.delta_text(a, b)
            ));
        }
        Some(t)
    }
}

/// One node's numbers, for its tooltip: `value` (exact), `value_text` (memory_viz's formatSize,
/// or `N byte·steps`), `share` (of the unzoomed total, 0..1); in a marked tree `matched`, in a
/// diff tree `a`, `b` and their texts (the other fields absent).
#[derive(Clone, Debug, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct NodeInfo {
    pub node: NodeId,
    pub name: String,
    pub value: u64,
    pub value_text: String,
    pub share: f64,
    pub share_text: String,
    pub self_value: u64,
    pub self_text: String,
    pub depth: u32,
    pub children: usize,
    pub unit: ValueUnit,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub matched: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub matched_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub a: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub b: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub a_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub b_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub delta_text: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flame::escape_frame;

    fn e(frames: &[&str], v: u64) -> FoldedEntry {
        (frames.iter().map(|s| s.to_string()).collect(), v)
    }

    #[test]
    fn tree_layout() {
        let t = FlameTree::build(
            &[
                e(&["a", "b"], 3),
                e(&["a", "c"], 5),
                e(&["a"], 2),
                e(&["d"], 1),
            ],
            ValueUnit::Bytes,
        );
        assert_eq!(t.root().total, 11);
        let a = t.root().children[0];
        assert_eq!(t.nodes[a as usize].name, "a");
        assert_eq!(t.nodes[a as usize].total, 10);
        assert_eq!(t.nodes[a as usize].self_value, 2);
        let kids: Vec<(&str, u64)> = t.nodes[a as usize]
            .children
            .iter()
            .map(|&c| (t.nodes[c as usize].name.as_str(), t.nodes[c as usize].x0))
            .collect();
        assert_eq!(kids, vec![("c", 0), ("b", 5)]);
        assert_eq!(escape_frame("a;b\nc"), "a\u{FF1B}b c");
    }

    #[test]
    fn marked_tree() {
        let all = [e(&["a", "b"], 3), e(&["a", "c"], 5), e(&["d"], 1)];
        let hits = [e(&["a", "c"], 2), e(&["d"], 9), e(&["zz"], 4)];
        let t = FlameTree::build_marked(&all, &hits, ValueUnit::Bytes);
        assert!(t.marked && !t.diff);
        let by_name = |n: &str| t.nodes.iter().find(|x| x.name == n).expect("test value");
        assert_eq!(t.root().total, 9);
        // Capped at the stack's value; a stack only in the matches is ignored.
        assert_eq!(t.root().matched, 3);
        assert_eq!(by_name("a").matched, 2);
        assert_eq!(by_name("b").matched, 0);
        assert_eq!(by_name("c").matched, 2);
        assert_eq!(by_name("d").matched, 1);
        let z = t.zoom(t.root().children[0]).expect("test value");
        assert_eq!(z.root().matched, 2);
        assert!(t
            .tooltip(0)
            .expect("test value")
            .ends_with(&format!("matched: {}", size_long(3))));
    }

    #[test]
    fn diff_tree() {
        let a = [e(&["a", "b"], 10), e(&["a", "c"], 4), e(&["gone"], 7)];
        let b = [e(&["a", "b"], 16), e(&["a", "c"], 4), e(&["new"], 1)];
        let t = FlameTree::build_diff(&a, &b, ValueUnit::Bytes);
        assert!(t.diff);
        let by_name = |n: &str| t.nodes.iter().find(|x| x.name == n).expect("test value");
        // Widths are max(a, b) per stack: 16 + 4 + 7 + 1.
        assert_eq!(t.root().total, 28);
        assert_eq!(t.root().pair, [21, 21]);
        assert_eq!(by_name("a").pair, [14, 20]);
        assert_eq!(by_name("gone").pair, [7, 0]);
        assert_eq!(by_name("new").pair, [0, 1]);
        let id = t
            .nodes
            .iter()
            .position(|x| x.name == "a")
            .expect("test value") as NodeId;
        let j = t.node_json(id).expect("test value");
        assert_eq!(j["delta_text"], format!("+{}", size_long(6)));
        assert_eq!(j["a"], 14);
        let (a, b, d) = (size_long(14), size_long(20), size_long(6));
        assert!(t
            .tooltip(id)
            .expect("test value")
            .ends_with(&format!("A: {a}, B: {b} (+{d})")));
        assert_eq!(t.delta_text(5, 5), "±0");
    }
}
