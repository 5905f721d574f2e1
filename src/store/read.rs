//! The quad-pattern read path over a base, driven by the sidecars.
//!
//! For each bound position the term is rendered in every known producer's
//! escaping and looked up in the column's `.dict`: a term that is absent ends
//! the lookup before any page is decoded. Row groups are then pruned with
//! `.presence` and `.po.presence`; `.s.offsets` and `.p.offsets` turn a bound
//! subject or predicate into row positions, so decoded columns are probed, not
//! scanned, and a bound object finds its rows in a per-row-group postings list.
//! Without sidecars, Parquet min/max statistics and bloom filters prune
//! instead. Columns are cached as dictionary ids, decoded from the base's own
//! cells, so a stale sidecar can cost speed but never yields a wrong row; the
//! one exception is subject ids read straight off `.s.offsets`, which is done
//! only when the sidecars' digests prove they were built from this base.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use parquet::data_type::ByteArray;

use crate::format::dict::Dict;
use crate::format::term::{token_variants, Term};
use crate::store::base::Column;
use crate::store::versions::open::Store;
use crate::store::StoreError;

/// A quad pattern; `None` is a variable. `g: Some(Term::DefaultGraph)` is the
/// default graph, `None` any graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pattern {
    pub s: Option<Term>,
    pub p: Option<Term>,
    pub o: Option<Term>,
    pub g: Option<Term>,
}

impl Pattern {
    fn bound(&self) -> [Option<&Term>; 4] {
        [self.s.as_ref(), self.p.as_ref(), self.o.as_ref(), self.g.as_ref()]
    }
}

/// What pruning did, for `--explain`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Explain {
    pub row_groups: usize,
    /// The column whose bound term no dictionary holds (nothing was decoded).
    pub absent_in_dict: Option<&'static str>,
    pub pruned_by_presence: usize,
    pub pruned_by_po_presence: usize,
    pub pruned_by_s_offsets: usize,
    pub pruned_by_statistics: usize,
    pub pruned_by_bloom: usize,
    pub decoded_row_groups: usize,
    pub rows_probed: usize,
    pub rows_matched: usize,
    /// Which row-position source narrowed each probed row group.
    pub positions_from: Vec<&'static str>,
    pub cache_hits: usize,
    pub cache_misses: usize,
    /// Column chunks the fast decoder could not take (decoded by the parquet crate).
    pub slow_decodes: usize,
}

impl Explain {
    /// Adds another pattern's figures (a query reads many patterns).
    pub fn add(&mut self, e: &Explain) {
        self.row_groups = self.row_groups.max(e.row_groups);
        self.absent_in_dict = self.absent_in_dict.or(e.absent_in_dict);
        self.pruned_by_presence += e.pruned_by_presence;
        self.pruned_by_po_presence += e.pruned_by_po_presence;
        self.pruned_by_s_offsets += e.pruned_by_s_offsets;
        self.pruned_by_statistics += e.pruned_by_statistics;
        self.pruned_by_bloom += e.pruned_by_bloom;
        self.decoded_row_groups += e.decoded_row_groups;
        self.rows_probed += e.rows_probed;
        self.rows_matched += e.rows_matched;
        self.cache_hits += e.cache_hits;
        self.cache_misses += e.cache_misses;
        self.slow_decodes += e.slow_decodes;
        self.positions_from.extend(e.positions_from.iter().copied());
    }
}

