//! The store as a spareval `QueryableDataset`: base ⊕ visible delta.
//!
//! Every pattern goes through the base read path (`quads_for_pattern`) and the
//! indexed overlay; nothing here evaluates SPARQL. The overlay is loaded once
//! when the dataset is built, so one query sees one snapshot of the log even
//! while a writer appends.

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeSet;

use oxrdf::Term;
use spareval::{InternalQuad, QueryableDataset};

use super::terms::{from_token, to_ours};
use crate::format::term::{self, Escaping};
use crate::store::delta::{canonical_token, Overlay};
use crate::store::open::Store;
use crate::store::read::{ColumnCache, Explain, Pattern};
use crate::store::StoreError;

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
    pub named: OnceCell<Vec<Term>>,
}

fn add_explain(total: &mut Explain, e: &Explain) {
    total.row_groups = total.row_groups.max(e.row_groups);
    total.pruned_by_presence += e.pruned_by_presence;
    total.pruned_by_po_presence += e.pruned_by_po_presence;
    total.pruned_by_s_offsets += e.pruned_by_s_offsets;
    total.pruned_by_statistics += e.pruned_by_statistics;
    total.pruned_by_bloom += e.pruned_by_bloom;
    total.decoded_row_groups += e.decoded_row_groups;
    total.rows_probed += e.rows_probed;
    total.rows_matched += e.rows_matched;
    total.cache_hits += e.cache_hits;
    total.cache_misses += e.cache_misses;
    total.positions_from.extend(e.positions_from.iter().copied());
}

type Quad = InternalQuad<Term>;

impl<'a> StoreDataset<'a> {
    /// `graph`: `None` any named graph, `Some(None)` the default graph.
    pub(crate) fn quads(
        &self,
        s: Option<&Term>,
        p: Option<&Term>,
        o: Option<&Term>,
        graph: Option<Option<&Term>>,
    ) -> Result<Vec<Quad>, StoreError> {
        // Literals never stand as subjects, predicates or graphs.
        if s.is_some_and(Term::is_literal) || p.is_some_and(|t| !t.is_named_node()) {
            return Ok(Vec::new());
        }
        if graph == Some(None) && self.union_default_graph {
            // Every graph's quads, presented as the default graph's: one pass.
            let mut all = self.quads_in(s, p, o, None, true)?;
            for q in &mut all {
                q.graph_name = None;
            }
            return Ok(all);
        }
        self.quads_in(s, p, o, graph, false)
    }

    /// `graph: None` is any named graph, or any graph at all with `with_default`.
    fn quads_in(
        &self,
        s: Option<&Term>,
        p: Option<&Term>,
        o: Option<&Term>,
        graph: Option<Option<&Term>>,
        with_default: bool,
    ) -> Result<Vec<Quad>, StoreError> {
        let g_term = match graph {
            None => None,
            Some(None) => Some(term::Term::DefaultGraph),
            Some(Some(t)) if t.is_literal() => return Ok(Vec::new()),
            Some(Some(t)) => Some(to_ours(t)),
        };
        let pat = Pattern { s: s.map(to_ours), p: p.map(to_ours), o: o.map(to_ours), g: g_term.clone() };
        let (rows, ex) = self.store.quads_for_pattern(&pat, self.cache)?;
        add_explain(&mut self.explain.borrow_mut(), &ex);

        let mut out = Vec::with_capacity(rows.len());
        for row in rows.iter() {
            let default = row[3] == term::DEFAULT_GRAPH.as_bytes();
            if graph.is_none() && default && !with_default {
                continue;
            }
            let gkey = if default {
                term::DEFAULT_GRAPH.to_string()
            } else {
                canonical_token(row[3]).unwrap_or_default()
            };
            if let Some(d) = self.overlay.graphs.get(&gkey) {
                if d.cleared {
                    continue;
                }
                if !d.removed.is_empty() {
                    let key: [String; 4] =
                        std::array::from_fn(|c| canonical_token(row[c]).unwrap_or_default());
                    if d.removed.contains(&key) {
                        continue;
                    }
                }
            }
            let (Some(s), Some(p), Some(o)) = (from_token(row[0]), from_token(row[1]), from_token(row[2]))
            else {
                return Err(StoreError::format(
                    self.store.base.path(),
                    0,
                    format!("a cell is not a valid N-Triples term: {:?}", String::from_utf8_lossy(row[0])),
                ));
            };
            out.push(Quad {
                subject: s,
                predicate: p,
                object: o,
                graph_name: if default { None } else { from_token(row[3]) },
            });
        }

        // Added quads from the log, in the graphs the pattern allows.
        let render = |t: Option<&Term>| t.map(|t| term::render(&to_ours(t), Escaping::Pycottas));
        let (ks, kp, ko) = (render(s), render(p), render(o));
        let want_graph = g_term.as_ref().map(|t| term::render(t, Escaping::Pycottas));
        for (gkey, d) in &self.overlay.graphs {
            let is_default = gkey == term::DEFAULT_GRAPH;
            let allowed = match &want_graph {
                Some(w) => w == gkey,
                None => with_default || !is_default,
            };
            if !allowed {
                continue;
            }
            for k in d.added_matching(ks.as_deref(), kp.as_deref(), ko.as_deref()) {
                let conv = |t: &String| from_token(t.as_bytes());
                if let (Some(s), Some(p), Some(o)) = (conv(&k[0]), conv(&k[1]), conv(&k[2])) {
                    out.push(Quad {
                        subject: s,
                        predicate: p,
                        object: o,
                        graph_name: if is_default { None } else { conv(&k[3]) },
                    });
                }
            }
        }
        Ok(out)
    }

