//! The delta overlay: the visible part of `data.deltalog`, merged on read over
//! the immutable base (docs/format.md §9 "Replay").
//!
//! Visible batches are those with db_epoch above the version's compacted
//! epoch (all of them without a marker). They fold, in file order, into one
//! state per graph: a cleared flag plus added and removed quad sets. The view
//! of a graph is `(cleared ? ∅ : base − removed) ∪ added`. Added quads are
//! indexed by subject, predicate and object, so a lookup never scans the log.
//! Quads are keyed by their canonical (pycottas-rendered) tokens.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::format::deltalog::{self, Entry, StopReason};
use crate::format::term::{self, Escaping, Term};
use crate::store::log::{is_visible, Log};
use crate::store::read::{ColumnCache, Pattern};
use crate::store::versions::open::Store;
use crate::store::StoreError;

/// Four canonical tokens: s, p, o, g (`DEFAULT` for the default graph).
pub type Key = [String; 4];

/// One graph's state. Each added quad is stored once and shared by the
/// indexes (a log of a million adds would otherwise hold four copies).
#[derive(Default, Debug, Clone)]
pub struct GraphDelta {
    pub cleared: bool,
    pub added: BTreeSet<Arc<Key>>,
    pub removed: BTreeSet<Key>,
    by_s: HashMap<String, BTreeSet<Arc<Key>>>,
    by_p: HashMap<String, BTreeSet<Arc<Key>>>,
    by_o: HashMap<String, BTreeSet<Arc<Key>>>,
}

impl GraphDelta {
    fn add(&mut self, k: Key) {
        self.removed.remove(&k);
        if self.added.contains(&k) {
            return;
        }
        let k = Arc::new(k);
        for (map, c) in [(&mut self.by_s, 0), (&mut self.by_p, 1), (&mut self.by_o, 2)] {
            match map.get_mut(&k[c]) {
                Some(set) => {
                    set.insert(k.clone());
                }
                None => {
                    map.insert(k[c].clone(), BTreeSet::from([k.clone()]));
                }
            }
        }
        self.added.insert(k);
    }
    fn remove(&mut self, k: Key) {
        self.unadd(&k);
        self.removed.insert(k);
    }
    /// Takes `k` out of `added` and the indexes.
    fn unadd(&mut self, k: &Key) {
        if self.added.remove(k) {
            for (map, c) in [(&mut self.by_s, 0), (&mut self.by_p, 1), (&mut self.by_o, 2)] {
                if let Some(set) = map.get_mut(&k[c]) {
                    set.remove(k);
                }
            }
        }
    }
    fn clear(&mut self) {
        *self = GraphDelta { cleared: true, ..GraphDelta::default() };
    }
    /// Added quads matching the bound tokens, through the smallest index.
    pub fn added_matching<'a>(&'a self, s: Option<&str>, p: Option<&str>, o: Option<&str>) -> Vec<&'a Key> {
        let pick = [(s, &self.by_s), (p, &self.by_p), (o, &self.by_o)]
            .into_iter()
            .filter_map(|(t, m)| t.map(|t| m.get(t).map_or(0, BTreeSet::len)).map(|n| (n, t, m)))
            .min_by_key(|x| x.0);
        let candidates: Box<dyn Iterator<Item = &Key>> = match pick {
            Some((_, Some(t), m)) => match m.get(t) {
                Some(set) => Box::new(set.iter().map(|k| &**k)),
                None => Box::new(std::iter::empty()),
            },
            _ => Box::new(self.added.iter().map(|k| &**k)),
        };
        candidates
            .filter(|k| {
                s.is_none_or(|t| k[0] == t) && p.is_none_or(|t| k[1] == t) && o.is_none_or(|t| k[2] == t)
            })
            .collect()
    }
}

#[derive(Default, Debug, Clone)]
pub struct Overlay {
    /// By the canonical graph token (`DEFAULT` or `<iri>`).
    pub graphs: HashMap<String, GraphDelta>,
    pub batches_visible: usize,
    pub batches_shadowed: usize,
    pub leftover: Option<(u64, u64, StopReason)>,
}

fn canonical(t: &Term) -> String {
    term::render(t, Escaping::Pycottas)
}

/// A token in the pycottas rendering, whichever producer wrote it.
pub fn canonical_token(token: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(token).ok()?;
    term::parse_token(s).ok().map(|t| canonical(&t))
}

pub(crate) fn graph_key(g: &Option<String>) -> String {
    match g {
        None => term::DEFAULT_GRAPH.to_string(),
        Some(iri) => canonical(&Term::Iri(iri.clone())),
    }
}

pub(crate) fn key_of(q: &deltalog::Quad) -> Key {
    let terms = q.to_terms();
    std::array::from_fn(|c| canonical(&terms[c]))
}

