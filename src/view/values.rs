//! The distinct values of one column of a view, from the base's dictionaries
//! corrected by the delta: the one place that decides which dictionary
//! values a pending DELETE, CLEAR or DROP leaves standing and which values
//! an INSERT adds, for the SPARQL shortcuts (`SELECT DISTINCT ?p`,
//! `COUNT(DISTINCT ?s)`) that ask it.
//!
//! A dictionary describes exactly what a pattern sees only when the
//! pattern ranges over every graph the base has and the version's digests
//! prove the sidecars were built from this base; otherwise the answer is
//! `None` and the caller evaluates. A base value the delta may hide (a
//! cleared graph in range, a removed quad with that value:
//! `Overlay::hideable`) is kept only if a count of its quads in the view is not
//! zero.

use std::collections::HashSet;

use oxrdf::Term;

use super::terms::{from_token, Tok};
use super::{Graphs, View};
use crate::format::term::DEFAULT_GRAPH;
use crate::store::sidecars::mapped::{DictMap, PresenceMap};
use crate::store::sort::{shared_prefix, Tournament};
use crate::store::versions::open::Store;
use crate::store::StoreError;

/// Which column, over which graphs.
#[derive(Clone, Copy, Debug)]
pub struct ColumnScope {
    /// 0: the subject, 1: the predicate, 2: the object, 3: the graph.
    pub col: usize,
    /// Only named graphs (the pattern is under `GRAPH ?g`).
    pub named_only: bool,
    /// The default graph is the union of all graphs.
    pub union_default_graph: bool,
}

impl View<'_> {
    /// The distinct values of the scope's column, in dictionary order, then
    /// the delta's values the dictionary lacks; the default graph's token is
    /// not a value. `None` when the dictionaries cannot say.
    pub fn distinct_values(&self, scope: ColumnScope) -> Result<Option<Vec<Term>>, StoreError> {
        let sc = &self.store.sidecars;
        let (Some(range), Some(dict), Some(presence)) =
            (self.whole_range(scope)?, sc.dict(scope.col), sc.presence(scope.col))
        else {
            return Ok(None);
        };
        let hideable = self.overlay.hideable(scope.col, |g| range.holds(g));
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for id in 0..dict.len() as u32 {
            let token = dict.token(id)?;
            if token == DEFAULT_GRAPH.as_bytes() || !in_some_row_group(presence, id)? {
                continue;
            }
            let Some(t) = from_token(token) else { return Ok(None) };
            if hideable.may_hide_all(&Tok::from_term(&t)) && !self.holds_value(scope.col, &t, range)? {
                continue;
            }
            seen.insert(t.clone());
            out.push(t);
        }
        let mut added: Vec<Term> =
            self.added_values(scope.col, range).into_iter().filter(|t| !seen.contains(t)).collect();
        added.sort_by_cached_key(Term::to_string);
        out.extend(added);
        Ok(Some(out))
    }

    /// This view's distinct values in the scope's column as its dictionary
    /// less the base values its delta hides every quad of (each checked by a
    /// count), plus the delta's values the dictionary lacks. `None` when the
    /// dictionaries cannot say, or a cleared graph in range may hide any
    /// value.
    fn column_values(&self, scope: ColumnScope) -> Result<Option<ColumnValues<'_>>, StoreError> {
        let (Some(range), Some(dict)) = (self.whole_range(scope)?, self.store.sidecars.dict(scope.col))
        else {
            return Ok(None);
        };
        let hideable = self.overlay.hideable(scope.col, |g| range.holds(g));
        if hideable.every {
            return Ok(None);
        }
        let mut hidden = HashSet::new();
        for token in hideable.values {
            let Some(t) = from_token(token.as_bytes()) else { return Ok(None) };
            if dict.find(token.as_bytes())?.is_some() && !self.holds_value(scope.col, &t, range)? {
                hidden.insert(token.into_bytes());
            }
        }
        let mut added = Vec::new();
        for t in self.added_values(scope.col, range) {
            let token = Tok::from_term(&t).bytes().to_vec();
            if dict.find(&token)?.is_none() {
                added.push(token);
            }
        }
        added.sort_unstable();
        added.dedup();
        Ok(Some(ColumnValues { store: self.store, dict, hidden, added }))
    }

    /// The graphs the scope ranges over, when they are every graph the base
    /// has and its sidecars are proven built from it: only then do the
    /// dictionaries describe exactly what the pattern sees.
    fn whole_range<'t, 'a>(&self, scope: ColumnScope) -> Result<Option<Graphs<'t, 'a>>, StoreError> {
        let sc = &self.store.sidecars;
        let Some(graphs) = sc.dict(3).filter(|_| sc.verified) else { return Ok(None) };
        let has_default = graphs.find(DEFAULT_GRAPH.as_bytes())?.is_some();
        let only_default = has_default && graphs.len() == 1;
        let every_graph =
            if scope.named_only { !has_default } else { scope.union_default_graph || only_default };
        Ok(every_graph.then_some(if scope.named_only {
            Graphs::AnyNamed
        } else if scope.union_default_graph {
            Graphs::All
        } else {
            Graphs::Default
        }))
    }

    /// Whether the view holds a quad with value `t` in column `col` in
    /// range, counted.
    fn holds_value(&self, col: usize, t: &Term, range: Graphs) -> Result<bool, StoreError> {
        let token = Tok::from_term(t);
        let (quads, _) = match col {
            3 => self.quads(None, None, None, Graphs::Named(&token))?,
            0 => self.quads(Some(&token), None, None, range)?,
            2 => self.quads(None, None, Some(&token), range)?,
            _ => self.quads(None, Some(&token), None, range)?,
        };
        Ok(quads.try_count()? > 0)
    }

    /// The values of the delta's added quads in range, as terms.
    fn added_values(&self, col: usize, range: Graphs) -> Vec<Term> {
        let values = self.overlay.added_values(col, |g| range.holds(g));
        values.into_iter().filter_map(|v| from_token(v.as_bytes())).collect()
    }
}

