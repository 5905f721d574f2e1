//! The quad-pattern read path over a base, driven by the sidecars.
//!
//! For each bound position the term is rendered in every known producer's
//! escaping and looked up in the column's `.dict`: a term that is absent ends
//! the lookup before any page is decoded. Row groups are then pruned with
//! `.presence` and `.po.presence`; `.s.offsets` and `.p.offsets` turn a bound
//! subject or predicate into row positions, so decoded columns are probed, not
//! scanned, and a bound object finds its rows in a per-row-group postings list.
//! Without sidecars, Parquet min/max statistics and bloom filters prune
//! instead. Probing many row groups' bits is split across the cores: each
//! is a block of its own to read and hash, a stride of the file apart.
//! Columns are cached as dictionary ids, decoded from the base's own cells,
//! so a stale sidecar can cost speed but never yields a wrong row; the one
//! exception is subject ids read straight off `.s.offsets`, which is done
//! only when the sidecars' digests prove they were built from this base.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use parquet::data_type::ByteArray;

use crate::format::term::{token_variants, Term};
use crate::store::base::Column;
use crate::store::sidecars::mapped::DictMap;
use crate::store::versions::open::Store;

mod group;
pub mod held;
use crate::store::StoreError;
use group::Group;

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
    /// A pruning sidecar's block that failed its digest: pruning went on
    /// without it (correct, slower). The first such fault.
    pub sidecar_fault: Option<String>,
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
        if self.sidecar_fault.is_none() {
            self.sidecar_fault = e.sidecar_fault.clone();
        }
    }

    /// Notes a pruning sidecar's fault (kept: the first).
    fn fault(&mut self, e: StoreError) {
        self.sidecar_fault.get_or_insert_with(|| e.to_string());
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
        if let Some(e) = &self.sidecar_fault {
            write!(f, "\nsidecar not used       {e}")?;
        }
        Ok(())
    }
}

use crate::store::sidecars::COLUMNS as NAMES;
/// Cache keys of postings lists: the column number plus this.
const POSTINGS: usize = 4;
/// Dictionary searches between two checks of the mapped pages' budget
/// ([`Store::keep_mapped_pages_within_budget`], itself at most one a
/// millisecond) in a long run of them. A search can be the first to touch
/// a block, which is then mapped and hashed whole, so a long run of
/// searches between two checks could map far past the budget. A check
/// costs a `statm` read at most once a millisecond, so checking often is
/// cheap; 256 is a guard, not a measured optimum.
pub const SEARCHES_PER_PAGE_CHECK: u32 = 256;

/// A row group with at most 1/SPARSE of its rows as candidates has only
/// those cells read, not whole columns.
const SPARSE: usize = 32;

/// What a dictionary sidecar says of a token ([`Store::dict_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DictLookup {
    /// The token's id (its rank in the dictionary).
    Id(u32),
    /// The dictionary lacks the token, so no row of the base has it.
    Absent,
    /// The version has no such dictionary: it cannot say.
    NoDictionary,
}

/// Decoded columns, least recently used evicted first, bounded in bytes.
///
/// With dictionaries a column is cached as u32 dictionary ids (4 bytes a
/// cell), so a warm lookup compares integers; without them, as token bytes.
pub struct ColumnCache {
    /// Bytes at most; less while operators hold memory ([`held`]).
    budget: usize,
    /// Shared with [`held`]'s list of caches, which evicts from it when an
    /// operator's tables grow.
    inner: Arc<Mutex<CacheInner>>,
}

#[derive(Clone)]
enum Cached {
    Ids(Arc<Vec<u32>>),
    Postings(Arc<Vec<u64>>),
    Tokens(Column),
}

#[derive(Default)]
pub(super) struct CacheInner {
    map: HashMap<(usize, usize), (Cached, usize)>,
    order: VecDeque<(usize, usize)>,
    used: usize,
    /// Columns read sparsely once: the next read decodes and caches them.
    touched: std::collections::HashSet<(usize, usize)>,
}

