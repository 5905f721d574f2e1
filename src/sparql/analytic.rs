//! Grouped counts and anti-/semi-joins over dictionary ids, for the shapes
//! users write most: `GROUP BY` one variable of one pattern, and one pattern
//! kept or dropped by whether another matches (`MINUS`, `FILTER NOT EXISTS`,
//! `FILTER EXISTS`, `OPTIONAL … FILTER(!BOUND(?v))`).
//!
//! spareval evaluates these by turning every matching row into a tuple of
//! terms and hashing terms, which at 10M quads cost more than reading the
//! rows. Here rows stay dictionary ids ([`crate::view::ids`]): a group is a
//! `u32` key counted in a hash map and named once at the end; a join key is a
//! `u32` looked up in the other side's set, translated between chunks or
//! columns only when the two sides' ids come from different dictionaries.
//! The overlay's added quads are tokens, matched as tokens. Which base rows
//! are visible is decided by the view, as for evaluation.
//!
//! The shapes are matched exactly: each side one triple pattern (optionally
//! in `GRAPH`) with distinct variables and no blank nodes, and for the joins
//! exactly one variable shared, so `MINUS`, `NOT EXISTS` and an unmatched
//! `OPTIONAL` all mean "no row of the right side has this value". One
//! `GRAPH ?g` around both sides adds the graph to that value: rows meet
//! within a graph, and the key is the pair of ids.
//!
//! Over a corpus, each side's rows are a set (a quad two chunks hold is
//! read once: `StoreDataset::id_quads`), and keys meet across chunks either
//! translated into each chunk's dictionaries or, when that would search far
//! more than there are keys, merged once in token order.
//! Anything else is evaluated. `tests/analytic_shortcuts.rs` checks each
//! shape against plain evaluation over base ⊕ delta.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use oxrdf::{Literal, Term, Variable};
use spargebra::algebra::{AggregateExpression, AggregateFunction, Expression, GraphPattern};
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern};
use spargebra::Query;

use super::dataset::StoreDataset;
use super::shortcut::{group_shape, one_triple, GroupShape, PatternTerms};
use crate::format::term::{token_variants, DEFAULT_GRAPH};
use crate::store::read::held::{hashed_bytes, HeldBytes};
use crate::store::read::SEARCHES_PER_PAGE_CHECK;
use crate::store::sidecars::mapped::DictMap;
use crate::store::StoreError;
use crate::view::ids::{IdQuads, Next};
use crate::view::terms::{from_token, Tok};
use crate::view::ViewQuad;

/// A hasher for `u32` ids: one multiply, where SipHash cost more than the
/// rest of a grouped count.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (i ^ (i >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by ids (`K`: a `u32` id, or a `u64` [`Key`] of two).
pub(super) type IdMap<V, K = u32> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// What an [`IdMap`] holds, for [`HeldBytes`] (its values' own heap
/// allocations aside).
pub(super) fn id_map_bytes<K, V>(m: &IdMap<V, K>) -> usize {
    hashed_bytes(m.capacity(), std::mem::size_of::<(K, V)>())
}

/// Before an insert that may double `m`'s table: reports the new table
/// beside the old (and `others` the operator holds), so that the caches
/// give way before the allocation rather than after it (a join side's
/// table at 100M quads went from 73 to 146 MiB past the limit).
pub(super) fn room_to_grow<K, V>(m: &IdMap<V, K>, held: &mut HeldBytes, others: usize) {
    if m.len() == m.capacity() {
        let doubled = hashed_bytes((m.capacity() + 4) * 2, std::mem::size_of::<(K, V)>());
        held.set(others + id_map_bytes(m) + doubled);
    }
}
type IdSet = HashSet<u32, BuildHasherDefault<IdHasher>>;

/// Rows a listed anti-/semi-join holds before it leaves the query to
/// evaluation, which streams them (a count holds none).
pub(super) const MAX_ROWS: usize = 1 << 20;

/// Whether the query was cancelled (its deadline passed): checked before
/// each row group.
pub type Stop<'s> = &'s dyn Fn() -> bool;

/// The next row group of `scan`, or [`StoreError::Cancelled`] once `stop`
/// says so.
pub(super) fn next_rows<'a>(scan: &mut IdQuads<'a>, stop: Stop) -> Result<Next<'a>, StoreError> {
    if stop() {
        return Err(StoreError::Cancelled { path: std::path::PathBuf::new() });
    }
    scan.next_rows()
}

/// One side: a triple pattern, optionally inside `GRAPH`.
#[derive(Clone, Debug)]
pub(super) struct Operand {
    triple: TriplePattern,
    graph: Option<NamedNodePattern>,
}

impl Operand {
    pub(super) fn of(pattern: &GraphPattern) -> Option<Operand> {
        let (graph, triple) = one_triple(pattern)?;
        let plain = |t: &TermPattern| {
            matches!(t, TermPattern::Variable(_) | TermPattern::NamedNode(_) | TermPattern::Literal(_))
        };
        let op = Operand { triple: triple.clone(), graph: graph.cloned() };
        let vars = op.vars();
        let distinct = vars.iter().map(|(v, _)| v).collect::<HashSet<_>>().len() == vars.len();
        (plain(&triple.subject) && plain(&triple.object) && distinct).then_some(op)
    }

    /// Each variable and its column (0 s, 1 p, 2 o, 3 g).
    fn vars(&self) -> Vec<(Variable, usize)> {
        let t = &self.triple;
        let term = |p: &TermPattern| match p {
            TermPattern::Variable(v) => Some(v.clone()),
            _ => None,
        };
        let node = |p: &NamedNodePattern| match p {
            NamedNodePattern::Variable(v) => Some(v.clone()),
            NamedNodePattern::NamedNode(_) => None,
        };
        [term(&t.subject), node(&t.predicate), term(&t.object), self.graph.as_ref().and_then(node)]
            .into_iter()
            .enumerate()
            .filter_map(|(c, v)| v.map(|v| (v, c)))
            .collect()
    }

    /// The operand inside `GRAPH ?g` when `graph` is `?g`; `None` when it
    /// names a graph of its own, or uses `?g` in its triple.
    fn in_graph(self, graph: Option<&Variable>) -> Option<Operand> {
        let Some(g) = graph else { return Some(self) };
        if self.graph.is_some() || self.col_of(g).is_some() {
            return None;
        }
        Some(Operand { graph: Some(NamedNodePattern::Variable(g.clone())), ..self })
    }

    pub(super) fn col_of(&self, var: &Variable) -> Option<usize> {
        self.vars().into_iter().find(|(v, _)| v == var).map(|(_, c)| c)
    }

    /// How many of subject, predicate, object and graph name are bound.
    pub(super) fn bound_terms(&self) -> usize {
        4 - self.vars().len() - usize::from(self.graph.is_none())
    }

    /// How many quads the pattern matches over the dataset (the count
    /// evaluation would see).
    pub(super) fn count(&self, ds: &StoreDataset) -> Result<usize, StoreError> {
        let PatternTerms { s, p, o, g, graph } = PatternTerms::of(&self.triple, self.graph.as_ref());
        let graph = graph.map(|named| named.then_some(g.as_ref()).flatten());
        ds.count(s.as_ref(), p.as_ref(), o.as_ref(), graph)
    }

    /// The pattern's answer in ids, one per part, through the same dataset
    /// call evaluation makes; `None` when a part has no dictionaries.
    pub(super) fn scan<'a>(
        &self,
        ds: &StoreDataset<'a>,
        columns: &[usize],
    ) -> Result<Option<Vec<IdQuads<'a>>>, StoreError> {
        self.scan_as(ds, columns, true)
    }

    /// [`Operand::scan`] as a bag: over a corpus whose chunks may share
    /// quads, a quad two chunks hold comes twice. Enough to ask whether a
    /// value occurs, and no row is looked up in another chunk.
    pub(super) fn scan_bag<'a>(
        &self,
        ds: &StoreDataset<'a>,
        columns: &[usize],
    ) -> Result<Option<Vec<IdQuads<'a>>>, StoreError> {
        self.scan_as(ds, columns, false)
    }

    fn scan_as<'a>(
        &self,
        ds: &StoreDataset<'a>,
        columns: &[usize],
        set: bool,
    ) -> Result<Option<Vec<IdQuads<'a>>>, StoreError> {
        let PatternTerms { s, p, o, g, graph } = PatternTerms::of(&self.triple, self.graph.as_ref());
        let graph = graph.map(|named| named.then_some(g.as_ref()).flatten());
        let mut read = [false; 4];
        for &c in columns {
            read[c] = true;
        }
        ds.id_quads(s.as_ref(), p.as_ref(), o.as_ref(), graph, read, set)
    }
}

/// An added quad's value in column `col`.
pub(super) fn added_value<'q, 'a>(q: &'q ViewQuad<'a>, col: usize) -> Option<&'q Tok<'a>> {
    match col {
        0 => Some(&q.s),
        1 => Some(&q.p),
        2 => Some(&q.o),
        _ => q.g.as_ref(),
    }
}

/// A base cell as its canonical token.
pub(super) fn canonical<'a>(dict: &'a DictMap, id: u32) -> Result<Tok<'a>, StoreError> {
    let raw = dict.token(id)?;
    Tok::from_cell(raw).ok_or_else(|| {
        StoreError::format_anywhere(
            dict.path(),
            format!("a cell is not a valid N-Triples term: {:?}", String::from_utf8_lossy(raw)),
        )
    })
}

/// A query this module answers.
pub enum Analytic {
    Grouped(GroupedCount),
    Filtered(Filtered),
    Distinct(DistinctCount),
    JoinCount(JoinCount),
    Sums(GroupedSums),
    TopK(super::topk::TopK),
    Path(super::paths::PathCount),
}