fn base_has(store: &Store, cache: &ColumnCache, k: &Key) -> Result<bool, StoreError> {
    if store.base.num_rows() == 0 {
        return Ok(false);
    }
    let parse = |t: &str| term::parse_token(t).ok();
    let pat = Pattern { s: parse(&k[0]), p: parse(&k[1]), o: parse(&k[2]), g: parse(&k[3]) };
    // The first row group with a match answers.
    let mut scan = store.scan(&pat);
    while let Some(rows) = scan.next_group(cache) {
        if !rows?.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

impl Overlay {
    /// Reads the store's log (if its view has one) and folds the visible batches.
    pub fn load(store: &Store, cache: &ColumnCache) -> Result<Overlay, StoreError> {
        let Some(path) = &store.layout.log else { return Ok(Overlay::default()) };
        let Some(log) = Log::read(path)? else { return Ok(Overlay::default()) };
        // A torn last frame is what a crash leaves, and is ignored. Valid
        // batches *behind* damage are committed writes no reader can reach:
        // answering without them would be silently wrong.
        log.refuse_hidden("refusing to answer without them")?;
        let mut folded = Overlay::from_batches(store, cache, &log.frames)?;
        folded.leftover = log.tail.damage().map(|d| (d.offset, d.len, d.reason));
        Ok(folded)
    }

    /// Folds the batches (already decoded) that the store's marker lets through.
    pub fn from_batches(
        store: &Store,
        cache: &ColumnCache,
        batches: &[deltalog::BatchFrame],
    ) -> Result<Overlay, StoreError> {
        let mut ov = Overlay::default();
        let marker = store.marker.map(|m| m.epoch);
        for frame in batches {
            if !is_visible(frame.batch.epoch, marker) {
                ov.batches_shadowed += 1;
                continue;
            }
            ov.batches_visible += 1;
            for e in &frame.batch.entries {
                ov.apply(e);
            }
        }
        ov.drop_added_already_in_base(store, cache)?;
        Ok(ov)
    }

    /// Folds one more entry in, as a writer does with the entries of the
    /// request it is building (so later operations see earlier ones).
    pub fn apply_entry(&mut self, e: &Entry, store: &Store, cache: &ColumnCache) -> Result<(), StoreError> {
        self.apply(e);
        if let Entry::Add(q) = e {
            let key = key_of(q);
            let g = self.graphs.get_mut(&key[3]).expect("apply created the graph");
            if !g.cleared && base_has(store, cache, &key)? {
                g.unadd(&key);
            }
        }
        Ok(())
    }

    /// Whether the view (base ⊕ this overlay) holds the quad.
    pub fn contains(
        &self,
        q: &deltalog::Quad,
        store: &Store,
        cache: &ColumnCache,
    ) -> Result<bool, StoreError> {
        let key = key_of(q);
        match self.graphs.get(&key[3]) {
            Some(g) if g.added.contains(&key) => Ok(true),
            Some(g) if g.cleared || g.removed.contains(&key) => Ok(false),
            _ => base_has(store, cache, &key),
        }
    }

    fn apply(&mut self, e: &Entry) {
        match e {
            Entry::Add(q) | Entry::Remove(q) => {
                let key = key_of(q);
                let g = self.graphs.entry(key[3].clone()).or_default();
                if matches!(e, Entry::Add(_)) {
                    g.add(key)
                } else {
                    g.remove(key)
                }
            }
            Entry::Clear(g) => self.graphs.entry(graph_key(g)).or_default().clear(),
            Entry::Drop(g) => self.graphs.entry(graph_key(&Some(g.clone()))).or_default().clear(),
            Entry::Create(g) => {
                self.graphs.entry(graph_key(&Some(g.clone()))).or_default();
            }
        }
    }

    /// An added quad the base already has (in a graph not cleared) is seen
    /// through the base; keeping it in `added` would show it twice.
    fn drop_added_already_in_base(&mut self, store: &Store, cache: &ColumnCache) -> Result<(), StoreError> {
        for g in self.graphs.values_mut() {
            if g.cleared || g.added.is_empty() {
                continue;
            }
            let mut in_base = Vec::new();
            for k in &g.added {
                if base_has(store, cache, k)? {
                    in_base.push(k.clone());
                }
            }
            for k in in_base {
                g.unadd(&k);
            }
        }
        Ok(())
    }

    /// Whether any visible batch names graph `g` (canonical token, `DEFAULT`
    /// for the default graph): only then can it hide a base quad of `g`.
    pub fn touches(&self, g: &str) -> bool {
        !self.graphs.is_empty() && self.graphs.contains_key(g)
    }

    /// Whether the overlay hides the base quad `q` (canonical tokens, `DEFAULT`
    /// for the default graph): its graph cleared or dropped, or the quad
    /// removed, by a visible batch.
    pub fn hides(&self, q: [&str; 4]) -> bool {
        match self.graphs.get(q[3]) {
            None => false,
            Some(g) if g.cleared => true,
            Some(g) if g.removed.is_empty() => false,
            Some(g) => g.removed.contains(&q.map(str::to_string)),
        }
    }

    /// Graph names (canonical tokens, not `DEFAULT`) that the log mentions.
    pub fn named_graphs(&self) -> impl Iterator<Item = &String> {
        self.graphs.keys().filter(|k| k.as_str() != term::DEFAULT_GRAPH)
    }
}
