//! External merge sort of rows encoded as order-preserving byte keys.
//!
//! A row's key is its four tokens, each with 0x00 written as 00 FF and ended
//! by 00 00. Comparing keys byte-wise then orders rows exactly as comparing
//! (s, p, o, g) token by token, so one `memcmp` sorts and deduplicates rows
//! whatever bytes the tokens contain. Runs that outgrow the memory budget are
//! sorted, deduplicated and spilled to temp files, then k-way merged.
//!
//! A spill is merged and written on a thread of its own while new keys
//! arrive: the importing thread spilling by itself had left the parser
//! threads waiting, one core idle, for a sixth of a 10M-quad import. So the
//! budget is split: half may be spilling while the other half fills.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Appends the key of `tokens` to `out`.
pub fn encode_key(out: &mut Vec<u8>, tokens: [&[u8]; 4]) {
    for t in tokens {
        // Tokens practically never hold a NUL byte: copy them whole then.
        if memchr::memchr(0, t).is_none() {
            out.extend_from_slice(t);
        } else {
            for &b in t {
                if b == 0 {
                    out.extend_from_slice(&[0, 0xff]);
                } else {
                    out.push(b);
                }
            }
        }
        out.extend_from_slice(&[0, 0]);
    }
}

/// [`encode_key`] of tokens the caller knows hold no NUL byte (import's
/// canonical lines, checked once per line: searching each token again was
/// 3% of an import).
pub fn encode_key_without_nul(out: &mut Vec<u8>, tokens: [&[u8]; 4]) {
    for t in tokens {
        debug_assert!(!t.contains(&0));
        out.extend_from_slice(t);
        out.extend_from_slice(&[0, 0]);
    }
}

/// Appends a key's four tokens to `cols` and returns their start offsets there.
pub fn decode_key_into(key: &[u8], cols: &mut [Vec<u8>; 4]) -> [usize; 4] {
    let starts = cols.each_ref().map(Vec::len);
    let mut col = 0;
    let mut rest = key;
    while col < 4 {
        // Copy up to the next 0x00, then read its escape or terminator.
        let Some(z) = memchr::memchr(0, rest) else { break };
        cols[col].extend_from_slice(&rest[..z]);
        if rest.get(z + 1) == Some(&0xff) {
            cols[col].push(0);
        } else {
            col += 1;
        }
        rest = rest.get(z + 2..).unwrap_or(&[]);
    }
    starts
}

/// The four tokens of a key without escaped NUL bytes, borrowed from it (the
/// common case: tokens practically never hold NUL); `None` otherwise.
pub fn split_key(key: &[u8]) -> Option<[&[u8]; 4]> {
    let mut out: [&[u8]; 4] = [&[]; 4];
    let mut rest = key;
    for tok in &mut out {
        let z = memchr::memchr(0, rest)?;
        if rest.get(z + 1) != Some(&0) {
            return None;
        }
        *tok = &rest[..z];
        rest = &rest[z + 2..];
    }
    Some(out)
}

/// Splits a key back into its four tokens.
pub fn decode_key(key: &[u8]) -> [Vec<u8>; 4] {
    let mut out: [Vec<u8>; 4] = Default::default();
    let (mut col, mut i) = (0, 0);
    while i < key.len() && col < 4 {
        if key[i] == 0 {
            if key.get(i + 1) == Some(&0xff) {
                out[col].push(0);
            } else {
                col += 1;
            }
            i += 2;
        } else {
            out[col].push(key[i]);
            i += 1;
        }
    }
    out
}

/// Where a held key is: segment, offset in it, length.
#[derive(Clone, Copy)]
struct Loc {
    seg: u32,
    at: u32,
    len: u32,
}

fn key_at<'s>(segments: &'s [Vec<u8>], l: &Loc) -> &'s [u8] {
    &segments[l.seg as usize][l.at as usize..(l.at + l.len) as usize]
}

/// Bytes of a segment that single keys are appended to.
const OWN_SEGMENT: usize = 1 << 20;

/// Keys held in memory.
#[derive(Default)]
struct Held {
    /// Keys live in segments that never grow once full: a parser thread's
    /// batch of keys is taken over whole, so keys are never copied and a
    /// growing arena never moves (that copy and its page faults were a
    /// tenth of the importing thread's time).
    segments: Vec<Vec<u8>>,
    /// Keys pushed one by one, not yet sorted.
    index: Vec<Loc>,
    /// Sorted, distinct runs taken over from parser threads.
    sorted_runs: Vec<Vec<Loc>>,
}

