//! The Decoder's structure tree: a file's flat span list (dotted names such
//! as `batch[2].entry[0].object.lexical.len`) as nested nodes in file order,
//! with folding.
//!
//! Decoders record spans flat and in the order they read them; a person reads
//! a file as parts within parts. Groups are made from the names, not from a
//! second description of each format, so every decoder gets a tree for free.
//! Pure data: building and folding are tested without a terminal.

use crate::format::span::Span;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

/// One row of the tree: a span, a group of spans sharing a name prefix, or
/// both (a span whose name is also the prefix of others, like a Parquet column
/// chunk and its pages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Full dotted path, unique in the tree.
    pub path: String,
    /// The last segment of the path (`entry[0]`, `checksum`).
    pub label: String,
    pub depth: usize,
    /// The hull of the node's own span's bytes and its descendants'.
    pub range: Range<u64>,
    /// Index into the span list, when a span has exactly this path.
    pub span: Option<usize>,
    /// One past the last node of this node's subtree (`nodes[i+1..end]`).
    pub end: usize,
    /// Direct children.
    pub children: usize,
    /// Spans in this subtree (itself included) that the decoder found bad.
    pub bad: usize,
}

impl Node {
    pub fn is_group(&self) -> bool {
        self.children > 0
    }
}

/// Nodes in depth-first file order: each node's children follow it, sorted by
/// where their bytes start.
#[derive(Clone, Debug, Default)]
pub struct FieldTree {
    pub nodes: Vec<Node>,
    /// Node of each span (same index as the span list).
    of_span: Vec<usize>,
}

#[derive(Default)]
struct Trie {
    span: Option<usize>,
    children: BTreeMap<String, Trie>,
}

impl Trie {
    fn insert(&mut self, segments: &[&str], span: usize) {
        match segments.split_first() {
            None if self.span.is_none() => self.span = Some(span),
            // Duplicates are renamed before insertion (`name#2`); should a
            // renamed one meet a real `name#2`, it hangs below it rather than
            // disappearing.
            None => self.children.entry(format!("#{span}")).or_default().insert(&[], span),
            Some((first, rest)) => self.children.entry((*first).to_string()).or_default().insert(rest, span),
        }
    }
}

impl FieldTree {
    pub fn build(spans: &[Span]) -> FieldTree {
        let mut trie = Trie::default();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, s) in spans.iter().enumerate() {
            let n = seen.entry(s.name.as_str()).or_insert(0);
            *n += 1;
            let renamed;
            let name = if *n == 1 {
                s.name.as_str()
            } else {
                renamed = format!("{}#{n}", s.name);
                renamed.as_str()
            };
            let segments = split_path(name);
            trie.insert(&segments, i);
        }
        let mut tree = FieldTree { nodes: Vec::new(), of_span: vec![0; spans.len()] };
        tree.flatten_children(&trie, "", 0, spans);
        tree
    }

    /// Appends `trie`'s children (in file order) and their subtrees.
    fn flatten_children(&mut self, trie: &Trie, prefix: &str, depth: usize, spans: &[Span]) {
        let mut kids: Vec<(&String, &Trie, Range<u64>)> =
            trie.children.iter().map(|(k, t)| (k, t, hull(t, spans))).collect();
        // File order; a wider node first when two start together.
        kids.sort_by_key(|(_, _, r)| (r.start, std::cmp::Reverse(r.end)));
        for (label, child, range) in kids {
            let path = if prefix.is_empty() { label.clone() } else { format!("{prefix}.{label}") };
            let at = self.nodes.len();
            let own_bad = child.span.is_some_and(|i| !spans[i].is_ok());
            self.nodes.push(Node {
                path: path.clone(),
                label: label.clone(),
                depth,
                range,
                span: child.span,
                end: 0,
                children: child.children.len(),
                bad: usize::from(own_bad),
            });
            if let Some(i) = child.span {
                self.of_span[i] = at;
            }
            self.flatten_children(child, &path, depth + 1, spans);
            let end = self.nodes.len();
            let bad =
                self.nodes[at + 1..end].iter().filter(|n| n.span.is_some_and(|i| !spans[i].is_ok())).count();
            let node = &mut self.nodes[at];
            node.end = end;
            node.bad += bad;
        }
    }

    /// The node that shows span `i`.
    pub fn node_of_span(&self, i: usize) -> Option<usize> {
        self.of_span.get(i).copied()
    }

    /// The node with this path.
    pub fn find(&self, path: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.path == path)
    }

    /// Indices of the nodes that enclose node `i`, outermost first.
    pub fn ancestors(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut j = 0;
        while j < i {
            let n = &self.nodes[j];
            if n.end > i {
                out.push(j);
                j += 1; // descend
            } else {
                j = n.end; // skip the sibling's subtree
            }
        }
        out
    }

    /// The parent of node `i`.
    pub fn parent(&self, i: usize) -> Option<usize> {
        self.ancestors(i).last().copied()
    }
}

