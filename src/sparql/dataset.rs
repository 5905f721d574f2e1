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

use super::terms::{from_token, Tok};
use crate::format::dict::Dict;
use crate::format::term::{self, Escaping};
use crate::store::delta::canonical_token;
use crate::store::delta::Overlay;
use crate::store::open::Store;
use crate::store::read::{ColumnCache, Explain, Pattern, Rows};
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
    pub named: OnceCell<Vec<Tok<'a>>>,
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
    total.slow_decodes += e.slow_decodes;
    total.positions_from.extend(e.positions_from.iter().copied());
}

type Quad<'a> = InternalQuad<Tok<'a>>;

impl<'a> StoreDataset<'a> {
    fn bad_cell(&self, cell: &[u8]) -> StoreError {
        StoreError::format(
            self.store.base.path(),
            0,
            format!("a cell is not a valid N-Triples term: {:?}", String::from_utf8_lossy(cell)),
        )
    }

    fn cell(&self, cell: &'a [u8]) -> Result<Tok<'a>, StoreError> {
        Tok::from_cell(cell).ok_or_else(|| self.bad_cell(cell))
    }

    /// `graph`: `None` any named graph, `Some(None)` the default graph.
    pub(crate) fn quads(
        &self,
        s: Option<&Tok<'a>>,
        p: Option<&Tok<'a>>,
        o: Option<&Tok<'a>>,
        graph: Option<Option<&Tok<'a>>>,
    ) -> Result<Vec<Quad<'a>>, StoreError> {
        // Literals never stand as subjects, predicates or graphs.
        if s.is_some_and(Tok::is_literal) || p.is_some_and(|t| !t.is_iri()) {
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
        s: Option<&Tok<'a>>,
        p: Option<&Tok<'a>>,
        o: Option<&Tok<'a>>,
        graph: Option<Option<&Tok<'a>>>,
        with_default: bool,
    ) -> Result<Vec<Quad<'a>>, StoreError> {
        let ours = |t: Option<&Tok<'a>>| -> Result<Option<term::Term>, StoreError> {
            t.map(|t| t.to_ours().ok_or_else(|| self.bad_cell(t.bytes()))).transpose()
        };
        let g_term = match graph {
            None => None,
            Some(None) => Some(term::Term::DefaultGraph),
            Some(Some(t)) if t.is_literal() => return Ok(Vec::new()),
            Some(Some(t)) => ours(Some(t))?,
        };
        let pat = Pattern { s: ours(s)?, p: ours(p)?, o: ours(o)?, g: g_term.clone() };
        let store: &'a Store = self.store;
        let (rows, ex) = store.quads_for_pattern(&pat, self.cache)?;
        add_explain(&mut self.explain.borrow_mut(), &ex);

        let default_token = term::DEFAULT_GRAPH.as_bytes();
        let no_delta = self.overlay.graphs.is_empty();
        let mut out = Vec::with_capacity(rows.len());
        let mut push_row = |row: [Tok<'a>; 4], default: bool| -> Result<(), StoreError> {
            if graph.is_none() && default && !with_default {
                return Ok(());
            }
            if !no_delta {
                let gkey = if default { term::DEFAULT_GRAPH } else { row[3].as_str() };
                if let Some(d) = self.overlay.graphs.get(gkey) {
                    if d.cleared {
                        return Ok(());
                    }
                    if !d.removed.is_empty() {
                        let key: [String; 4] = std::array::from_fn(|c| {
                            if c == 3 && default {
                                term::DEFAULT_GRAPH.to_string()
                            } else {
                                row[c].as_str().to_string()
                            }
                        });
                        if d.removed.contains(&key) {
                            return Ok(());
                        }
                    }
                }
            }
            let [s, p, o, g] = row;
            out.push(Quad {
                subject: s,
                predicate: p,
                object: o,
                graph_name: if default { None } else { Some(g) },
            });
            Ok(())
        };
        match &rows {
            Rows::Ids { dicts, ids } => {
                // Each distinct cell is checked once per call, not once per row.
                let mut memo: [Option<(u32, Tok<'a>)>; 4] = Default::default();
                let dicts: [&'a Dict; 4] = *dicts;
                for r in ids {
                    let mut cells: [Option<Tok<'a>>; 4] = Default::default();
                    for c in 0..4 {
                        let t = match &memo[c] {
                            Some((id, t)) if *id == r[c] => t.clone(),
                            _ => {
                                let raw = dicts[c].token(r[c] as usize);
                                let t = if c == 3 && raw == default_token {
                                    Tok::Ref(raw)
                                } else {
                                    self.cell(raw)?
                                };
                                memo[c] = Some((r[c], t.clone()));
                                t
                            }
                        };
                        cells[c] = Some(t);
                    }
                    let default = cells[3].as_ref().is_some_and(|g| g.bytes() == default_token);
                    push_row(cells.map(|c| c.expect("filled")), default)?;
                }
            }
            Rows::Tokens(rows) => {
                for r in rows {
                    let default = r[3].data() == default_token;
                    let mut cells: [Option<Tok<'a>>; 4] = Default::default();
                    for c in 0..4 {
                        let raw = r[c].data();
                        cells[c] = Some(if c == 3 && default {
                            Tok::Ref(default_token)
                        } else {
                            Tok::from_cell(raw).map(owned).ok_or_else(|| self.bad_cell(raw))?
                        });
                    }
                    push_row(cells.map(|c| c.expect("filled")), default)?;
                }
            }
        }

        // Added quads from the log, in the graphs the pattern allows.
        let (ks, kp, ko) = (s.map(Tok::as_str), p.map(Tok::as_str), o.map(Tok::as_str));
        let want_graph = g_term.as_ref().map(|t| term::render(t, Escaping::Pycottas));
        let overlay: &'a Overlay = self.overlay;
        for (gkey, d) in &overlay.graphs {
            let is_default = gkey == term::DEFAULT_GRAPH;
            let allowed = match &want_graph {
                Some(w) => w == gkey,
                None => with_default || !is_default,
            };
            if !allowed {
                continue;
            }
            for k in d.added_matching(ks, kp, ko) {
                let t = |c: usize| Tok::Ref(k[c].as_bytes());
                out.push(Quad {
                    subject: t(0),
                    predicate: t(1),
                    object: t(2),
                    graph_name: if is_default { None } else { Some(t(3)) },
                });
            }
        }
        Ok(out)
    }

    /// Named graphs: the base's, plus every graph the visible log names.
    pub fn named_graphs(&self) -> Result<&[Tok<'a>], StoreError> {
        if let Some(n) = self.named.get() {
            return Ok(n);
        }
        let names = self.compute_named_graphs()?;
        Ok(self.named.get_or_init(|| names))
    }

    fn compute_named_graphs(&self) -> Result<Vec<Tok<'a>>, StoreError> {
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
        Ok(names.into_iter().map(|t| Tok::Own(t.into_bytes().into())).collect())
    }
}

/// Cells of a `Rows::Tokens` result live only as long as the result.
fn owned(t: Tok<'_>) -> Tok<'static> {
    match t {
        Tok::Ref(b) => Tok::Own(b.into()),
        Tok::Own(b) => Tok::Own(b),
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
        let result = self.quads(subject, predicate, object, graph_name);
        let (ok, err) = match result {
            Ok(v) => (v, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        err.into_iter().map(Err).chain(ok.into_iter().map(Ok))
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
