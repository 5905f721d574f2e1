//! The store as a spareval `QueryableDataset`: base ⊕ visible delta.
//!
//! Every pattern goes through the one view of base ⊕ delta ([`crate::view`]);
//! nothing here merges or evaluates. The overlay is loaded once
//! when the dataset is built, so one query sees one snapshot of the log even
//! while a writer appends.
//!
//! A dataset has one part per chunk: a chunk alone, or every chunk of a
//! corpus. The corpus's quads are the parts' quads one after another, as a
//! set: a quad two chunks hold is seen once, from the first of them
//! ([`crate::view::union`] decides), and a graph name two chunks use names
//! one graph holding both chunks' quads. Sums over parts (the count
//! shortcuts) are exact only when the parts are shown disjoint; otherwise
//! they decline and the query is evaluated over the set.
//!
//! A corpus chunk's log is folded on first need ([`crate::view::lazy`]): a
//! pattern asks only the chunks that may hold its bound terms, so a lookup
//! over many chunks costs the chunks that answer it, not a fold of every
//! log. Whatever needs every chunk (the overlaps between chunks, named
//! graphs, the id-level operators) folds them all, once.

use std::cell::{OnceCell, RefCell};

use oxrdf::Term;
use rustc_hash::FxHashMap;
use spareval::{InternalQuad, QueryableDataset};

use crate::store::read::{ColumnCache, Explain};
use crate::store::versions::open::Store;
use crate::store::StoreError;
use crate::view::lazy::LazyChunk;
use crate::view::overlay::Overlay;
use crate::view::terms::{from_token, Tok};
use crate::view::union::{Facts, Overlaps, Seen, Shared};
use crate::view::{Graphs, Quads, View, ViewQuad};

/// One chunk of a dataset: a view, or a corpus chunk whose log is folded
/// on first need.
#[derive(Clone, Copy)]
pub enum Part<'a> {
    View(View<'a>),
    Lazy(&'a LazyChunk),
}

impl<'a> From<View<'a>> for Part<'a> {
    fn from(view: View<'a>) -> Self {
        Part::View(view)
    }
}

impl<'a> From<&'a LazyChunk> for Part<'a> {
    fn from(chunk: &'a LazyChunk) -> Self {
        Part::Lazy(chunk)
    }
}

impl<'a> Part<'a> {
    /// The chunk's view, its log folded now if it was not yet.
    pub fn view(&self) -> Result<View<'a>, StoreError> {
        match self {
            Part::View(v) => Ok(*v),
            Part::Lazy(c) => c.view(),
        }
    }

    /// The chunk's base, without its log.
    pub fn store(&self) -> &'a Store {
        match self {
            Part::View(v) => v.store,
            Part::Lazy(c) => &c.store,
        }
    }

    /// Whether the chunk may hold a match (see [`LazyChunk::may_match`]).
    fn may_match(&self, spo: [Option<&Tok<'_>>; 3], graphs: &Graphs<'_, '_>) -> Result<bool, StoreError> {
        match self {
            Part::View(_) => Ok(true),
            Part::Lazy(c) => c.may_match(spo, graphs),
        }
    }
}

pub struct StoreDataset<'a> {
    /// One part per chunk, in the corpus's order.
    pub parts: Vec<Part<'a>>,
    /// Every part's view, made on first use (folding every lazy part).
    views: OnceCell<Vec<View<'a>>>,
    /// Pruning figures summed over every pattern the query asked for.
    pub explain: &'a RefCell<Explain>,
    /// Answer default-graph patterns from every graph (one read-path call,
    /// rather than one per graph).
    pub union_default_graph: bool,
    /// The named graphs, computed on first use: spareval may ask per pattern.
    pub named: OnceCell<Vec<Tok<'a>>>,
    /// Which parts may share quads, computed on first use.
    overlaps: OnceCell<Overlaps>,
    /// Where two parts may share quads, for pairs asked before every part
    /// was folded.
    pairs: RefCell<FxHashMap<(usize, usize), Shared>>,
    /// Each such part's facts, read once.
    facts: RefCell<FxHashMap<usize, std::rc::Rc<Facts>>>,
}

