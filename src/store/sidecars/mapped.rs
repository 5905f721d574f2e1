//! The read path's view of each sidecar: the file stays mapped where it is and
//! a read decodes the few numbers and tokens it asks for, through
//! [`CheckedFile`], so no read costs more than the bytes it touches.
//!
//! The byte layouts are `format::{dict, presence, p_offsets, po_presence,
//! s_offsets}`'s (docs/format.md §5–§9); their header decoders run when a
//! sidecar is loaded. Everything after the header is checked as it is read:
//! an offset outside the file, a range that runs backwards or an id out of
//! range is a format error naming the file and byte, never a panic.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::format::{dict, p_offsets, po_presence, presence, s_offsets};
use crate::store::sidecars::checked::CheckedFile;
use crate::store::StoreError;

type Result<T> = std::result::Result<T, StoreError>;

/// Decodes a header through `decode`, after checking the bytes it reads.
fn header<T>(
    file: &CheckedFile,
    len: u64,
    decode: impl FnOnce(&[u8]) -> crate::format::error::Result<T>,
) -> Result<T> {
    decode(file.for_header(len)?).map_err(|e| StoreError::from_format(file.path(), &e))
}

fn corrupt(file: &CheckedFile, at: u64, detail: String) -> StoreError {
    StoreError::format(file.path(), at, detail)
}

/// A `.dict` (COTD): token ↔ id.
pub struct DictMap {
    file: CheckedFile,
    n: u64,
    /// Every [`FENCE_STRIDE`]th sorted token, in memory, once searches have
    /// paid for reading them (see [`DictMap::find`]).
    fences: OnceLock<Fences>,
    /// Probes the searches without fences have made so far.
    probes: AtomicU64,
}

/// Sorted positions between two in-memory fence tokens: a search narrowed
/// by the fences reads log2(64) = 6 tokens of the file instead of log2(n).
const FENCE_STRIDE: u64 = 64;

/// How many search probes pay for reading one fence token. A probe mostly
/// lands in blocks earlier searches already checked (the top of the search
/// tree is the same for every search); fence tokens are spread over the
/// whole file, so reading them checks nearly every block of it once. At
/// 100M quads, fences read after as many probes as fence tokens made a
/// two-pattern join 78 → 121 ms; sixteen per token leaves it alone.
const PROBES_PER_FENCE: u64 = 16;

/// Fence tokens read between two releases of the file's mapped pages: about
/// 16 MiB of a dictionary of IRIs ([`DictMap::read_fences`]).
const FENCES_PER_RELEASE: usize = 4096;

/// The tokens at sorted positions 0, [`FENCE_STRIDE`], 2·FENCE_STRIDE, …
#[derive(Default)]
struct Fences {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Fences {
    fn token(&self, j: usize) -> &[u8] {
        let start = if j == 0 { 0 } else { self.ends[j - 1] };
        &self.bytes[start..self.ends[j]]
    }