pub struct Sorter {
    held: Held,
    /// The segment single keys are appended to, if any.
    own: Option<usize>,
    held_bytes: usize,
    /// Bytes held before a spill: half the budget, the other half being the
    /// spill that may still be written.
    spill_at: usize,
    dir: PathBuf,
    runs: Vec<PathBuf>,
    /// The spill being written, if any: the last of `runs`.
    writing: Option<std::thread::JoinHandle<io::Result<()>>>,
    /// Runs written by merge passes, for their names.
    merged: usize,
    scratch: Vec<u8>,
}

impl Sorter {
    /// `budget`: bytes of keys held in memory, a spill being written
    /// included; runs are spilled into `dir`.
    pub fn new(budget: usize, dir: &Path) -> Self {
        Sorter {
            held: Held::default(),
            own: None,
            held_bytes: 0,
            spill_at: (budget / 2).max(1 << 16),
            dir: dir.to_path_buf(),
            runs: Vec::new(),
            writing: None,
            merged: 0,
            scratch: Vec::new(),
        }
    }

    pub fn push(&mut self, tokens: [&[u8]; 4]) -> io::Result<()> {
        let mut key = std::mem::take(&mut self.scratch);
        key.clear();
        encode_key(&mut key, tokens);
        let r = self.push_key(&key);
        self.scratch = key;
        r
    }

    /// Adds a key made by [`encode_key`].
    pub fn push_key(&mut self, key: &[u8]) -> io::Result<()> {
        let segments = &mut self.held.segments;
        let own = match self.own {
            Some(k) if segments[k].capacity() - segments[k].len() >= key.len() => k,
            _ => {
                let cap = OWN_SEGMENT.min(self.spill_at / 4).max(key.len());
                segments.push(Vec::with_capacity(cap));
                self.held_bytes += cap;
                self.own = Some(segments.len() - 1);
                segments.len() - 1
            }
        };
        let seg = &mut segments[own];
        self.held.index.push(Loc { seg: own as u32, at: seg.len() as u32, len: key.len() as u32 });
        seg.extend_from_slice(key);
        self.spill_if_full()
    }

    /// Takes over `keys`, a buffer of keys made by [`encode_key`], with
    /// `sorted`: (offset, length) of each distinct key in it, ascending. A
    /// parser thread sorts its own batch while it is still in its cache, so
    /// the importing thread only merges.
    pub fn push_sorted(&mut self, keys: Vec<u8>, sorted: &[(u32, u32)]) -> io::Result<()> {
        if sorted.is_empty() {
            return Ok(());
        }
        let seg = self.held.segments.len() as u32;
        let run: Vec<Loc> = sorted.iter().map(|&(at, len)| Loc { seg, at, len }).collect();
        self.held_bytes += keys.capacity() + run.len() * std::mem::size_of::<Loc>();
        self.held.segments.push(keys);
        self.held.sorted_runs.push(run);
        self.spill_if_full()
    }

    fn spill_if_full(&mut self) -> io::Result<()> {
        if self.held_bytes + self.held.index.len() * std::mem::size_of::<Loc>() >= self.spill_at {
            self.spill()?;
        }
        Ok(())
    }

    pub fn spilled_runs(&self) -> usize {
        self.runs.len()
    }

    /// Hands the held keys to a thread that writes them as the next run,
    /// once the previous spill is written.
    fn spill(&mut self) -> io::Result<()> {
        self.written()?;
        let path = self.dir.join(format!("run-{:05}", self.runs.len()));
        let held = std::mem::take(&mut self.held);
        self.own = None;
        self.held_bytes = 0;
        self.runs.push(path.clone());
        let spill = std::thread::Builder::new().name("spill".into());
        self.writing = Some(spill.spawn(move || write_run_file(&path, |put| held.drain(put)))?);
        Ok(())
    }

    /// Waits for the spill being written, if any; its error, if it failed.
    fn written(&mut self) -> io::Result<()> {
        match self.writing.take().map(std::thread::JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the thread writing a spilled run panicked")),
        }
    }