type Quad<'a> = InternalQuad<Tok<'a>>;

impl<'a> StoreDataset<'a> {
    /// The dataset of one store: base ⊕ `overlay`.
    pub fn single(
        store: &'a Store,
        overlay: &'a Overlay,
        cache: &'a ColumnCache,
        explain: &'a RefCell<Explain>,
    ) -> Self {
        Self::of(vec![View { store, overlay, cache }], explain)
    }

    /// The dataset of several chunks' views, their quads side by side.
    pub fn of(parts: Vec<View<'a>>, explain: &'a RefCell<Explain>) -> Self {
        Self::of_parts(parts.into_iter().map(Part::View).collect(), explain)
    }

    /// The dataset of several chunks, views or chunks folded on first need.
    pub fn of_parts(parts: Vec<Part<'a>>, explain: &'a RefCell<Explain>) -> Self {
        StoreDataset {
            parts,
            views: OnceCell::new(),
            explain,
            union_default_graph: false,
            named: OnceCell::new(),
            overlaps: OnceCell::new(),
            pairs: RefCell::default(),
            facts: RefCell::default(),
        }
    }

    pub fn with_union_default_graph(mut self, union: bool) -> Self {
        self.union_default_graph = union;
        self
    }

    /// Every part's view, in order, folding every part not yet folded.
    pub fn views(&self) -> Result<&[View<'a>], StoreError> {
        if let Some(v) = self.views.get() {
            return Ok(v);
        }
        let views = self.parts.iter().map(Part::view).collect::<Result<Vec<_>, _>>()?;
        Ok(self.views.get_or_init(|| views))
    }