/// The query's shape, when this module answers it.
pub fn analytic_of(query: &Query) -> Option<Analytic> {
    grouped_count_of(query)
        .map(Analytic::Grouped)
        .or_else(|| filtered_of(query).map(Analytic::Filtered))
        .or_else(|| distinct_count_of(query).map(Analytic::Distinct))
        .or_else(|| join_count_of(query).map(Analytic::JoinCount))
        .or_else(|| grouped_sums_of(query).map(Analytic::Sums))
        .or_else(|| super::topk::top_k_of(query).map(Analytic::TopK))
        .or_else(|| super::paths::path_count_of(query).map(Analytic::Path))
}

impl Analytic {
    /// Whether the answer may be many rows, all computed before the first
    /// is written (a listed join, a row per group): the endpoint then runs
    /// it on a worker from the start, where an answer that outgrew the
    /// connection thread's buffer was computed a second time.
    pub fn rows_may_be_many(&self) -> bool {
        match self {
            Analytic::Grouped(_) | Analytic::Sums(_) => true,
            Analytic::Filtered(f) => matches!(f.out, Output::Rows(_)),
            Analytic::TopK(t) => t.every_row(),
            Analytic::Distinct(_) | Analytic::JoinCount(_) | Analytic::Path(_) => false,
        }
    }

    /// The answer, or `None` when the store cannot give ids (the query is
    /// then evaluated).
    pub fn answer(
        &self,
        ds: &StoreDataset,
        stop: Stop,
    ) -> Result<Option<spareval::QuerySolutionIter<'static>>, StoreError> {
        match self {
            Analytic::Grouped(g) => Ok(g.rows(ds, stop)?.and_then(|rows| g.shape.solutions_of(rows))),
            Analytic::Filtered(f) => f.answer(ds, stop),
            Analytic::Distinct(d) => Ok(d.count(ds, stop)?.map(|n| count_solution(&d.out, n))),
            Analytic::JoinCount(j) => Ok(j.count(ds, stop)?.map(|n| count_solution(&j.out, n))),
            Analytic::Sums(g) => g.answer(ds, stop),
            Analytic::TopK(t) => t.answer(ds, stop),
            Analytic::Path(p) => Ok(p.count(ds, stop)?.map(|n| count_solution(&p.out, n))),
        }
    }
}

/// The one solution `?var` = `n`.
fn count_solution(var: &Variable, n: usize) -> spareval::QuerySolutionIter<'static> {
    let vars: Arc<[Variable]> = Arc::from(vec![var.clone()]);
    let value = Term::Literal(Literal::from(n as i64));
    spareval::QuerySolutionIter::from_tuples(vars, std::iter::once(Ok(vec![Some(value)])))
}

/// `SELECT (AGG AS ?n) { inner }` with no grouping: `?n`, the aggregate
/// and `inner`.
pub(super) fn single_aggregate(query: &Query) -> Option<(&Variable, &AggregateExpression, &GraphPattern)> {
    let Query::Select { dataset: None, pattern: GraphPattern::Project { inner, variables }, .. } = query
    else {
        return None;
    };
    one_aggregate(inner, variables)
}

/// [`single_aggregate`] below the projection of `variables`.
fn one_aggregate<'q>(
    pattern: &'q GraphPattern,
    variables: &[Variable],
) -> Option<(&'q Variable, &'q AggregateExpression, &'q GraphPattern)> {
    let GraphPattern::Extend { inner, variable, expression: Expression::Variable(agg) } = pattern else {
        return None;
    };
    let GraphPattern::Group { inner, variables: keys, aggregates } = &**inner else { return None };
    let [(a, aggregate)] = aggregates.as_slice() else { return None };
    if variables != std::slice::from_ref(variable) || a != agg || !keys.is_empty() {
        return None;
    }
    Some((variable, aggregate, inner))
}

/// `SELECT (COUNT(DISTINCT ?v) AS ?n) { pattern }`, `?v` any variable of
/// one pattern (the dictionary-length shortcut covers a pattern of
/// variables alone).
pub struct DistinctCount {
    out: Variable,
    op: Operand,
    col: usize,
}

fn distinct_count_of(query: &Query) -> Option<DistinctCount> {
    let (variable, aggregate, inner) = single_aggregate(query)?;
    let AggregateExpression::FunctionCall {
        name: AggregateFunction::Count,
        expr: Expression::Variable(v),
        distinct: true,
    } = aggregate
    else {
        return None;
    };
    let op = Operand::of(inner)?;
    let col = op.col_of(v)?;
    Some(DistinctCount { out: variable.clone(), op, col })
}

impl DistinctCount {
    /// Distinct ids per part; over one part with no added quads their
    /// number, else the values named and merged by canonical token.
    fn count(&self, ds: &StoreDataset, stop: Stop) -> Result<Option<usize>, StoreError> {
        // A value two chunks hold is one value: the bag is enough.
        let Some(scans) = self.op.scan_bag(ds, &[self.col])? else { return Ok(None) };
        let single = scans.len() == 1;
        let mut tokens: HashSet<Vec<u8>> = HashSet::new();
        let mut n = 0;
        for mut scan in scans {
            let (mut ids, mut dict) = (IdSet::default(), None);
            loop {
                match next_rows(&mut scan, stop)? {
                    Next::Rows(r) => {
                        dict = Some(r.dicts[self.col]);
                        ids.extend(r.ids.iter().map(|q| q[self.col]));
                    }
                    Next::Tokens => return Ok(None),
                    Next::End => break,
                }
            }
            if single && scan.added.is_empty() {
                n = ids.len();
                continue;
            }
            if let Some(dict) = dict {
                let mut pages = PagesWithinBudget::new(ds);
                for id in ids {
                    pages.tick();
                    tokens.insert(canonical(dict, id)?.bytes().to_vec());
                }
            }
            tokens.extend(
                scan.added.iter().filter_map(|q| added_value(q, self.col)).map(|t| t.bytes().to_vec()),
            );
        }
        Ok(Some(n + tokens.len()))
    }
}

/// `SELECT ?k (COUNT(*) AS ?n) { pattern } GROUP BY ?k`, `?k` any variable of
/// one pattern, optionally ordered and cut (`GroupShape`).
pub struct GroupedCount {
    shape: GroupShape,
    op: Operand,
    col: usize,
}

fn grouped_count_of(query: &Query) -> Option<GroupedCount> {
    let (shape, inner, aggregate) = group_shape(query)?;
    let op = Operand::of(inner)?;
    match aggregate {
        AggregateExpression::CountSolutions { distinct: false } => {}
        // A variable of a triple pattern is always bound: COUNT(?v) counts rows.
        AggregateExpression::FunctionCall {
            name: AggregateFunction::Count,
            expr: Expression::Variable(v),
            distinct: false,
        } if op.col_of(v).is_some() => {}
        _ => return None,
    }
    let col = op.col_of(&shape.key)?;
    Some(GroupedCount { shape, op, col })
}

impl GroupedCount {
    /// Each value and its count: per part, counted by id, then named and
    /// summed by canonical token, plus the added quads. The dataset hands
    /// over parts only when no two may share a quad in the pattern's graphs
    /// (`StoreDataset::id_quads`), so the sum is the set's.
    fn rows(&self, ds: &StoreDataset, stop: Stop) -> Result<Option<Vec<(Term, usize)>>, StoreError> {
        let Some(scans) = self.op.scan(ds, &[self.col])? else { return Ok(None) };
        let mut total: HashMap<Vec<u8>, usize> = HashMap::new();
        for mut scan in scans {
            let mut by_id: IdMap<usize> = IdMap::default();
            let mut dict = None;
            loop {
                match next_rows(&mut scan, stop)? {
                    Next::Rows(r) => {
                        dict = Some(r.dicts[self.col]);
                        for ids in &r.ids {
                            *by_id.entry(ids[self.col]).or_insert(0) += 1;
                        }
                    }
                    Next::Tokens => return Ok(None),
                    Next::End => break,
                }
            }
            if let Some(dict) = dict {
                let mut pages = PagesWithinBudget::new(ds);
                for (id, n) in by_id {
                    pages.tick();
                    *total.entry(canonical(dict, id)?.bytes().to_vec()).or_insert(0) += n;
                }
            }
            for q in &scan.added {
                if let Some(v) = added_value(q, self.col) {
                    *total.entry(v.bytes().to_vec()).or_insert(0) += 1;
                }
            }
        }
        let mut rows = Vec::with_capacity(total.len());
        for (token, n) in total {
            let Some(term) = from_token(&token) else { return Ok(None) };
            rows.push((term, n));
        }
        Ok(Some(rows))
    }
}

/// Rows of one pattern kept by whether another pattern has their value of
/// the one variable they share.
pub struct Filtered {
    left: Operand,
    right: Operand,
    /// `EXISTS` keeps the rows that match; the others keep those that do not.
    keep_matched: bool,
    shared: Variable,
    /// Both sides are inside one `GRAPH ?g`: rows meet only within a graph.
    by_graph: bool,
    out: Output,
    /// `SELECT DISTINCT`: each projected row once.
    distinct: bool,
}

enum Output {
    /// `SELECT (COUNT(*) AS ?n)`.
    Count(Variable),
    /// The projected variables, each one of the left pattern's.
    Rows(Vec<Variable>),
}

/// The one variable two sides share, when they share exactly one.
pub(super) fn only_shared(left: &Operand, right: &Operand) -> Option<Variable> {
    let right_vars: Vec<Variable> = right.vars().into_iter().map(|(v, _)| v).collect();
    let shared: Vec<Variable> =
        left.vars().into_iter().map(|(v, _)| v).filter(|v| right_vars.contains(v)).collect();
    let [shared] = shared.as_slice() else { return None };
    Some(shared.clone())
}

