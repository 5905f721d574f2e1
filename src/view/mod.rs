//! The one view of base ⊕ delta: the only place where the immutable base
//! and the visible part of the delta log are merged (docs/format.md §9).
//!
//! A base row is seen unless the overlay hides it (its graph cleared or
//! dropped, or the quad removed, by a visible batch); every quad the overlay
//! adds is seen once (the overlay drops adds the base already holds). The
//! SPARQL dataset, `lookup`, compaction and the TUI read through here, so a
//! rule about what is visible cannot differ between them. Answers are
//! iterator-shaped so callers already consume them as streams.

pub mod ids;
pub mod kept;
pub mod lazy;
pub mod net;
pub mod overlay;
pub mod rows;
pub mod terms;
pub mod union;
pub mod values;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::format::term::{self, Escaping};
use crate::store::read::{ColumnCache, Explain, Pattern, Rows, Scan};
use crate::store::sidecars::mapped::DictMap;
use crate::store::versions::open::Store;
use crate::store::StoreError;
use overlay::{canonical_token, Overlay};
use terms::Tok;

/// Which graphs a pattern ranges over.
#[derive(Clone, Copy, Debug)]
pub enum Graphs<'t, 'a> {
    /// The default graph only.
    Default,
    /// One named graph (a literal names none).
    Named(&'t Tok<'a>),
    /// Every named graph, not the default one.
    AnyNamed,
    /// Every graph, the default one included.
    All,
}

impl Graphs<'_, '_> {
    /// Whether the overlay's graph `gkey` (a canonical token, `DEFAULT` for
    /// the default graph) is in this range: the rule [`View::quads`] applies
    /// to added quads, for callers that walk the overlay themselves.
    pub fn holds(&self, gkey: &str) -> bool {
        match self {
            Graphs::Default => graph_in_range(gkey, Some(term::DEFAULT_GRAPH), true),
            Graphs::Named(t) => t
                .to_ours()
                .is_some_and(|t| graph_in_range(gkey, Some(&term::render(&t, Escaping::Pycottas)), true)),
            Graphs::AnyNamed => graph_in_range(gkey, None, false),
            Graphs::All => graph_in_range(gkey, None, true),
        }
    }
}

/// Which kinds of graph hold quads ([`View::graphs_held`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphsHeld {
    pub default: bool,
    pub named: bool,
}

/// What the view does with a graph's base rows ([`View::graph_rows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphRows {
    /// Every row is shown.
    Shown,
    /// None is: the default graph, to a pattern over named graphs.
    Hidden,
    /// The log touches the graph: each row is looked at.
    Checked,
}

/// One quad of the view, in canonical tokens; `g` is `None` in the default graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ViewQuad<'a> {
    pub s: Tok<'a>,
    pub p: Tok<'a>,
    pub o: Tok<'a>,
    pub g: Option<Tok<'a>>,
}

/// A store opened with its log folded: what one reader sees, one snapshot.
pub struct Snapshot {
    pub store: Store,
    pub overlay: Overlay,
    pub cache: ColumnCache,
}

impl Snapshot {
    /// Opens the store at `path` (any target `open` accepts) and folds the
    /// visible part of its log; `cache_bytes` bounds the decoded columns kept.
    pub fn open(path: &Path, cache_bytes: usize) -> Result<Snapshot, StoreError> {
        Snapshot::open_with(path, |_| ColumnCache::new(cache_bytes))
    }

    /// [`Snapshot::open`], with the column cache chosen once the store is
    /// open (a memory limit is shared with its mapped pages).
    pub fn open_with(path: &Path, cache: impl FnOnce(&Store) -> ColumnCache) -> Result<Snapshot, StoreError> {
        let store = Store::open(path)?;
        let cache = cache(&store);
        let overlay = Overlay::load(&store, &cache)?;
        Ok(Snapshot { store, overlay, cache })
    }

    /// The base alone, with nothing of the log: what `--base-only` asks for.
    pub fn open_base_only(path: &Path, cache_bytes: usize) -> Result<Snapshot, StoreError> {
        let store = Store::open(path)?;
        Ok(Snapshot { store, overlay: Overlay::default(), cache: ColumnCache::new(cache_bytes) })
    }