/// The number of distinct values in the scope's column over several views
/// (a corpus's chunks): each view's values in byte order, merged by the
/// sort's tournament (the one k-way merge the project has), a value counted
/// once however many chunks hold it. Streams the dictionaries: memory is one
/// token per chunk (and each chunk's delta), not one per value. `None` when
/// a chunk's dictionaries cannot say.
pub fn distinct_count(views: &[View], scope: ColumnScope) -> Result<Option<usize>, StoreError> {
    let mut chunks = Vec::with_capacity(views.len());
    for view in views {
        let Some(values) = view.column_values(scope)? else { return Ok(None) };
        chunks.push(values);
    }
    match chunks.as_slice() {
        // One chunk: the dictionary's length, adjusted.
        [one] => Ok(Some(one.dict.len() - one.hidden.len() + one.added.len())),
        _ => distinct_over_chunks(chunks).map(Some),
    }
}

/// One view's distinct values in a column: its dictionary, less `hidden`,
/// plus `added` (sorted, none in the dictionary).
struct ColumnValues<'v> {
    /// Whose mapped pages the walk keeps within `--memory-limit`.
    store: &'v Store,
    dict: &'v DictMap,
    hidden: HashSet<Vec<u8>>,
    added: Vec<Vec<u8>>,
}

impl ColumnValues<'_> {
    /// The values in byte order: the dictionary's tokens and the added ones
    /// merged, the hidden ones left out.
    fn in_order(&self) -> impl Iterator<Item = Result<&[u8], StoreError>> + '_ {
        // The walk maps the whole dictionary (1.5 GiB of subjects at 100M
        // quads): its pages are let go as a scan's are.
        let tokens = self.dict.tokens().enumerate().map(|(i, t)| {
            if i % 4096 == 0 {
                self.store.keep_mapped_pages_within_budget();
            }
            t
        });
        let mut tokens = tokens.filter(|t| !matches!(t, Ok(t) if self.hidden.contains(*t))).peekable();
        let mut added = self.added.iter().map(Vec::as_slice).peekable();
        std::iter::from_fn(move || match (tokens.peek(), added.peek()) {
            (Some(Ok(t)), Some(a)) if a < t => added.next().map(Ok),
            (Some(_), _) => tokens.next(),
            (None, _) => added.next().map(Ok),
        })
    }
}

fn distinct_over_chunks(chunks: Vec<ColumnValues>) -> Result<usize, StoreError> {
    let mut streams: Vec<_> = chunks.iter().map(ColumnValues::in_order).collect();
    let mut heads: Vec<Option<&[u8]>> =
        streams.iter_mut().map(|s| s.next().transpose()).collect::<Result<_, _>>()?;
    let mut game = Tournament::new(heads.len(), |i| heads[i]);
    let mut n = 0;
    while let Some(top) = game.winner() {
        let Some(token) = heads[top] else { break };
        n += usize::from(!game.repeats());
        heads[top] = streams[top].next().transpose()?;
        let shared = heads[top].map_or(0, |next| shared_prefix(token, next));
        game.replay(shared, |i| heads[i]);
    }
    Ok(n)
}

/// Whether `.presence` shows token `id` in any row group.
fn in_some_row_group(presence: &PresenceMap, id: u32) -> Result<bool, StoreError> {
    for rg in 0..presence.num_rgs {
        if presence.get(rg, id)? {
            return Ok(true);
        }
    }
    Ok(false)
}