fn filtered_of(query: &Query) -> Option<Filtered> {
    let Query::Select { dataset: None, pattern, .. } = query else { return None };
    let (pattern, distinct) = match pattern {
        GraphPattern::Distinct { inner } => (&**inner, true),
        other => (other, false),
    };
    let GraphPattern::Project { inner, variables } = pattern else { return None };
    if distinct {
        if let Some(semi) = distinct_join_of(inner, variables) {
            return Some(semi);
        }
    }
    let (body, out) = match one_aggregate(inner, variables) {
        Some((variable, AggregateExpression::CountSolutions { distinct: false }, body)) => {
            (body, Output::Count(variable.clone()))
        }
        Some(_) => return None,
        None => (&**inner, Output::Rows(variables.clone())),
    };
    // `GRAPH ?g { A MINUS B }`: both sides in `?g`, which joins them too.
    let (body, graph) = match body {
        GraphPattern::Graph { name: NamedNodePattern::Variable(g), inner } => (&**inner, Some(g)),
        other => (other, None),
    };
    let (left, right, keep_matched) = match body {
        GraphPattern::Minus { left, right } => (Operand::of(left)?, Operand::of(right)?, false),
        GraphPattern::Filter { expr: Expression::Exists(right), inner } => {
            (Operand::of(inner)?, Operand::of(right)?, true)
        }
        GraphPattern::Filter { expr: Expression::Not(e), inner } => match (&**e, &**inner) {
            (Expression::Exists(right), left) => (Operand::of(left)?, Operand::of(right)?, false),
            (Expression::Bound(v), GraphPattern::LeftJoin { left, right, expression: None }) => {
                let (l, r) = (Operand::of(left)?, Operand::of(right)?);
                // `?v` must come from the right side alone: unbound exactly
                // when no right row joined.
                if l.col_of(v).is_some() || r.col_of(v).is_none() {
                    return None;
                }
                (l, r, false)
            }
            _ => return None,
        },
        _ => return None,
    };
    let (left, right) = (left.in_graph(graph)?, right.in_graph(graph)?);
    let shared = only_shared_but(&left, &right, graph)?;
    if let Output::Rows(vars) = &out {
        if vars.iter().any(|v| left.col_of(v).is_none()) {
            return None;
        }
    }
    // DISTINCT of a count is the count.
    let distinct = distinct && matches!(out, Output::Rows(_));
    Some(Filtered { shared, by_graph: graph.is_some(), left, right, keep_matched, out, distinct })
}

/// The one variable two sides share besides the graph variable `graph`
/// both are in.
fn only_shared_but(left: &Operand, right: &Operand, graph: Option<&Variable>) -> Option<Variable> {
    let Some(g) = graph else { return only_shared(left, right) };
    let right_vars: Vec<Variable> = right.vars().into_iter().map(|(v, _)| v).collect();
    let shared: Vec<Variable> =
        left.vars().into_iter().map(|(v, _)| v).filter(|v| v != g && right_vars.contains(v)).collect();
    let [shared] = shared.as_slice() else { return None };
    Some(shared.clone())
}

/// `SELECT DISTINCT ?v… { A . B }`, two patterns through the one variable
/// they share, every projected variable one pattern's: under DISTINCT the
/// join is that pattern's rows that the other matches (a semi-join), so no
/// joined row is made and the rows are told apart by ids before any is
/// named.
fn distinct_join_of(body: &GraphPattern, variables: &[Variable]) -> Option<Filtered> {
    let (a, b) = two_patterns(body)?;
    let shared = only_shared(&a, &b)?;
    let all_in = |op: &Operand| variables.iter().all(|v| op.col_of(v).is_some());
    let (left, right) = if all_in(&a) {
        (a, b)
    } else if all_in(&b) {
        (b, a)
    } else {
        return None;
    };
    let out = Output::Rows(variables.to_vec());
    Some(Filtered { left, right, keep_matched: true, shared, by_graph: false, out, distinct: true })
}

/// A BGP of two triple patterns, in the default graph or one named graph
/// (a graph variable would be a second shared variable), as two operands.
pub(super) fn two_patterns(body: &GraphPattern) -> Option<(Operand, Operand)> {
    let (graph, bgp) = match body {
        GraphPattern::Graph { name: name @ NamedNodePattern::NamedNode(_), inner } => (Some(name), &**inner),
        other => (None, other),
    };
    let GraphPattern::Bgp { patterns } = bgp else { return None };
    let [l, r] = patterns.as_slice() else { return None };
    let side = |t: &TriplePattern| {
        let p = GraphPattern::Bgp { patterns: vec![t.clone()] };
        match graph {
            Some(name) => Operand::of(&GraphPattern::Graph { name: name.clone(), inner: Box::new(p) }),
            None => Operand::of(&p),
        }
    };
    Some((side(l)?, side(r)?))
}

/// Rows per [`Key`]: for a key of one dictionary's ids, a vector indexed by
/// id when the dictionary is small enough ([`DENSE_IDS`]: no hashing at
/// all), else a hash map of the keys met, which becomes the vector once it
/// would be the larger (about 20 bytes a hashed id against 4 a dictionary
/// id: the two sides of a large join at 100M quads held 1.2 GiB hashed).
/// A key that pairs a value with its graph is always hashed.
#[derive(Clone)]
enum Counts {
    Dense { by_id: Vec<u32>, distinct: usize, _held: HeldBytes },
    Hashed { map: IdMap<usize, Key>, dict_len: usize, dense_past: usize, held: HeldBytes },
}

/// A join key: a value's id, or under `GRAPH ?g` around both sides a
/// value's id and its graph's (`value << 32 | graph`, so keys in order are
/// values in their dictionary's order).
type Key = u64;

/// How a row's join key is made from its ids.
#[derive(Clone, Copy)]
struct KeyOf {
    /// The value's column.
    col: usize,
    /// Whether the graph is part of the key (both sides inside one
    /// `GRAPH ?g`).
    by_graph: bool,
}

impl KeyOf {
    fn of(&self, ids: &[u32; 4]) -> Key {
        match self.by_graph {
            true => (Key::from(ids[self.col]) << 32) | Key::from(ids[3]),
            false => Key::from(ids[self.col]),
        }
    }

    /// The columns a key is read from.
    fn columns(&self) -> Vec<usize> {
        if self.by_graph {
            vec![self.col, 3]
        } else {
            vec![self.col]
        }
    }
}

/// A hashed id and its count.
const ID_COUNT_BYTES: usize = std::mem::size_of::<(Key, usize)>();

/// Dictionaries up to this many ids are counted in a vector (32 MiB).
const DENSE_IDS: usize = 1 << 23;

/// A hashed count becomes a vector past `dictionary ids / this` ids.
const HASHED_PER_DENSE: usize = 5;

impl Counts {
    /// Counts keyed by `key_of`, its values from `dict`.
    fn for_keys(dict: &DictMap, key_of: KeyOf) -> Counts {
        match key_of.by_graph {
            true => Counts::hashed(dict.len(), usize::MAX),
            false => Counts::for_dict(dict),
        }
    }

    fn for_dict(dict: &DictMap) -> Counts {
        // Debug builds (the tests, whose dictionaries are all small) hash
        // two of every three, one of them never made a vector, so every
        // form is checked against evaluation.
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let form = if cfg!(debug_assertions) {
            MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 3
        } else {
            0
        };
        let dict_len = dict.len();
        match form {
            0 if dict_len <= DENSE_IDS => Counts::dense(dict_len),
            1 => Counts::hashed(dict_len, usize::MAX),
            _ => Counts::hashed(dict_len, dict_len / HASHED_PER_DENSE),
        }
    }

    fn hashed(dict_len: usize, dense_past: usize) -> Counts {
        Counts::Hashed { map: IdMap::default(), dict_len, dense_past, held: HeldBytes::new() }
    }

    fn dense(dict_len: usize) -> Counts {
        let mut held = HeldBytes::new();
        held.set(dict_len * std::mem::size_of::<u32>());
        Counts::Dense { by_id: vec![0; dict_len], distinct: 0, _held: held }
    }

    fn add(&mut self, id: Key, n: usize) {
        match self {
            Counts::Dense { by_id, distinct, .. } => {
                if let Some(c) = by_id.get_mut(id as usize) {
                    *distinct += usize::from(*c == 0);
                    *c = c.saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
                }
            }
            Counts::Hashed { map, dict_len, dense_past, held } => {
                room_to_grow(map, held, 0);
                *map.entry(id).or_insert(0) += n;
                if map.len() > *dense_past {
                    *self = Counts::dense_of(map, *dict_len);
                } else {
                    let bytes = hashed_bytes(map.capacity(), ID_COUNT_BYTES);
                    if bytes != held.bytes() {
                        held.set(bytes);
                    }
                }
            }
        }
    }

    fn dense_of(map: &IdMap<usize, Key>, dict_len: usize) -> Counts {
        let mut dense = Counts::dense(dict_len);
        for (&id, &n) in map {
            dense.add(id, n);
        }
        dense
    }

    fn get(&self, id: Key) -> usize {
        match self {
            Counts::Dense { by_id, .. } => by_id.get(id as usize).map_or(0, |&c| c as usize),
            Counts::Hashed { map, .. } => map.get(&id).copied().unwrap_or(0),
        }
    }

    fn distinct(&self) -> usize {
        match self {
            Counts::Dense { distinct, .. } => *distinct,
            Counts::Hashed { map, .. } => map.len(),
        }
    }