impl std::fmt::Display for Explain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "row groups             {}", self.row_groups)?;
        if let Some(c) = self.absent_in_dict {
            writeln!(f, "bound {c} is absent from .{c}.dict: no row group decoded")?;
        }
        writeln!(f, "pruned by .presence    {}", self.pruned_by_presence)?;
        writeln!(f, "pruned by .po.presence {}", self.pruned_by_po_presence)?;
        writeln!(f, "pruned by .s.offsets   {}", self.pruned_by_s_offsets)?;
        writeln!(f, "pruned by statistics   {}", self.pruned_by_statistics)?;
        writeln!(f, "pruned by bloom        {}", self.pruned_by_bloom)?;
        writeln!(f, "row groups probed      {}", self.decoded_row_groups)?;
        let mut from = self.positions_from.clone();
        from.sort_unstable();
        from.dedup();
        writeln!(f, "row positions from     {}", if from.is_empty() { "-".into() } else { from.join(", ") })?;
        writeln!(f, "rows probed            {}", self.rows_probed)?;
        writeln!(f, "rows matched           {}", self.rows_matched)?;
        write!(f, "column cache           {} hits, {} misses", self.cache_hits, self.cache_misses)?;
        if self.slow_decodes > 0 {
            write!(f, "\nslow chunk decodes     {} (through the parquet crate)", self.slow_decodes)?;
        }
        Ok(())
    }
}

use crate::store::sidecars::COLUMNS as NAMES;
/// Cache keys of postings lists: the column number plus this.
const POSTINGS: usize = 4;

/// Decoded columns, least recently used evicted first, bounded in bytes.
///
/// With dictionaries a column is cached as u32 dictionary ids (4 bytes a
/// cell), so a warm lookup compares integers; without them, as token bytes.
pub struct ColumnCache {
    budget: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Clone)]
enum Cached {
    Ids(Arc<Vec<u32>>),
    Postings(Arc<Vec<u64>>),
    Tokens(Column),
}

#[derive(Default)]
struct CacheInner {
    map: HashMap<(usize, usize), (Cached, usize)>,
    order: VecDeque<(usize, usize)>,
    used: usize,
}

impl ColumnCache {
    pub fn new(budget_bytes: usize) -> Self {
        ColumnCache { budget: budget_bytes, inner: Mutex::new(CacheInner::default()) }
    }

    fn lookup(&self, key: (usize, usize), ex: &mut Explain) -> Option<Cached> {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let hit = g.map.get(&key).map(|(c, _)| c.clone());
        if hit.is_some() {
            if let Some(pos) = g.order.iter().rposition(|k| *k == key) {
                g.order.remove(pos);
            }
            g.order.push_back(key);
            ex.cache_hits += 1;
        }
        hit
    }