    /// Calls `f` with every distinct key in ascending order.
    pub fn finish(mut self, f: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        if self.runs.is_empty() {
            return std::mem::take(&mut self.held).drain(f);
        }
        if !self.held.index.is_empty() || !self.held.sorted_runs.is_empty() {
            self.spill()?;
        }
        self.written()?;
        // Merge at most MAX_FAN_IN runs at a time, so a huge import under a
        // small memory limit never holds thousands of files open.
        while self.runs.len() > MAX_FAN_IN {
            let group: Vec<PathBuf> = self.runs.drain(..MAX_FAN_IN).collect();
            let path = self.dir.join(format!("run-merged-{:05}", self.merged));
            self.merged += 1;
            write_run_file(&path, |put| merge_runs(&group, put))?;
            for p in &group {
                std::fs::remove_file(p)?;
            }
            self.runs.push(path);
        }
        merge_runs(&self.runs, f)
    }
}

/// A sorter dropped while a spill is written (an error elsewhere) waits for
/// it, so nothing writes into the spill directory once the caller moves on.
impl Drop for Sorter {
    fn drop(&mut self) {
        let _ = self.written();
    }
}

impl Held {
    /// The keys pushed one by one (every statement of a Turtle or TriG
    /// input, a compaction's rows) as sorted, distinct runs: large sets as
    /// two halves sorted on two threads, which the merge after it joins
    /// (itself on two threads, dropping keys both halves hold).
    fn sorted_index(&mut self) -> Vec<Vec<Loc>> {
        let segments = &self.segments;
        let key = |l: &Loc| key_at(segments, l);
        let sort = |run: &mut Vec<Loc>| {
            run.sort_unstable_by(|a, b| key(a).cmp(key(b)));
            run.dedup_by(|a, b| key(a) == key(b));
        };
        let mut lower = std::mem::take(&mut self.index);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if threads < 2 || lower.len() < 1 << 16 {
            sort(&mut lower);
            return if lower.is_empty() { Vec::new() } else { vec![lower] };
        }
        let mut upper = lower.split_off(lower.len() / 2);
        std::thread::scope(|s| {
            s.spawn(|| sort(&mut lower));
            sort(&mut upper);
        });
        vec![lower, upper]
    }

    /// Calls `f` with every distinct held key, ascending: the loose keys
    /// sorted into runs of their own, then all runs merged.
    fn drain(mut self, mut f: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        let mut runs = std::mem::take(&mut self.sorted_runs);
        runs.extend(self.sorted_index());
        let segments = &self.segments;
        merge_in_memory(&runs, |l| key_at(segments, l), &mut f)
    }
}

/// Writes the run file `path` from the keys `fill` passes to its callback,
/// ascending, in the format [`RunReader`] reads.
pub fn write_run_file(
    path: &Path,
    fill: impl FnOnce(&mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()>,
) -> io::Result<()> {
    let mut w = RunWriter { out: BufWriter::with_capacity(1 << 20, File::create(path)?), prev: Vec::new() };
    fill(&mut |k: &[u8]| w.put(k))?;
    w.out.flush()
}

/// Runs are front-coded: each key is the length of the prefix it shares
/// with the key before it, then the rest (both lengths as LEB128). Sorted
/// rows share their subject and often their predicate, so a run is about a
/// third of its keys' bytes: a 100M-quad import spills and reads back
/// several GB less, on a disk that holds the input, the runs and the store
/// at once.
struct RunWriter {
    out: BufWriter<File>,
    prev: Vec<u8>,
}

impl RunWriter {
    fn put(&mut self, key: &[u8]) -> io::Result<()> {
        let shared = shared_prefix(&self.prev, key);
        put_varint(&mut self.out, shared as u64)?;
        put_varint(&mut self.out, (key.len() - shared) as u64)?;
        self.out.write_all(&key[shared..])?;
        self.prev.truncate(shared);
        self.prev.extend_from_slice(&key[shared..]);
        Ok(())
    }
}

fn put_varint(w: &mut impl Write, mut v: u64) -> io::Result<()> {
    let mut buf = [0u8; 10];
    let mut n = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        buf[n] = if v == 0 { byte } else { byte | 0x80 };
        n += 1;
        if v == 0 {
            return w.write_all(&buf[..n]);
        }
    }
}