    /// Each id met and its count, in id order (the dictionary's order, so
    /// translating them into another dictionary gallops from one to the
    /// next: hashed ids in the map's order searched from a random place
    /// each, 36 µs a value at 100M quads).
    fn ascending(&self) -> Box<dyn Iterator<Item = (Key, usize)> + '_> {
        match self {
            Counts::Dense { .. } => self.each(),
            Counts::Hashed { map, .. } => {
                let mut ids: Vec<(Key, usize)> = map.iter().map(|(&id, &n)| (id, n)).collect();
                ids.sort_unstable_by_key(|&(id, _)| id);
                Box::new(ids.into_iter())
            }
        }
    }

    /// Each id met and its count.
    fn each(&self) -> Box<dyn Iterator<Item = (Key, usize)> + '_> {
        match self {
            Counts::Dense { by_id, .. } => Box::new(
                by_id.iter().enumerate().filter(|(_, &c)| c > 0).map(|(id, &c)| (id as Key, c as usize)),
            ),
            Counts::Hashed { map, .. } => Box::new(map.iter().map(|(&id, &n)| (id, n))),
        }
    }
}

/// The dictionaries a part's keys come from: the value's column's, and the
/// graph column's (used when the key pairs the value with its graph).
#[derive(Clone, Copy)]
struct KeyDicts<'a> {
    value: &'a DictMap,
    graph: &'a DictMap,
}

impl<'a> KeyDicts<'a> {
    fn of(dicts: [&'a DictMap; 4], key_of: KeyOf) -> Self {
        KeyDicts { value: dicts[key_of.col], graph: dicts[3] }
    }
}

/// An added quad's key by token: its value, and its graph when the key
/// pairs them (empty otherwise; `DEFAULT` for the default graph).
type AddedKey = (Vec<u8>, Vec<u8>);

fn added_key(q: &ViewQuad, key_of: KeyOf) -> Option<AddedKey> {
    let v = added_value(q, key_of.col)?;
    let g = match key_of.by_graph {
        true => q.g.as_ref().map_or(DEFAULT_GRAPH.as_bytes(), Tok::bytes).to_vec(),
        false => Vec::new(),
    };
    Some((v.bytes().to_vec(), g))
}

/// One side's keys (a join variable's values, with their graph under
/// `GRAPH ?g`) and how many rows hold each: per part, counts by ids of that
/// part's dictionaries, and the added quads' keys by token.
struct KeyCounts<'a> {
    key_of: KeyOf,
    parts: Vec<(Counts, Option<KeyDicts<'a>>)>,
    added: HashMap<AddedKey, usize>,
    /// Under `GRAPH ?g`: each part's graph ids, listed on first need.
    graphs: std::cell::RefCell<HashMap<usize, std::rc::Rc<[u32]>>>,
}

impl<'a> KeyCounts<'a> {
    /// `op`'s rows counted by their key; `None` when a part cannot give
    /// ids. `set`: a quad two chunks hold counts once (else twice, which is
    /// enough to ask whether a key occurs).
    fn of(
        op: &Operand,
        ds: &StoreDataset<'a>,
        key_of: KeyOf,
        stop: Stop,
        set: bool,
    ) -> Result<Option<KeyCounts<'a>>, StoreError> {
        let columns = key_of.columns();
        let scans = if set { op.scan(ds, &columns)? } else { op.scan_bag(ds, &columns)? };
        let Some(scans) = scans else { return Ok(None) };
        let mut keys =
            KeyCounts { key_of, parts: Vec::new(), added: HashMap::new(), graphs: Default::default() };
        for mut scan in scans {
            let (mut ids, mut dicts) = (Counts::hashed(0, usize::MAX), None);
            loop {
                match next_rows(&mut scan, stop)? {
                    Next::Rows(r) => {
                        if dicts.is_none() {
                            ids = Counts::for_keys(r.dicts[key_of.col], key_of);
                        }
                        dicts = Some(KeyDicts::of(r.dicts, key_of));
                        for q in &r.ids {
                            ids.add(key_of.of(q), 1);
                        }
                    }
                    Next::Tokens => return Ok(None),
                    Next::End => break,
                }
            }
            for key in scan.added.iter().filter_map(|q| added_key(q, key_of)) {
                *keys.added.entry(key).or_insert(0) += 1;
            }
            keys.parts.push((ids, dicts));
        }
        Ok(Some(keys))
    }

    /// Every key's count over all parts and added quads, keyed by ids of
    /// part `i`'s dictionaries `dicts` (the value's from column
    /// `target.col`): the same ids where they come from those dictionaries
    /// (borrowed when that is all there is), else each key looked up in
    /// them once (a key they lack matches no base row of the part).
    fn counts_in(
        &self,
        ds: &StoreDataset,
        i: usize,
        dicts: KeyDicts,
        target: KeyOf,
    ) -> Result<std::borrow::Cow<'_, Counts>, StoreError> {
        let same = |j: usize, kdicts: &KeyDicts| {
            j == i && target.col == self.key_of.col && std::ptr::eq(kdicts.value, dicts.value)
        };
        if let [(ids, Some(kdicts))] = self.parts.as_slice() {
            if same(0, kdicts) && self.added.is_empty() {
                return Ok(std::borrow::Cow::Borrowed(ids));
            }
        }
        let by_graph = self.key_of.by_graph;
        let mut out = Counts::for_keys(dicts.value, target);
        // A part's keys come in its value dictionary's order, so each
        // lookup gallops from the last one's place in `dicts.value`.
        let mut hint = 0;
        let mut pages = PagesWithinBudget::new(ds);
        let mut add = |v: &Tok, g: Option<u32>, n: usize, out: &mut Counts| -> Result<(), StoreError> {
            pages.tick();
            if let Some(id) = id_near(dicts.value, v, &mut hint)? {
                out.add(
                    if by_graph { (Key::from(id) << 32) | Key::from(g.unwrap_or(0)) } else { Key::from(id) },
                    n,
                );
            }
            Ok(())
        };
        for (j, (ids, kdicts)) in self.parts.iter().enumerate() {
            let Some(kdicts) = kdicts else { continue };
            if same(j, kdicts) {
                for (id, n) in ids.each() {
                    out.add(id, n);
                }
                continue;
            }
            if !by_graph {
                let keys: Vec<(Key, usize)> = ids.ascending().collect();
                let stores = [ds.parts[i].store(), ds.parts[j].store()];
                let keep_pages = || stores.iter().for_each(|s| s.keep_mapped_pages_within_budget());
                for (id, n) in translated(&keys, kdicts.value, dicts.value, &keep_pages)? {
                    out.add(Key::from(id), n);
                }
                continue;
            }
            // Only the keys of graphs part `i` has can match there (each
            // graph looked up once): a part sharing none is passed over
            // without reading its keys; else those keys are sorted, so their
            // values' searches gallop, and the rest cost a lookup by graph id.
            let mut graphs: IdMap<Option<u32>> = IdMap::default();
            for &g in self.graphs_of(j, ids).iter() {
                graphs.insert(g, dicts.graph.find(kdicts.graph.token(g)?)?);
            }
            if graphs.values().all(Option::is_none) {
                continue;
            }
            let mut landing: Vec<(Key, u32, usize)> = Vec::new();
            for (key, n) in ids.each() {
                let g = key as u32;
                let found = match graphs.get(&g) {
                    Some(&found) => found,
                    None => {
                        let found = dicts.graph.find(kdicts.graph.token(g)?)?;
                        graphs.insert(g, found);
                        found
                    }
                };
                if let Some(found) = found {
                    landing.push((key, found, n));
                }
            }
            landing.sort_unstable_by_key(|&(key, _, _)| key);
            for (key, graph, n) in landing {
                add(&canonical(kdicts.value, (key >> 32) as u32)?, Some(graph), n, &mut out)?;
            }
        }
        for ((v, g), &n) in &self.added {
            let graph = match by_graph {
                true => match dicts.graph.find(g)? {
                    Some(found) => Some(found),
                    None => continue,
                },
                false => None,
            };
            add(&Tok::Ref(v), graph, n, &mut out)?;
        }
        Ok(std::borrow::Cow::Owned(out))
    }

    /// The graph ids of part `j`'s keys `ids` (keys that pair a value with
    /// its graph), listed once.
    fn graphs_of(&self, j: usize, ids: &Counts) -> std::rc::Rc<[u32]> {
        let mut graphs = self.graphs.borrow_mut();
        let listed = graphs.entry(j).or_insert_with(|| {
            let mut all: Vec<u32> = ids.each().map(|(key, _)| key as u32).collect();
            all.sort_unstable();
            all.dedup();
            all.into()
        });
        std::rc::Rc::clone(listed)
    }

    /// How many pairs `op`'s rows make with these rows through the key:
    /// `op`'s rows streamed past these counts, never counted themselves
    /// (for a join of 2M rows with 690K at 10M quads, a second vector of
    /// counts over the whole dictionary, and a pass over it, saved). `None`
    /// when a part cannot give ids.
    fn met_by(
        &self,
        op: &Operand,
        ds: &StoreDataset<'a>,
        key_of: KeyOf,
        stop: Stop,
    ) -> Result<Option<usize>, StoreError> {
        let Some(scans) = op.scan(ds, &key_of.columns())? else { return Ok(None) };
        let mut n = 0usize;
        for (i, mut scan) in scans.into_iter().enumerate() {
            let mut theirs: Option<std::borrow::Cow<Counts>> = None;
            loop {
                match next_rows(&mut scan, stop)? {
                    Next::Rows(r) => {
                        if theirs.is_none() {
                            theirs = Some(self.counts_in(ds, i, KeyDicts::of(r.dicts, key_of), key_of)?);
                        }
                        let theirs = theirs.as_deref().expect("set above");
                        n += r.ids.iter().map(|q| theirs.get(key_of.of(q))).sum::<usize>();
                    }
                    Next::Tokens => return Ok(None),
                    Next::End => break,
                }
            }
            for key in scan.added.iter().filter_map(|q| added_key(q, key_of)) {
                n += self.total_for(ds, &key)?;
            }
        }
        Ok(Some(n))
    }

    /// How many rows hold the key `key` (an added quad's), over all parts.
    fn total_for(&self, ds: &StoreDataset, key: &AddedKey) -> Result<usize, StoreError> {
        let mut n = self.added.get(key).copied().unwrap_or(0);
        let (v, g) = key;
        for (j, (ids, _)) in self.parts.iter().enumerate() {
            let Some(value) = id_in(ds, j, self.key_of.col, &Tok::Ref(v))? else { continue };
            let id = match self.key_of.by_graph {
                true => match id_in(ds, j, 3, &Tok::Ref(g))? {
                    Some(graph) => (Key::from(value) << 32) | Key::from(graph),
                    None => continue,
                },
                false => Key::from(value),
            };
            n += ids.get(id);
        }
        Ok(n)
    }
}

