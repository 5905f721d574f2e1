//! The quad-pattern read path over a base, driven by the sidecars.
//!
//! For each bound position the term is rendered in every known producer's
//! escaping and looked up in the column's `.dict`: a term that is absent ends
//! the lookup before any page is decoded. Row groups are then pruned with
//! `.presence` and `.po.presence`; `.s.offsets` and `.p.offsets` turn a bound
//! subject or predicate into row positions, so decoded columns are probed, not
//! scanned. Without sidecars, Parquet min/max statistics and bloom filters
//! prune instead. Every candidate row is still compared with the bound tokens,
//! so a stale sidecar can cost speed but never yields a wrong row.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use parquet::data_type::ByteArray;

use super::base::Column;
use super::open::Store;
use super::StoreError;
use crate::format::term::{token_variants, Term};

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

/// One matching row: the four cell tokens (s, p, o, g).
pub type Row = [ByteArray; 4];

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
        write!(f, "column cache           {} hits, {} misses", self.cache_hits, self.cache_misses)
    }
}

const NAMES: [&str; 4] = ["s", "p", "o", "g"];

/// Decoded columns, least recently used evicted first, bounded in bytes.
pub struct ColumnCache {
    budget: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Default)]
struct CacheInner {
    map: HashMap<(usize, usize), (Column, usize)>,
    order: VecDeque<(usize, usize)>,
    used: usize,
}

impl ColumnCache {
    pub fn new(budget_bytes: usize) -> Self {
        ColumnCache { budget: budget_bytes, inner: Mutex::new(CacheInner::default()) }
    }

    fn get(&self, store: &Store, rg: usize, col: usize, ex: &mut Explain) -> Result<Column, StoreError> {
        let key = (rg, col);
        {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((c, _)) = g.map.get(&key).cloned() {
                g.order.retain(|k| *k != key);
                g.order.push_back(key);
                ex.cache_hits += 1;
                return Ok(c);
            }
        }
        ex.cache_misses += 1;
        let c = store.base.read_column(rg, col)?;
        let size = c.iter().map(|v| v.len() + 32).sum::<usize>() + 64;
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        while g.used + size > self.budget {
            let Some(old) = g.order.pop_front() else { break };
            if let Some((_, s)) = g.map.remove(&old) {
                g.used -= s;
            }
        }
        if size <= self.budget {
            g.map.insert(key, (c.clone(), size));
            g.order.push_back(key);
            g.used += size;
        }
        Ok(c)
    }
}

/// The tokens a bound term may be stored as, and their dictionary ids.
struct Bound {
    col: usize,
    tokens: Vec<Vec<u8>>,
    ids: Option<Vec<u32>>,
}

impl Store {
    /// All rows matching `pat`, with the pruning figures.
    pub fn quads_for_pattern(
        &self,
        pat: &Pattern,
        cache: &ColumnCache,
    ) -> Result<(Vec<Row>, Explain), StoreError> {
        let n = self.base.num_row_groups();
        let mut ex = Explain { row_groups: n, ..Explain::default() };
        let sc = &self.sidecars;

        let mut bound = Vec::new();
        for (col, term) in pat.bound().into_iter().enumerate() {
            let Some(term) = term else { continue };
            let tokens: Vec<Vec<u8>> = token_variants(term).into_iter().map(String::into_bytes).collect();
            let ids =
                sc.dicts[col].as_ref().map(|d| tokens.iter().filter_map(|t| d.find(t)).collect::<Vec<u32>>());
            if ids.as_ref().is_some_and(|i| i.is_empty()) {
                ex.absent_in_dict = Some(NAMES[col]);
                return Ok((Vec::new(), ex));
            }
            bound.push(Bound { col, tokens, ids });
        }

        let mut keep = vec![true; n];
        let prune = |keep: &mut Vec<bool>, counter: &mut usize, test: &dyn Fn(usize) -> bool| {
            for (rg, k) in keep.iter_mut().enumerate() {
                if *k && !test(rg) {
                    *k = false;
                    *counter += 1;
                }
            }
        };
        for b in &bound {
            match (&b.ids, &sc.presence[b.col]) {
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
        let ids_of = |col: usize| bound.iter().find(|b| b.col == col).and_then(|b| b.ids.clone());
        if let (Some(ps), Some(os), Some(po)) = (ids_of(1), ids_of(2), &sc.po_presence) {
            prune(&mut keep, &mut ex.pruned_by_po_presence, &|rg| {
                ps.iter().any(|&p| os.iter().any(|&o| po.contains(rg as u32, p, o)))
            });
        }
        // A bound subject's global row range (its ids' ranges, merged).
        let s_range: Option<Vec<(u64, u64)>> = match (ids_of(0), &sc.s_offsets) {
            (Some(ids), Some(so)) => Some(
                ids.iter()
                    .filter_map(|&i| so.ranges.get(i as usize).copied())
                    .filter(|r| r.0 < r.1)
                    .collect(),
            ),
            _ => None,
        };
        if let Some(ranges) = &s_range {
            prune(&mut keep, &mut ex.pruned_by_s_offsets, &|rg| {
                let (a, b) = (self.base.rg_start(rg), self.base.rg_start(rg) + self.base.rg_rows(rg) as u64);
                ranges.iter().any(|&(s, e)| s < b && a < e)
            });
        }

        let mut out = Vec::new();
        for rg in (0..n).filter(|&rg| keep[rg]) {
            ex.decoded_row_groups += 1;
            let rows = self.base.rg_rows(rg);
            let start = self.base.rg_start(rg);
            // Candidate local rows: from the offsets sidecars when they apply.
            let mut cand: Option<Vec<u32>> = None;
            if let Some(ranges) = &s_range {
                let mut v = Vec::new();
                for &(s, e) in ranges {
                    let (a, b) = (s.max(start) - start, e.min(start + rows as u64).saturating_sub(start));
                    v.extend(a as u32..b as u32);
                }
                cand = Some(v);
                ex.positions_from.push(".s.offsets");
            }
            if let (Some(ps), Some(po)) = (ids_of(1), &sc.p_offsets) {
                let mut v: Vec<u32> =
                    ps.iter().flat_map(|&p| po.rows_of(rg as u32, p).iter().copied()).collect();
                v.sort_unstable();
                cand = Some(match cand {
                    Some(c) => intersect(&c, &v),
                    None => v,
                });
                ex.positions_from.push(".p.offsets");
            }
            let columns: Vec<Column> =
                (0..4).map(|c| cache.get(self, rg, c, &mut ex)).collect::<Result<_, _>>()?;
            let matches = |r: usize| {
                bound.iter().all(|b| {
                    let cell = columns[b.col][r].data();
                    b.tokens.iter().any(|t| t.as_slice() == cell)
                })
            };
            let mut push = |r: usize, ex: &mut Explain| {
                ex.rows_probed += 1;
                if matches(r) {
                    out.push([
                        columns[0][r].clone(),
                        columns[1][r].clone(),
                        columns[2][r].clone(),
                        columns[3][r].clone(),
                    ]);
                }
            };
            match cand {
                Some(rows_at) => rows_at
                    .into_iter()
                    .filter(|&r| (r as usize) < rows)
                    .for_each(|r| push(r as usize, &mut ex)),
                None => (0..rows).for_each(|r| push(r, &mut ex)),
            }
        }
        ex.rows_matched = out.len();
        Ok((out, ex))
    }
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}