/// `None` at a clean end of the file (before a value's first byte).
fn get_varint(r: &mut impl Read) -> io::Result<Option<u64>> {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let mut b = [0u8; 1];
        match r.read_exact(&mut b) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && shift == 0 => return Ok(None),
            Err(e) => return Err(e),
        }
        if shift >= 64 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a run's length does not fit 64 bits"));
        }
        v |= u64::from(b[0] & 0x7f) << shift;
        if b[0] & 0x80 == 0 {
            return Ok(Some(v));
        }
        shift += 7;
    }
}

/// A run file read key by key; the current key is decoded in place.
pub struct RunReader {
    input: BufReader<File>,
    key: Vec<u8>,
    /// Bytes the current key shares with the one before it (exactly: the
    /// writer front-codes with the whole common prefix).
    shared: usize,
}

impl RunReader {
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(RunReader {
            input: BufReader::with_capacity(1 << 18, File::open(path)?),
            key: Vec::new(),
            shared: 0,
        })
    }

    /// The current key (after [`Self::advance`] returned `true`).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// Moves to the next key; `false` at the end of the run.
    pub fn advance(&mut self) -> io::Result<bool> {
        let Some(shared) = get_varint(&mut self.input)? else { return Ok(false) };
        let rest = get_varint(&mut self.input)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "a run ends inside a key"))?;
        if shared > self.key.len() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a run key shares more than the key before it",
            ));
        }
        self.key.truncate(shared as usize);
        self.shared = shared as usize;
        let start = self.key.len();
        self.key.resize(start + rest as usize, 0);
        self.input.read_exact(&mut self.key[start..])?;
        Ok(true)
    }
}

/// Runs open at once in the final merge, and in each earlier pass.
const MAX_FAN_IN: usize = 64;

/// Calls `f` with every distinct key of the sorted `runs`, ascending. The
/// runs' current keys play a [`Tournament`], compared in place.
fn merge_runs(runs: &[PathBuf], mut f: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
    let mut readers = Vec::with_capacity(runs.len());
    for path in runs {
        let mut r = RunReader::open(path)?;
        if r.advance()? {
            readers.push(r);
        }
    }
    fn head<'r>(readers: &'r [RunReader], live: &[bool], i: usize) -> Option<&'r [u8]> {
        live[i].then(|| readers[i].key())
    }
    let mut live = vec![true; readers.len()];
    let mut game = Tournament::new(readers.len(), |i| head(&readers, &live, i));
    while let Some(top) = game.winner().filter(|&w| live[w]) {
        if !game.repeats() {
            f(readers[top].key())?;
        }
        live[top] = readers[top].advance()?;
        game.replay(readers[top].shared, |i| head(&readers, &live, i));
    }
    Ok(())
}

/// A loser tree over `k` sorted sources (the tournament of k-way merging)
/// with offset-value codes, so a key is rarely compared byte by byte.
///
/// Each inner node keeps the loser of the match played there, so when the
/// winner's source moves to its next key only the matches on that source's
/// path to the root are played again: about log2(k) matches a key (about 8
/// over the 190 parser runs of a 1M-quad import).
///
/// Each node also keeps the loser's code relative to the key that beat it:
/// the offset of the first byte where the two differ and the loser's byte
/// there. Every loser on the winner's path lost to the winner, so when the
/// winner's source moves on, the codes on that path and the new key's code
/// (from the bytes it shares with the key before it in its source) are all
/// relative to the same key, and comparing two codes orders their keys
/// unless the codes are equal: only then are bytes compared, from the
/// offset on. Keys share long IRI prefixes, and a `memcmp` of tens of bytes
/// for every match was a twentieth of an import. A code of zero says the
/// key equals the key before it, which is how merges drop repeats without
/// comparing again.
///
/// A source's current key comes from the `head` callback; `None` is an
/// exhausted source, which loses to every live one. Equal keys go to the
/// lower source index, so the order is total and the result deterministic.
pub(crate) struct Tournament {
    /// `nodes[0]`: the winner; `nodes[n]` for `n` in `1..k`: the loser of
    /// inner node `n`, whose children are nodes `2n` and `2n + 1` (leaf `k + i`
    /// is source `i`).
    nodes: Vec<usize>,
    /// The code of the source in the same place of `nodes`; `codes[0]` is
    /// the winner's, relative to the previous winner's key.
    codes: Vec<u64>,
}