/// The keys of one side that the other side has, with the other side's
/// count of each: per part, by that part's ids, and the added quads' keys
/// by token ([`KeyCounts::matched_in`]).
struct Matched {
    parts: Vec<Counts>,
    added: HashMap<AddedKey, usize>,
}

/// One side's keys in token order, from one part or from the added quads.
type KeyStream<'s> = Box<dyn Iterator<Item = Result<(AddedKey, Key, usize), StoreError>> + 's>;

impl<'a> KeyCounts<'a> {
    /// Each part's keys in its dictionaries' order, which is the order of
    /// their tokens, and the added quads' keys sorted: the streams a merge
    /// joins across parts.
    fn streams<'s>(&'s self, pages: &'s std::cell::RefCell<PagesWithinBudget<'_, '_>>) -> Vec<KeyStream<'s>> {
        let by_graph = self.key_of.by_graph;
        let mut streams: Vec<KeyStream<'s>> = Vec::new();
        for (ids, kdicts) in &self.parts {
            let Some(kdicts) = *kdicts else { continue };
            streams.push(Box::new(ids.ascending().map(move |(key, n)| {
                pages.borrow_mut().tick();
                let (value, graph) =
                    if by_graph { ((key >> 32) as u32, key as u32) } else { (key as u32, 0) };
                let v = canonical(kdicts.value, value)?.bytes().to_vec();
                let g = if by_graph { kdicts.graph.token(graph)?.to_vec() } else { Vec::new() };
                Ok(((v, g), key, n))
            })));
        }
        let mut added: Vec<(AddedKey, usize)> = self.added.iter().map(|(k, &n)| (k.clone(), n)).collect();
        added.sort_unstable();
        streams.push(Box::new(added.into_iter().map(|(k, n)| Ok((k, 0, n)))));
        streams
    }

    /// Whether one merge across parts ([`KeyCounts::matched_in`]) costs
    /// less than translating these keys into every part's dictionaries
    /// ([`KeyCounts::counts_in`] per part). A merge reads every key of both
    /// sides once; translating searches each part's keys in every other
    /// part, except, under `GRAPH ?g`, the keys of graphs that part lacks
    /// (a corpus split by graph translates little), so the searches are
    /// counted: more than twice this side's keys, and the merge is chosen.
    fn merge_is_cheaper(&self, ds: &StoreDataset) -> Result<bool, StoreError> {
        if ds.parts.len() < 2 {
            return Ok(false);
        }
        // Debug builds (the tests, whose corpora are all small) take each
        // way every other time, so both are checked against evaluation.
        if cfg!(debug_assertions) {
            static ASKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            return Ok(ASKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed).is_multiple_of(2));
        }
        let keys: usize = self.parts.iter().map(|(ids, _)| ids.distinct()).sum();
        let mut searches = 0usize;
        for (j, (ids, kdicts)) in self.parts.iter().enumerate() {
            let Some(kdicts) = kdicts else { continue };
            if !self.key_of.by_graph {
                searches += ids.distinct() * (ds.parts.len() - 1);
                continue;
            }
            let mut per_graph: IdMap<usize> = IdMap::default();
            for (key, _) in ids.each() {
                *per_graph.entry(key as u32).or_insert(0) += 1;
            }
            for (_, part) in ds.parts.iter().enumerate().filter(|(i, _)| *i != j) {
                let Some(graphs) = part.store().sidecars.dict(3) else {
                    searches += ids.distinct();
                    continue;
                };
                for (&g, &n) in &per_graph {
                    if graphs.find(kdicts.graph.token(g)?)?.is_some() {
                        searches += n;
                    }
                }
            }
            if searches > 2 * keys {
                return Ok(true);
            }
        }
        Ok(searches > 2 * keys)
    }

    /// For each of this side's parts, its keys that `other` has (by the
    /// part's ids) with `other`'s count, and the same for its added keys:
    /// one merge of every part's keys in token order, so a join over many
    /// chunks reads each key once, where translating every part's keys into
    /// every other part's dictionaries cost chunks² searches (a join over
    /// ten chunks of 10M quads: 132 s). `None` when a dictionary's order is
    /// not its canonical tokens' (another producer's literal spellings);
    /// the caller then translates.
    fn matched_in(&self, ds: &StoreDataset, other: &KeyCounts) -> Result<Option<Matched>, StoreError> {
        let pages = std::cell::RefCell::new(PagesWithinBudget::new(ds));
        let mine = self.streams(&pages);
        let mine_len = mine.len();
        let mut streams: Vec<KeyStream> = mine.into_iter().chain(other.streams(&pages)).collect();
        let mut matched = Matched {
            parts: self
                .parts
                .iter()
                .map(|(_, d)| match d {
                    Some(d) => Counts::for_keys(d.value, self.key_of),
                    None => Counts::hashed(0, usize::MAX),
                })
                .collect(),
            added: HashMap::new(),
        };
        // Which part each of `self`'s streams is (the last is the added keys).
        let part_of: Vec<usize> =
            self.parts.iter().enumerate().filter(|(_, (_, d))| d.is_some()).map(|(i, _)| i).collect();
        let mut heads: Vec<Option<(AddedKey, Key, usize)>> = Vec::with_capacity(streams.len());
        for s in &mut streams {
            heads.push(s.next().transpose()?);
        }
        let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<(AddedKey, usize)>> = heads
            .iter()
            .enumerate()
            .filter_map(|(k, h)| h.as_ref().map(|(t, _, _)| std::cmp::Reverse((t.clone(), k))))
            .collect();
        let mut group: Vec<(usize, Key, usize)> = Vec::new();
        while let Some(std::cmp::Reverse((token, _))) = heap.peek().cloned() {
            group.clear();
            while let Some(std::cmp::Reverse((t, k))) = heap.peek() {
                if *t != token {
                    break;
                }
                let k = *k;
                heap.pop();
                let (t, key, n) = heads[k].take().expect("a stream in the heap has a head");
                group.push((k, key, n));
                if let Some(next) = streams[k].next().transpose()? {
                    if next.0 < t {
                        return Ok(None);
                    }
                    heap.push(std::cmp::Reverse((next.0.clone(), k)));
                    heads[k] = Some(next);
                }
            }
            let theirs: usize = group.iter().filter(|(k, _, _)| *k >= mine_len).map(|(_, _, n)| n).sum();
            if theirs == 0 {
                continue;
            }
            for &(k, key, _) in group.iter().filter(|(k, _, _)| *k < mine_len) {
                match part_of.get(k) {
                    Some(&i) => matched.parts[i].add(key, theirs),
                    None => *matched.added.entry(token.clone()).or_insert(0) += theirs,
                }
            }
        }
        Ok(Some(matched))
    }
}