    /// The parts that may hold a match of the bound terms, with their views
    /// (only these are folded), and their indices in the corpus.
    fn reached(
        &self,
        spo: [Option<&Tok<'a>>; 3],
        graphs: &Graphs<'_, 'a>,
    ) -> Result<Vec<(usize, View<'a>)>, StoreError> {
        if let Some(views) = self.views.get() {
            return Ok(views.iter().copied().enumerate().collect());
        }
        let mut reached = Vec::new();
        for (i, part) in self.parts.iter().enumerate() {
            if part.may_match(spo, graphs)? {
                reached.push((i, part.view()?));
            }
        }
        Ok(reached)
    }

    /// The earlier parts among `reached` that may hold what part `i` holds,
    /// with their views. Parts a pattern does not reach hold no match, so
    /// only the reached ones are compared (and folded); once every part is
    /// folded, the overlaps of all are computed once.
    fn earlier(
        &self,
        i: usize,
        reached: &[(usize, View<'a>)],
    ) -> Result<Vec<(View<'a>, Shared)>, StoreError> {
        if reached.len() < 2 {
            return Ok(Vec::new());
        }
        if let Some(views) = self.views.get() {
            let overlaps = self.overlaps()?;
            return Ok(overlaps.earlier(i).iter().map(|(j, shared)| (views[*j], shared.clone())).collect());
        }
        let Some(&(_, this)) = reached.iter().find(|(r, _)| *r == i) else { return Ok(Vec::new()) };
        let mut earlier = Vec::new();
        for &(j, view) in reached.iter().take_while(|(j, _)| *j < i) {
            let shared = self.shared((j, view), (i, this))?;
            if shared != Shared::Nothing {
                earlier.push((view, shared));
            }
        }
        Ok(earlier)
    }

    /// Where parts `j` and `i` may share quads, remembered per pair.
    fn shared(&self, (j, vj): (usize, View<'a>), (i, vi): (usize, View<'a>)) -> Result<Shared, StoreError> {
        if let Some(shared) = self.pairs.borrow().get(&(j, i)) {
            return Ok(shared.clone());
        }
        let shared = self.facts(i, &vi)?.shared_with(&*self.facts(j, &vj)?);
        self.pairs.borrow_mut().insert((j, i), shared.clone());
        Ok(shared)
    }

    /// Part `k`'s [`Facts`], read once per query (a graph dictionary can be
    /// long, and a part is compared with every other one reached).
    fn facts(&self, k: usize, view: &View<'a>) -> Result<std::rc::Rc<Facts>, StoreError> {
        if let Some(f) = self.facts.borrow().get(&k) {
            return Ok(f.clone());
        }
        let f = std::rc::Rc::new(Facts::of(view)?);
        self.facts.borrow_mut().insert(k, f.clone());
        Ok(f)
    }

    /// A term that is not valid N-Triples, blamed on the chunk that holds
    /// it: the one chunk, or the chunk whose dictionaries have the token
    /// (a lookup per column, on this error path only). Without dictionaries
    /// that say, the error names how many chunks it may be in.
    fn bad_cell(&self, cell: &[u8]) -> StoreError {
        let what = format!("a term is not a valid N-Triples term: {:?}", String::from_utf8_lossy(cell));
        let holds = |store: &&Store| {
            (0..4).any(|c| store.sidecars.dict(c).is_some_and(|d| matches!(d.find(cell), Ok(Some(_)))))
        };
        let stores: Vec<&Store> = self.parts.iter().map(Part::store).collect();
        let holder = match stores.as_slice() {
            [one] => Some(*one),
            stores => stores.iter().copied().find(holds),
        };
        if let Some(store) = holder {
            return StoreError::format_anywhere(store.base.path(), what);
        }
        let paths: Vec<&std::path::Path> = stores.iter().map(|s| s.base.path()).collect();
        let root =
            paths.iter().skip(1).fold(paths.first().copied().unwrap_or(std::path::Path::new("")), |a, b| {
                a.ancestors().find(|anc| b.starts_with(anc)).unwrap_or(std::path::Path::new(""))
            });
        StoreError::format_anywhere(
            root,
            format!(
                "{what}, in one of {} chunks below (`cottas-tui corpus verify` checks each)",
                paths.len()
            ),
        )
    }

    /// `graph`: `None` any named graph, `Some(None)` the default graph.
    pub(crate) fn quads(
        &self,
        s: Option<&Tok<'a>>,
        p: Option<&Tok<'a>>,
        o: Option<&Tok<'a>>,
        graph: Option<Option<&Tok<'a>>>,
    ) -> Result<impl Iterator<Item = Result<Quad<'a>, StoreError>> + use<'a>, StoreError> {
        let (graphs, union) = self.graphs(graph);
        // The read figures reach `explain` when spareval drops the answer,
        // once it is known how many row groups were read.
        let reached = self.reached([s, p, o], &graphs)?;
        let mut answers = Vec::with_capacity(reached.len());
        for &(i, part) in &reached {
            let quads = part.quads(s, p, o, graphs)?.0.report_to(self.explain);
            let earlier = self.earlier(i, &reached)?;
            answers.push(match earlier.is_empty() {
                true => PartAnswer::All(quads),
                false => PartAnswer::New(quads, Seen::new(earlier)),
            });
        }
        Ok(answers.into_iter().flatten().map(move |q| {
            q.map(|q| Quad {
                subject: q.s,
                predicate: q.p,
                object: q.o,
                graph_name: if union { None } else { q.g },
            })
        }))
    }

    /// How many quads [`StoreDataset::quads`] would yield, counted without
    /// producing them (`sparql::shortcut`).
    pub(crate) fn count(
        &self,
        s: Option<&Tok<'a>>,
        p: Option<&Tok<'a>>,
        o: Option<&Tok<'a>>,
        graph: Option<Option<&Tok<'a>>>,
    ) -> Result<usize, StoreError> {
        let graphs = self.graphs(graph).0;
        let reached = self.reached([s, p, o], &graphs)?;
        let mut n = 0;
        for &(i, part) in &reached {
            n += part.quads(s, p, o, graphs)?.0.report_to(self.explain).try_count()?;
            let earlier = self.earlier(i, &reached)?;
            if !earlier.is_empty() {
                n -= crate::view::union::copies(&part, earlier, [s, p, o], graphs)?;
            }
        }
        Ok(n)
    }

    /// Which parts may share quads ([`crate::view::union`]).
    fn overlaps(&self) -> Result<&Overlaps, StoreError> {
        if let Some(o) = self.overlaps.get() {
            return Ok(o);
        }
        let overlaps = Overlaps::of(self.views()?)?;
        Ok(self.overlaps.get_or_init(|| overlaps))
    }

    /// Whether a count summed over the parts is the count of the set for a
    /// pattern over `graph`: no two parts may share a quad there.
    pub(crate) fn sums_are_exact(&self, graph: Option<Option<&Tok<'a>>>) -> Result<bool, StoreError> {
        if self.parts.len() < 2 {
            return Ok(true);
        }
        Ok(self.overlaps()?.disjoint_in(&self.graphs(graph).0))
    }

    /// [`StoreDataset::quads`] as dictionary ids, one answer per part
    /// (`sparql::analytic`); `None` when a part has no dictionaries.
    ///
    /// `set`: over parts that may share quads, each part's rows that an
    /// earlier part shows are dropped ([`crate::view::ids::IdQuads::drop_copies`]),
    /// so the parts' answers together are the set. Without it they are the
    /// bag, which is all a caller that only asks whether a value occurs
    /// needs (the right side of an anti- or semi-join): no row is looked up.
    pub(crate) fn id_quads(
        &self,
        s: Option<&Tok<'a>>,
        p: Option<&Tok<'a>>,
        o: Option<&Tok<'a>>,
        graph: Option<Option<&Tok<'a>>>,
        columns: [bool; 4],
        set: bool,
    ) -> Result<Option<Vec<crate::view::ids::IdQuads<'a>>>, StoreError> {
        let copies_possible = set && !self.sums_are_exact(graph)?;
        let graphs = self.graphs(graph).0;
        let mut answers = Vec::with_capacity(self.parts.len());
        for (i, part) in self.views()?.iter().enumerate() {
            let Some(mut answer) = part.id_quads(s, p, o, graphs, columns)? else { return Ok(None) };
            if copies_possible {
                let earlier = self.earlier_reaching(i, &graphs)?;
                if !earlier.is_empty() {
                    answer.drop_copies(Seen::new(earlier), [s, p, o].map(|t| t.cloned()))?;
                }
            }
            answers.push(answer);
        }
        Ok(Some(answers))
    }

    /// The earlier parts that may share with part `i` a quad in `graphs`.
    fn earlier_reaching(
        &self,
        i: usize,
        graphs: &Graphs<'_, 'a>,
    ) -> Result<Vec<(View<'a>, Shared)>, StoreError> {
        let views = self.views()?;
        let overlaps = self.overlaps()?;
        Ok(overlaps
            .earlier(i)
            .iter()
            .filter(|(_, shared)| shared.reaches(graphs))
            .map(|(j, shared)| (views[*j], shared.clone()))
            .collect())
    }

    /// How many quads each named graph holds, summed over the parts (a graph
    /// name several chunks use is one graph), by canonical token; `None` when
    /// a part cannot say without its graph dictionary. Over parts that may
    /// share quads, graph by graph through [`Self::count`], which subtracts
    /// the copies (up to [`MAX_GRAPHS_COUNTED`] graphs).
    pub(crate) fn quads_per_named_graph(
        &self,
    ) -> Result<Option<std::collections::BTreeMap<String, usize>>, StoreError> {
        if !self.sums_are_exact(None)? {
            let names = self.named_graphs()?.to_vec();
            if names.len() > MAX_GRAPHS_COUNTED {
                return Ok(None);
            }
            let mut all = std::collections::BTreeMap::new();
            for g in &names {
                let n = self.count(None, None, None, Some(Some(g)))?;
                if n > 0 {
                    all.insert(g.as_str().to_owned(), n);
                }
            }
            return Ok(Some(all));
        }
        let mut all = std::collections::BTreeMap::new();
        for part in self.views()? {
            let Some(counts) = part.quads_per_graph()? else { return Ok(None) };
            for (graph, n) in counts {
                *all.entry(graph).or_insert(0) += n;
            }
        }
        all.remove(crate::format::term::DEFAULT_GRAPH);
        Ok(Some(all))
    }

    /// The graphs a pattern ranges over, and whether the default graph is
    /// the union of all. spareval's own "union" covers the named graphs only;
    /// ours is every graph, the default one included, presented as the
    /// default graph.
    fn graphs<'t>(&self, graph: Option<Option<&'t Tok<'a>>>) -> (Graphs<'t, 'a>, bool) {
        let union = graph == Some(None) && self.union_default_graph;
        let graphs = match graph {
            _ if union => Graphs::All,
            None => Graphs::AnyNamed,
            Some(None) => Graphs::Default,
            Some(Some(g)) => Graphs::Named(g),
        };
        (graphs, union)
    }

    /// Named graphs: each base's, plus every graph a visible log names;
    /// a name several chunks use is one graph.
    pub fn named_graphs(&self) -> Result<&[Tok<'a>], StoreError> {
        if let Some(n) = self.named.get() {
            return Ok(n);
        }
        let names = match self.views()? {
            [one] => one.named_graphs()?,
            parts => {
                let mut all = std::collections::BTreeSet::new();
                for part in parts {
                    all.extend(part.named_graphs()?.into_iter().map(|t| t.bytes().to_vec()));
                }
                all.into_iter().map(|b| Tok::Own(b.into())).collect()
            }
        };
        Ok(self.named.get_or_init(|| names))
    }
}

/// Graphs a per-graph count over parts that may share quads counts one by
/// one; past this, evaluating the query once costs less.
const MAX_GRAPHS_COUNTED: usize = 4096;

/// One part's answer: every quad, or those no earlier part shows.
enum PartAnswer<'a> {
    All(Quads<'a>),
    New(Quads<'a>, Seen<'a>),
}

impl<'a> Iterator for PartAnswer<'a> {
    type Item = Result<ViewQuad<'a>, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            PartAnswer::All(quads) => quads.next(),
            PartAnswer::New(quads, seen) => loop {
                let q = match quads.next()? {
                    Ok(q) => q,
                    Err(e) => return Some(Err(e)),
                };
                match seen.holds(&q) {
                    Ok(true) => continue,
                    Ok(false) => return Some(Ok(q)),
                    Err(e) => return Some(Err(e)),
                }
            },
        }
    }
}