    /// The sorted positions `lo..hi` where the first token not below
    /// `token` is (`hi` when every token in the range is below it).
    fn range(&self, token: &[u8], n: u64) -> (u64, u64) {
        if self.ends.is_empty() {
            return (0, n);
        }
        // Fences below `token`: the answer is past the last of them and at
        // or before the next.
        let (mut lo, mut hi) = (0, self.ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.token(mid) < token {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        match lo as u64 {
            0 => (0, 0),
            below => ((below - 1) * FENCE_STRIDE + 1, (below * FENCE_STRIDE).min(n)),
        }
    }
}

impl DictMap {
    pub fn open(file: CheckedFile) -> Result<Self> {
        let n = header(&file, dict::HEADER_LEN, dict::decode_header)?;
        let d = DictMap { file, n, fences: OnceLock::new(), probes: AtomicU64::new(0) };
        let first = d.file.u64_at(dict::bounds_offset(n))?;
        let last = d.file.u64_at(dict::bounds_offset(n) + 8 * n)?;
        if first != dict::data_offset(n) || last != d.file.len() {
            let detail = format!(
                "bounds[] must run from {} (the end of bounds[]) to {} (the end of the file), found {first}..{last}",
                dict::data_offset(n),
                d.file.len()
            );
            return Err(corrupt(&d.file, dict::bounds_offset(n), detail));
        }
        Ok(d)
    }

    pub fn len(&self) -> usize {
        self.n as usize
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// How many 4 KiB blocks reads have checked so far (`--explain`).
    pub fn blocks_checked(&self) -> u64 {
        self.file.blocks_checked()
    }

    fn bound(&self, k: u64) -> Result<u64> {
        self.file.u64_at(dict::bounds_offset(self.n) + 8 * k)
    }

    /// The token of id `id`.
    pub fn token(&self, id: u32) -> Result<&[u8]> {
        let k = u64::from(id);
        if k >= self.n {
            return Err(corrupt(&self.file, 0, format!("id {id} is past the {} tokens", self.n)));
        }
        let (start, end) = (self.bound(k)?, self.bound(k + 1)?);
        if start > end {
            let at = dict::bounds_offset(self.n) + 8 * (k + 1);
            return Err(corrupt(&self.file, at, format!("bounds run backwards: {end} follows {start}")));
        }
        self.file.bytes(start, end - start)
    }

    /// The id at sorted position `i`.
    fn id_at(&self, i: u64) -> Result<u32> {
        let at = dict::ids_offset() + 4 * i;
        let id = self.file.u32_at(at)?;
        if u64::from(id) >= self.n {
            return Err(corrupt(&self.file, at, format!("ids[{i}] = {id} is past the {} tokens", self.n)));
        }
        Ok(id)
    }

    /// The id of `token`, by binary search over the sorted positions.
    ///
    /// A dictionary searched often (a join looks up every inner binding)
    /// keeps every 64th token in memory, so a search reads 6 tokens of the
    /// file instead of about 20. Reading them costs n/64 tokens spread over
    /// the whole file, so they are read only once the searches without them
    /// have made [`PROBES_PER_FENCE`] probes per fence: a query that searches
    /// a few thousand times never pays for them.
    pub fn find(&self, token: &[u8]) -> Result<Option<u32>> {
        let (lo, hi) = match self.fences() {
            Some(fences) => fences.range(token, self.n),
            None => (0, self.n),
        };
        let pos = self.lower_bound(token, lo, hi)?;
        self.id_if_at(pos, token)
    }

    fn fences(&self) -> Option<&Fences> {
        if let Some(fences) = self.fences.get() {
            return Some(fences);
        }
        let per_search = u64::from(64 - self.n.leading_zeros());
        let spent = self.probes.fetch_add(per_search, Ordering::Relaxed);
        if spent < self.n / FENCE_STRIDE * PROBES_PER_FENCE {
            return None;
        }
        // A fence that cannot be read (damage) leaves none: every search
        // then reads the file and meets the damage where it is.
        Some(self.fences.get_or_init(|| self.read_fences().unwrap_or_default()))
    }

    /// Reads every [`FENCE_STRIDE`]th token. That touches nearly every page
    /// of the file, pages the searches that follow, narrowed by the fences,
    /// mostly do not need: they are given back as the read goes, so that a
    /// query under `--memory-limit` cannot come to hold the whole
    /// dictionary mapped through its fences alone.
    fn read_fences(&self) -> Result<Fences> {
        let mut fences = Fences::default();
        for (k, pos) in (0..self.n).step_by(FENCE_STRIDE as usize).enumerate() {
            if k % FENCES_PER_RELEASE == FENCES_PER_RELEASE - 1 {
                self.file.release_pages();
            }
            fences.bytes.extend_from_slice(self.key(pos)?);
            fences.ends.push(fences.bytes.len());
        }
        self.file.release_pages();
        Ok(fences)
    }

    /// [`DictMap::find`] for tokens that mostly come in ascending order (a
    /// sorted dictionary page, a sorted column): the search gallops up from
    /// the position `hint` left by the previous token, so resolving a chunk's
    /// sorted values costs O(log gap) probes each, on neighbouring blocks,
    /// instead of a search from the middle every time. Any order is correct;
    /// a token below the hint is searched below it.
    pub fn find_near(&self, token: &[u8], hint: &mut u64) -> Result<Option<u32>> {
        let h = (*hint).min(self.n);
        let pos = if h < self.n && self.key(h)? < token {
            let (mut lo, mut step) = (h + 1, 1u64);
            loop {
                let probe = h.saturating_add(step);
                if probe >= self.n {
                    break self.lower_bound(token, lo, self.n)?;
                }
                if self.key(probe)? >= token {
                    break self.lower_bound(token, lo, probe)?;
                }
                lo = probe + 1;
                step = step.saturating_mul(2);
            }
        } else {
            self.lower_bound(token, 0, h)?
        };
        *hint = pos;
        self.id_if_at(pos, token)
    }

    /// The token at sorted position `i`.
    fn key(&self, i: u64) -> Result<&[u8]> {
        self.token(self.id_at(i)?)
    }

    /// The first sorted position in `lo..hi` whose token is not below `token`
    /// (`hi` when none is).
    fn lower_bound(&self, token: &[u8], mut lo: u64, mut hi: u64) -> Result<u64> {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid)? < token {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    fn id_if_at(&self, pos: u64, token: &[u8]) -> Result<Option<u32>> {
        if pos < self.n && self.key(pos)? == token {
            return Ok(Some(self.id_at(pos)?));
        }
        Ok(None)
    }

    /// The dictionary's file, for errors about what it holds.
    pub fn path(&self) -> &std::path::Path {
        self.file.path()
    }

    /// Tokens in id order.
    pub fn tokens(&self) -> impl Iterator<Item = Result<&[u8]>> + '_ {
        (0..self.n as u32).map(move |id| self.token(id))
    }
}

/// A `.s.offsets` (COTS): each subject's global row range.
pub struct SOffsetsMap {
    file: CheckedFile,
    n: u64,
    total: u64,
}

impl SOffsetsMap {
    pub fn open(file: CheckedFile) -> Result<Self> {
        let (n, total) = header(&file, s_offsets::HEADER_LEN, s_offsets::decode_header)?;
        Ok(SOffsetsMap { file, n, total: u64::from(total) })
    }

    pub fn num_subjects(&self) -> u64 {
        self.n
    }

    pub fn num_rows_total(&self) -> u64 {
        self.total
    }

    /// Subject `id`'s `[start, end)`; `None` for an id past the table.
    pub fn range(&self, id: u64) -> Result<Option<(u64, u64)>> {
        if id >= self.n {
            return Ok(None);
        }
        let at = s_offsets::HEADER_LEN + 16 * id;
        let b = self.file.bytes(at, 16)?;
        let a = u64::from_le_bytes(b[..8].try_into().expect("8"));
        let e = u64::from_le_bytes(b[8..].try_into().expect("8"));
        if a > e || e > self.total {
            let detail = format!("ranges[{id}] = [{a}, {e}) is not a range inside the {} rows", self.total);
            return Err(corrupt(&self.file, at, detail));
        }
        Ok(Some((a, e)))
    }

    /// The subject whose range holds each of `rows` (global rows; see
    /// [`SOffsetsMap::ids_for_rows`] for when this holds), `None` when one
    /// is in no range. Rows in ascending order (a sparse selection from one
    /// row group) gallop up from the previous row's subject: O(log gap)
    /// range reads each, where a search from the table's middle cost
    /// O(log subjects). A row below the previous one searches from the start.
    pub fn ids_of_rows(&self, rows: impl Iterator<Item = u64>) -> Result<Option<Vec<u32>>> {
        let (mut out, mut from, mut last) = (Vec::new(), 0u64, 0u64);
        for row in rows {
            if row < last {
                from = 0;
            }
            last = row;
            let id = self.first_ending_after_from(row, from)?;
            match self.range(id)? {
                Some((start, _)) if start <= row => out.push(id as u32),
                _ => return Ok(None),
            }
            from = id;
        }
        Ok(Some(out))
    }

    /// The first subject whose range ends after `row`, knowing every subject
    /// below `lo` ends at or before it: gallops up from `lo`, then searches
    /// the last step.
    fn first_ending_after_from(&self, row: u64, mut lo: u64) -> Result<u64> {
        let (mut probe, mut step) = (lo, 1u64);
        let mut hi = self.n;
        while probe < self.n {
            let (_, end) = self.range(probe)?.expect("probe < n");
            if end > row {
                hi = probe;
                break;
            }
            lo = probe + 1;
            probe = lo.saturating_add(step);
            step = step.saturating_mul(2);
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (_, end) = self.range(mid)?.expect("mid < n");
            if end <= row {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The subject id of each of `rows` rows from global row `start`, read off
    /// the ranges alone. Works when subject ids follow row order, as every
    /// known writer's do; `None` otherwise, or when a row is in no range.
    /// Ranges are disjoint (checked when the file was written or loaded), so a
    /// range holding a row names that row's subject.
    pub fn ids_for_rows(&self, start: u64, rows: usize) -> Result<Option<Vec<u32>>> {
        let mut id = self.first_ending_after_from(start, 0)?;
        let mut out = Vec::with_capacity(rows);
        let Some(mut range) = self.range(id)? else { return Ok(None) };
        for r in start..start + rows as u64 {
            while range.1 <= r {
                id += 1;
                match self.range(id)? {
                    Some(next) => range = next,
                    None => return Ok(None),
                }
            }
            if range.0 > r {
                return Ok(None);
            }
            out.push(id as u32);
        }
        Ok(Some(out))
    }
}

/// A `.presence` (COTP): one bit per (row group, token).
pub struct PresenceMap {
    file: CheckedFile,
    pub num_rgs: u32,
    pub num_tokens: u32,
}

impl PresenceMap {
    pub fn open(file: CheckedFile) -> Result<Self> {
        let (num_rgs, num_tokens) = header(&file, presence::HEADER_LEN, presence::decode_header)?;
        Ok(PresenceMap { file, num_rgs, num_tokens })
    }

    /// Whether row group `rg` holds token `tok`; out of range reads as absent.
    pub fn get(&self, rg: u32, tok: u32) -> Result<bool> {
        if rg >= self.num_rgs || tok >= self.num_tokens {
            return Ok(false);
        }
        let k = u64::from(rg) * u64::from(self.num_tokens) + u64::from(tok);
        let at = presence::HEADER_LEN + k / 8;
        // With a row group's bits a page or more long, the next row group's
        // bit for the same token is on another page: read around the mapping.
        let byte =
            if self.num_tokens >= 8 * 4096 { self.file.sparse_byte(at)? } else { self.file.bytes(at, 1)?[0] };
        Ok(byte & (1 << (k % 8)) != 0)
    }
}

/// A `.p.offsets` (COTO): each (row group, predicate)'s local rows.
pub struct POffsetsMap {
    file: CheckedFile,
    pub num_rgs: u32,
    pub num_preds: u32,
}

impl POffsetsMap {
    pub fn open(file: CheckedFile) -> Result<Self> {
        let (num_rgs, num_preds) = header(&file, p_offsets::HEADER_LEN, p_offsets::decode_header)?;
        Ok(POffsetsMap { file, num_rgs, num_preds })
    }

    /// Local row positions of predicate `p` in row group `rg`.
    pub fn rows_of(&self, rg: u32, p: u32) -> Result<Vec<u32>> {
        if rg >= self.num_rgs || p >= self.num_preds {
            return Ok(Vec::new());
        }
        let cells = u64::from(self.num_rgs) * u64::from(self.num_preds);
        let cell = u64::from(rg) * u64::from(self.num_preds) + u64::from(p);
        let at = p_offsets::HEADER_LEN + 8 * cell;
        let bytes = element_run(&self.file, at, p_offsets::data_offset(cells), 4)?;
        Ok(bytes.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().expect("4"))).collect())
    }
}

/// The bytes between the offsets at `at` and `at + 8` (see [`run_bounds`]).
fn element_run(file: &CheckedFile, at: u64, data: u64, elem: u64) -> Result<&[u8]> {
    let (a, b) = run_bounds(file, at, data, elem)?;
    file.bytes(a, b - a)
}

/// The offsets at `at` and `at + 8`, which must lie between `data` and the
/// end of the file on `elem`-byte boundaries.
fn run_bounds(file: &CheckedFile, at: u64, data: u64, elem: u64) -> Result<(u64, u64)> {
    let (a, b) = (file.u64_at(at)?, file.u64_at(at + 8)?);
    if a < data
        || b < a
        || b > file.len()
        || !(a - data).is_multiple_of(elem)
        || !(b - a).is_multiple_of(elem)
    {
        let detail = format!(
            "offsets {a}..{b} are not a run of {elem}-byte elements between {data} and the end of the file ({})",
            file.len()
        );
        return Err(corrupt(file, at, detail));
    }
    Ok((a, b))
}

/// A `.po.presence` (COPO): each row group's sorted (predicate, object) pairs.
pub struct PoPresenceMap {
    file: CheckedFile,
    pub num_rgs: u32,
    pub pred_dict_size: u32,
    pub obj_dict_size: u32,
}

impl PoPresenceMap {
    pub fn open(file: CheckedFile) -> Result<Self> {
        let (num_rgs, pred_dict_size, obj_dict_size) =
            header(&file, po_presence::HEADER_LEN, po_presence::decode_header)?;
        Ok(PoPresenceMap { file, num_rgs, pred_dict_size, obj_dict_size })
    }

    /// Whether row group `rg` has a row with predicate `p` and object `o`.
    pub fn contains(&self, rg: u32, p: u32, o: u32) -> Result<bool> {
        if rg >= self.num_rgs || p >= self.pred_dict_size || o >= self.obj_dict_size {
            return Ok(false);
        }
        let at = po_presence::HEADER_LEN + 8 * u64::from(rg);
        let data = po_presence::data_offset(u64::from(self.num_rgs));
        let (start, end) = run_bounds(&self.file, at, data, 8)?;
        let want = po_presence::pair(p, o);
        let (mut lo, mut hi) = (0u64, (end - start) / 8);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.file.u64_at(start + 8 * mid)?.cmp(&want) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(true),
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn dict_map(tokens: &[Vec<u8>]) -> DictMap {
        let d = dict::Dict::from_sorted(tokens.iter().map(Vec::as_slice));
        let bytes: crate::store::sidecars::checked::SharedFile = Arc::new(dict::encode(&d));
        DictMap::open(CheckedFile::whole_in_memory(std::path::Path::new("test.dict"), bytes)).unwrap()
    }

    #[test]
    fn searches_with_fences_find_what_searches_without_them_find() {
        for n in [0usize, 1, 2, 63, 64, 65, 127, 128, 129, 1000, 4097] {
            let tokens: Vec<Vec<u8>> = (0..n).map(|i| format!("<t{:06}>", i * 2).into_bytes()).collect();
            let fenced = dict_map(&tokens);
            fenced.fences.get_or_init(|| fenced.read_fences().unwrap());
            let plain = dict_map(&tokens);
            // Every token, everything between and around them.
            for i in 0..=2 * n + 1 {
                let probe = format!("<t{:06}>", i).into_bytes();
                let want = plain.lower_bound(&probe, 0, plain.n).unwrap();
                let got = plain.id_if_at(want, &probe).unwrap();
                assert_eq!(fenced.find(&probe).unwrap(), got, "n={n}, probe {i}");
                assert_eq!(got.is_some(), i % 2 == 0 && i < 2 * n, "n={n}, probe {i}");
            }
            assert_eq!(fenced.find(b"<").unwrap(), None);
            assert_eq!(fenced.find(b"<u>").unwrap(), None);
        }
    }

    #[test]
    fn fences_are_read_only_after_searches_have_paid_for_them() {
        let tokens: Vec<Vec<u8>> = (0..6400).map(|i| format!("<t{i:06}>").into_bytes()).collect();
        let d = dict_map(&tokens);
        // 100 fences, paid for by 1,600 probes; each search makes 13.
        for i in 0..124 {
            d.find(&tokens[i * 50]).unwrap();
            assert!(d.fences.get().is_none(), "fences read after {} searches", i + 1);
        }
        for (id, token) in tokens.iter().enumerate().take(2) {
            assert_eq!(d.find(token).unwrap(), Some(id as u32));
        }
        assert_eq!(d.fences.get().map(|f| f.ends.len()), Some(100));
    }
}