impl Filtered {
    fn answer(
        &self,
        ds: &StoreDataset,
        stop: Stop,
    ) -> Result<Option<spareval::QuerySolutionIter<'static>>, StoreError> {
        let (Some(lc), Some(rc)) = (self.left.col_of(&self.shared), self.right.col_of(&self.shared)) else {
            return Ok(None);
        };
        // Only whether a value occurs matters on the right: the bag will do.
        let (left_key, right_key) =
            (KeyOf { col: lc, by_graph: self.by_graph }, KeyOf { col: rc, by_graph: self.by_graph });
        let Some(right) = KeyCounts::of(&self.right, ds, right_key, stop, false)? else { return Ok(None) };
        // Over several parts: which of each left part's keys the right side
        // has, found by one merge across every part (the left keys read
        // first, as a bag: only which occur matters).
        let matched = match right.merge_is_cheaper(ds)? {
            true => match KeyCounts::of(&self.left, ds, left_key, stop, false)? {
                Some(left_keys) => left_keys.matched_in(ds, &right)?,
                None => return Ok(None),
            },
            false => None,
        };
        let cols: Vec<usize> = match &self.out {
            Output::Count(_) => Vec::new(),
            Output::Rows(vars) => vars.iter().filter_map(|v| self.left.col_of(v)).collect(),
        };
        let read: Vec<usize> = cols.iter().copied().chain(left_key.columns()).collect();
        let Some(scans) = self.left.scan(ds, &read)? else { return Ok(None) };
        let (mut count, mut rows) = (0usize, Vec::new());
        // DISTINCT: rows told apart by ids within a part, by terms across.
        let mut distinct_terms: HashSet<Vec<Term>> = HashSet::new();
        let mut pages = PagesWithinBudget::new(ds);
        // What the rows hold, counted against the memory limit (a term's
        // text reckoned at 48 bytes).
        let mut held = HeldBytes::new();
        let row_bytes = std::mem::size_of::<Vec<Term>>() + cols.len() * (std::mem::size_of::<Term>() + 48);
        let id_row_bytes = std::mem::size_of::<Vec<u32>>() + cols.len() * 4 + 1;
        for (i, mut scan) in scans.into_iter().enumerate() {
            let mut want: Option<std::borrow::Cow<Counts>> = None;
            let mut distinct_ids: HashSet<Vec<u32>> = HashSet::new();
            let mut dicts = None;
            loop {
                let r = match next_rows(&mut scan, stop)? {
                    Next::Rows(r) => r,
                    Next::Tokens => return Ok(None),
                    Next::End => break,
                };
                if want.is_none() {
                    want = Some(match &matched {
                        Some(m) => std::borrow::Cow::Borrowed(&m.parts[i]),
                        None => right.counts_in(ds, i, KeyDicts::of(r.dicts, left_key), left_key)?,
                    });
                }
                let want = want.as_ref().expect("set above");
                let kept = |ids: &&[u32; 4]| (want.get(left_key.of(ids)) > 0) == self.keep_matched;
                if self.distinct {
                    dicts = Some(r.dicts);
                    for ids in r.ids.iter().filter(kept) {
                        distinct_ids.insert(cols.iter().map(|&c| ids[c]).collect());
                        if distinct_ids.len() > MAX_ROWS {
                            return Ok(None);
                        }
                    }
                    held.set(distinct_terms.len() * row_bytes + distinct_ids.capacity() * id_row_bytes);
                    continue;
                }
                for ids in r.ids.iter().filter(kept) {
                    count += 1;
                    if rows.len() == MAX_ROWS {
                        // More than a result worth holding: evaluation streams it.
                        return Ok(None);
                    }
                    if !cols.is_empty() {
                        let mut row = Vec::with_capacity(cols.len());
                        for &c in &cols {
                            pages.tick();
                            row.push(term_of(&canonical(r.dicts[c], ids[c])?)?);
                        }
                        rows.push(row);
                    }
                }
                held.set(rows.len() * row_bytes);
            }
            if let Some(dicts) = dicts {
                for ids in distinct_ids {
                    pages.tick();
                    let row = ids.iter().zip(&cols).map(|(&id, &c)| term_of(&canonical(dicts[c], id)?));
                    distinct_terms.insert(row.collect::<Result<_, _>>()?);
                }
            }
            for q in &scan.added {
                let Some(key) = added_key(q, left_key) else { continue };
                let theirs = match &matched {
                    Some(m) => m.added.get(&key).copied().unwrap_or(0),
                    None => right.total_for(ds, &key)?,
                };
                if (theirs > 0) == self.keep_matched {
                    count += 1;
                    if self.distinct {
                        let row = cols.iter().map(|&c| added_value(q, c).map(term_of));
                        let Some(row) = row.collect::<Option<Result<Vec<Term>, _>>>() else {
                            return Ok(None);
                        };
                        distinct_terms.insert(row?);
                        continue;
                    }
                    if !cols.is_empty() {
                        let mut row = Vec::with_capacity(cols.len());
                        for &c in &cols {
                            let Some(t) = added_value(q, c) else { return Ok(None) };
                            row.push(term_of(t)?);
                        }
                        rows.push(row);
                    }
                }
            }
        }
        if self.distinct {
            rows = distinct_terms.into_iter().collect();
            count = rows.len();
        }
        Ok(Some(match &self.out {
            Output::Count(var) => count_solution(var, count),
            Output::Rows(vars) => {
                let vars: Arc<[Variable]> = Arc::from(vars.clone());
                let tuples = rows.into_iter().map(|r| Ok(r.into_iter().map(Some).collect()));
                spareval::QuerySolutionIter::from_tuples(vars, tuples)
            }
        }))
    }
}

/// `SELECT (COUNT(*) AS ?n) { A . B }`: two patterns joined through the one
/// variable they share, counted as the sum over its values of the rows
/// each side has with it, so no joined row is made.
pub struct JoinCount {
    out: Variable,
    left: Operand,
    right: Operand,
    shared: Variable,
    /// Both patterns are inside one `GRAPH ?g`, which joins them too.
    by_graph: bool,
}

fn join_count_of(query: &Query) -> Option<JoinCount> {
    let (variable, aggregate, inner) = single_aggregate(query)?;
    if !matches!(aggregate, AggregateExpression::CountSolutions { distinct: false }) {
        return None;
    }
    // `GRAPH ?g { A . B }`: both patterns in `?g`.
    let (inner, graph) = match inner {
        GraphPattern::Graph { name: NamedNodePattern::Variable(g), inner } => (&**inner, Some(g)),
        other => (other, None),
    };
    let (left, right) = two_patterns(inner)?;
    let (left, right) = (left.in_graph(graph)?, right.in_graph(graph)?);
    let shared = only_shared_but(&left, &right, graph)?;
    Some(JoinCount { out: variable.clone(), shared, by_graph: graph.is_some(), left, right })
}

impl JoinCount {
    fn count(&self, ds: &StoreDataset, stop: Stop) -> Result<Option<usize>, StoreError> {
        let (Some(lc), Some(rc)) = (self.left.col_of(&self.shared), self.right.col_of(&self.shared)) else {
            return Ok(None);
        };
        let (left_key, right_key) =
            (KeyOf { col: lc, by_graph: self.by_graph }, KeyOf { col: rc, by_graph: self.by_graph });
        if ds.parts.len() == 1 && lc == rc {
            // One chunk, both keys from one dictionary: nothing to translate
            // or merge, so one side is counted and the other's rows
            // streamed past it (the side with more bound terms counted,
            // likely the fewer rows).
            let (build, probe) = match self.left.bound_terms() > self.right.bound_terms() {
                true => (&self.left, &self.right),
                false => (&self.right, &self.left),
            };
            let key = left_key;
            let Some(counted) = KeyCounts::of(build, ds, key, stop, true)? else { return Ok(None) };
            return counted.met_by(probe, ds, key, stop);
        }
        let (Some(left), Some(right)) = (
            KeyCounts::of(&self.left, ds, left_key, stop, true)?,
            KeyCounts::of(&self.right, ds, right_key, stop, true)?,
        ) else {
            return Ok(None);
        };
        // The count is the same either way round: the side with fewer keys
        // is the one translated into the other's dictionaries (a join from
        // objects to subjects in one chunk translates between its two
        // columns' dictionaries, each key a search).
        let keys = |k: &KeyCounts| k.parts.iter().map(|(c, _)| c.distinct()).sum::<usize>() + k.added.len();
        let (probe, build) = if keys(&left) < keys(&right) { (&right, &left) } else { (&left, &right) };
        if build.merge_is_cheaper(ds)? {
            if let Some(matched) = probe.matched_in(ds, build)? {
                let mut n = 0usize;
                for ((ids, _), theirs) in probe.parts.iter().zip(&matched.parts) {
                    for (key, b) in theirs.each() {
                        n += ids.get(key) * b;
                    }
                }
                for (key, &a) in &probe.added {
                    n += a * matched.added.get(key).copied().unwrap_or(0);
                }
                return Ok(Some(n));
            }
        }
        let mut n = 0usize;
        for (i, (ids, dicts)) in probe.parts.iter().enumerate() {
            let Some(dicts) = dicts else { continue };
            let other = build.counts_in(ds, i, *dicts, probe.key_of)?;
            // Walk the one with fewer values, probe the other.
            let (small, large) =
                if ids.distinct() <= other.distinct() { (ids, &*other) } else { (&*other, ids) };
            for (id, a) in small.each() {
                n += a * large.get(id);
            }
        }
        for (key, &a) in &probe.added {
            n += a * build.total_for(ds, key)?;
        }
        Ok(Some(n))
    }
}

/// Keeps the parts' mapped pages within their budget through a long run of
/// dictionary searches (translating a join's values reads no row group,
/// where the budget is otherwise kept): a check every
/// [`SEARCHES_PER_PAGE_CHECK`] calls of [`PagesWithinBudget::tick`].
pub(super) struct PagesWithinBudget<'d, 'a> {
    ds: &'d StoreDataset<'a>,
    searched: u32,
}

impl<'d, 'a> PagesWithinBudget<'d, 'a> {
    pub(super) fn new(ds: &'d StoreDataset<'a>) -> Self {
        PagesWithinBudget { ds, searched: 0 }
    }

    pub(super) fn tick(&mut self) {
        self.searched = self.searched.wrapping_add(1);
        if self.searched.is_multiple_of(SEARCHES_PER_PAGE_CHECK) {
            for part in &self.ds.parts {
                part.store().keep_mapped_pages_within_budget();
            }
        }
    }
}

/// Keys one thread translates before another core joins in: a search
/// costs about half a microsecond, a thread about thirty.
const TRANSLATED_PER_THREAD: usize = 4096;

/// `keys`, ids of `from` in ascending order (its tokens' order), as ids of
/// `to` with their counts; a key `to` lacks is left out. Each run of keys
/// gallops through `to` from the last one's place; the runs are split
/// across the cores, since translating a join's keys is most of a semi-join
/// (130,000 objects of `ub:advisor` into `.s.dict` at 10M quads: 40% of its
/// time on one core). `keep_pages` keeps the mapped pages within their
/// budget, called every [`SEARCHES_PER_PAGE_CHECK`] searches.
fn translated(
    keys: &[(Key, usize)],
    from: &DictMap,
    to: &DictMap,
    keep_pages: &(dyn Fn() + Sync),
) -> Result<Vec<(u32, usize)>, StoreError> {
    let run = |part: &[(Key, usize)]| -> Result<Vec<(u32, usize)>, StoreError> {
        let (mut hint, mut out) = (0, Vec::with_capacity(part.len()));
        for (k, &(key, n)) in part.iter().enumerate() {
            if (k as u32).is_multiple_of(SEARCHES_PER_PAGE_CHECK) {
                keep_pages();
            }
            if let Some(id) = id_near(to, &canonical(from, key as u32)?, &mut hint)? {
                out.push((id, n));
            }
        }
        Ok(out)
    };
    let threads = (keys.len() / TRANSLATED_PER_THREAD).clamp(1, crate::store::read::cores());
    if threads == 1 {
        return run(keys);
    }
    let per = keys.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let runs: Vec<_> = keys.chunks(per).map(|part| scope.spawn(move || run(part))).collect();
        let mut out = Vec::with_capacity(keys.len());
        for r in runs {
            out.extend(r.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?);
        }
        Ok(out)
    })
}