    /// Named graphs: the base's, plus every graph the visible log names.
    pub fn named_graphs(&self) -> Result<&[Term], StoreError> {
        if let Some(n) = self.named.get() {
            return Ok(n);
        }
        let names = self.compute_named_graphs()?;
        Ok(self.named.get_or_init(|| names))
    }

    fn compute_named_graphs(&self) -> Result<Vec<Term>, StoreError> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        match &self.store.sidecars.dicts[3] {
            Some(d) => names.extend(
                d.tokens().filter(|t| *t != term::DEFAULT_GRAPH.as_bytes()).filter_map(canonical_token),
            ),
            None => {
                let (rows, _) = self.store.quads_for_pattern(&Pattern::default(), self.cache)?;
                names.extend(
                    rows.iter()
                        .map(|r| r[3])
                        .filter(|t| *t != term::DEFAULT_GRAPH.as_bytes())
                        .filter_map(canonical_token),
                );
            }
        }
        names.extend(self.overlay.named_graphs().cloned());
        Ok(names.iter().filter_map(|t| from_token(t.as_bytes())).collect())
    }
}

impl<'a> QueryableDataset<'a> for StoreDataset<'a> {
    type InternalTerm = Term;
    type Error = StoreError;

    fn internal_quads_for_pattern(
        &self,
        subject: Option<&Term>,
        predicate: Option<&Term>,
        object: Option<&Term>,
        graph_name: Option<Option<&Term>>,
    ) -> impl Iterator<Item = Result<Quad, StoreError>> + use<'a> {
        let result = self.quads(subject, predicate, object, graph_name);
        let (ok, err) = match result {
            Ok(v) => (v, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        err.into_iter().map(Err).chain(ok.into_iter().map(Ok))
    }

    fn internal_named_graphs(&self) -> impl Iterator<Item = Result<Term, StoreError>> + use<'a> {
        let (ok, err) = match self.named_graphs() {
            Ok(v) => (v.to_vec(), None),
            Err(e) => (Vec::new(), Some(e)),
        };
        err.into_iter().map(Err).chain(ok.into_iter().map(Ok))
    }

    fn contains_internal_graph_name(&self, graph_name: &Term) -> Result<bool, StoreError> {
        Ok(self.named_graphs()?.contains(graph_name))
    }

    fn internalize_term(&self, term: Term) -> Result<Term, StoreError> {
        Ok(term)
    }

    fn externalize_term(&self, term: Term) -> Result<Term, StoreError> {
        Ok(term)
    }
}