impl<'a> QueryableDataset<'a> for StoreDataset<'a> {
    type InternalTerm = Tok<'a>;
    type Error = StoreError;

    fn internal_quads_for_pattern(
        &self,
        subject: Option<&Tok<'a>>,
        predicate: Option<&Tok<'a>>,
        object: Option<&Tok<'a>>,
        graph_name: Option<Option<&Tok<'a>>>,
    ) -> impl Iterator<Item = Result<Quad<'a>, StoreError>> + use<'a> {
        let (ok, err) = match self.quads(subject, predicate, object, graph_name) {
            Ok(quads) => (Some(quads), None),
            Err(e) => (None, Some(e)),
        };
        err.into_iter().map(Err).chain(ok.into_iter().flatten())
    }

    fn internal_named_graphs(&self) -> impl Iterator<Item = Result<Tok<'a>, StoreError>> + use<'a> {
        let (ok, err) = match self.named_graphs() {
            Ok(v) => (v.to_vec(), None),
            Err(e) => (Vec::new(), Some(e)),
        };
        err.into_iter().map(Err).chain(ok.into_iter().map(Ok))
    }

    fn contains_internal_graph_name(&self, graph_name: &Tok<'a>) -> Result<bool, StoreError> {
        Ok(self.named_graphs()?.contains(graph_name))
    }

    fn internalize_term(&self, term: Term) -> Result<Tok<'a>, StoreError> {
        Ok(Tok::from_term(&term))
    }

    fn externalize_term(&self, term: Tok<'a>) -> Result<Term, StoreError> {
        from_token(term.bytes()).ok_or_else(|| self.bad_cell(term.bytes()))
    }
}