/// Token `t`'s id in `dict`, in any producer's spelling of it, searched from
/// `hint` ([`DictMap::find_near`]).
pub(super) fn id_near(dict: &DictMap, t: &Tok, hint: &mut u64) -> Result<Option<u32>, StoreError> {
    if !t.is_literal() {
        // An IRI or blank node has one spelling, its canonical token.
        return dict.find_near(t.bytes(), hint);
    }
    let Some(term) = t.to_ours() else { return Ok(None) };
    for variant in token_variants(&term) {
        if let Some(id) = dict.find_near(variant.as_bytes(), hint)? {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// Token `t`'s id in part `i`'s column `col` dictionary, in any producer's
/// spelling of it.
fn id_in(ds: &StoreDataset, i: usize, col: usize, t: &Tok) -> Result<Option<u32>, StoreError> {
    match ds.parts[i].store().sidecars.dict(col) {
        Some(dict) => id_near(dict, t, &mut 0),
        None => Ok(None),
    }
}

pub(super) fn term_of(t: &Tok) -> Result<Term, StoreError> {
    from_token(t.bytes()).ok_or_else(|| {
        StoreError::format_anywhere(
            std::path::Path::new(""),
            format!("not a valid N-Triples term: {}", t.as_str()),
        )
    })
}

/// `SELECT ?k (SUM(?v) AS ?s) (AVG(?v) AS ?a) (COUNT(*) AS ?n) { ?x p ?k . ?x q ?v } GROUP BY ?k`:
/// sums, averages and counts of a value per key, the key and the value in
/// one pattern or in two joined through one variable. spareval joins row
/// by row and adds terms; here each side is read once as ids, each distinct
/// value is read as a number once, and the value side is reduced to a sum
/// and a count per join value before the key side is read, so no joined
/// row is made.
///
/// The numbers are exactly spareval's: the shortcut answers only when every
/// value is an `xsd:integer` literal and no partial sum can leave `i64`
/// (the sum is then an `xsd:integer` in any order of addition, and the
/// average `Decimal::from(sum) / count`, as spareval divides), and only
/// when neither side has quads the log adds. Otherwise the query is
/// evaluated.
pub struct GroupedSums {
    /// The projection, in order.
    vars: Vec<Variable>,
    key: Variable,
    aggs: Vec<(Variable, Agg)>,
    value: Variable,
    shape: SumShape,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agg {
    Sum,
    Avg,
    Count,
}

enum SumShape {
    /// Key and value in one pattern.
    One(Operand),
    /// The key's pattern and the value's, joined through `shared`.
    Two { keys: Box<Operand>, values: Box<Operand>, shared: Variable },
}

fn grouped_sums_of(query: &Query) -> Option<GroupedSums> {
    let Query::Select { dataset: None, pattern: GraphPattern::Project { inner, variables }, .. } = query
    else {
        return None;
    };
    let mut p = &**inner;
    let mut named = Vec::new();
    while let GraphPattern::Extend { inner, variable, expression: Expression::Variable(a) } = p {
        named.push((variable.clone(), a.clone()));
        p = inner;
    }
    let GraphPattern::Group { inner: body, variables: keys, aggregates } = p else { return None };
    let [key] = keys.as_slice() else { return None };
    let (mut value, mut aggs) = (None::<Variable>, Vec::new());
    for (out, a) in &named {
        let (_, agg) = aggregates.iter().find(|(v, _)| v == a)?;
        let kind = match agg {
            AggregateExpression::CountSolutions { distinct: false } => Agg::Count,
            AggregateExpression::FunctionCall { name, expr: Expression::Variable(v), distinct: false } => {
                let kind = match name {
                    AggregateFunction::Sum => Agg::Sum,
                    AggregateFunction::Avg => Agg::Avg,
                    AggregateFunction::Count => Agg::Count,
                    _ => return None,
                };
                if kind != Agg::Count && value.get_or_insert_with(|| v.clone()) != v {
                    return None;
                }
                kind
            }
            _ => return None,
        };
        aggs.push((out.clone(), kind));
    }
    let value = value?;
    if variables.iter().any(|v| v != key && !aggs.iter().any(|(o, _)| o == v)) {
        return None;
    }
    let shape = sum_shape(body, key, &value)?;
    // COUNT(?w) counts rows only where ?w is always bound: a variable of the patterns.
    let bound = |v: &Variable| match &shape {
        SumShape::One(op) => op.col_of(v).is_some(),
        SumShape::Two { keys, values, .. } => keys.col_of(v).is_some() || values.col_of(v).is_some(),
    };
    for (_, a) in aggregates {
        if let AggregateExpression::FunctionCall {
            name: AggregateFunction::Count,
            expr: Expression::Variable(v),
            ..
        } = a
        {
            if !bound(v) {
                return None;
            }
        }
    }
    Some(GroupedSums { vars: variables.clone(), key: key.clone(), aggs, value, shape })
}

fn sum_shape(body: &GraphPattern, key: &Variable, value: &Variable) -> Option<SumShape> {
    if let Some(op) = Operand::of(body) {
        return (op.col_of(key).is_some() && op.col_of(value).is_some() && key != value)
            .then_some(SumShape::One(op));
    }
    let (a, b) = two_patterns(body)?;
    let shared = only_shared(&a, &b)?;
    let (values, keys) = match (a.col_of(value).is_some(), b.col_of(value).is_some()) {
        (true, false) => (a, b),
        (false, true) => (b, a),
        _ => return None,
    };
    keys.col_of(key)?;
    Some(SumShape::Two { keys: Box::new(keys), values: Box::new(values), shared })
}

/// A sum and a count of integers, and the sum of their magnitudes (which
/// bounds every partial sum, in any order). The magnitude saturates; once
/// it is past `i64::MAX` the sum is no longer exact and the answer is left
/// to evaluation ([`Acc::exact`]), so the sum can wrap meanwhile. 24 bytes,
/// where `i128`s made 48: at 100M quads there is one per person.
#[derive(Clone, Copy, Default)]
struct Acc {
    sum: i64,
    magnitude: u64,
    count: u64,
}

impl Acc {
    fn of(n: i64) -> Acc {
        Acc { sum: n, magnitude: n.unsigned_abs(), count: 1 }
    }

    fn add(&mut self, other: &Acc) {
        self.sum = self.sum.wrapping_add(other.sum);
        self.magnitude = self.magnitude.saturating_add(other.magnitude);
        self.count += other.count;
    }

    /// Whether no partial sum can have left `i64` (so `sum` is exact).
    fn exact(&self) -> bool {
        self.magnitude <= i64::MAX as u64
    }
}

/// Each distinct id's integer, read once; `None` for a value that is not
/// an `xsd:integer` literal.
struct Numbers<'d> {
    dict: Option<&'d DictMap>,
    memo: IdMap<Option<i64>>,
}

impl<'d> Numbers<'d> {
    fn of(&mut self, dict: &'d DictMap, id: u32) -> Result<Option<i64>, StoreError> {
        if !self.dict.is_some_and(|d| std::ptr::eq(d, dict)) {
            self.dict = Some(dict);
            self.memo.clear();
        }
        if let Some(&n) = self.memo.get(&id) {
            return Ok(n);
        }
        let n = integer_of(term_of(&canonical(dict, id)?)?);
        self.memo.insert(id, n);
        Ok(n)
    }
}

impl GroupedSums {
    fn answer(
        &self,
        ds: &StoreDataset,
        stop: Stop,
    ) -> Result<Option<spareval::QuerySolutionIter<'static>>, StoreError> {
        let Some(groups) = self.groups(ds, stop)? else { return Ok(None) };
        let mut rows = Vec::with_capacity(groups.len());
        for (token, acc) in groups {
            if !acc.exact() {
                return Ok(None);
            }
            let Some(key) = from_token(&token) else { return Ok(None) };
            let sum = oxsdatatypes::Integer::from(acc.sum);
            let mut row = Vec::with_capacity(self.vars.len());
            for v in &self.vars {
                let agg = self.aggs.iter().find(|(o, _)| o == v).map(|(_, a)| *a);
                row.push(Some(match agg {
                    None => key.clone(),
                    Some(Agg::Count) => Term::Literal(Literal::from(acc.count as i64)),
                    Some(Agg::Sum) => Term::Literal(Literal::from(sum)),
                    Some(Agg::Avg) => {
                        let count = oxsdatatypes::Integer::from(acc.count as i64);
                        let Some(avg) = oxsdatatypes::Decimal::from(sum).checked_div(count) else {
                            return Ok(None);
                        };
                        Term::Literal(Literal::from(avg))
                    }
                }));
            }
            rows.push(Ok(row));
        }
        let vars: Arc<[Variable]> = Arc::from(self.vars.clone());
        Ok(Some(spareval::QuerySolutionIter::from_tuples(vars, rows)))
    }

    /// Each key's token and its accumulated values.
    fn groups(&self, ds: &StoreDataset, stop: Stop) -> Result<Option<HashMap<Vec<u8>, Acc>>, StoreError> {
        match &self.shape {
            SumShape::One(op) => {
                let (Some(kc), Some(vc)) = (op.col_of(&self.key), op.col_of(&self.value)) else {
                    return Ok(None);
                };
                let Some(reduced) = accumulate(op, ds, kc, vc, stop)? else { return Ok(None) };
                let mut groups = reduced.added.clone();
                let mut pages = PagesWithinBudget::new(ds);
                for (accs, dict) in &reduced.parts {
                    for (&id, acc) in accs {
                        let Some(dict) = dict else { continue };
                        pages.tick();
                        groups
                            .entry(canonical(dict, id)?.bytes().to_vec())
                            .or_insert_with(Acc::default)
                            .add(acc);
                    }
                }
                Ok(Some(groups))
            }
            SumShape::Two { keys, values, shared } => {
                let cols = (
                    values.col_of(shared),
                    values.col_of(&self.value),
                    keys.col_of(shared),
                    keys.col_of(&self.key),
                );
                let (Some(xv), Some(vc), Some(xk), Some(kc)) = cols else { return Ok(None) };
                let Some(per_x) = accumulate(values, ds, xv, vc, stop)? else { return Ok(None) };
                self.keyed(keys, ds, (xk, kc), &per_x, xv, stop)
            }
        }
    }

    /// The key side read once: each row adds its join value's sums to its key's.
    fn keyed(
        &self,
        keys: &Operand,
        ds: &StoreDataset,
        (xk, kc): (usize, usize),
        per_x: &Reduced,
        xv: usize,
        stop: Stop,
    ) -> Result<Option<HashMap<Vec<u8>, Acc>>, StoreError> {
        let Some(scans) = keys.scan(ds, &[xk, kc])? else { return Ok(None) };
        let mut groups: HashMap<Vec<u8>, Acc> = HashMap::new();
        let mut at_held = HeldBytes::new();
        for mut scan in scans {
            let mut by_key: IdMap<Acc> = IdMap::default();
            let (mut at, mut kdict) = (None, None);
            loop {
                let r = match next_rows(&mut scan, stop)? {
                    Next::Rows(r) => r,
                    Next::Tokens => return Ok(None),
                    Next::End => break,
                };
                if at.is_none() {
                    let sums = in_dict(ds, per_x, xv, r.dicts[xk], xk)?;
                    if let Cow::Owned(m) = &sums {
                        at_held.set(id_map_bytes(m));
                    }
                    at = Some(sums);
                }
                kdict = Some(r.dicts[kc]);
                let at = at.as_ref().expect("set above");
                for ids in &r.ids {
                    if let Some(acc) = at.get(&ids[xk]) {
                        by_key.entry(ids[kc]).or_default().add(acc);
                    }
                }
            }
            for q in &scan.added {
                let (Some(x), Some(k)) = (added_value(q, xk), added_value(q, kc)) else { return Ok(None) };
                let acc = per_x.of_token(x)?;
                if acc.count > 0 {
                    groups.entry(k.bytes().to_vec()).or_default().add(&acc);
                }
            }
            if let Some(kdict) = kdict {
                let mut pages = PagesWithinBudget::new(ds);
                for (id, acc) in by_key {
                    pages.tick();
                    groups.entry(canonical(kdict, id)?.bytes().to_vec()).or_default().add(&acc);
                }
            }
        }
        Ok(Some(groups))
    }
}

/// Sums per join value: per part by id of that part's dictionary, and the
/// log's added quads by token.
struct Reduced<'a> {
    parts: Vec<(IdMap<Acc>, Option<&'a DictMap>)>,
    added: HashMap<Vec<u8>, Acc>,
    /// The parts' maps, counted against the memory limit.
    _held: HeldBytes,
}

impl Reduced<'_> {
    /// The sums of the join value `t`, a token.
    fn of_token(&self, t: &Tok) -> Result<Acc, StoreError> {
        let mut acc = self.added.get(t.bytes()).copied().unwrap_or_default();
        for (accs, dict) in &self.parts {
            let Some(dict) = dict else { continue };
            if let Some(id) = id_near(dict, t, &mut 0)? {
                if let Some(a) = accs.get(&id) {
                    acc.add(a);
                }
            }
        }
        Ok(acc)
    }
}

/// `op`'s rows reduced per value of column `by` to the sum and count of
/// column `of`'s integers; `None` when a value is not an integer or a part
/// cannot give ids.
fn accumulate<'a>(
    op: &Operand,
    ds: &StoreDataset<'a>,
    by: usize,
    of: usize,
    stop: Stop,
) -> Result<Option<Reduced<'a>>, StoreError> {
    let Some(scans) = op.scan(ds, &[by, of])? else { return Ok(None) };
    let mut parts = Vec::new();
    let mut added: HashMap<Vec<u8>, Acc> = HashMap::new();
    let (mut held, mut earlier_parts) = (HeldBytes::new(), 0);
    for mut scan in scans {
        let (mut accs, mut dict): (IdMap<Acc>, _) = (IdMap::default(), None);
        let mut numbers = Numbers { dict: None, memo: IdMap::default() };
        loop {
            let r = match next_rows(&mut scan, stop)? {
                Next::Rows(r) => r,
                Next::Tokens => return Ok(None),
                Next::End => break,
            };
            dict = Some(r.dicts[by]);
            for ids in &r.ids {
                let Some(n) = numbers.of(r.dicts[of], ids[of])? else { return Ok(None) };
                room_to_grow(&accs, &mut held, earlier_parts);
                accs.entry(ids[by]).or_default().add(&Acc::of(n));
            }
            held.set(earlier_parts + id_map_bytes(&accs));
        }
        earlier_parts += id_map_bytes(&accs);
        for q in &scan.added {
            let (Some(k), Some(v)) = (added_value(q, by), added_value(q, of)) else { return Ok(None) };
            let Some(n) = integer_of(term_of(v)?) else { return Ok(None) };
            added.entry(k.bytes().to_vec()).or_default().add(&Acc::of(n));
        }
        parts.push((accs, dict));
    }
    Ok(Some(Reduced { parts, added, _held: held }))
}