/// The key equals the one it is coded against.
const REPEAT: u64 = 0;
/// Not coded yet: the first keys, before any match.
const FRESH: u64 = u64::MAX - 1;
/// An exhausted source.
const EXHAUSTED: u64 = u64::MAX;

/// The code of a key that first differs from the key it is coded against at
/// `offset`, where it has `byte`: a longer shared prefix comes first (both
/// keys follow the one they are coded against), then the smaller byte.
fn code(offset: usize, byte: u8) -> u64 {
    ((u64::from(u32::MAX) - offset as u64) << 8) | u64::from(byte)
}

fn offset_of(code: u64) -> usize {
    (u64::from(u32::MAX) - (code >> 8)) as usize
}

/// How many leading bytes `a` and `b` share.
pub(crate) fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// A source's next key coded against its previous one, which it shares
/// `shared` bytes with (sources ascend, so the next key follows it).
fn next_code(key: Option<&[u8]>, shared: usize) -> u64 {
    match key {
        None => EXHAUSTED,
        Some(k) => k.get(shared).map_or(REPEAT, |&b| code(shared, b)),
    }
}

impl Tournament {
    pub(crate) fn new<'k>(k: usize, head: impl Fn(usize) -> Option<&'k [u8]>) -> Self {
        let mut winners = vec![(0, FRESH); 2 * k];
        for (i, w) in winners[k..].iter_mut().enumerate() {
            *w = (i, if head(i).is_some() { FRESH } else { EXHAUSTED });
        }
        let mut nodes = vec![0; k];
        let mut codes = vec![EXHAUSTED; k];
        for n in (1..k).rev() {
            let (win, lose) = play(&head, winners[2 * n], winners[2 * n + 1]);
            winners[n] = win;
            (nodes[n], codes[n]) = lose;
        }
        if k > 0 {
            (nodes[0], codes[0]) = winners[1];
        }
        Tournament { nodes, codes }
    }

    /// The source whose current key comes first; `None` without sources.
    pub(crate) fn winner(&self) -> Option<usize> {
        self.nodes.first().copied()
    }

    /// Whether the winner's key equals the previous winner's (a key two
    /// sources hold). Never for the first winner.
    pub(crate) fn repeats(&self) -> bool {
        self.codes.first() == Some(&REPEAT)
    }

    /// Plays the winner's path again after its source moved on to a key
    /// sharing `shared` leading bytes with its previous one (exactly: the
    /// codes depend on it; ignored when the source is exhausted).
    pub(crate) fn replay<'k>(&mut self, shared: usize, head: impl Fn(usize) -> Option<&'k [u8]>) {
        let k = self.nodes.len();
        let Some(&winner) = self.nodes.first() else { return };
        let mut cur = (winner, next_code(head(winner), shared));
        let mut n = (winner + k) / 2;
        while n >= 1 {
            let (win, lose) = play(&head, cur, (self.nodes[n], self.codes[n]));
            (self.nodes[n], self.codes[n]) = lose;
            cur = win;
            n /= 2;
        }
        (self.nodes[0], self.codes[0]) = cur;
    }
}

/// One match between two (source, code) entries coded against the same key
/// (or both fresh): (winner, loser), the loser coded against the winner.
fn play<'k>(
    head: &impl Fn(usize) -> Option<&'k [u8]>,
    a: (usize, u64),
    b: (usize, u64),
) -> ((usize, u64), (usize, u64)) {
    let lower_first = |x: (usize, u64), y: (usize, u64)| if x.0 < y.0 { (x, y) } else { (y, x) };
    if a.1 != b.1 {
        return if a.1 < b.1 { (a, b) } else { (b, a) };
    }
    if a.1 == REPEAT || a.1 == EXHAUSTED {
        return lower_first(a, b);
    }
    let (Some(x), Some(y)) = (head(a.0), head(b.0)) else {
        // Live sources have keys; fall back to the index if not.
        return lower_first(a, b);
    };
    let from = if a.1 == FRESH { 0 } else { offset_of(a.1) };
    let at = from + shared_prefix(&x[from.min(x.len())..], &y[from.min(y.len())..]);
    match (x.get(at), y.get(at)) {
        (None, None) => {
            let (win, lose) = lower_first(a, b);
            (win, (lose.0, REPEAT))
        }
        (None, Some(&yb)) => (a, (b.0, code(at, yb))),
        (Some(&xb), None) => (b, (a.0, code(at, xb))),
        (Some(&xb), Some(&yb)) if xb < yb => (a, (b.0, code(at, yb))),
        (Some(&xb), Some(_)) => (b, (a.0, code(at, xb))),
    }
}

