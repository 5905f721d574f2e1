//! The one view of base ⊕ delta: the only place where the immutable base
//! and the visible part of the delta log are merged (docs/format.md §9).
//!
//! A base row is seen unless the overlay hides it (its graph cleared or
//! dropped, or the quad removed, by a visible batch); every quad the overlay
//! adds is seen once (the overlay drops adds the base already holds). The
//! SPARQL dataset, `lookup`, compaction and the TUI read through here, so a
//! rule about what is visible cannot differ between them. Answers are
//! iterator-shaped so callers already consume them as streams.

pub mod overlay;
pub mod terms;

use std::collections::BTreeSet;
use std::path::Path;

use crate::format::dict::Dict;
use crate::format::term::{self, Escaping};
use crate::store::open::Store;
use crate::store::read::{ColumnCache, Explain, Pattern, Rows};
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
        let store = Store::open(path)?;
        let cache = ColumnCache::new(cache_bytes);
        let overlay = Overlay::load(&store, &cache)?;
        Ok(Snapshot { store, overlay, cache })
    }

    /// The base alone, with nothing of the log: what `--base-only` asks for.
    pub fn open_base_only(path: &Path, cache_bytes: usize) -> Result<Snapshot, StoreError> {
        let store = Store::open(path)?;
        Ok(Snapshot { store, overlay: Overlay::default(), cache: ColumnCache::new(cache_bytes) })
    }

    pub fn view(&self) -> View<'_> {
        View { store: &self.store, overlay: &self.overlay, cache: &self.cache }
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
    fn bad_cell(&self, cell: &[u8]) -> StoreError {
        StoreError::format_anywhere(
            self.store.base.path(),
            format!("a cell is not a valid N-Triples term: {:?}", String::from_utf8_lossy(cell)),
        )
    }

    /// The quads matching the bound terms in `graphs`, with the read path's
    /// pruning figures.
    pub fn quads(
        &self,
        s: Option<&Tok<'a>>,
        p: Option<&Tok<'a>>,
        o: Option<&Tok<'a>>,
        graphs: Graphs<'_, 'a>,
    ) -> Result<(impl Iterator<Item = ViewQuad<'a>> + use<'a>, Explain), StoreError> {
        // Literals never stand as subjects, predicates or graphs.
        let impossible = s.is_some_and(Tok::is_literal)
            || p.is_some_and(|t| !t.is_iri())
            || matches!(graphs, Graphs::Named(g) if g.is_literal());
        if impossible {
            return Ok((Vec::new().into_iter(), Explain::default()));
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
        let (rows, explain) = self.store.quads_for_pattern(&pat, self.cache)?;
        let mut out = Vec::with_capacity(rows.len());
        let with_default = !matches!(graphs, Graphs::AnyNamed);
        self.base_rows(&rows, with_default, &mut out)?;
        let want_graph = g_term.as_ref().map(|t| term::render(t, Escaping::Pycottas));
        self.added(s, p, o, want_graph.as_deref(), with_default, &mut out);
        Ok((out.into_iter(), explain))
    }

    /// The base's rows that the overlay does not hide.
    fn base_rows(
        &self,
        rows: &Rows<'a>,
        with_default: bool,
        out: &mut Vec<ViewQuad<'a>>,
    ) -> Result<(), StoreError> {
        let default_token = term::DEFAULT_GRAPH.as_bytes();
        let mut push = |[s, p, o, g]: [Tok<'a>; 4]| {
            let default = g.bytes() == default_token;
            if default && !with_default {
                return;
            }
            if self.overlay.hides([s.as_str(), p.as_str(), o.as_str(), g.as_str()]) {
                return;
            }
            out.push(ViewQuad { s, p, o, g: (!default).then_some(g) });
        };
        match rows {
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
                    push(cells.map(|c| c.expect("filled")));
                }
            }
            Rows::Tokens(rows) => {
                for r in rows {
                    let mut cells: [Option<Tok<'a>>; 4] = Default::default();
                    for c in 0..4 {
                        let raw = r[c].data();
                        cells[c] = Some(if c == 3 && raw == default_token {
                            Tok::Ref(default_token)
                        } else {
                            Tok::from_cell(raw).map(owned).ok_or_else(|| self.bad_cell(raw))?
                        });
                    }
                    push(cells.map(|c| c.expect("filled")));
                }
            }
        }
        Ok(())
    }

    fn cell(&self, cell: &'a [u8]) -> Result<Tok<'a>, StoreError> {
        Tok::from_cell(cell).ok_or_else(|| self.bad_cell(cell))
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
            let is_default = gkey == term::DEFAULT_GRAPH;
            let allowed = match want_graph {
                Some(w) => w == gkey,
                None => with_default || !is_default,
            };
            if !allowed {
                continue;
            }
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
        match &self.store.sidecars.dicts[3] {
            Some(d) => names.extend(d.tokens().filter(named).filter_map(canonical_token)),
            None => {
                let (rows, _) = self.store.quads_for_pattern(&Pattern::default(), self.cache)?;
                names.extend(rows.iter().map(|r| r[3]).filter(named).filter_map(canonical_token));
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
