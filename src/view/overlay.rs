//! The delta overlay: the visible part of `data.deltalog`, merged on read over
//! the immutable base (docs/format.md §9 "Replay").
//!
//! Visible batches are those with db_epoch above the version's compacted
//! epoch (all of them without a marker). They fold, in file order, into one
//! state per graph: a cleared flag plus added and removed quad sets. The view
//! of a graph is `(cleared ? ∅ : base − removed) ∪ added`. Added quads are
//! indexed by subject, predicate and object, so a lookup never scans the log.
//! Quads are keyed by their canonical (pycottas-rendered) tokens.

use std::sync::{Arc, OnceLock};

use imbl::{OrdSet, Vector};
use rustc_hash::FxHashMap;

use crate::format::deltalog::{self, Entry, StopReason};
use crate::format::term::{self, Escaping, Term};
use crate::store::log::Log;
use crate::store::read::{ColumnCache, DictLookup, Pattern};
use crate::store::versions::open::Store;
use crate::store::StoreError;

/// Four canonical tokens: s, p, o, g (`DEFAULT` for the default graph).
pub type Key = [String; 4];

/// One graph's state. Each added quad is stored once; the index shares it.
///
/// The sets are persistent B-trees (`imbl`): a clone shares every node and
/// costs O(1), a change copies the path it touches. The endpoint and the TUI
/// hand the writer's fold to readers after every update, and the writer goes
/// on changing its own; with `std` sets that clone was the whole delta per
/// update (16-32 ms per one-quad INSERT over 200,000 pending quads).
#[derive(Default, Debug, Clone)]
pub struct GraphDelta {
    pub cleared: bool,
    pub added: OrdSet<Arc<Key>>,
    pub removed: OrdSet<Key>,
    /// Built by the first lookup that binds a term. Keeping three hash
    /// indexes current entry by entry was most of every process's start-up
    /// over a large log (1 s for 200,000 added quads), and `ASK`, counts and
    /// unbound patterns never look them up.
    by_term: OnceLock<ByTerm>,
}

/// `added` sorted by subject, by predicate and by object, and the changes
/// since: a writer that adds a few quads between lookups (one request after
/// another on the endpoint) does not sort the whole delta again each time.
/// Shared between clones like the sets: the sort behind an `Arc`, the
/// changes since in a persistent vector.
#[derive(Default, Debug, Clone)]
struct ByTerm {
    sorted: Arc<[Vec<Arc<Key>>; 3]>,
    /// Added after the sort.
    fresh: Vector<Arc<Key>>,
    /// Quads taken out of `added` after the sort (still in `sorted`).
    stale: usize,
}

impl ByTerm {
    /// Whether enough changed since the sort that sorting again is cheaper
    /// than filtering every lookup.
    fn worn(&self) -> bool {
        self.fresh.len() + self.stale > self.sorted[0].len() / 8 + 256
    }
}

impl GraphDelta {
    fn add(&mut self, k: Key) {
        self.removed.remove(&k);
        if self.added.contains(&k) {
            return;
        }
        let k = Arc::new(k);
        self.added.insert(k.clone());
        self.changed_since_sort(Some(k));
    }
    fn remove(&mut self, k: Key) {
        self.unadd(&k);
        self.removed.insert(k);
    }
    /// Takes `k` out of `added`.
    fn unadd(&mut self, k: &Key) {
        if self.added.remove(k).is_some() {
            self.changed_since_sort(None);
        }
    }
    /// Records an addition (`Some`) or a removal in the sorted index, if one
    /// was built, and drops the index once it is worn.
    fn changed_since_sort(&mut self, added: Option<Arc<Key>>) {
        let Some(by_term) = self.by_term.get_mut() else { return };
        match added {
            Some(k) => by_term.fresh.push_back(k),
            None => by_term.stale += 1,
        }
        if by_term.worn() {
            self.by_term = OnceLock::new();
        }
    }
    fn clear(&mut self) {
        *self = GraphDelta { cleared: true, ..GraphDelta::default() };
    }
    /// Added quads matching the bound tokens, in key order, through the
    /// bound term with the fewest added quads.
    pub fn added_matching<'a>(&'a self, s: Option<&str>, p: Option<&str>, o: Option<&str>) -> Vec<&'a Key> {
        let bound = [s, p, o];
        let matches = |k: &&Key| bound.iter().zip(k.iter()).all(|(t, cell)| t.is_none_or(|t| cell == t));
        if bound.iter().all(Option::is_none) {
            return self.added.iter().map(|k| &**k).collect();
        }
        let by_term = self.prepare_lookups();
        let narrowest = (0..3)
            .filter_map(|c| bound[c].map(|t| &by_term.sorted[c][term_range(&by_term.sorted[c], c, t)]))
            .min_by_key(|candidates| candidates.len())
            .unwrap_or_default();
        let mut found: Vec<&Key> =
            narrowest.iter().chain(&by_term.fresh).map(|k| &**k).filter(matches).collect();
        if by_term.stale > 0 {
            found.retain(|k| self.added.contains(*k));
        }
        if !by_term.fresh.is_empty() {
            // A quad removed and added again is in both lists.
            found.sort_unstable();
            found.dedup();
        }
        found
    }
    /// Sorts `added` for lookups now, if no lookup did yet.
    fn prepare_lookups(&self) -> &ByTerm {
        self.by_term.get_or_init(|| self.sorted_by_term())
    }
    /// `added` sorted by each of s, p and o; a stable sort keeps key order
    /// among equal terms, so every answer comes in key order.
    fn sorted_by_term(&self) -> ByTerm {
        let sorted = std::array::from_fn(|c| {
            let mut keys: Vec<Arc<Key>> = self.added.iter().cloned().collect();
            keys.sort_by(|a, b| a[c].cmp(&b[c]));
            keys
        });
        ByTerm { sorted: Arc::new(sorted), ..ByTerm::default() }
    }
}