/// `a.b[2].c` → `["a", "b[2]", "c"]`. Dots inside brackets do not split.
fn split_path(name: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in name.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '.' if depth == 0 => {
                out.push(&name[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&name[start..]);
    out
}

/// The hull of the node's own span and everything below it (a log term's
/// span is its text; its tag and length come before it).
fn hull(t: &Trie, spans: &[Span]) -> Range<u64> {
    let mut r: Option<Range<u64>> = t.span.map(|i| spans[i].range.clone());
    for child in t.children.values() {
        let c = hull(child, spans);
        r = Some(match r {
            None => c,
            Some(r) => r.start.min(c.start)..r.end.max(c.end),
        });
    }
    r.unwrap_or(0..0)
}

/// Which groups are open. A group is open by default when it holds a bad
/// span (damage is never hidden) or when the whole tree is small enough to
/// read at once and healthy; a person's ▸/▾ overrides either.
#[derive(Clone, Debug, Default)]
pub struct Folds {
    overrides: HashMap<String, bool>,
    /// Every group open unless closed by hand (small trees, windowed views).
    all_open: bool,
    /// Groups holding damage open unless closed by hand.
    damage_opens: bool,
}

/// Trees up to this many nodes open whole.
const SMALL_TREE: usize = 64;

impl Folds {
    pub fn for_tree(tree: &FieldTree, windowed: bool) -> Folds {
        // With damage anywhere, only the damaged groups open, so it shows
        // on the first screen whatever the tree's size.
        let damaged = tree.nodes.iter().any(|n| n.bad > 0);
        let small = tree.nodes.len() <= SMALL_TREE && !damaged;
        Folds { overrides: HashMap::new(), all_open: windowed || small, damage_opens: true }
    }

    pub fn is_open(&self, node: &Node) -> bool {
        self.overrides
            .get(&node.path)
            .copied()
            .unwrap_or(self.all_open || (self.damage_opens && node.bad > 0))
    }

    pub fn set(&mut self, node: &Node, open: bool) {
        self.overrides.insert(node.path.clone(), open);
    }

    /// Every group open (`true`) or closed.
    pub fn set_all(&mut self, open: bool) {
        // Closing all closes damaged groups too: their rows still carry the
        // count of bad fields inside.
        self.overrides.clear();
        self.all_open = open;
        self.damage_opens = open;
    }
}

/// The nodes shown: those with no closed ancestor, in order.
pub fn visible(tree: &FieldTree, folds: &Folds) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tree.nodes.len() {
        let n = &tree.nodes[i];
        out.push(i);
        i = if n.is_group() && !folds.is_open(n) { n.end } else { i + 1 };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::span::Role;

    fn span(name: &str, range: Range<u64>, bad: bool) -> Span {
        Span {
            name: name.into(),
            range,
            role: Role::Value,
            value: None,
            reason: bad.then(|| "stored 1, computed 2".into()),
        }
    }

    fn log_spans() -> Vec<Span> {
        vec![
            span("magic", 0..4, false),
            span("version", 4..8, false),
            span("batch[0].magic", 8..12, false),
            span("batch[0].entry[0].tag", 12..13, false),
            span("batch[0].entry[0].object.lexical.len", 13..17, false),
            span("batch[0].checksum", 17..21, false),
            span("batch[1].magic", 21..25, false),
            span("batch[1].checksum", 25..29, true),
        ]
    }

    #[test]
    fn paths_split_on_dots_outside_brackets() {
        assert_eq!(split_path("a.b[2].c"), ["a", "b[2]", "c"]);
        assert_eq!(split_path("ranges[1.5].x"), ["ranges[1.5]", "x"]);
        assert_eq!(split_path("magic"), ["magic"]);
    }

    #[test]
    fn groups_nest_in_file_order_with_hulls_and_bad_counts() {
        let spans = log_spans();
        let t = FieldTree::build(&spans);
        let rows: Vec<(usize, &str, Range<u64>, usize)> =
            t.nodes.iter().map(|n| (n.depth, n.label.as_str(), n.range.clone(), n.bad)).collect();
        assert_eq!(
            rows,
            vec![
                (0, "magic", 0..4, 0),
                (0, "version", 4..8, 0),
                (0, "batch[0]", 8..21, 0),
                (1, "magic", 8..12, 0),
                (1, "entry[0]", 12..17, 0),
                (2, "tag", 12..13, 0),
                (2, "object", 13..17, 0),
                (3, "lexical", 13..17, 0),
                (4, "len", 13..17, 0),
                (1, "checksum", 17..21, 0),
                (0, "batch[1]", 21..29, 1),
                (1, "magic", 21..25, 0),
                (1, "checksum", 25..29, 1),
            ]
        );
        assert_eq!(t.nodes[2].end, 10);
        assert_eq!(t.node_of_span(7), Some(12));
        assert_eq!(t.ancestors(8), vec![2, 4, 6, 7]);
        assert_eq!(t.parent(3), Some(2));
        assert_eq!(t.parent(0), None);
    }

    #[test]
    fn a_span_that_is_also_a_prefix_is_its_group_and_duplicates_stay() {
        let spans = vec![
            span("footer.metadata", 100..200, false),
            span("row_group[0].s", 4..50, false),
            span("row_group[0].s.page[0].header", 4..20, false),
            span("row_group[0].s.page[0].data", 20..50, false),
            span("ids[]", 50..60, false),
            span("ids[]", 60..70, false),
            span("term", 75..90, false),
            span("term.len", 70..75, false),
        ];
        let t = FieldTree::build(&spans);
        let s = &t.nodes[t.find("row_group[0].s").unwrap()];
        assert_eq!(t.nodes[t.find("term").unwrap()].range, 70..90, "a term's tag and length first");
        assert_eq!((s.span, s.children, s.range.clone()), (Some(1), 1, 4..50));
        assert!(t.find("ids[]").is_some() && t.find("ids[]#2").is_some());
        // File order at the top: row_group (4), ids (50, 60), footer (100).
        let top: Vec<&str> = t.nodes.iter().filter(|n| n.depth == 0).map(|n| n.label.as_str()).collect();
        assert_eq!(top, ["row_group[0]", "ids[]", "ids[]#2", "term", "footer"]);
    }

    #[test]
    fn folding_hides_subtrees_and_damage_opens_by_default() {
        let spans = log_spans();
        let t = FieldTree::build(&spans);
        let mut folds = Folds { overrides: HashMap::new(), all_open: false, damage_opens: true };
        let labels = |v: Vec<usize>| v.into_iter().map(|i| t.nodes[i].path.clone()).collect::<Vec<_>>();
        assert_eq!(
            labels(visible(&t, &folds)),
            ["magic", "version", "batch[0]", "batch[1]", "batch[1].magic", "batch[1].checksum"]
        );
        folds.set(&t.nodes[2], true);
        folds.set(&t.nodes[10], false);
        assert_eq!(
            labels(visible(&t, &folds)),
            [
                "magic",
                "version",
                "batch[0]",
                "batch[0].magic",
                "batch[0].entry[0]",
                "batch[0].checksum",
                "batch[1]"
            ]
        );
        folds.set_all(true);
        assert_eq!(visible(&t, &folds).len(), t.nodes.len());
        assert!(!Folds::for_tree(&t, false).all_open, "damage: only damaged groups open");
        let healthy = FieldTree::build(&spans[..7]);
        assert!(Folds::for_tree(&healthy, false).all_open, "a small healthy tree opens whole");
    }
}