impl CacheInner {
    /// Evicts least recently used columns until at most `bytes` are held.
    pub(super) fn evict_past(&mut self, bytes: usize) {
        while self.used > bytes {
            let Some(old) = self.order.pop_front() else { break };
            if let Some((_, s)) = self.map.remove(&old) {
                self.used -= s;
            }
        }
    }
}

impl Drop for ColumnCache {
    fn drop(&mut self) {
        held::cache_dropped(self.budget);
    }
}

impl ColumnCache {
    pub fn new(budget_bytes: usize) -> Self {
        let inner = Arc::new(Mutex::new(CacheInner::default()));
        held::cache_made(budget_bytes, &inner);
        ColumnCache { budget: budget_bytes, inner }
    }

    /// The cache of one process (or TUI worker) reading `store` within
    /// `memory_limit` bytes: 15/32 for decoded columns and the operators'
    /// tables they give way to ([`held`]), 15/32 for the store's mapped
    /// pages (released whole when exceeded; see
    /// [`Store::limit_mapped_pages`]), and the last 1/16 for the rest: the
    /// binary's own pages, the allocator's, a query's small state. A large
    /// join at 100M quads under 1 GiB, with halves and nothing left over,
    /// peaked 3 MiB over. spareval's own joins and sorts are not counted.
    pub fn within(store: &Store, memory_limit: usize) -> Self {
        store.limit_mapped_pages(Self::share_of(memory_limit) as u64);
        ColumnCache::new(Self::share_of(memory_limit))
    }

    /// The bytes of `memory_limit` decoded columns may take, and as many
    /// mapped pages ([`ColumnCache::within`]).
    pub fn share_of(memory_limit: usize) -> usize {
        memory_limit / 32 * 15
    }