/// Where the keys whose cell `c` is `t` lie in `keys`, sorted by cell `c`.
fn term_range(keys: &[Arc<Key>], c: usize, t: &str) -> std::ops::Range<usize> {
    let start = keys.partition_point(|k| k[c].as_str() < t);
    start..start + keys[start..].partition_point(|k| k[c] == t)
}

/// Folds of a whole log in this process (every [`Overlay::from_batches`],
/// which [`Overlay::load`] calls), O(delta) each. The endpoint reports the
/// count in `/health`: its readers and writers hand their fold on instead of
/// reading the log again, so it climbs only when another process writes.
static LOG_FOLDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times this process has folded a whole log (see [`LOG_FOLDS`]).
pub fn log_folds() -> u64 {
    LOG_FOLDS.load(std::sync::atomic::Ordering::Relaxed)
}

#[derive(Default, Debug, Clone)]
pub struct Overlay {
    /// By the canonical graph token (`DEFAULT` or `<iri>`).
    pub graphs: FxHashMap<String, GraphDelta>,
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
    key_of_terms(q.to_terms())
}

fn key_of_terms(terms: [Term; 4]) -> Key {
    terms.map(|t| canonical(&t))
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

/// Whether the base holds each of many quads, asked in key order (one
/// graph's added quads after a fold). Most added quads are new, and a new
/// quad nearly always has a graph, predicate or subject the base's
/// dictionaries lack: the graph and predicate are asked first, once each,
/// then the subject (galloping from the previous one's position, as keys
/// come sorted by subject) and its rows, whose row groups' ids are decoded
/// once for all the quads that fall in them (`Store::holds_by_subject`).
/// Asking every quad through a full scan was a third of a fold of 200,000
/// new quads on a 10M-quad store, and half of one where 50,000 base quads
/// had been deleted and inserted again.
struct BaseProbe<'s> {
    store: &'s Store,
    cache: &'s ColumnCache,
    /// What the predicate's (graph's) dictionary says of each token asked.
    ids: [FxHashMap<String, DictLookup>; 2],
    subject_hint: u64,
}

impl<'s> BaseProbe<'s> {
    fn new(store: &'s Store, cache: &'s ColumnCache) -> Self {
        BaseProbe { store, cache, ids: Default::default(), subject_hint: 0 }
    }

    fn has(&mut self, k: &Key) -> Result<bool, StoreError> {
        if self.store.base.num_rows() == 0 {
            return Ok(false);
        }
        let (g, p) = (self.dict_id(1, 3, &k[3])?, self.dict_id(0, 1, &k[1])?);
        if g == DictLookup::Absent || p == DictLookup::Absent {
            return Ok(false);
        }
        let by_subject = match (p, g) {
            (DictLookup::Id(p), DictLookup::Id(g)) => {
                let (s, o) = (k[0].as_str(), k[2].as_str());
                self.store.holds_by_subject([s, o], [p, g], &mut self.subject_hint, self.cache)?
            }
            _ => None,
        };
        match by_subject {
            Some(held) => Ok(held),
            None if self.store.dict_may_hold(0, &k[0], &mut self.subject_hint)? => {
                base_has(self.store, self.cache, k)
            }
            None => Ok(false),
        }
    }