/// Held keys from which the in-memory merge runs on two threads.
const SPLIT_MERGE_KEYS: usize = 1 << 16;

/// Calls `f` with every distinct key of the sorted, distinct `runs`, ascending.
///
/// With many keys and a second core, the keys from a splitter up are merged
/// on a second thread into a list while this thread merges the keys below it
/// and hands them to `f`; then the list is handed over without a comparison.
/// While a run is spilled the parser threads wait for this merge (imports
/// of 10M quads and up: 4–5% faster with it split); at the end it is where
/// a version's rows start, before which the encoders have nothing to do.
fn merge_in_memory<'k>(
    runs: &[Vec<Loc>],
    key: impl Fn(&Loc) -> &'k [u8] + Sync,
    f: &mut impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    merge_split_from(runs, key, f, (cores >= 2).then_some(SPLIT_MERGE_KEYS))
}

/// [`merge_in_memory`], on two threads from `split_from` held keys on
/// (`None`: never).
fn merge_split_from<'k>(
    runs: &[Vec<Loc>],
    key: impl Fn(&Loc) -> &'k [u8] + Sync,
    f: &mut impl FnMut(&[u8]) -> io::Result<()>,
    split_from: Option<usize>,
) -> io::Result<()> {
    let slices: Vec<&[Loc]> = runs.iter().map(Vec::as_slice).collect();
    let keys: usize = runs.iter().map(Vec::len).sum();
    let split = split_from.filter(|&n| keys >= n).and_then(|_| splitter(&slices, &key));
    let Some(split) = split else {
        return merge_locs(&slices, &key, |l| f(key(l)));
    };
    // Every key equal to the splitter goes to the upper part, so each part
    // drops its own repeats.
    let cuts: Vec<usize> = slices.iter().map(|run| run.partition_point(|l| key(l) < split)).collect();
    let lower: Vec<&[Loc]> = slices.iter().zip(&cuts).map(|(run, &c)| &run[..c]).collect();
    let upper: Vec<&[Loc]> = slices.iter().zip(&cuts).map(|(run, &c)| &run[c..]).collect();
    std::thread::scope(|scope| {
        let above = scope.spawn(|| {
            let mut merged = Vec::with_capacity(upper.iter().map(|r| r.len()).sum());
            merge_locs(&upper, &key, |l| {
                merged.push(*l);
                Ok(())
            })
            .map(|()| merged)
        });
        merge_locs(&lower, &key, |l| f(key(l)))?;
        let above = above.join().map_err(|_| io::Error::other("the merge thread panicked"))??;
        above.iter().try_for_each(|l| f(key(l)))
    })
}

/// A key near the median of all the runs' keys: the median of seven evenly
/// spaced keys of each run (the runs are units of about the same size,
/// each covering its own stretch of the key space). `None` when the runs
/// hold no key.
fn splitter<'k>(runs: &[&[Loc]], key: &impl Fn(&Loc) -> &'k [u8]) -> Option<&'k [u8]> {
    let mut sample: Vec<&[u8]> =
        runs.iter().flat_map(|run| (1..8).filter_map(move |i| run.get(run.len() * i / 8)).map(key)).collect();
    sample.sort_unstable();
    sample.get(sample.len() / 2).copied()
}