    fn insert(&self, key: (usize, usize), value: Cached, size: usize) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        while g.used + size > self.budget {
            let Some(old) = g.order.pop_front() else { break };
            if let Some((_, s)) = g.map.remove(&old) {
                g.used -= s;
            }
        }
        if size <= self.budget && g.map.insert(key, (value, size)).is_none() {
            g.order.push_back(key);
            g.used += size;
        }
    }

    fn tokens(&self, store: &Store, rg: usize, col: usize, ex: &mut Explain) -> Result<Column, StoreError> {
        if let Some(Cached::Tokens(c)) = self.lookup((rg, col), ex) {
            return Ok(c);
        }
        ex.cache_misses += 1;
        let c = store.base.read_column(rg, col)?;
        let size = c.iter().map(|v| v.len() + 40).sum::<usize>();
        self.insert((rg, col), Cached::Tokens(c.clone()), size);
        Ok(c)
    }

    /// The column as dictionary ids. A cell the dictionary lacks means the
    /// sidecar does not belong to this base: that is an error, never a guess.
    fn ids(
        &self,
        store: &Store,
        dict: &Dict,
        rg: usize,
        col: usize,
        ex: &mut Explain,
    ) -> Result<Arc<Vec<u32>>, StoreError> {
        if let Some(Cached::Ids(c)) = self.lookup((rg, col), ex) {
            return Ok(c);
        }
        ex.cache_misses += 1;
        // Subjects come off a digest-verified .s.offsets without decoding a
        // cell; other columns through the fast chunk decoder; the parquet
        // crate when neither applies.
        // (A sidecar is loaded on first use: ask for `.s.offsets` only for
        // the subject column.)
        let verified_offsets =
            (col == 0 && store.sidecars.verified).then(|| store.sidecars.s_offsets()).flatten();
        let fast =
            verified_offsets.and_then(|so| so.ids_for_rows(store.base.rg_start(rg), store.base.rg_rows(rg)));
        let fast = match fast {
            Some(ids) => Some(ids),
            None => store.base.read_ids(rg, col, &mut |t| dict.find(t))?,
        };
        if let Some(ids) = fast {
            let ids = Arc::new(ids);
            self.insert((rg, col), Cached::Ids(ids.clone()), 4 * ids.len() + 64);
            return Ok(ids);
        }
        ex.slow_decodes += 1;
        let tokens = store.base.read_column(rg, col)?;
        let mut ids = Vec::with_capacity(tokens.len());
        let mut last: Option<(&[u8], u32)> = None;
        // Dictionary-encoded pages hand out the same slice for equal values:
        // remember each slice's id so a value is searched once per row group.
        let mut seen: HashMap<(usize, usize), u32> = HashMap::new();
        for (row, v) in tokens.iter().enumerate() {
            let b = v.data();
            let slice = (b.as_ptr() as usize, b.len());
            // Sorted columns repeat a value in runs: skip the search then.
            let id = match last {
                Some((t, id)) if t == b => id,
                _ if seen.contains_key(&slice) => seen[&slice],
                _ => match dict.find(b) {
                    Some(id) => {
                        seen.insert(slice, id);
                        id
                    }
                    None => {
                        let path = store.base.path();
                        return Err(StoreError::format(
                            path,
                            store.base.chunk_range(rg, col).0,
                            format!(
                                "row group {rg} row {row}: {:?} is not in .{}.dict, so the sidecars do not belong to this base; rebuild them with `cottas-tui index`",
                                String::from_utf8_lossy(b),
                                NAMES[col]
                            ),
                        ));
                    }
                },
            };
            last = Some((b, id));
            ids.push(id);
        }
        let ids = Arc::new(ids);
        self.insert((rg, col), Cached::Ids(ids.clone()), 4 * ids.len() + 64);
        Ok(ids)
    }
}

/// Row positions from one sorted list per bound id, as one sorted list.
fn union_rows<I: Iterator<Item = u32>>(mut lists: impl Iterator<Item = I>) -> Vec<u32> {
    let mut v: Vec<u32> = lists.next().map(Iterator::collect).unwrap_or_default();
    let mut more = false;
    for l in lists {
        v.extend(l);
        more = true;
    }
    if more {
        v.sort_unstable();
    }
    v
}

/// The rows of `id` in a postings list (see [`ColumnCache::postings`]).
fn postings_of(post: &[u64], id: u32) -> impl Iterator<Item = u32> + '_ {
    let lo = post.partition_point(|&k| k < (u64::from(id) << 32));
    let hi = post.partition_point(|&k| k < ((u64::from(id) + 1) << 32));
    post[lo..hi].iter().map(|&k| k as u32)
}

impl ColumnCache {
    /// A row group's column as an inverted list, `(id << 32) | row` sorted, so
    /// a bound object finds its rows by binary search instead of a scan. The
    /// sidecars have no per-object row index; this is built from the cached id
    /// column on first use and cached beside it (8 bytes a cell).
    fn postings(
        &self,
        store: &Store,
        dict: &Dict,
        rg: usize,
        col: usize,
        ex: &mut Explain,
    ) -> Result<Arc<Vec<u64>>, StoreError> {
        let key = (rg, col + POSTINGS);
        if let Some(Cached::Postings(p)) = self.lookup(key, ex) {
            return Ok(p);
        }
        let ids = self.ids(store, dict, rg, col, ex)?;
        let mut post: Vec<u64> =
            ids.iter().enumerate().map(|(row, &id)| (u64::from(id) << 32) | row as u64).collect();
        post.sort_unstable();
        let post = Arc::new(post);
        self.insert(key, Cached::Postings(post.clone()), 8 * post.len() + 64);
        Ok(post)
    }
}