    /// Bytes of decoded columns held now.
    pub fn held(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).used
    }

    fn lookup(&self, key: (usize, usize), ex: &mut Explain) -> Option<Cached> {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        // Room an operator took since the last insert is given here: a
        // warm scan inserts nothing.
        g.evict_past(held::cache_room(self.budget));
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

    /// True the first time a column is asked for this way: a few cells are
    /// then read without caching the column (a one-off lookup); a column
    /// asked for again (a join probing the same row group) is decoded whole
    /// and cached.
    fn first_touch(&self, key: (usize, usize)) -> bool {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).touched.insert(key)
    }

    /// Whether `key` is cached (no hit is counted).
    fn holds(&self, key: (usize, usize)) -> bool {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).map.contains_key(&key)
    }

    fn insert(&self, key: (usize, usize), value: Cached, size: usize) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let room = held::cache_room(self.budget);
        g.evict_past(room.saturating_sub(size));
        if size <= room && g.map.insert(key, (value, size)).is_none() {
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
        dict: &DictMap,
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
        let fast = match verified_offsets {
            Some(so) => so.ids_for_rows(store.base.rg_start(rg), store.base.rg_rows(rg))?,
            None => None,
        };
        let fast = match fast {
            Some(ids) => Some(ids),
            None => {
                let (mut fault, mut hint, mut searched) = (None, 0, 0u32);
                let ids = store.base.read_ids(rg, col, &mut |t| {
                    // A chunk's dictionary page searched value by value reads
                    // pages all over a large `.dict`: their budget is kept here
                    // too, not only between row groups.
                    searched = searched.wrapping_add(1);
                    if searched.is_multiple_of(SEARCHES_PER_PAGE_CHECK) {
                        store.keep_mapped_pages_within_budget();
                    }
                    dict.find_near(t, &mut hint).unwrap_or_else(|e| {
                        fault.get_or_insert(e);
                        None
                    })
                })?;
                if let Some(e) = fault {
                    return Err(e);
                }
                ids
            }
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
                _ => match dict.find(b)? {
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
        dict: &DictMap,
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
    Ids { dicts: [&'a DictMap; 4], ids: Vec<[u32; 4]> },
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
    /// Row `i`'s four cell tokens (a dictionary read can find damage).
    pub fn get(&self, i: usize) -> Result<[&[u8]; 4], StoreError> {
        match self {
            Rows::Ids { dicts, ids } => {
                let r = ids[i];
                Ok([
                    dicts[0].token(r[0])?,
                    dicts[1].token(r[1])?,
                    dicts[2].token(r[2])?,
                    dicts[3].token(r[3])?,
                ])
            }
            Rows::Tokens(t) => Ok(std::array::from_fn(|c| t[i][c].data())),
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = Result<[&[u8]; 4], StoreError>> + '_ {
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
    pub fn to_vecs(&self) -> Result<Vec<[Vec<u8>; 4]>, StoreError> {
        self.iter().map(|r| Ok(r?.map(<[u8]>::to_vec))).collect()
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
    dicts: Option<[&'a DictMap; 4]>,
    s_range: Option<Vec<(u64, u64)>>,
    /// Row groups pruning left to read.
    keep: Vec<bool>,
    /// Damage found while binding (a dictionary or `.s.offsets` block that
    /// failed its digest): the scan's only answer.
    fault: Option<StoreError>,
    next_rg: usize,
    /// A row group read in growing slices: the group and its next row.
    open_rest: Option<(usize, usize)>,
    /// The columns the reader uses ([`Scan::only_columns`]); the others
    /// read as [`NOT_READ`] unless bound.
    columns: [bool; 4],
    /// The rows were planned by the reader ([`Scan::restrict_subjects`]).
    planned: bool,
    /// What binding, pruning and the row groups read so far did.
    pub explain: Explain,
}

/// A scan with nothing bound reads a row group's first rows in slices of
/// these sizes, sparsely, before the rest at once. A sparse slice resolves
/// only its own dictionary entries (a binary search each, about 170 KB of
/// `.o.dict` blocks at 100M quads), so a `LIMIT 10` over everything does not
/// resolve every object of a row group; a scan that reads on pays for the
/// slices once, under 5% more. The first slice is 16 rows: with 64, a
/// `LIMIT 10` at 100M quads resolved six times the objects it needed.
pub(super) const SLICES: [usize; 4] = [16, 48, 448, 3584];

/// The id of a cell in a column the reader said it does not use.
pub const NOT_READ: u32 = u32::MAX;

impl<'a> Scan<'a> {
    /// Reads only `columns` (and bound ones) of each matching row: a
    /// reader that groups or joins on one column does not pay for decoding
    /// the others. The rest come as [`NOT_READ`].
    pub fn only_columns(&mut self, columns: [bool; 4]) {
        self.columns = columns;
    }

    /// The matches of the next row group left by pruning (possibly none);
    /// `None` when every row group has been read.
    pub fn next_group(&mut self, cache: &ColumnCache) -> Option<Result<Rows<'a>, StoreError>> {
        self.store.keep_mapped_pages_within_budget();
        if let Some(e) = self.fault.take() {
            self.finish();
            return Some(Err(e));
        }
        if let Some((rg, from)) = self.open_rest.take() {
            return Some(self.read_slice(rg, from, cache));
        }
        let rg = (self.next_rg..self.keep.len()).find(|&rg| self.keep[rg])?;
        self.next_rg = rg + 1;
        if self.bound.is_empty() && self.s_range.is_none() && self.dicts.is_some() {
            return Some(self.read_slice(rg, 0, cache));
        }
        Some(self.read_group(rg, cache))
    }

    /// Rows `from..` of a row group with nothing bound: the next slice of
    /// [`SLICES`] read sparsely, or after the slices everything left; the
    /// next call goes on where this one stopped.
    fn read_slice(&mut self, rg: usize, from: usize, cache: &ColumnCache) -> Result<Rows<'a>, StoreError> {
        let Some(dicts) = self.dicts else { return self.read_group(rg, cache) };
        let mut group = Group::new(self.store, rg, &self.bound, self.dicts, self.s_range.as_deref(), cache)
            .reading(self.columns);
        group.sliced = true;
        let ex = &mut self.explain;
        if from == 0 {
            ex.decoded_row_groups += 1;
            ex.positions_from.push("slices");
        }
        let slice = SLICES.iter().scan(0, |end, &n| {
            *end += n;
            Some((*end - n, *end))
        });
        let to = slice.into_iter().find(|&(start, _)| start == from).map(|(_, end)| end);
        let mut ids = Vec::new();
        match to {
            Some(to) if to < group.rows => {
                let at: Vec<u32> = (from as u32..to as u32).collect();
                match group.probe_sparse(4, &at, dicts, ex)? {
                    Some(rows) => ids = rows,
                    None => group.probe_ids(Some((4, at)), dicts, ex, &mut ids)?,
                }
                self.open_rest = Some((rg, to));
            }
            _ => {
                let rest: Vec<u32> = (from as u32..group.rows as u32).collect();
                ex.rows_probed += rest.len();
                group.probe_ids(Some((4, rest)), dicts, ex, &mut ids)?;
            }
        }
        ex.rows_matched += ids.len();
        Ok(Rows::Ids { dicts, ids })
    }

    /// How many rows of the next row group left by pruning match, reading
    /// only what the count needs (see [`Store::count_rows`]); `None` when
    /// every row group has been read.
    pub fn next_count(&mut self, cache: &ColumnCache) -> Option<Result<usize, StoreError>> {
        self.store.keep_mapped_pages_within_budget();
        if let Some(e) = self.fault.take() {
            self.finish();
            return Some(Err(e));
        }
        let rg = (self.next_rg..self.keep.len()).find(|&rg| self.keep[rg])?;
        self.next_rg = rg + 1;
        let Some(dicts) = self.dicts else { return Some(self.read_group(rg, cache).map(|r| r.len())) };
        Some(self.count_group(rg, dicts, cache))
    }

    fn count_group(
        &mut self,
        rg: usize,
        dicts: [&'a DictMap; 4],
        cache: &ColumnCache,
    ) -> Result<usize, StoreError> {
        let group = Group::new(self.store, rg, &self.bound, self.dicts, self.s_range.as_deref(), cache)
            .reading(self.columns);
        let ex = &mut self.explain;
        let Some(cand) = candidates_of(&group, ex)? else { return Ok(0) };
        let n = group.count_rows(cand, dicts, ex)?;
        ex.rows_matched += n;
        Ok(n)
    }

    /// Reads only the rows of these subjects (`.s.dict` ids, any order):
    /// their `.s.offsets` ranges become the candidate rows and the row
    /// groups none reaches are skipped. A join that already knows the
    /// subjects its other side can meet (`sparql::topk`) then reads their
    /// rows alone, sparsely, instead of every row of the pattern. `false`
    /// (the scan unchanged) without `.s.offsets`, or when the pattern binds
    /// its subject already.
    pub fn restrict_subjects(&mut self, ids: &[u32]) -> Result<bool, StoreError> {
        let Some(so) = self.store.sidecars.s_offsets() else { return Ok(false) };
        if self.s_range.is_some() || self.fault.is_some() {
            return Ok(false);
        }
        let mut ranges = Vec::with_capacity(ids.len());
        for &id in ids {
            ranges.extend(so.range(u64::from(id))?.filter(|r| r.0 < r.1));
        }
        ranges.sort_unstable();
        self.store.prune_by_subject(&ranges, &mut self.keep, &mut self.explain);
        self.s_range = Some(ranges);
        self.planned = true;
        Ok(true)
    }

    /// Reads no further row group.
    pub fn finish(&mut self) {
        self.next_rg = self.keep.len();
        self.open_rest = None;
    }

    fn read_group(&mut self, rg: usize, cache: &ColumnCache) -> Result<Rows<'a>, StoreError> {
        let mut out = self.empty_rows();
        let mut group = Group::new(self.store, rg, &self.bound, self.dicts, self.s_range.as_deref(), cache)
            .reading(self.columns);
        group.planned = self.planned;
        let ex = &mut self.explain;
        let Some(cand) = candidates_of(&group, ex)? else { return Ok(out) };
        match &mut out {
            Rows::Ids { dicts, ids } => group.probe_ids(cand, *dicts, ex, ids)?,
            Rows::Tokens(t) => group.probe_tokens(cand.map(|c| c.1), ex, t)?,
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

/// The ranges of `ranges` (ascending, disjoint) that meet rows `[a, b)`.
pub(super) fn ranges_within(ranges: &[(u64, u64)], a: u64, b: u64) -> &[(u64, u64)] {
    let from = ranges.partition_point(|&(_, e)| e <= a);
    let to = from + ranges[from..].partition_point(|&(s, _)| s < b);
    &ranges[from..to]
}

/// A row group's columns as ids, those decoded so far.
type IdColumns = [Option<Arc<Vec<u32>>>; 4];

/// Candidate local rows and the column whose sidecar found them; `None`:
/// every row is a candidate.
type RowSource = Option<(usize, Vec<u32>)>;

/// A group's candidate rows, with their source noted and the group counted
/// as decoded; `None` when its candidates are none (nothing is decoded).
fn candidates_of(g: &Group, ex: &mut Explain) -> Result<Option<RowSource>, StoreError> {
    let cand = match g.candidates(ex)? {
        Some((_, v, _)) if v.is_empty() => return Ok(None),
        Some((col, v, from)) => {
            ex.positions_from.push(from);
            Some((col, v))
        }
        None => None,
    };
    ex.decoded_row_groups += 1;
    Ok(Some(cand))
}

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
        let nothing = |explain, fault| {
            let keep = vec![false; n];
            Scan {
                store: self,
                bound: Vec::new(),
                dicts,
                s_range: None,
                keep,
                next_rg: 0,
                open_rest: None,
                columns: [true; 4],
                planned: false,
                explain,
                fault,
            }
        };
        let bound = match self.bind(pat, &mut explain) {
            Ok(Some(bound)) => bound,
            Ok(None) => return nothing(explain, None),
            Err(e) => return nothing(explain, Some(e)),
        };
        // A bound subject's rows first: they name the one or two row
        // groups worth the presence bits of the other bound terms (a join's
        // inner lookup otherwise tested every row group's bits).
        let s_range = match self.subject_ranges(&bound) {
            Ok(r) => r,
            Err(e) => return nothing(explain, Some(e)),
        };
        let mut keep = vec![true; n];
        if let Some(ranges) = &s_range {
            self.prune_by_subject(ranges, &mut keep, &mut explain);
        }
        self.prune(&bound, &mut keep, &mut explain);
        Scan {
            store: self,
            bound,
            dicts,
            s_range,
            keep,
            next_rg: 0,
            open_rest: None,
            columns: [true; 4],
            planned: false,
            explain,
            fault: None,
        }
    }

    /// How many base rows each graph holds, indexed by `.g.dict` id: the
    /// graph column of every row group read once, as ids. A count per graph
    /// through [`Store::scan`] reads that column once per graph and row
    /// group the graph is in, which costs more than evaluating the query
    /// once graphs spread over the row groups. `None` without a usable
    /// graph dictionary.
    pub fn rows_per_graph(&self, cache: &ColumnCache) -> Result<Option<Vec<u64>>, StoreError> {
        let Some(dict) = self.sidecars.dict(3) else { return Ok(None) };
        let mut rows = vec![0u64; dict.len()];
        let mut explain = Explain::default();
        for rg in 0..self.base.num_row_groups() {
            self.keep_mapped_pages_within_budget();
            for &id in cache.ids(self, dict, rg, 3, &mut explain)?.iter() {
                // Ids come from the dictionary's own lookups, so they are in range.
                if let Some(n) = rows.get_mut(id as usize) {
                    *n += 1;
                }
            }
        }
        Ok(Some(rows))
    }

    /// The pattern's bound terms, each in every producer's spelling and, with
    /// a dictionary, as ids. `None` when a term is in no dictionary: nothing
    /// can match, and no page need be decoded.
    fn bind(&self, pat: &Pattern, ex: &mut Explain) -> Result<Option<Vec<Bound>>, StoreError> {
        let mut bound = Vec::new();
        for (col, term) in pat.bound().into_iter().enumerate() {
            let Some(term) = term else { continue };
            let tokens: Vec<Vec<u8>> = token_variants(term).into_iter().map(String::into_bytes).collect();
            let ids = match self.sidecars.dict(col) {
                Some(d) => {
                    let found: Vec<Option<u32>> =
                        tokens.iter().map(|t| d.find(t)).collect::<Result<_, _>>()?;
                    Some(found.into_iter().flatten().collect::<Vec<u32>>())
                }
                None => None,
            };
            if ids.as_ref().is_some_and(|i| i.is_empty()) {
                ex.absent_in_dict = Some(NAMES[col]);
                return Ok(None);
            }
            bound.push(Bound { col, tokens, ids });
        }
        Ok(Some(bound))
    }

    /// Whether any row of the base may match `pat`: `false` only when the
    /// base has no rows, or a bound term is in none of its spellings in its
    /// column's dictionary (a lookup per bound term, no page read).
    pub fn may_match(&self, pat: &Pattern) -> Result<bool, StoreError> {
        Ok(self.base.num_rows() > 0 && self.bind(pat, &mut Explain::default())?.is_some())
    }

    /// Whether column `col`'s dictionary may hold `token`: an IRI, blank
    /// node or `DEFAULT` in canonical form, which every producer spells the
    /// same ([`token_variants`] has one). `false` only when the version has
    /// the dictionary and it lacks the token, so no row has it. `hint` is
    /// [`DictMap::find_near`]'s, for tokens asked in ascending order.
    pub fn dict_may_hold(&self, col: usize, token: &str, hint: &mut u64) -> Result<bool, StoreError> {
        match self.sidecars.dict(col) {
            Some(d) => Ok(d.find_near(token.as_bytes(), hint)?.is_some()),
            None => Ok(true),
        }
    }

    /// A token's id in column `col`'s dictionary sidecar.
    pub fn dict_id(&self, col: usize, token: &str) -> Result<DictLookup, StoreError> {
        Ok(match self.sidecars.dict(col) {
            Some(d) => d.find(token.as_bytes())?.map_or(DictLookup::Absent, DictLookup::Id),
            None => DictLookup::NoDictionary,
        })
    }

    /// Whether the base holds the quad of canonical subject and object
    /// tokens `s` and `o` and of predicate and graph ids `p` and `g` (as
    /// [`Self::dict_id`] gave them: a fold asks about many quads with the
    /// same few predicates and graphs, and looking them up again for each
    /// was a tenth of a fold), from its subject's rows (`.s.offsets`) and
    /// those row groups' p, o and g ids, decoded whole through `cache`. Asked for many quads in subject order (a fold's added
    /// quads), each row group is decoded once, where a scan per quad read
    /// its subject's pages again for each. `hint` is the subject
    /// dictionary's [`DictMap::find_near`] position. `None` when the
    /// sidecars cannot answer so (not proven built from this base, or one
    /// missing): the caller scans instead.
    pub fn holds_by_subject(
        &self,
        [s_token, o_token]: [&str; 2],
        [p, g]: [u32; 2],
        hint: &mut u64,
        cache: &ColumnCache,
    ) -> Result<Option<bool>, StoreError> {
        let sc = &self.sidecars;
        if !sc.verified {
            return Ok(None);
        }
        let (Some(so), Some(ds), Some(dp), Some(dob), Some(dg)) =
            (sc.s_offsets(), sc.dict(0), sc.dict(1), sc.dict(2), sc.dict(3))
        else {
            return Ok(None);
        };
        let Ok(o) = crate::format::term::parse_token(o_token) else { return Ok(None) };
        // Subjects, predicates and graphs are spelled alike by every
        // producer; a literal object may have several spellings.
        let Some(s) = ds.find_near(s_token.as_bytes(), hint)? else { return Ok(Some(false)) };
        let mut objects = Vec::new();
        for t in token_variants(&o) {
            objects.extend(dob.find(t.as_bytes())?);
        }
        let Some((mut row, end)) = so.range(u64::from(s))?.filter(|_| !objects.is_empty()) else {
            return Ok(Some(false));
        };
        let mut ex = Explain::default();
        while row < end {
            let rg = self.base.row_group_of(row);
            let start = self.base.rg_start(rg);
            let stop = end.min(start + self.base.rg_rows(rg) as u64);
            if stop <= row {
                return Ok(None);
            }
            let [pc, oc, gc] = [(dp, 1), (dob, 2), (dg, 3)].map(|(d, c)| cache.ids(self, d, rg, c, &mut ex));
            let (pc, oc, gc) = (pc?, oc?, gc?);
            let rows = (row - start) as usize..(stop - start) as usize;
            let hit = |r: usize| {
                pc.get(r) == Some(&p)
                    && gc.get(r) == Some(&g)
                    && oc.get(r).is_some_and(|o| objects.contains(o))
            };
            if rows.into_iter().any(hit) {
                return Ok(Some(true));
            }
            row = stop;
        }
        Ok(Some(false))
    }

    /// A bound subject's row ranges, from `.s.offsets`.
    fn subject_ranges(&self, bound: &[Bound]) -> Result<Option<Vec<(u64, u64)>>, StoreError> {
        let (Some(ids), Some(so)) = (ids_of(bound, 0), self.sidecars.s_offsets()) else { return Ok(None) };
        let mut ranges = Vec::new();
        for &i in ids {
            ranges.extend(so.range(u64::from(i))?.filter(|r| r.0 < r.1));
        }
        ranges.sort_unstable();
        Ok(Some(ranges))
    }

    /// Drops the row groups that none of the subjects' rows fall in;
    /// `ranges` ascending and disjoint (`.s.offsets` ranges never overlap).
    fn prune_by_subject(&self, ranges: &[(u64, u64)], keep: &mut [bool], ex: &mut Explain) {
        for (rg, k) in keep.iter_mut().enumerate() {
            let (a, b) = (self.base.rg_start(rg), self.base.rg_start(rg) + self.base.rg_rows(rg) as u64);
            if *k && ranges_within(ranges, a, b).is_empty() {
                *k = false;
                ex.pruned_by_s_offsets += 1;
            }
        }
    }

    /// Which of the row groups still in `keep` may hold matches: presence
    /// and po.presence with dictionaries, Parquet statistics and bloom
    /// filters without.
    fn prune(&self, bound: &[Bound], keep: &mut [bool], ex: &mut Explain) {
        let sc = &self.sidecars;
        // A sidecar block that fails its digest keeps the row group (reads
        // it), and the first such fault is reported.
        let fault: Mutex<Option<StoreError>> = Default::default();
        let may_hold = |r: Result<bool, StoreError>| {
            r.unwrap_or_else(|e| {
                fault.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                true
            })
        };
        for b in bound {
            // `.s.offsets` prunes a bound subject exactly, without these bits.
            if b.col == 0 && sc.verified && sc.s_offsets().is_some() {
                continue;
            }
            match (&b.ids, sc.presence(b.col)) {
                (Some(ids), Some(pr)) => {
                    let test = |rg: usize| ids.iter().any(|&id| may_hold(pr.get(rg as u32, id)));
                    probe_row_groups(keep, &mut ex.pruned_by_presence, ids.len(), &test)
                }
                _ => {
                    let toks = &b.tokens;
                    ex.pruned_by_statistics +=
                        prune_from(0, keep, &|rg| match self.base.min_max(rg, b.col) {
                            Some((lo, hi)) => toks
                                .iter()
                                .any(|t| lo.as_slice() <= t.as_slice() && t.as_slice() <= hi.as_slice()),
                            None => true,
                        });
                    ex.pruned_by_bloom += prune_from(0, keep, &|rg| {
                        toks.iter().any(|t| self.base.bloom_may_contain(rg, b.col, t).unwrap_or(true))
                    });
                }
            }
        }
        let ids_of = |col: usize| bound.iter().find(|b| b.col == col).and_then(|b| b.ids.as_ref());
        let bound_po = ids_of(1).zip(ids_of(2));
        if let Some(((ps, os), po)) = bound_po.and_then(|po_ids| Some((po_ids, sc.po_presence()?))) {
            // A binary search through the row group's pairs costs several
            // block reads where a presence bit costs one.
            let test =
                |rg: usize| ps.iter().any(|&p| os.iter().any(|&o| may_hold(po.contains(rg as u32, p, o))));
            probe_row_groups(keep, &mut ex.pruned_by_po_presence, 8 * ps.len() * os.len(), &test);
        }
        let fault = fault.into_inner().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = fault {
            ex.fault(e);
        }
    }
}

/// Sidecar blocks probed per thread before another core joins in. Each
/// probe of a block not read before is a `pread` of 4 KiB and its digest
/// (about 2 µs); a thread costs about 30 µs to start.
const PROBES_PER_THREAD: usize = 256;

/// The cores a query may split a long run of sidecar reads across, asked
/// once: the standard library reads the cgroup's files on every call.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Drops from `keep` the row groups `test` rules out, counting them in
/// `pruned`. `probes` is about how many sidecar blocks one test reads. A
/// bound object at 100M quads tests its bit in each of 814 row groups, a
/// block apart in `.o.presence`: most of a lookup's time, and a path asks
/// one such lookup per node it reaches. Those tests are split across the
/// cores when there are enough of them to pay for the threads.
fn probe_row_groups(
    keep: &mut [bool],
    pruned: &mut usize,
    probes: usize,
    test: &(dyn Fn(usize) -> bool + Sync),
) {
    let live = keep.iter().filter(|k| **k).count();
    let threads = (live.saturating_mul(probes.max(1)) / PROBES_PER_THREAD).clamp(1, cores());
    let run = |first: usize, part: &mut [bool]| prune_from(first, part, test);
    if threads == 1 {
        *pruned += run(0, keep);
        return;
    }
    let per = keep.len().div_ceil(threads);
    *pruned += std::thread::scope(|scope| {
        let parts: Vec<_> = keep
            .chunks_mut(per)
            .enumerate()
            .map(|(i, part)| scope.spawn(move || run(i * per, part)))
            .collect();
        parts.into_iter().map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).sum::<usize>()
    });
}

/// Drops from `keep`, whose first entry is row group `first`, the row
/// groups `test` rules out; how many it dropped.
fn prune_from(first: usize, keep: &mut [bool], test: &dyn Fn(usize) -> bool) -> usize {
    let mut n = 0;
    for (i, k) in keep.iter_mut().enumerate() {
        if *k && !test(first + i) {
            *k = false;
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Across threads or not, the same row groups are kept and counted.
    #[test]
    fn row_groups_probed_on_several_threads_are_pruned_as_on_one() {
        for n in [0usize, 1, 2, 3, 7, 100, 813, 814, 1000] {
            let start: Vec<bool> = (0..n).map(|rg| rg % 5 != 3).collect();
            let test = |rg: usize| rg.is_multiple_of(3) || rg % 7 == 1;
            let mut want = start.clone();
            let mut want_pruned = 0;
            for (rg, k) in want.iter_mut().enumerate() {
                if *k && !test(rg) {
                    *k = false;
                    want_pruned += 1;
                }
            }
            for probes in [1, PROBES_PER_THREAD, 64 * PROBES_PER_THREAD] {
                let (mut keep, mut pruned) = (start.clone(), 5);
                probe_row_groups(&mut keep, &mut pruned, probes, &test);
                assert_eq!(keep, want, "{n} row groups, {probes} probes each");
                assert_eq!(pruned, 5 + want_pruned, "{n} row groups, {probes} probes each");
            }
        }
    }
}