    pub fn view(&self) -> View<'_> {
        View::new(&self.store, &self.overlay, &self.cache)
    }
}

/// Base ⊕ overlay, borrowed.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub store: &'a Store,
    pub overlay: &'a Overlay,
    pub cache: &'a ColumnCache,
}

impl<'a> View<'a> {
    pub fn new(store: &'a Store, overlay: &'a Overlay, cache: &'a ColumnCache) -> Self {
        View { store, overlay, cache }
    }

    fn bad_cell(&self, cell: &[u8]) -> StoreError {
        StoreError::format_anywhere(
            self.store.base.path(),
            format!("a cell is not a valid N-Triples term: {:?}", String::from_utf8_lossy(cell)),
        )
    }

    /// The quads matching the bound terms in `graphs`, with the read path's
    /// pruning figures. Base rows become terms one at a time as the caller
    /// pulls them, so a caller that stops early (LIMIT, ASK) converts only
    /// what it took.
    pub fn quads(
        &self,
        s: Option<&Tok<'a>>,
        p: Option<&Tok<'a>>,
        o: Option<&Tok<'a>>,
        graphs: Graphs<'_, 'a>,
    ) -> Result<(Quads<'a>, Explain), StoreError> {
        // Literals never stand as subjects, predicates or graphs.
        let impossible = s.is_some_and(Tok::is_literal)
            || p.is_some_and(|t| !t.is_iri())
            || matches!(graphs, Graphs::Named(g) if g.is_literal());
        if impossible {
            return Ok((Quads::empty(*self), Explain::default()));
        }
        let ours = |t: Option<&Tok<'a>>| -> Result<Option<term::Term>, StoreError> {
            t.map(|t| t.to_ours().ok_or_else(|| self.bad_cell(t.bytes()))).transpose()
        };
        let g_term = match graphs {
            Graphs::Default => Some(term::Term::DefaultGraph),
            Graphs::Named(t) => ours(Some(t))?,
            Graphs::AnyNamed | Graphs::All => None,
        };
        let pat = Pattern { s: ours(s)?, p: ours(p)?, o: ours(o)?, g: g_term.clone() };
        let scan = self.store.scan(&pat);
        let explain = scan.explain.clone();
        let with_default = !matches!(graphs, Graphs::AnyNamed);
        let want_graph = g_term.as_ref().map(|t| term::render(t, Escaping::Pycottas));
        let mut added = Vec::new();
        self.added(s, p, o, want_graph.as_deref(), with_default, &mut added);
        let quads = Quads {
            view: *self,
            scan: Some(scan),
            rows: None,
            next: 0,
            memo: Default::default(),
            with_default,
            pattern: Some(pat),
            added: added.into_iter(),
            report: None,
        };
        Ok((quads, explain))
    }

    fn cell(&self, cell: &'a [u8]) -> Result<Tok<'a>, StoreError> {
        Tok::from_cell(cell).ok_or_else(|| self.bad_cell(cell))
    }

    /// Whether the view shows a base row (canonical tokens, `DEFAULT` for
    /// the default graph) to a pattern that ranges over the default graph
    /// or not: the one rule for base rows, which [`Quads`] and
    /// [`ids::IdQuads`] both apply.
    pub fn shows_base_row(&self, [s, p, o, g]: [&Tok<'_>; 4], with_default: bool) -> bool {
        match self.graph_rows(g.bytes(), with_default) {
            GraphRows::Shown => true,
            GraphRows::Hidden => false,
            GraphRows::Checked => !self.overlay.hides([s.as_str(), p.as_str(), o.as_str(), g.as_str()]),
        }
    }

    /// What the view does with the base rows of graph `g` (a canonical
    /// token): the part of [`View::shows_base_row`] that depends on the
    /// graph alone, so a reader of ids can decide once per graph.
    pub fn graph_rows(&self, g: &[u8], with_default: bool) -> GraphRows {
        if g == term::DEFAULT_GRAPH.as_bytes() && !with_default {
            GraphRows::Hidden
        } else if self.overlay.touches(std::str::from_utf8(g).unwrap_or("")) {
            // Only a graph the log touches can hide a row.
            GraphRows::Checked
        } else {
            GraphRows::Shown
        }
    }

    /// Quads the overlay adds, in the graphs the pattern allows.
    fn added(
        &self,
        s: Option<&Tok<'a>>,
        p: Option<&Tok<'a>>,
        o: Option<&Tok<'a>>,
        want_graph: Option<&str>,
        with_default: bool,
        out: &mut Vec<ViewQuad<'a>>,
    ) {
        let (ks, kp, ko) = (s.map(Tok::as_str), p.map(Tok::as_str), o.map(Tok::as_str));
        let overlay: &'a Overlay = self.overlay;
        for (gkey, d) in &overlay.graphs {
            if !graph_in_range(gkey, want_graph, with_default) {
                continue;
            }
            let is_default = gkey == term::DEFAULT_GRAPH;
            for k in d.added_matching(ks, kp, ko) {
                let t = |c: usize| Tok::Ref(k[c].as_bytes());
                out.push(ViewQuad { s: t(0), p: t(1), o: t(2), g: (!is_default).then(|| t(3)) });
            }
        }
    }

    /// The named graphs: the base's, plus every graph the visible log names.
    pub fn named_graphs(&self) -> Result<Vec<Tok<'a>>, StoreError> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        let named = |t: &&[u8]| *t != term::DEFAULT_GRAPH.as_bytes();
        match self.store.sidecars.dict(3) {
            Some(d) => {
                for t in d.tokens() {
                    names.extend(Some(t?).filter(named).and_then(canonical_token));
                }
            }
            None => {
                let (rows, _) = self.store.quads_for_pattern(&Pattern::default(), self.cache)?;
                for r in rows.iter() {
                    names.extend(Some(r?[3]).filter(named).and_then(canonical_token));
                }
            }
        }
        names.extend(self.overlay.named_graphs().cloned());
        Ok(names.into_iter().map(|t| Tok::Own(t.into_bytes().into())).collect())
    }

    /// Whether the default graph and the named graphs hold quads, as far as
    /// the base's graph dictionary and the log tell without reading a row: a
    /// graph the dictionary names counts as holding quads unless the log
    /// cleared it (the log may have deleted them one by one). `None` without
    /// the graph dictionary.
    pub fn graphs_held(&self) -> Result<Option<GraphsHeld>, StoreError> {
        let Some(dict) = self.store.sidecars.dict(3) else { return Ok(None) };
        let base_default = dict.find(term::DEFAULT_GRAPH.as_bytes())?.is_some();
        let base_named = dict.len() > usize::from(base_default);
        let ov = &self.overlay;
        let default = (base_default && !ov.cleared(term::DEFAULT_GRAPH)) || ov.adds_to(term::DEFAULT_GRAPH);
        let named = base_named || ov.named_graphs().any(|g| ov.adds_to(g));
        Ok(Some(GraphsHeld { default, named }))
    }

    /// How many quads the view shows in each graph, by canonical graph token
    /// (`DEFAULT` for the default graph), graphs without quads left out.
    /// The base's rows per graph come from one read of its graph column
    /// ([`Store::rows_per_graph`]); a graph the overlay touches is counted
    /// again through [`View::quads`], so what the log hides or adds is
    /// decided in one place. `None` without the graph dictionary.
    pub fn quads_per_graph(&self) -> Result<Option<BTreeMap<String, usize>>, StoreError> {
        let (Some(rows), Some(dict)) = (self.store.rows_per_graph(self.cache)?, self.store.sidecars.dict(3))
        else {
            return Ok(None);
        };
        let mut counts = BTreeMap::new();
        for (id, &n) in rows.iter().enumerate().filter(|(_, &n)| n > 0) {
            let raw = dict.token(id as u32)?;
            let key = canonical_token(raw).ok_or_else(|| self.bad_cell(raw))?;
            *counts.entry(key).or_insert(0) += n as usize;
        }
        for gkey in self.overlay.graphs.keys() {
            let named = Tok::Own(gkey.as_bytes().into());
            let graphs = if gkey == term::DEFAULT_GRAPH { Graphs::Default } else { Graphs::Named(&named) };
            let n = self.quads(None, None, None, graphs)?.0.try_count()?;
            counts.insert(gkey.clone(), n);
        }
        counts.retain(|_, n| *n > 0);
        Ok(Some(counts))
    }
}

