//! `SELECT (COUNT(*) AS ?n) { ?x (p|^q|…)+ ?y }`, optionally in `GRAPH`:
//! a one-or-more path of predicates and their inverses counted as a
//! traversal, not evaluated.
//!
//! spareval evaluates such a path by asking the dataset for each step's
//! edges from each node it reaches: a pattern lookup per node per step,
//! which over a corpus asks every chunk each time (a `+` path over ten
//! chunks of 10M quads took 126 s, DuckDB's recursive CTE 71 s). Here each
//! predicate's rows are read once as ids (`view::ids`, each chunk's rows a
//! set), every node named once per chunk and column and given one number
//! across chunks, and the closure is walked over those numbers in memory.
//!
//! The answer is spareval's: one solution per distinct pair of ends joined
//! by a path of one step or more (per graph under `GRAPH ?g`), so the count
//! is, for each node with an edge out, how many distinct nodes it reaches.
//! `tests/analytic_shortcuts.rs` checks it against evaluation over base ⊕
//! delta and corpora.

use oxrdf::Variable;
use rustc_hash::FxHashMap;
use spargebra::algebra::{AggregateExpression, GraphPattern, PropertyPathExpression};
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern};
use spargebra::Query;

use super::analytic::{
    added_value, canonical, next_rows, single_aggregate, IdMap, Operand, PagesWithinBudget, Stop,
};
use super::dataset::StoreDataset;
use crate::format::term::DEFAULT_GRAPH;
use crate::store::read::held::{hashed_bytes, HeldBytes};
use crate::store::StoreError;
use crate::view::ids::Next;

/// An edge: its graph's number (0 without `GRAPH ?g`), and the numbers of
/// the nodes it leaves and reaches.
type Edge = (u32, u32, u32);

/// Edges past this many are left to evaluation (about 200 MiB of edges
/// and names).
const MAX_EDGES: usize = 1 << 24;

/// A `COUNT(*)` of a one-or-more path of predicates and inverses.
pub struct PathCount {
    pub(super) out: Variable,
    /// Each step's predicate, and whether it is walked backwards (`^p`).
    steps: Vec<(oxrdf::NamedNode, bool)>,
    /// `GRAPH` around the path, if any.
    graph: Option<NamedNodePattern>,
}

/// The shape, when the query is one.
pub(super) fn path_count_of(query: &Query) -> Option<PathCount> {
    let (variable, aggregate, inner) = single_aggregate(query)?;
    if !matches!(aggregate, AggregateExpression::CountSolutions { distinct: false }) {
        return None;
    }
    let (graph, body) = match inner {
        GraphPattern::Graph { name, inner } => (Some(name.clone()), &**inner),
        other => (None, other),
    };
    let GraphPattern::Path { subject, path: PropertyPathExpression::OneOrMore(step), object } = body else {
        return None;
    };
    let (TermPattern::Variable(x), TermPattern::Variable(y)) = (subject, object) else { return None };
    if x == y
        || graph.as_ref().is_some_and(|g| matches!(g, NamedNodePattern::Variable(v) if v == x || v == y))
    {
        return None;
    }
    let mut steps = Vec::new();
    alternatives(step, &mut steps)?;
    Some(PathCount { out: variable.clone(), steps, graph })
}

/// `p`, `^p` and alternatives of them, as predicates and directions.
fn alternatives(path: &PropertyPathExpression, out: &mut Vec<(oxrdf::NamedNode, bool)>) -> Option<()> {
    match path {
        PropertyPathExpression::NamedNode(p) => out.push((p.clone(), false)),
        PropertyPathExpression::Reverse(inner) => match &**inner {
            PropertyPathExpression::NamedNode(p) => out.push((p.clone(), true)),
            _ => return None,
        },
        PropertyPathExpression::Alternative(a, b) => {
            alternatives(a, out)?;
            alternatives(b, out)?;
        }
        _ => return None,
    }
    Some(())
}

/// Nodes named by token, one number each across chunks.
#[derive(Default)]
struct Names {
    numbers: FxHashMap<Vec<u8>, u32>,
    bytes: usize,
}

impl Names {
    fn number(&mut self, token: &[u8]) -> u32 {
        if let Some(&n) = self.numbers.get(token) {
            return n;
        }
        let n = self.numbers.len() as u32;
        self.bytes += token.len();
        self.numbers.insert(token.to_vec(), n);
        n
    }

    fn held(&self) -> usize {
        hashed_bytes(self.numbers.capacity(), std::mem::size_of::<(Vec<u8>, u32)>()) + self.bytes
    }
}

impl PathCount {
    /// The count, or `None` when a chunk cannot give ids or the edges are
    /// too many to hold.
    pub(super) fn count(&self, ds: &StoreDataset, stop: Stop) -> Result<Option<usize>, StoreError> {
        let Some(edges) = self.edges(ds, stop)? else { return Ok(None) };
        Ok(Some(reached_pairs(edges, stop)?))
    }