    /// What column `col`'s dictionary says of `token`, remembered in `ids[slot]`.
    fn dict_id(&mut self, slot: usize, col: usize, token: &str) -> Result<DictLookup, StoreError> {
        if let Some(&said) = self.ids[slot].get(token) {
            return Ok(said);
        }
        let said = self.store.dict_id(col, token)?;
        self.ids[slot].insert(token.to_string(), said);
        Ok(said)
    }
}

impl Overlay {
    /// Reads the store's log (if its view has one) and folds the visible batches.
    pub fn load(store: &Store, cache: &ColumnCache) -> Result<Overlay, StoreError> {
        let Some(path) = &store.layout.log else { return Ok(Overlay::default()) };
        Overlay::from_log(store, cache, Log::read(path)?)
    }

    /// [`Overlay::load`] over a log already read (`None`: the store has none).
    pub fn from_log(store: &Store, cache: &ColumnCache, log: Option<Log>) -> Result<Overlay, StoreError> {
        let Some(log) = log else { return Ok(Overlay::default()) };
        // A torn last frame is what a crash leaves, and is ignored. Valid
        // batches *behind* damage are committed writes no reader can reach:
        // answering without them would be silently wrong.
        log.refuse_hidden("refusing to answer without them")?;
        let leftover = log.tail.damage().map(|d| (d.offset, d.len, d.reason));
        let mut folded = Overlay::from_batches(store, cache, log.frames)?;
        folded.leftover = leftover;
        Ok(folded)
    }

    /// Folds the batches (already decoded) that the store's marker lets through.
    pub fn from_batches(
        store: &Store,
        cache: &ColumnCache,
        batches: Vec<deltalog::BatchFrame>,
    ) -> Result<Overlay, StoreError> {
        LOG_FOLDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut ov = Overlay::default();
        let seen = store.visibility();
        for frame in batches {
            if !seen.sees(&frame) {
                ov.batches_shadowed += 1;
                continue;
            }
            ov.batches_visible += 1;
            for e in frame.batch.entries {
                ov.apply(e);
            }
        }
        ov.drop_added_already_in_base(store, cache)?;
        Ok(ov)
    }

