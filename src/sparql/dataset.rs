//! The store as a spareval `QueryableDataset`: base ⊕ visible delta.
//!
//! Every pattern goes through the one view of base ⊕ delta ([`crate::view`]);
//! nothing here merges or evaluates. The overlay is loaded once
//! when the dataset is built, so one query sees one snapshot of the log even
//! while a writer appends.

use std::cell::{OnceCell, RefCell};

use oxrdf::Term;
use spareval::{InternalQuad, QueryableDataset};

use crate::store::read::{ColumnCache, Explain};
use crate::store::versions::open::Store;
use crate::store::StoreError;
use crate::view::overlay::Overlay;
use crate::view::terms::{from_token, Tok};
use crate::view::{Graphs, View};

pub struct StoreDataset<'a> {
    pub store: &'a Store,
    pub overlay: &'a Overlay,
    pub cache: &'a ColumnCache,
    /// Pruning figures summed over every pattern the query asked for.
    pub explain: &'a RefCell<Explain>,
    /// Answer default-graph patterns from every graph (one read-path call,
    /// rather than one per graph).
    pub union_default_graph: bool,
    /// The named graphs, computed on first use: spareval may ask per pattern.
    pub named: OnceCell<Vec<Tok<'a>>>,
}

type Quad<'a> = InternalQuad<Tok<'a>>;

impl<'a> StoreDataset<'a> {
    fn view(&self) -> View<'a> {
        View { store: self.store, overlay: self.overlay, cache: self.cache }
    }

    fn bad_cell(&self, cell: &[u8]) -> StoreError {
        StoreError::format_anywhere(
            self.store.base.path(),
            format!("a term is not a valid N-Triples term: {:?}", String::from_utf8_lossy(cell)),
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
        let (quads, _) = self.view().quads(s, p, o, graphs)?;
        Ok(quads.report_to(self.explain).map(move |q| {
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
        let (quads, _) = self.view().quads(s, p, o, self.graphs(graph).0)?;
        quads.report_to(self.explain).try_count()
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

    /// Named graphs: the base's, plus every graph the visible log names.
    pub fn named_graphs(&self) -> Result<&[Tok<'a>], StoreError> {
        if let Some(n) = self.named.get() {
            return Ok(n);
        }
        let names = self.view().named_graphs()?;
        Ok(self.named.get_or_init(|| names))
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