/// Calls `f` with every distinct key's place in the sorted, distinct `runs`,
/// ascending (of equal keys, the one in the first run).
fn merge_locs<'k>(
    runs: &[&[Loc]],
    key: &impl Fn(&Loc) -> &'k [u8],
    mut f: impl FnMut(&Loc) -> io::Result<()>,
) -> io::Result<()> {
    if let [run] = runs {
        return run.iter().try_for_each(f);
    }
    let mut pos = vec![0usize; runs.len()];
    let head = |pos: &[usize], i: usize| runs[i].get(pos[i]);
    let mut game = Tournament::new(runs.len(), |i| head(&pos, i).map(key));
    while let Some(top) = game.winner() {
        let Some(l) = head(&pos, top) else { break };
        if !game.repeats() {
            f(l)?;
        }
        pos[top] += 1;
        let k = key(l);
        let shared = head(&pos, top).map_or(0, |next| shared_prefix(k, key(next)));
        game.replay(shared, |i| head(&pos, i).map(key));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_like_token_tuples_even_with_nul_bytes() {
        let rows: Vec<[&[u8]; 4]> = vec![
            [b"a", b"b\0", b"c", b"D"],
            [b"a", b"b", b"\0", b"D"],
            [b"a", b"b", b"", b"D"],
            [b"a\0", b"", b"", b""],
            [b"a", b"b", b"c", b"D"],
            [b"ab", b"", b"", b""],
        ];
        let mut by_key: Vec<Vec<u8>> = rows
            .iter()
            .map(|r| {
                let mut k = Vec::new();
                encode_key(&mut k, *r);
                k
            })
            .collect();
        by_key.sort();
        let mut by_tuple = rows.clone();
        by_tuple.sort();
        let decoded: Vec<[Vec<u8>; 4]> = by_key.iter().map(|k| decode_key(k)).collect();
        for k in &by_key {
            let mut cols: [Vec<u8>; 4] = Default::default();
            decode_key_into(k, &mut cols);
            assert_eq!(cols, decode_key(k));
            let has_nul = decode_key(k).iter().any(|t| t.contains(&0));
            match split_key(k) {
                Some(toks) => assert_eq!(toks.map(<[u8]>::to_vec), decode_key(k)),
                None => assert!(has_nul, "{k:?} has no NUL but was not split"),
            }
        }
        let expected: Vec<[Vec<u8>; 4]> = by_tuple.iter().map(|r| r.map(|t| t.to_vec())).collect();
        assert_eq!(decoded, expected);
    }

    proptest::proptest! {
        /// Front coding round-trips any ascending keys: empty ones, NUL
        /// bytes, keys that are prefixes of the next, long shared prefixes.
        #[test]
        fn runs_read_back_the_keys_written(mut keys in proptest::collection::vec(
            proptest::collection::vec(proptest::prelude::prop_oneof![proptest::prelude::Just(0u8), 97u8..100, 0u8..=255], 0..300), 0..80)) {
            keys.sort();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("run");
            write_run_file(&path, |put| keys.iter().try_for_each(|k| put(k))).unwrap();
            let mut r = RunReader::open(&path).unwrap();
            let mut got = Vec::new();
            while r.advance().unwrap() {
                got.push(r.key.clone());
            }
            proptest::prop_assert_eq!(got, keys);
        }
    }

    /// What both merges must give: every distinct key of the runs, ascending.
    fn union(runs: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = runs.concat();
        all.sort();
        all.dedup();
        all
    }

    fn sorted_runs() -> impl proptest::strategy::Strategy<Value = Vec<Vec<Vec<u8>>>> {
        let key = proptest::collection::vec(97u8..100, 0..6);
        let run = proptest::collection::vec(key, 0..40).prop_map(|mut keys| {
            keys.sort();
            keys.dedup();
            keys
        });
        proptest::collection::vec(run, 0..20)
    }

    use proptest::strategy::Strategy;

    proptest::proptest! {
        /// The word-at-a-time count agrees with counting byte by byte, for
        /// prefixes that end inside, at and across 8-byte words.
        #[test]
        fn shared_prefix_counts_the_common_leading_bytes(
            a in proptest::collection::vec(0u8..2, 0..40),
            b in proptest::collection::vec(0u8..2, 0..40),
        ) {
            let by_byte = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            proptest::prop_assert_eq!(shared_prefix(&a, &b), by_byte);
            proptest::prop_assert_eq!(shared_prefix(&a, &a), a.len());
        }
    }

    proptest::proptest! {
        /// The tournament merges any number of runs (none, one, a power of
        /// two or not, some empty) into their distinct keys, in memory and
        /// from run files; keys repeat across runs and prefix one another.
        #[test]
        fn merges_give_every_distinct_key_once_ascending(runs in sorted_runs()) {
            let segments: Vec<Vec<u8>> = runs.iter().map(|r| r.concat()).collect();
            let locs: Vec<Vec<Loc>> = runs.iter().enumerate().map(|(seg, r)| {
                let mut at = 0;
                r.iter().map(|k| {
                    let l = Loc { seg: seg as u32, at, len: k.len() as u32 };
                    at += k.len() as u32;
                    l
                }).collect()
            }).collect();
            let mut in_memory = Vec::new();
            merge_in_memory(&locs, |l| key_at(&segments, l), &mut |k| {
                in_memory.push(k.to_vec());
                Ok(())
            }).unwrap();
            proptest::prop_assert_eq!(&in_memory, &union(&runs));
            // On two threads, split at a key near the median.
            let mut split = Vec::new();
            merge_split_from(&locs, |l| key_at(&segments, l), &mut |k| {
                split.push(k.to_vec());
                Ok(())
            }, Some(0)).unwrap();
            proptest::prop_assert_eq!(&split, &union(&runs));

            let dir = tempfile::tempdir().unwrap();
            let paths: Vec<PathBuf> = runs.iter().enumerate().map(|(i, r)| {
                let path = dir.path().join(format!("run-{i}"));
                write_run_file(&path, |put| r.iter().try_for_each(|k| put(k))).unwrap();
                path
            }).collect();
            let mut from_files = Vec::new();
            merge_runs(&paths, |k| {
                from_files.push(k.to_vec());
                Ok(())
            }).unwrap();
            proptest::prop_assert_eq!(&from_files, &union(&runs));
        }
    }

    #[test]
    fn a_truncated_run_is_an_error_not_a_short_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run");
        write_run_file(&path, |put| put(b"abcdef").and_then(|()| put(b"abcxyz"))).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let mut r = RunReader::open(&path).unwrap();
        assert!(r.advance().unwrap());
        assert!(r.advance().is_err());
    }

    /// A spill is written on its own thread: its failure (here, no spill
    /// directory) is an error from a later push or from `finish`, with the
    /// cause, not a hang or a panic.
    #[test]
    fn a_spill_that_cannot_be_written_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Sorter::new(1 << 17, &dir.path().join("absent"));
        let mut pushed = Ok(());
        for i in 0..50_000u32 {
            pushed = s.push([format!("<s{i}>").as_bytes(), b"<p>", b"\"o\"", b"DEFAULT"]);
            if pushed.is_err() {
                break;
            }
        }
        let e = pushed.and_then(|()| s.finish(|_| Ok(()))).expect_err("no directory to spill into");
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
    }

    /// The subjects of every key `s` yields, in order.
    fn subjects_out(s: Sorter) -> Vec<String> {
        let mut got = Vec::new();
        s.finish(|k| {
            got.push(String::from_utf8(decode_key(k)[0].clone()).unwrap());
            Ok(())
        })
        .unwrap();
        got
    }

    /// Enough keys pushed one by one to be sorted as two halves on two
    /// threads, with repeats within and across the halves.
    #[test]
    fn many_loose_keys_come_out_sorted_and_distinct() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Sorter::new(1 << 30, dir.path());
        for i in (0..150_000u32).rev() {
            s.push([format!("<s{}>", i % 90_001).as_bytes(), b"<p>", b"\"o\"", b"DEFAULT"]).unwrap();
        }
        assert_eq!(s.spilled_runs(), 0);
        let mut expected: Vec<String> = (0..90_001).map(|i| format!("<s{i}>")).collect();
        expected.sort();
        assert_eq!(subjects_out(s), expected);
    }

    #[test]
    fn spilled_runs_merge_sorted_and_distinct() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Sorter::new(1 << 16, dir.path());
        let mut expected = Vec::new();
        for i in (0..200_000u32).rev() {
            let t = format!("<s{}>", i % 70_000);
            s.push([t.as_bytes(), b"<p>", b"\"o\"", b"DEFAULT"]).unwrap();
            expected.push(t);
        }
        assert!(
            s.spilled_runs() > MAX_FAN_IN,
            "{} runs: the merge passes are not exercised",
            s.spilled_runs()
        );
        expected.sort();
        expected.dedup();
        assert_eq!(subjects_out(s), expected);
    }
}