    /// Folds one more entry in, as a writer does with the entries of the
    /// request it is building (so later operations see earlier ones).
    pub fn apply_entry(&mut self, e: &Entry, store: &Store, cache: &ColumnCache) -> Result<(), StoreError> {
        let Entry::Add(q) = e else {
            self.apply(e.clone());
            return Ok(());
        };
        let key = key_of(q);
        // A quad the base holds (in a graph not cleared) is seen through
        // the base: it is no longer removed, and not added.
        let cleared = self.graphs.get(&key[3]).is_some_and(|g| g.cleared);
        let in_base = !cleared && BaseProbe::new(store, cache).has(&key)?;
        let g = self.graph(&key[3]);
        if in_base {
            g.removed.remove(&key);
            g.unadd(&key);
        } else {
            g.add(key);
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

    fn apply(&mut self, e: Entry) {
        match e {
            Entry::Add(q) => {
                let key = key_of_terms(q.into_terms());
                self.graph(&key[3]).add(key);
            }
            Entry::Remove(q) => {
                let key = key_of_terms(q.into_terms());
                self.graph(&key[3]).remove(key);
            }
            Entry::Clear(g) => self.graph(&graph_key(&g)).clear(),
            Entry::Drop(g) => self.graph(&graph_key(&Some(g))).clear(),
            Entry::Create(g) => {
                self.graph(&graph_key(&Some(g)));
            }
        }
    }

    /// Graph `gkey`'s state, made empty the first time it is named.
    fn graph(&mut self, gkey: &str) -> &mut GraphDelta {
        // Looked up before inserting: a log names few graphs, and the key
        // would otherwise be copied for every quad.
        if !self.graphs.contains_key(gkey) {
            self.graphs.insert(gkey.to_string(), GraphDelta::default());
        }
        self.graphs.get_mut(gkey).expect("inserted above")
    }

    /// An added quad the base already has (in a graph not cleared) is seen
    /// through the base; keeping it in `added` would show it twice.
    fn drop_added_already_in_base(&mut self, store: &Store, cache: &ColumnCache) -> Result<(), StoreError> {
        let mut probe = BaseProbe::new(store, cache);
        for g in self.graphs.values_mut() {
            if g.cleared || g.added.is_empty() {
                continue;
            }
            let mut in_base = Vec::new();
            for k in &g.added {
                if probe.has(k)? {
                    in_base.push(k.clone());
                }
            }
            for k in in_base {
                g.unadd(&k);
            }
        }
        Ok(())
    }

    /// How many base quads matching `pat` (its graph term aside) the overlay
    /// hides in the graphs `in_range` accepts: every base quad of a cleared
    /// graph (counted through the sidecars, not read), and each removed quad
    /// the base holds (a removal of a quad the base lacks hides nothing).
    /// With the base's own count and the added quads, a count of base ⊕
    /// delta that reads no rows.
    pub fn hidden_count(
        &self,
        store: &Store,
        cache: &ColumnCache,
        pat: &Pattern,
        in_range: impl Fn(&str) -> bool,
    ) -> Result<usize, StoreError> {
        let bound = [&pat.s, &pat.p, &pat.o].map(|t| t.as_ref().map(canonical));
        let matches =
            |k: &Key| bound.iter().zip(k.iter()).all(|(t, cell)| t.as_ref().is_none_or(|t| t == cell));
        let mut hidden = 0;
        for (gkey, d) in self.graphs.iter().filter(|(g, _)| in_range(g)) {
            if d.cleared {
                // Keys are rendered terms; one that is not names no base quad.
                let Ok(g) = term::parse_token(gkey) else { continue };
                let mut scan = store.scan(&Pattern { g: Some(g), ..pat.clone() });
                while let Some(n) = scan.next_count(cache) {
                    hidden += n?;
                }
                continue;
            }
            for k in d.removed.iter().filter(|k| matches(k)) {
                hidden += usize::from(base_has(store, cache, k)?);
            }
        }
        Ok(hidden)
    }

    /// Sorts every graph's added quads for lookups now, so that copies of
    /// this overlay share the work (the endpoint hands a copy to readers
    /// after each update; the writer's own later additions are then filtered
    /// in, not sorted again).
    pub fn prepare_lookups(&self) {
        for g in self.graphs.values() {
            g.prepare_lookups();
        }
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

    /// Whether a visible batch cleared or dropped graph `g` (after which
    /// only what it added since is seen).
    pub fn cleared(&self, g: &str) -> bool {
        self.graphs.get(g).is_some_and(|d| d.cleared)
    }

    /// Whether a visible batch added a quad to graph `g` that is still seen.
    pub fn adds_to(&self, g: &str) -> bool {
        self.graphs.get(g).is_some_and(|d| !d.added.is_empty())
    }

    /// What the delta could hide every base quad of, in column `col` (0–3:
    /// s, p, o, g), in the graphs `in_range` accepts: a cleared graph hides
    /// any value (and names itself in the graph column), a removed quad its
    /// own value. One pass over the delta per question, so a candidate value
    /// costs a set lookup, not a scan of the removed quads.
    pub fn hideable(&self, col: usize, in_range: impl Fn(&str) -> bool) -> Hideable {
        let mut h = Hideable::default();
        for (g, d) in self.graphs.iter().filter(|(g, _)| in_range(g)) {
            match col {
                3 if d.cleared || !d.removed.is_empty() => {
                    h.values.insert(g.clone());
                }
                3 => {}
                c => {
                    h.every |= d.cleared;
                    h.values.extend(d.removed.iter().map(|k| k[c].clone()));
                }
            }
        }
        h
    }

    /// The values (canonical tokens) of the added quads in column `col` in
    /// the graphs `in_range` accepts; in the graph column, each graph added
    /// to.
    pub fn added_values(
        &self,
        col: usize,
        in_range: impl Fn(&str) -> bool,
    ) -> std::collections::BTreeSet<String> {
        let mut values = std::collections::BTreeSet::new();
        for (g, d) in self.graphs.iter().filter(|(g, _)| in_range(g)) {
            match col {
                3 if !d.added.is_empty() => {
                    values.insert(g.clone());
                }
                3 => {}
                c => values.extend(d.added.iter().map(|k| k[c].clone())),
            }
        }
        values
    }
}

/// The values in one column the delta may hide every base quad of
/// ([`Overlay::hideable`]).
#[derive(Default)]
pub struct Hideable {
    /// A cleared graph in range: any value may be gone.
    pub every: bool,
    pub values: std::collections::HashSet<String>,
}

impl Hideable {
    pub fn may_hide_all(&self, token: &super::terms::Tok) -> bool {
        self.every || self.values.contains(token.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str, p: &str, o: &str) -> Key {
        [s, p, o, "DEFAULT"].map(str::to_string)
    }

    fn found(d: &GraphDelta, s: Option<&str>, p: Option<&str>, o: Option<&str>) -> Vec<Key> {
        d.added_matching(s, p, o).into_iter().cloned().collect()
    }

    /// The by-term index is built by a lookup and must not outlive a change:
    /// a request's later operation sees what an earlier one added or removed.
    #[test]
    fn lookups_see_changes_made_after_the_index_was_built() {
        let mut d = GraphDelta::default();
        d.add(key("<s1>", "<p>", "<o2>"));
        d.add(key("<s2>", "<p>", "<o1>"));
        assert_eq!(
            found(&d, None, Some("<p>"), None),
            vec![key("<s1>", "<p>", "<o2>"), key("<s2>", "<p>", "<o1>")]
        );
        d.add(key("<s0>", "<p>", "<o1>"));
        assert_eq!(
            found(&d, None, None, Some("<o1>")),
            vec![key("<s0>", "<p>", "<o1>"), key("<s2>", "<p>", "<o1>")]
        );
        d.remove(key("<s2>", "<p>", "<o1>"));
        assert_eq!(found(&d, None, None, Some("<o1>")), vec![key("<s0>", "<p>", "<o1>")]);
        assert_eq!(found(&d, Some("<s1>"), Some("<p>"), Some("<o1>")), Vec::<Key>::new());
        assert_eq!(found(&d, Some("<s1>"), Some("<q>"), None), Vec::<Key>::new());
        d.add(key("<s2>", "<p>", "<o1>"));
        assert_eq!(
            found(&d, None, None, Some("<o1>")),
            vec![key("<s0>", "<p>", "<o1>"), key("<s2>", "<p>", "<o1>")]
        );
        d.clear();
        assert_eq!(found(&d, None, Some("<p>"), None), Vec::<Key>::new());
        d.add(key("<s3>", "<p>", "<o3>"));
        assert_eq!(found(&d, Some("<s3>"), None, None), vec![key("<s3>", "<p>", "<o3>")]);
    }

    /// A clone handed to readers shares its sets and index with the
    /// writer's copy, and the writer's later changes (adds after the index
    /// was built, removals, a clear) reach neither the clone's sets nor its
    /// lookups; nor do the clone's changes reach the writer's.
    #[test]
    fn a_clone_is_a_snapshot_of_the_sets_and_the_index() {
        let mut writer = GraphDelta::default();
        for i in 0..600 {
            writer.add(key(&format!("<s{}>", i % 50), "<p>", &format!("<o{i}>")));
        }
        writer.remove(key("<s1>", "<p>", "<gone>"));
        writer.prepare_lookups();
        let reader = writer.clone();
        let before = (reader.added.clone(), reader.removed.clone(), found(&reader, Some("<s7>"), None, None));
        assert_eq!(before.2.len(), 12);
        writer.add(key("<s7>", "<p>", "<new>"));
        writer.remove(key("<s7>", "<p>", "<o7>"));
        assert_eq!(found(&writer, Some("<s7>"), None, None).len(), 12, "one added, one removed");
        assert!(found(&writer, Some("<s7>"), None, None).contains(&key("<s7>", "<p>", "<new>")));
        assert_eq!((&reader.added, &reader.removed), (&before.0, &before.1));
        assert_eq!(found(&reader, Some("<s7>"), None, None), before.2);
        let mut reader = reader;
        reader.clear();
        assert!(found(&reader, Some("<s7>"), None, None).is_empty());
        assert_eq!(writer.added.len(), 600, "600 added, one more, one removed");
        writer.clear();
        assert!(writer.added.is_empty() && before.0.len() == 600);
    }

    /// Past the point where the index is sorted again, answers stay the
    /// same as a filter over `added`.
    #[test]
    fn lookups_agree_with_a_filter_through_many_changes() {
        let mut d = GraphDelta::default();
        let k = |i: u32| key(&format!("<s{}>", i % 37), &format!("<p{}>", i % 3), &format!("<o{}>", i % 11));
        for i in 0..3000u32 {
            if i % 5 == 3 {
                d.remove(k(i * 7 % 1000));
            } else {
                d.add(k(i));
            }
            let (s, p, o) = (format!("<s{}>", i % 37), format!("<p{}>", i % 3), format!("<o{}>", i % 11));
            for bound in [(Some(&s), None, None), (None, Some(&p), None), (None, Some(&p), Some(&o))] {
                let want: Vec<Key> = d
                    .added
                    .iter()
                    .filter(|q| {
                        bound.0.is_none_or(|t| &q[0] == t)
                            && bound.1.is_none_or(|t| &q[1] == t)
                            && bound.2.is_none_or(|t| &q[2] == t)
                    })
                    .map(|q| (**q).clone())
                    .collect();
                let got = found(
                    &d,
                    bound.0.map(String::as_str),
                    bound.1.map(String::as_str),
                    bound.2.map(String::as_str),
                );
                assert_eq!(got, want, "after change {i}");
            }
        }
    }
}
