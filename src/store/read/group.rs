//! Reading one row group of a pattern's scan: where its candidate rows come
//! from, which bound columns filter them, and how little is decoded to do so.
//!
//! A [`Group`] holds what every step needs (the store, the row group, the
//! bound terms, the dictionaries, the column cache), so each step is a short
//! method. Row positions come from the most selective source (`.s.offsets`,
//! a bound object's cells or postings, `.p.offsets`); bound columns filter
//! them by byte comparison while their chunks decode, sparsely when the
//! candidates are few; only rows that match have their other cells read.

use std::sync::Arc;

use parquet::data_type::ByteArray;

use super::{
    ids_of, postings_of, union_rows, Bound, Cached, ColumnCache, Explain, IdColumns, RowSource, NOT_READ,
    SPARSE,
};
use crate::store::base::Column;
use crate::store::sidecars::mapped::DictMap;
use crate::store::versions::open::Store;
use crate::store::StoreError;

/// Candidate rows of a row group: the column whose sidecar found them, the
/// local row numbers, and that sidecar's name for `--explain`.
pub(super) type Candidates = (usize, Vec<u32>, &'static str);

/// One row group of a scan, being read.
pub(super) struct Group<'s> {
    pub store: &'s Store,
    pub rg: usize,
    /// Rows in the row group.
    pub rows: usize,
    pub bound: &'s [Bound],
    pub dicts: Option<[&'s DictMap; 4]>,
    /// A bound subject's global row ranges, from `.s.offsets`.
    pub s_range: Option<&'s [(u64, u64)]>,
    pub cache: &'s ColumnCache,
    /// Read in [`super::SLICES`]: each slice's cells are read sparsely even
    /// when the column was read before (the slices are planned reads of a
    /// few rows each, not a join coming back), so a `LIMIT 100` resolves
    /// about 500 values per column, not the row group's whole dictionary.
    pub sliced: bool,
    /// The candidates are rows a join planned to read once
    /// ([`super::Scan::restrict_subjects`]): their cells stay sparse in a
    /// column read before, as for `sliced`.
    pub planned: bool,
    /// The columns the reader uses (`Scan::only_columns`).
    pub columns: [bool; 4],
    /// The reader takes each row once ([`Group::reading`]).
    pub one_pass: bool,
}

impl<'s> Group<'s> {
    pub fn new(
        store: &'s Store,
        rg: usize,
        bound: &'s [Bound],
        dicts: Option<[&'s DictMap; 4]>,
        s_range: Option<&'s [(u64, u64)]>,
        cache: &'s ColumnCache,
    ) -> Self {
        Group {
            store,
            rg,
            rows: store.base.rg_rows(rg),
            bound,
            dicts,
            s_range,
            cache,
            sliced: false,
            planned: false,
            columns: [true; 4],
            one_pass: false,
        }
    }

    /// Reads only `columns` (and bound ones). A reader that names its
    /// columns takes each row once (a count, a group, a join's key set), so
    /// its cells are read sparsely whenever candidates narrow the rows:
    /// decoding a whole column into ids looks up every value of the chunk's
    /// dictionary where the candidates' cells may hold a few (`memberOf`'s
    /// departments). A column touched again (the endpoint's next request)
    /// is decoded whole and cached, as for a join that comes back.
    pub fn reading(mut self, columns: [bool; 4]) -> Self {
        self.columns = columns;
        self.one_pass = columns != [true; 4];
        self
    }

    /// Candidate local rows of row group `rg` from the most selective source
    /// that applies: a bound subject's `.s.offsets` range, a bound object's
    /// postings, a bound predicate's `.p.offsets` rows. The other bound
    /// columns then filter the candidates. `None`: every row is a candidate.
    pub(super) fn candidates(&self, ex: &mut Explain) -> Result<Option<Candidates>, StoreError> {
        let (rg, bound) = (self.rg, self.bound);
        let (start, rows) = (self.store.base.rg_start(rg), self.rows as u64);
        if let Some(ranges) = self.s_range {
            let mut v = Vec::new();
            for &(s, e) in super::ranges_within(ranges, start, start + rows) {
                let (a, b) = (s.max(start) - start, e.min(start + rows).saturating_sub(start));
                v.extend(a as u32..b as u32);
            }
            return Ok(Some((0, v, ".s.offsets")));
        }
        // A predicate with few rows here (`subOrganizationOf` beside a
        // bound object) gives fewer candidates than the object's cells,
        // which would decode and compare the whole object column.
        if let Some(few) = self.few_predicate_rows(ex) {
            return Ok(Some((1, few, ".p.offsets")));
        }
        if let (Some(os), Some(d)) = (ids_of(bound, 2), self.dicts) {
            // Uncached, the object's cells are matched while the chunk
            // decodes; cached, its postings list answers by binary search.
            if !self.cache.holds((rg, 2)) {
                let b = bound.iter().find(|b| b.col == 2).expect("bound object");
                if let Some(hit) = self.bound_matches(b, None, ex)? {
                    let rows = (0..hit.len() as u32).filter(|&r| hit[r as usize]).collect();
                    return Ok(Some((2, rows, "object cells")));
                }
            }
            let post = self.cache.postings(self.store, d[2], rg, 2, ex)?;
            return Ok(Some((2, union_rows(os.iter().map(|&o| postings_of(&post, o))), "object postings")));
        }
        if let Some((ps, po)) = ids_of(bound, 1).and_then(|ps| Some((ps, self.store.sidecars.p_offsets()?))) {
            match ps.iter().map(|&p| po.rows_of(rg as u32, p)).collect::<Result<Vec<_>, _>>() {
                Ok(lists) => {
                    return Ok(Some((1, union_rows(lists.into_iter().map(Vec::into_iter)), ".p.offsets")))
                }
                Err(e) => ex.fault(e),
            }
        }
        Ok(None)
    }

    /// The bound predicate's rows from `.p.offsets`, when the object is
    /// bound too, its column is not cached, and the predicate's rows are few
    /// enough to be read sparsely: then they are the cheaper candidates.
    fn few_predicate_rows(&self, ex: &mut Explain) -> Option<Vec<u32>> {
        let bound = self.bound;
        ids_of(bound, 2)?;
        if self.cache.holds((self.rg, 2)) {
            return None;
        }
        let (ps, po) = (ids_of(bound, 1)?, self.store.sidecars.p_offsets()?);
        match ps.iter().map(|&p| po.rows_of(self.rg as u32, p)).collect::<Result<Vec<_>, _>>() {
            Ok(lists) if lists.iter().map(Vec::len).sum::<usize>() * SPARSE <= self.rows => {
                Some(union_rows(lists.into_iter().map(Vec::into_iter)))
            }
            Ok(_) => None,
            Err(e) => {
                ex.fault(e);
                None
            }
        }
    }

    /// A few candidate rows: only their cells are read, bound columns first
    /// so a row one of them rules out is not read in the others. `None`
    /// when the fast chunk decoder does not apply (the caller decodes whole
    /// columns).
    pub(super) fn probe_sparse(
        &self,
        source: usize,
        cand: &[u32],
        dicts: [&DictMap; 4],
        ex: &mut Explain,
    ) -> Result<Option<Vec<[u32; 4]>>, StoreError> {
        let (rows, bound) = (self.rows, self.bound);
        let mut at: Vec<u32> = cand.iter().copied().filter(|&r| (r as usize) < rows).collect();
        // `.p.offsets` and postings hand them over ascending already.
        if !at.windows(2).all(|w| w[0] < w[1]) {
            at.sort_unstable();
            at.dedup();
        }
        ex.rows_probed += at.len();
        let bound_cols = bound.iter().map(|b| b.col);
        let order: Vec<usize> =
            bound_cols.clone().chain((0..4).filter(|c| !bound.iter().any(|b| b.col == *c))).collect();
        // A column not read, or whose every cell is known, stays empty and
        // its cells are `fill`'s.
        let mut vals: [Vec<u32>; 4] = Default::default();
        let mut fill = [NOT_READ; 4];
        for c in order {
            // The candidates are exactly the rows whose `source` cell is the
            // bound term: with one id its cells are known without reading
            // the column again (a second read would decode it whole, and a
            // chunk's objects are spread over the whole `.o.dict`).
            let known =
                bound.iter().find(|b| b.col == c && c == source).and_then(|b| match b.ids.as_deref() {
                    Some([id]) => Some(*id),
                    _ => None,
                });
            if let Some(id) = known {
                fill[c] = id;
                continue;
            }
            if !self.columns[c] && !bound.iter().any(|b| b.col == c) {
                continue;
            }
            let Some(v) = self.cells_at(c, &at, dicts[c], ex)? else { return Ok(None) };
            vals[c] = v;
            let Some(want) = bound.iter().find(|b| b.col == c).map(|b| b.ids.as_deref().unwrap_or(&[]))
            else {
                continue;
            };
            let keep: Vec<bool> = vals[c].iter().map(|id| want.contains(id)).collect();
            for column in vals.iter_mut().filter(|v| !v.is_empty()) {
                let mut k = keep.iter();
                column.retain(|_| *k.next().unwrap_or(&false));
            }
            let mut k = keep.iter();
            at.retain(|_| *k.next().unwrap_or(&false));
        }
        let cell = |c: usize, i: usize| vals[c].get(i).copied().unwrap_or(fill[c]);
        Ok(Some((0..at.len()).map(|i| [cell(0, i), cell(1, i), cell(2, i), cell(3, i)]).collect()))
    }

    /// Column `col`'s ids at local rows `at`: from the cache when the whole
    /// column is there, from `.s.offsets` for subjects, else read sparsely.
    fn cells_at(
        &self,
        col: usize,
        at: &[u32],
        dict: &DictMap,
        ex: &mut Explain,
    ) -> Result<Option<Vec<u32>>, StoreError> {
        let rg = self.rg;
        if at.is_empty() {
            return Ok(Some(Vec::new()));
        }
        if let Some(Cached::Ids(c)) = self.cache.lookup((rg, col), ex) {
            return Ok(Some(at.iter().map(|&r| c[r as usize]).collect()));
        }
        if let (0, true, Some(so)) = (col, self.store.sidecars.verified, self.store.sidecars.s_offsets()) {
            if at.len() * SPARSE > self.rows && !self.sliced {
                // Many rows: the whole row group's subjects in one walk of
                // `.s.offsets` cost less than a search per row (a slice of
                // a scan with nothing bound stays sparse, see `sliced`).
                let c = self.cache.ids(self.store, dict, rg, col, ex)?;
                return Ok(Some(at.iter().map(|&r| c[r as usize]).collect()));
            }
            let start = self.store.base.rg_start(rg);
            let ids = so.ids_of_rows(at.iter().map(|&r| start + u64::from(r)))?;
            if ids.is_some() {
                return Ok(ids);
            }
        }
        if !self.sliced && !self.planned && !self.cache.first_touch((rg, col)) {
            let c = self.cache.ids(self.store, dict, rg, col, ex)?;
            return Ok(Some(at.iter().map(|&r| c[r as usize]).collect()));
        }
        let (mut fault, mut hint, mut searched) = (None, 0, 0u32);
        let ids = self.store.base.read_ids_at(rg, col, at, &mut |t| {
            searched = searched.wrapping_add(1);
            if searched.is_multiple_of(super::SEARCHES_PER_PAGE_CHECK) {
                self.store.keep_mapped_pages_within_budget();
            }
            dict.find_near(t, &mut hint).unwrap_or_else(|e| {
                fault.get_or_insert(e);
                None
            })
        })?;
        match fault {
            Some(e) => Err(e),
            None => Ok(ids),
        }
    }

    /// The local rows of row group `rg` that every bound column allows,
    /// decoding only bound columns (whole, through the cache), and the
    /// columns decoded on the way. With no bound term: every row.
    fn filter_rows(
        &self,
        cand: RowSource,
        dicts: [&DictMap; 4],
        ex: &mut Explain,
    ) -> Result<(Vec<u32>, IdColumns), StoreError> {
        let (rg, rows, bound) = (self.rg, self.rows, self.bound);
        let mut cols: [Option<Arc<Vec<u32>>>; 4] = Default::default();
        let (source, rows_at): (usize, Vec<u32>) = match cand {
            Some((col, c)) => (col, c.into_iter().filter(|&r| (r as usize) < rows).collect()),
            None => {
                let Some(first) = bound.first() else {
                    ex.rows_probed += rows;
                    return Ok(((0..rows as u32).collect(), cols));
                };
                ex.rows_probed += rows;
                if let Some(hit) = self.bound_matches(first, None, ex)? {
                    let hits = (0..rows as u32).filter(|&r| hit[r as usize]).collect();
                    return self.filter_rest((first.col, hits), dicts, ex, cols);
                }
                let col = self.cache.ids(self.store, dicts[first.col], rg, first.col, ex)?;
                let want = first.ids.as_deref().unwrap_or(&[]);
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
        self.filter_rest((source, rows_at), dicts, ex, cols)
    }

    /// [`Store::filter_rows`] after the first source of rows: the other
    /// bound columns filter them.
    fn filter_rest(
        &self,
        (source, mut rows_at): (usize, Vec<u32>),
        dicts: [&DictMap; 4],
        ex: &mut Explain,
        mut cols: IdColumns,
    ) -> Result<(Vec<u32>, IdColumns), StoreError> {
        let (rg, rows, bound) = (self.rg, self.rows, self.bound);
        for b in bound.iter().filter(|b| b.col != source) {
            if rows_at.is_empty() {
                break;
            }
            ex.rows_probed += rows_at.len();
            let sparse = rows_at.len() * SPARSE <= rows;
            let keep = match self.bound_matches(b, sparse.then_some(&rows_at[..]), ex)? {
                Some(hit) if sparse => hit,
                Some(hit) => rows_at.iter().map(|&r| hit[r as usize]).collect(),
                None => {
                    let want = b.ids.as_deref().unwrap_or(&[]);
                    let col = self.cache.ids(self.store, dicts[b.col], rg, b.col, ex)?;
                    let keep = rows_at.iter().map(|&r| want.contains(&col[r as usize])).collect();
                    cols[b.col] = Some(col);
                    keep
                }
            };
            let mut k = keep.into_iter();
            rows_at.retain(|_| k.next().unwrap_or(false));
        }
        Ok((rows_at, cols))
    }

    /// Which cells of bound column `b.col` hold one of `b`'s tokens, at
    /// local rows `at` (every row when `None`): from the cached ids when the
    /// column is cached, else compared byte for byte while the chunk decodes
    /// (a dictionary page's values once each), with no `.dict` lookup at
    /// all. `None` when the fast chunk decoder does not apply.
    fn bound_matches(
        &self,
        b: &Bound,
        at: Option<&[u32]>,
        ex: &mut Explain,
    ) -> Result<Option<Vec<bool>>, StoreError> {
        let rg = self.rg;
        let cached = match (&b.ids, self.dicts) {
            (Some(_), Some(d)) if !self.cache.holds((rg, b.col)) && !self.cache.first_touch((rg, b.col)) => {
                Some(Cached::Ids(self.cache.ids(self.store, d[b.col], rg, b.col, ex)?))
            }
            (Some(_), _) => self.cache.lookup((rg, b.col), ex),
            (None, _) => None,
        };
        if let (Some(ids), Some(Cached::Ids(c))) = (&b.ids, cached) {
            let hit = |r: usize| ids.contains(&c[r]);
            return Ok(Some(match at {
                Some(at) => at.iter().map(|&r| hit(r as usize)).collect(),
                None => (0..c.len()).map(hit).collect(),
            }));
        }
        let mut matcher = |v: &[u8]| Some(u32::from(b.tokens.iter().any(|t| t.as_slice() == v)));
        let flags = match at {
            Some(at) => self.store.base.read_ids_at(rg, b.col, at, &mut matcher)?,
            None => self.store.base.read_ids(rg, b.col, &mut matcher)?,
        };
        Ok(flags.map(|f| f.into_iter().map(|x| x == 1).collect()))
    }

    /// How many rows of row group `rg` match: only the bound columns are
    /// read, sparsely when the candidates are few, and not at all when the
    /// candidates' own source is the only bound column.
    pub(super) fn count_rows(
        &self,
        cand: RowSource,
        dicts: [&DictMap; 4],
        ex: &mut Explain,
    ) -> Result<usize, StoreError> {
        let (rows, bound) = (self.rows, self.bound);
        let source = cand.as_ref().map(|c| c.0);
        if let Some((_, c)) = cand.as_ref().filter(|_| bound.iter().all(|b| Some(b.col) == source)) {
            return Ok(c.iter().filter(|&&r| (r as usize) < rows).count());
        }
        Ok(self.filter_rows(cand, dicts, ex)?.0.len())
    }

    pub(super) fn probe_ids(
        &self,
        cand: RowSource,
        dicts: [&DictMap; 4],
        ex: &mut Explain,
        out: &mut Vec<[u32; 4]>,
    ) -> Result<(), StoreError> {
        let (rg, rows) = (self.rg, self.rows);
        if let Some((source, c)) = &cand {
            if c.len() * SPARSE <= rows || (self.one_pass && c.len() < rows) {
                if let Some(found) = self.probe_sparse(*source, c, dicts, ex)? {
                    if out.is_empty() {
                        *out = found;
                    } else {
                        out.extend(found);
                    }
                    return Ok(());
                }
            }
        }
        // Filter on the bound columns first; fetch the rest only for matches.
        let (rows_at, mut cols) = self.filter_rows(cand, dicts, ex)?;
        if rows_at.is_empty() {
            return Ok(());
        }
        for (c, slot) in cols.iter_mut().enumerate() {
            if slot.is_none() && self.columns[c] {
                *slot = Some(self.cache.ids(self.store, dicts[c], rg, c, ex)?);
            }
        }
        let [s, p, o, g] = cols.map(|c| c.unwrap_or_default());
        let cell = |col: &[u32], r: usize| col.get(r).copied().unwrap_or(NOT_READ);
        out.extend(
            rows_at
                .into_iter()
                .map(|r| r as usize)
                .map(|r| [cell(&s, r), cell(&p, r), cell(&o, r), cell(&g, r)]),
        );
        Ok(())
    }

    pub(super) fn probe_tokens(
        &self,
        cand: Option<Vec<u32>>,
        ex: &mut Explain,
        out: &mut Vec<[ByteArray; 4]>,
    ) -> Result<(), StoreError> {
        let (rg, rows, bound) = (self.rg, self.rows, self.bound);
        let columns: Vec<Column> =
            (0..4).map(|c| self.cache.tokens(self.store, rg, c, ex)).collect::<Result<_, _>>()?;
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