/// Matching rows: dictionary ids when the store has dictionaries, else tokens.
pub enum Rows<'a> {
    Ids { dicts: [&'a Dict; 4], ids: Vec<[u32; 4]> },
    Tokens(Vec<[ByteArray; 4]>),
}

impl<'a> Rows<'a> {
    pub fn len(&self) -> usize {
        match self {
            Rows::Ids { ids, .. } => ids.len(),
            Rows::Tokens(t) => t.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Row `i`'s four cell tokens.
    pub fn get(&self, i: usize) -> [&[u8]; 4] {
        match self {
            Rows::Ids { dicts, ids } => std::array::from_fn(|c| dicts[c].token(ids[i][c] as usize)),
            Rows::Tokens(t) => std::array::from_fn(|c| t[i][c].data()),
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = [&[u8]; 4]> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }
    /// Appends `other`'s rows (of the same scan).
    pub fn append(&mut self, other: Rows<'a>) {
        match (self, other) {
            (Rows::Ids { ids, .. }, Rows::Ids { ids: more, .. }) => ids.extend(more),
            (Rows::Tokens(t), Rows::Tokens(more)) => t.extend(more),
            _ => unreachable!("one scan yields one kind of rows"),
        }
    }
    /// Owned copies, for tests and small results.
    pub fn to_vecs(&self) -> Vec<[Vec<u8>; 4]> {
        self.iter().map(|r| r.map(<[u8]>::to_vec)).collect()
    }
}

/// The tokens a bound term may be stored as, and their dictionary ids.
struct Bound {
    col: usize,
    tokens: Vec<Vec<u8>>,
    ids: Option<Vec<u32>>,
}

/// A pattern's matching rows, row group by row group, so a reader that
/// stops early (LIMIT, ASK, EXISTS) decodes only the row groups it reached.
/// Memory is bounded by one row group's matches, not by the result.
pub struct Scan<'a> {
    store: &'a Store,
    bound: Vec<Bound>,
    dicts: Option<[&'a Dict; 4]>,
    s_range: Option<Vec<(u64, u64)>>,
    /// Row groups pruning left to read.
    keep: Vec<bool>,
    next_rg: usize,
    /// What binding, pruning and the row groups read so far did.
    pub explain: Explain,
}

impl<'a> Scan<'a> {
    /// The matches of the next row group left by pruning (possibly none);
    /// `None` when every row group has been read.
    pub fn next_group(&mut self, cache: &ColumnCache) -> Option<Result<Rows<'a>, StoreError>> {
        let rg = (self.next_rg..self.keep.len()).find(|&rg| self.keep[rg])?;
        self.next_rg = rg + 1;
        Some(self.read_group(rg, cache))
    }

    /// Reads no further row group.
    pub fn finish(&mut self) {
        self.next_rg = self.keep.len();
    }

    fn read_group(&mut self, rg: usize, cache: &ColumnCache) -> Result<Rows<'a>, StoreError> {
        let (store, ex) = (self.store, &mut self.explain);
        let mut out = match self.dicts {
            Some(d) => Rows::Ids { dicts: d, ids: Vec::new() },
            None => Rows::Tokens(Vec::new()),
        };
        let cand = match store.candidates(rg, &self.bound, self.s_range.as_deref(), self.dicts, cache, ex)? {
            Some((_, v, _)) if v.is_empty() => return Ok(out),
            Some((col, v, from)) => {
                ex.positions_from.push(from);
                Some((col, v))
            }
            None => None,
        };
        ex.decoded_row_groups += 1;
        let rows = store.base.rg_rows(rg);
        match &mut out {
            Rows::Ids { dicts, ids } => {
                store.probe_ids(rg, rows, cand, &self.bound, *dicts, cache, ex, ids)?
            }
            Rows::Tokens(t) => store.probe_tokens(rg, rows, cand.map(|c| c.1), &self.bound, cache, ex, t)?,
        }
        ex.rows_matched += out.len();
        Ok(out)
    }

    /// No rows, in this scan's representation.
    pub fn empty_rows(&self) -> Rows<'a> {
        match self.dicts {
            Some(d) => Rows::Ids { dicts: d, ids: Vec::new() },
            None => Rows::Tokens(Vec::new()),
        }
    }
}

/// Candidate rows of a row group: the column whose sidecar found them, the
/// local row numbers, and that sidecar's name for `--explain`.
type Candidates = (usize, Vec<u32>, &'static str);

/// The dictionary ids bound at `col`, if the pattern binds it and its
/// dictionary is present.
fn ids_of(bound: &[Bound], col: usize) -> Option<&[u32]> {
    bound.iter().find(|b| b.col == col).and_then(|b| b.ids.as_deref())
}

impl Store {
    /// All rows matching `pat`, with the pruning figures: a [`Scan`] taken
    /// to its end.
    pub fn quads_for_pattern<'a>(
        &'a self,
        pat: &Pattern,
        cache: &ColumnCache,
    ) -> Result<(Rows<'a>, Explain), StoreError> {
        let mut scan = self.scan(pat);
        let mut all = scan.empty_rows();
        while let Some(group) = scan.next_group(cache) {
            all.append(group?);
        }
        Ok((all, scan.explain))
    }

    /// The rows matching `pat`, to be read a row group at a time: binding the
    /// terms and pruning row groups happen here (sidecars and footers only);
    /// no column is decoded until [`Scan::next_group`] asks.
    pub fn scan<'a>(&'a self, pat: &Pattern) -> Scan<'a> {
        let n = self.base.num_row_groups();
        let mut explain = Explain { row_groups: n, ..Explain::default() };
        let dicts = self.sidecars.all_dicts();
        let Some(bound) = self.bind(pat, &mut explain) else {
            let keep = vec![false; n];
            return Scan { store: self, bound: Vec::new(), dicts, s_range: None, keep, next_rg: 0, explain };
        };
        let mut keep = self.prune(&bound, &mut explain);
        let s_range = self.subject_ranges(&bound);
        if let Some(ranges) = &s_range {
            self.prune_by_subject(ranges, &mut keep, &mut explain);
        }
        Scan { store: self, bound, dicts, s_range, keep, next_rg: 0, explain }
    }

    /// The pattern's bound terms, each in every producer's spelling and, with
    /// a dictionary, as ids. `None` when a term is in no dictionary: nothing
    /// can match, and no page need be decoded.
    fn bind(&self, pat: &Pattern, ex: &mut Explain) -> Option<Vec<Bound>> {
        let mut bound = Vec::new();
        for (col, term) in pat.bound().into_iter().enumerate() {
            let Some(term) = term else { continue };
            let tokens: Vec<Vec<u8>> = token_variants(term).into_iter().map(String::into_bytes).collect();
            let dict = self.sidecars.dict(col);
            let ids = dict.map(|d| tokens.iter().filter_map(|t| d.find(t)).collect::<Vec<u32>>());
            if ids.as_ref().is_some_and(|i| i.is_empty()) {
                ex.absent_in_dict = Some(NAMES[col]);
                return None;
            }
            bound.push(Bound { col, tokens, ids });
        }
        Some(bound)
    }

    /// A bound subject's row ranges, from `.s.offsets`.
    fn subject_ranges(&self, bound: &[Bound]) -> Option<Vec<(u64, u64)>> {
        let ids = ids_of(bound, 0)?;
        let so = self.sidecars.s_offsets()?;
        Some(ids.iter().filter_map(|&i| so.ranges.get(i as usize).copied()).filter(|r| r.0 < r.1).collect())
    }

    /// Drops the row groups that none of the subject's rows fall in.
    fn prune_by_subject(&self, ranges: &[(u64, u64)], keep: &mut [bool], ex: &mut Explain) {
        for (rg, k) in keep.iter_mut().enumerate() {
            let (a, b) = (self.base.rg_start(rg), self.base.rg_start(rg) + self.base.rg_rows(rg) as u64);
            if *k && !ranges.iter().any(|&(s, e)| s < b && a < e) {
                *k = false;
                ex.pruned_by_s_offsets += 1;
            }
        }
    }

    /// Candidate local rows of row group `rg` from the most selective source
    /// that applies: a bound subject's `.s.offsets` range, a bound object's
    /// postings, a bound predicate's `.p.offsets` rows. The other bound
    /// columns then filter the candidates. `None`: every row is a candidate.
    fn candidates(
        &self,
        rg: usize,
        bound: &[Bound],
        s_range: Option<&[(u64, u64)]>,
        dicts: Option<[&Dict; 4]>,
        cache: &ColumnCache,
        ex: &mut Explain,
    ) -> Result<Option<Candidates>, StoreError> {
        let (start, rows) = (self.base.rg_start(rg), self.base.rg_rows(rg) as u64);
        if let Some(ranges) = s_range {
            let mut v = Vec::new();
            for &(s, e) in ranges {
                let (a, b) = (s.max(start) - start, e.min(start + rows).saturating_sub(start));
                v.extend(a as u32..b as u32);
            }
            return Ok(Some((0, v, ".s.offsets")));
        }
        if let (Some(os), Some(d)) = (ids_of(bound, 2), dicts) {
            let post = cache.postings(self, d[2], rg, 2, ex)?;
            return Ok(Some((2, union_rows(os.iter().map(|&o| postings_of(&post, o))), "object postings")));
        }
        if let Some((ps, po)) = ids_of(bound, 1).and_then(|ps| Some((ps, self.sidecars.p_offsets()?))) {
            let lists = ps.iter().map(|&p| po.rows_of(rg as u32, p).iter().copied());
            return Ok(Some((1, union_rows(lists), ".p.offsets")));
        }
        Ok(None)
    }

    /// Which row groups may hold matches: presence and po.presence with
    /// dictionaries, Parquet statistics and bloom filters without.
    fn prune(&self, bound: &[Bound], ex: &mut Explain) -> Vec<bool> {
        let n = self.base.num_row_groups();
        let sc = &self.sidecars;
        let mut keep = vec![true; n];
        let prune = |keep: &mut Vec<bool>, counter: &mut usize, test: &dyn Fn(usize) -> bool| {
            for (rg, k) in keep.iter_mut().enumerate() {
                if *k && !test(rg) {
                    *k = false;
                    *counter += 1;
                }
            }
        };
        for b in bound {
            match (&b.ids, sc.presence(b.col)) {
                (Some(ids), Some(pr)) => prune(&mut keep, &mut ex.pruned_by_presence, &|rg| {
                    ids.iter().any(|&id| pr.get(rg as u32, id))
                }),
                _ => {
                    let toks = &b.tokens;
                    prune(
                        &mut keep,
                        &mut ex.pruned_by_statistics,
                        &|rg| match self.base.min_max(rg, b.col) {
                            Some((lo, hi)) => toks
                                .iter()
                                .any(|t| lo.as_slice() <= t.as_slice() && t.as_slice() <= hi.as_slice()),
                            None => true,
                        },
                    );
                    prune(&mut keep, &mut ex.pruned_by_bloom, &|rg| {
                        toks.iter().any(|t| self.base.bloom_may_contain(rg, b.col, t).unwrap_or(true))
                    });
                }
            }
        }
        let ids_of = |col: usize| bound.iter().find(|b| b.col == col).and_then(|b| b.ids.as_ref());
        let bound_po = ids_of(1).zip(ids_of(2));
        if let Some(((ps, os), po)) = bound_po.and_then(|po_ids| Some((po_ids, sc.po_presence()?))) {
            prune(&mut keep, &mut ex.pruned_by_po_presence, &|rg| {
                ps.iter().any(|&p| os.iter().any(|&o| po.contains(rg as u32, p, o)))
            });
        }
        keep
    }

    #[allow(clippy::too_many_arguments)]
    fn probe_ids(
        &self,
        rg: usize,
        rows: usize,
        cand: Option<(usize, Vec<u32>)>,
        bound: &[Bound],
        dicts: [&Dict; 4],
        cache: &ColumnCache,
        ex: &mut Explain,
        out: &mut Vec<[u32; 4]>,
    ) -> Result<(), StoreError> {
        // Filter on the bound columns first; fetch the rest only for matches.
        let mut cols: [Option<Arc<Vec<u32>>>; 4] = Default::default();
        let (source, mut rows_at): (usize, Vec<u32>) = match cand {
            Some((col, c)) => (col, c.into_iter().filter(|&r| (r as usize) < rows).collect()),
            None => {
                let Some(first) = bound.first() else {
                    // No bound term: every row.
                    for (c, slot) in cols.iter_mut().enumerate() {
                        *slot = Some(cache.ids(self, dicts[c], rg, c, ex)?);
                    }
                    ex.rows_probed += rows;
                    let [s, p, o, g] = cols.map(|c| c.unwrap_or_default());
                    out.extend((0..rows).map(|r| [s[r], p[r], o[r], g[r]]));
                    return Ok(());
                };
                let col = cache.ids(self, dicts[first.col], rg, first.col, ex)?;
                let want = first.ids.as_deref().unwrap_or(&[]);
                ex.rows_probed += rows;
                let hits = match want {
                    [one] => {
                        col.iter().enumerate().filter(|(_, &v)| v == *one).map(|(r, _)| r as u32).collect()
                    }
                    many => col
                        .iter()
                        .enumerate()
                        .filter(|(_, v)| many.contains(v))
                        .map(|(r, _)| r as u32)
                        .collect(),
                };
                cols[first.col] = Some(col);
                (first.col, hits)
            }
        };
        for b in bound.iter().filter(|b| b.col != source) {
            let want = b.ids.as_deref().unwrap_or(&[]);
            let col = match &cols[b.col] {
                Some(c) => c.clone(),
                None => {
                    let c = cache.ids(self, dicts[b.col], rg, b.col, ex)?;
                    cols[b.col] = Some(c.clone());
                    c
                }
            };
            ex.rows_probed += rows_at.len();
            rows_at.retain(|&r| want.contains(&col[r as usize]));
        }
        if rows_at.is_empty() {
            return Ok(());
        }
        for (c, slot) in cols.iter_mut().enumerate() {
            if slot.is_none() {
                *slot = Some(cache.ids(self, dicts[c], rg, c, ex)?);
            }
        }
        let [s, p, o, g] = cols.map(|c| c.unwrap_or_default());
        out.extend(rows_at.into_iter().map(|r| r as usize).map(|r| [s[r], p[r], o[r], g[r]]));
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn probe_tokens(
        &self,
        rg: usize,
        rows: usize,
        cand: Option<Vec<u32>>,
        bound: &[Bound],
        cache: &ColumnCache,
        ex: &mut Explain,
        out: &mut Vec<[ByteArray; 4]>,
    ) -> Result<(), StoreError> {
        let columns: Vec<Column> = (0..4).map(|c| cache.tokens(self, rg, c, ex)).collect::<Result<_, _>>()?;
        let matches = |r: usize| {
            bound.iter().all(|b| {
                let cell = columns[b.col][r].data();
                b.tokens.iter().any(|t| t.as_slice() == cell)
            })
        };
        let rows_at: Box<dyn Iterator<Item = usize>> = match cand {
            Some(c) => Box::new(c.into_iter().map(|r| r as usize).filter(move |&r| r < rows)),
            None => Box::new(0..rows),
        };
        for r in rows_at {
            ex.rows_probed += 1;
            if matches(r) {
                out.push([
                    columns[0][r].clone(),
                    columns[1][r].clone(),
                    columns[2][r].clone(),
                    columns[3][r].clone(),
                ]);
            }
        }
        Ok(())
    }
}