/// An `xsd:integer` literal's value.
fn integer_of(t: Term) -> Option<i64> {
    match t {
        Term::Literal(l) if l.datatype() == oxrdf::vocab::xsd::INTEGER => {
            l.value().parse::<oxsdatatypes::Integer>().ok().map(i64::from)
        }
        _ => None,
    }
}

/// Per-part sums keyed by ids of column `from`, merged and keyed by ids of
/// `dict` (column `col`): the same ids where they come from that
/// dictionary, else each looked up once, galloping in the source's order.
fn in_dict<'r>(
    ds: &StoreDataset,
    reduced: &'r Reduced,
    from: usize,
    dict: &DictMap,
    col: usize,
) -> Result<Cow<'r, IdMap<Acc>>, StoreError> {
    if let [(accs, Some(d))] = reduced.parts.as_slice() {
        if from == col && std::ptr::eq(*d, dict) && reduced.added.is_empty() {
            return Ok(Cow::Borrowed(accs));
        }
    }
    let mut out: IdMap<Acc> = IdMap::default();
    let mut hint = 0;
    let mut pages = PagesWithinBudget::new(ds);
    for (t, acc) in &reduced.added {
        if let Some(to) = id_near(dict, &Tok::Ref(t), &mut hint)? {
            out.entry(to).or_default().add(acc);
        }
    }
    for (accs, source) in &reduced.parts {
        let Some(source) = source else { continue };
        let mut ids: Vec<(&u32, &Acc)> = accs.iter().collect();
        ids.sort_unstable_by_key(|(id, _)| **id);
        let mut hint = 0;
        for (&id, acc) in ids {
            pages.tick();
            if let Some(to) = id_near(dict, &canonical(source, id)?, &mut hint)? {
                out.entry(to).or_default().add(acc);
            }
        }
    }
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::{translated, Acc, DictMap, Key, TRANSLATED_PER_THREAD};
    use crate::store::sidecars::checked::CheckedFile;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn dict_of(tokens: impl Iterator<Item = String>) -> DictMap {
        let tokens: Vec<Vec<u8>> = tokens.map(String::into_bytes).collect();
        let d = crate::format::dict::Dict::from_sorted(tokens.iter().map(Vec::as_slice));
        let bytes: crate::store::sidecars::checked::SharedFile =
            std::sync::Arc::new(crate::format::dict::encode(&d));
        DictMap::open(CheckedFile::whole_in_memory(std::path::Path::new("test.dict"), bytes)).unwrap()
    }

    /// Split across threads or not, each key lands on its token's id in the
    /// other dictionary, in order, and a key it lacks is left out.
    #[test]
    fn keys_translated_on_several_threads_are_those_found_one_by_one() {
        let from = dict_of((0..3 * TRANSLATED_PER_THREAD).map(|i| format!("<t{:08}>", 3 * i)));
        let to = dict_of((0..5 * TRANSLATED_PER_THREAD).map(|i| format!("<t{:08}>", 2 * i)));
        for len in [0, 1, TRANSLATED_PER_THREAD - 1, 2 * TRANSLATED_PER_THREAD + 7, 3 * TRANSLATED_PER_THREAD]
        {
            let keys: Vec<(Key, usize)> = (0..len as Key).map(|k| (k, 10 + k as usize)).collect();
            let mut want = Vec::new();
            for &(k, n) in &keys {
                if let Some(id) = to.find(from.token(k as u32).unwrap()).unwrap() {
                    want.push((id, n));
                }
            }
            let checks = AtomicUsize::new(0);
            let got = translated(&keys, &from, &to, &|| {
                checks.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
            assert_eq!(got, want, "{len} keys");
            assert!(len == 0 || !got.is_empty(), "every sixth number is in both");
            assert!(checks.load(Ordering::Relaxed) >= len / super::SEARCHES_PER_PAGE_CHECK as usize);
        }
    }

    #[test]
    fn a_sum_is_exact_only_while_its_magnitudes_fit_i64() {
        let mut acc = Acc::of(i64::MAX);
        acc.add(&Acc::of(-5));
        assert_eq!(acc.sum, i64::MAX - 5);
        // Every partial sum is bounded, but the magnitudes are not: one
        // order of addition may have overflowed, so it is left to spareval.
        assert!(!acc.exact());
        let mut small = Acc::of(-7);
        small.add(&Acc::of(3));
        assert!(small.exact());
        assert_eq!((small.sum, small.count), (-4, 2));
        let mut huge = Acc::of(i64::MIN);
        huge.add(&Acc::of(i64::MIN));
        assert!(!huge.exact(), "saturates instead of wrapping");
    }
}