/// Whether graph `gkey` (a canonical token, `DEFAULT` for the default graph)
/// is one a pattern ranges over: `want` alone when the pattern names one,
/// else every graph, the default one only `with_default`.
fn graph_in_range(gkey: &str, want: Option<&str>, with_default: bool) -> bool {
    match want {
        Some(w) => w == gkey,
        None => with_default || gkey != term::DEFAULT_GRAPH,
    }
}

/// The matches of a scan's remaining row groups, counted (`Scan::next_count`).
fn count_scan(scan: Option<&mut Scan>, cache: &ColumnCache) -> Result<usize, StoreError> {
    let mut n = 0;
    if let Some(scan) = scan {
        while let Some(group) = scan.next_count(cache) {
            n += group?;
        }
    }
    Ok(n)
}

/// The answer to one pattern: base rows not hidden by the overlay, read a
/// row group at a time and converted as they are taken, then the overlay's
/// added quads. A caller that stops early reads only the row groups it
/// reached.
pub struct Quads<'a> {
    view: View<'a>,
    /// The row groups not read yet.
    scan: Option<Scan<'a>>,
    /// The current row group's matches, and the next one to take.
    rows: Option<Rows<'a>>,
    next: usize,
    /// The last id seen per column and its term: each distinct cell of a run
    /// is checked once, not once per row.
    memo: [Option<(u32, Tok<'a>)>; 4],
    with_default: bool,
    /// The base pattern, for a count that subtracts the default graph's.
    pattern: Option<Pattern>,
    added: std::vec::IntoIter<ViewQuad<'a>>,
    /// Where the read figures go when the answer is dropped (`--explain`).
    report: Option<&'a std::cell::RefCell<Explain>>,
}

impl<'a> Quads<'a> {
    fn empty(view: View<'a>) -> Quads<'a> {
        Quads {
            view,
            scan: None,
            rows: None,
            next: 0,
            memo: Default::default(),
            with_default: true,
            pattern: None,
            added: Vec::new().into_iter(),
            report: None,
        }
    }

    /// Adds this answer's read figures to `sink` once it is dropped, when
    /// all that was read is known.
    pub fn report_to(mut self, sink: &'a std::cell::RefCell<Explain>) -> Self {
        self.report = Some(sink);
        self
    }

    /// The next row group's matches; `false` when none are left.
    fn next_group(&mut self) -> Result<bool, StoreError> {
        let Some(scan) = self.scan.as_mut() else { return Ok(false) };
        match scan.next_group(self.view.cache) {
            Some(rows) => {
                self.rows = Some(rows?);
                self.next = 0;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// How many quads the answer holds, without converting a row: the base's
    /// matches counted row group by row group (sidecars, footers, bound
    /// columns only), less the base quads the overlay hides, plus the quads
    /// it adds. An answer already partly read is counted by reading the rest.
    pub fn try_count(mut self) -> Result<usize, StoreError> {
        let Some(pat) = self.pattern.take().filter(|_| self.rows.is_none()) else {
            return self.try_fold(0, |n, q| q.map(|_| n + 1));
        };
        // The base's matches, counted through the sidecars and footers.
        let mut base = count_scan(self.scan.as_mut(), self.view.cache)?;
        if !self.with_default {
            // The named graphs' matches: every graph's less the default one's.
            let mut default =
                self.view.store.scan(&Pattern { g: Some(term::Term::DefaultGraph), ..pat.clone() });
            base -= count_scan(Some(&mut default), self.view.cache)?;
            if let Some(scan) = self.scan.as_mut() {
                scan.explain.add(&default.explain);
            }
        }
        // Less what the log hides of them, plus what it adds.
        let want_graph = pat.g.as_ref().map(|t| term::render(t, Escaping::Pycottas));
        let in_range = |g: &str| graph_in_range(g, want_graph.as_deref(), self.with_default);
        let hidden = self.view.overlay.hidden_count(self.view.store, self.view.cache, &pat, in_range)?;
        // `hidden` counts base matches, so it never exceeds `base`; a store
        // changed under its maps must not turn into a wrapped count.
        Ok(base.saturating_sub(hidden) + self.added.len())
    }

    /// Ends the answer after an error: one error ends it.
    fn stop(&mut self) {
        self.next = self.base_len();
        if let Some(scan) = self.scan.as_mut() {
            scan.finish();
        }
        self.added = Vec::new().into_iter();
    }

    fn base_len(&self) -> usize {
        self.rows.as_ref().map_or(0, Rows::len)
    }

    /// Row `i` of the base as terms, or `None` when the view does not show it.
    fn base_row(&mut self, i: usize) -> Result<Option<ViewQuad<'a>>, StoreError> {
        let default_token = term::DEFAULT_GRAPH.as_bytes();
        let cells: [Tok<'a>; 4] = match self.rows.as_ref() {
            None => return Ok(None),
            Some(Rows::Ids { dicts, ids }) => {
                let (dicts, r): ([&'a DictMap; 4], [u32; 4]) = (*dicts, ids[i]);
                let mut cells: [Option<Tok<'a>>; 4] = Default::default();
                for c in 0..4 {
                    cells[c] = Some(match &self.memo[c] {
                        Some((id, t)) if *id == r[c] => t.clone(),
                        _ => {
                            let raw = dicts[c].token(r[c])?;
                            let t = if c == 3 && raw == default_token {
                                Tok::Ref(raw)
                            } else {
                                self.view.cell(raw)?
                            };
                            self.memo[c] = Some((r[c], t.clone()));
                            t
                        }
                    });
                }
                cells.map(|c| c.expect("filled"))
            }
            Some(Rows::Tokens(rows)) => {
                let r = &rows[i];
                let mut cells: [Option<Tok<'a>>; 4] = Default::default();
                for c in 0..4 {
                    let raw = r[c].data();
                    cells[c] = Some(if c == 3 && raw == default_token {
                        Tok::Ref(default_token)
                    } else {
                        Tok::from_cell(raw).map(owned).ok_or_else(|| self.view.bad_cell(raw))?
                    });
                }
                cells.map(|c| c.expect("filled"))
            }
        };
        let [s, p, o, g] = cells;
        if !self.view.shows_base_row([&s, &p, &o, &g], self.with_default) {
            return Ok(None);
        }
        let default = g.bytes() == default_token;
        Ok(Some(ViewQuad { s, p, o, g: (!default).then_some(g) }))
    }
}

impl<'a> Iterator for Quads<'a> {
    type Item = Result<ViewQuad<'a>, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            while self.next < self.base_len() {
                let i = self.next;
                self.next += 1;
                match self.base_row(i) {
                    Ok(Some(q)) => return Some(Ok(q)),
                    Ok(None) => {}
                    Err(e) => {
                        self.stop();
                        return Some(Err(e));
                    }
                }
            }
            match self.next_group() {
                Ok(true) => {}
                Ok(false) => return self.added.next().map(Ok),
                Err(e) => {
                    self.stop();
                    return Some(Err(e));
                }
            }
        }
    }
}

impl Drop for Quads<'_> {
    fn drop(&mut self) {
        if let (Some(sink), Some(scan)) = (self.report, &self.scan) {
            sink.borrow_mut().add(&scan.explain);
        }
    }
}

/// Cells of a `Rows::Tokens` result live only as long as the result.
fn owned(t: Tok<'_>) -> Tok<'static> {
    match t {
        Tok::Ref(b) => Tok::Own(b.into()),
        Tok::Own(b) => Tok::Own(b),
    }
}