    /// Every edge `(graph, from, to)` of every step, walked forwards,
    /// sorted and without repeats.
    fn edges(&self, ds: &StoreDataset, stop: Stop) -> Result<Option<Vec<Edge>>, StoreError> {
        let by_graph = matches!(self.graph, Some(NamedNodePattern::Variable(_)));
        let (s, o) = (Variable::new_unchecked("s"), Variable::new_unchecked("o"));
        let (mut nodes, mut graphs) = (Names::default(), Names::default());
        let mut edges: Vec<Edge> = Vec::new();
        let mut held = HeldBytes::new();
        let mut pages = PagesWithinBudget::new(ds);
        for (p, backwards) in &self.steps {
            let triple = TriplePattern {
                subject: TermPattern::Variable(s.clone()),
                predicate: NamedNodePattern::NamedNode(p.clone()),
                object: TermPattern::Variable(o.clone()),
            };
            let bgp = GraphPattern::Bgp { patterns: vec![triple] };
            let pattern = match &self.graph {
                Some(name) => GraphPattern::Graph { name: name.clone(), inner: Box::new(bgp) },
                None => bgp,
            };
            let Some(op) = Operand::of(&pattern) else { return Ok(None) };
            let cols: &[usize] = if by_graph { &[0, 2, 3] } else { &[0, 2] };
            let Some(scans) = op.scan(ds, cols)? else { return Ok(None) };
            for mut scan in scans {
                // Each id named once per column of this chunk.
                let mut named: [IdMap<u32>; 4] = Default::default();
                loop {
                    let r = match next_rows(&mut scan, stop)? {
                        Next::Rows(r) => r,
                        Next::Tokens => return Ok(None),
                        Next::End => break,
                    };
                    for ids in &r.ids {
                        let mut number = |c: usize, names: &mut Names| -> Result<u32, StoreError> {
                            if let Some(&n) = named[c].get(&ids[c]) {
                                return Ok(n);
                            }
                            pages.tick();
                            let n = match c {
                                3 => names.number(r.dicts[3].token(ids[3])?),
                                _ => names.number(canonical(r.dicts[c], ids[c])?.bytes()),
                            };
                            named[c].insert(ids[c], n);
                            Ok(n)
                        };
                        let g = if by_graph { number(3, &mut graphs)? } else { 0 };
                        let (from, to) = (number(0, &mut nodes)?, number(2, &mut nodes)?);
                        edges.push(if *backwards { (g, to, from) } else { (g, from, to) });
                    }
                    if edges.len() > MAX_EDGES {
                        return Ok(None);
                    }
                    held.set(edges.capacity() * std::mem::size_of::<Edge>() + nodes.held() + graphs.held());
                }
                for q in &scan.added {
                    let (Some(from), Some(to)) = (added_value(q, 0), added_value(q, 2)) else { continue };
                    let g = match by_graph {
                        true => graphs.number(q.g.as_ref().map_or(DEFAULT_GRAPH.as_bytes(), |g| g.bytes())),
                        false => 0,
                    };
                    let (from, to) = (nodes.number(from.bytes()), nodes.number(to.bytes()));
                    edges.push(if *backwards { (g, to, from) } else { (g, from, to) });
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        Ok(Some(edges))
    }
}

/// How many distinct `(graph, start, end)` a walk of one step or more
/// joins: from each node with an edge out, a breadth-first walk over the
/// sorted edges of its graph.
fn reached_pairs(edges: Vec<Edge>, stop: Stop) -> Result<usize, StoreError> {
    // Node numbers are dense across graphs; one stamp per node marks it
    // seen by the current walk.
    let nodes = edges.iter().map(|&(_, a, b)| a.max(b) as usize + 1).max().unwrap_or(0);
    let mut held = HeldBytes::new();
    held.set(edges.capacity() * std::mem::size_of::<Edge>() + nodes * 4);
    let mut seen: Vec<u32> = vec![0; nodes];
    let mut walk = 0u32;
    let mut total = 0usize;
    let mut frontier: Vec<u32> = Vec::new();
    let mut at = 0;
    while at < edges.len() {
        let graph = edges[at].0;
        let end = at + edges[at..].partition_point(|e| e.0 == graph);
        let in_graph = &edges[at..end];
        let out_of = |node: u32| {
            let lo = in_graph.partition_point(|e| e.1 < node);
            let hi = lo + in_graph[lo..].partition_point(|e| e.1 == node);
            &in_graph[lo..hi]
        };
        let mut k = 0;
        while k < in_graph.len() {
            let start = in_graph[k].1;
            k += in_graph[k..].partition_point(|e| e.1 == start);
            if walk.is_multiple_of(4096) && stop() {
                return Err(StoreError::Cancelled { path: std::path::PathBuf::new() });
            }
            walk = walk.wrapping_add(1);
            if walk == 0 {
                seen.iter_mut().for_each(|s| *s = 0);
                walk = 1;
            }
            frontier.clear();
            frontier.push(start);
            while let Some(node) = frontier.pop() {
                for &(_, _, next) in out_of(node) {
                    if seen[next as usize] != walk {
                        seen[next as usize] = walk;
                        total += 1;
                        frontier.push(next);
                    }
                }
            }
        }
        at = end;
    }
    Ok(total)
}
