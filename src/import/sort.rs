//! External merge sort of rows encoded as order-preserving byte keys.
//!
//! A row's key is its four tokens, each with 0x00 written as 00 FF and ended
//! by 00 00. Comparing keys byte-wise then orders rows exactly as comparing
//! (s, p, o, g) token by token, so one `memcmp` sorts and deduplicates rows
//! whatever bytes the tokens contain. Runs that outgrow the memory budget are
//! sorted, deduplicated and spilled to temp files, then k-way merged.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Appends the key of `tokens` to `out`.
pub fn encode_key(out: &mut Vec<u8>, tokens: [&[u8]; 4]) {
    for t in tokens {
        // Tokens practically never hold a NUL byte: copy them whole then.
        if !t.contains(&0) {
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

/// Appends a key's four tokens to `cols` and returns their start offsets there.
pub fn decode_key_into(key: &[u8], cols: &mut [Vec<u8>; 4]) -> [usize; 4] {
    let starts = cols.each_ref().map(Vec::len);
    let mut col = 0;
    let mut rest = key;
    while col < 4 {
        // Copy up to the next 0x00, then read its escape or terminator.
        let Some(z) = rest.iter().position(|&b| b == 0) else { break };
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

pub struct Sorter {
    arena: Vec<u8>,
    index: Vec<(usize, u32)>,
    budget: usize,
    dir: PathBuf,
    runs: Vec<PathBuf>,
    scratch: Vec<u8>,
}

impl Sorter {
    /// `budget`: bytes of keys held in memory before a run is spilled into `dir`.
    pub fn new(budget: usize, dir: &Path) -> Self {
        Sorter {
            arena: Vec::new(),
            index: Vec::new(),
            budget: budget.max(1 << 16),
            dir: dir.to_path_buf(),
            runs: Vec::new(),
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
        self.index.push((self.arena.len(), key.len() as u32));
        self.arena.extend_from_slice(key);
        if self.arena.len() + self.index.len() * 16 >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Reserves room for about `bytes` of keys (capped by the budget), so the
    /// arena does not grow by doubling and copying.
    pub fn reserve(&mut self, bytes: usize) {
        let bytes = bytes.min(self.budget);
        self.arena.reserve(bytes);
        self.index.reserve(bytes / 150);
    }

    pub fn spilled_runs(&self) -> usize {
        self.runs.len()
    }

    /// The held keys sorted and deduplicated. Large sets are sorted as two
    /// halves on two threads and merged: the sort is the longest step
    /// between parsing and writing, and the second core is idle then.
    fn sorted_index(&mut self) -> Vec<(usize, u32)> {
        let arena = &self.arena;
        let key = |&(o, l): &(usize, u32)| &arena[o..o + l as usize];
        let mut idx = std::mem::take(&mut self.index);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if threads < 2 || idx.len() < 1 << 16 {
            idx.sort_unstable_by(|a, b| key(a).cmp(key(b)));
        } else {
            let mid = idx.len() / 2;
            let (left, right) = idx.split_at_mut(mid);
            std::thread::scope(|s| {
                s.spawn(|| left.sort_unstable_by(|a, b| key(a).cmp(key(b))));
                right.sort_unstable_by(|a, b| key(a).cmp(key(b)));
            });
            let (left, right) = idx.split_at(mid);
            let mut merged = Vec::with_capacity(idx.len());
            let (mut i, mut j) = (0, 0);
            while i < left.len() && j < right.len() {
                if key(&right[j]) < key(&left[i]) {
                    merged.push(right[j]);
                    j += 1;
                } else {
                    merged.push(left[i]);
                    i += 1;
                }
            }
            merged.extend_from_slice(&left[i..]);
            merged.extend_from_slice(&right[j..]);
            idx = merged;
        }
        idx.dedup_by(|a, b| key(a) == key(b));
        idx
    }

    fn spill(&mut self) -> io::Result<()> {
        let idx = self.sorted_index();
        let path = self.dir.join(format!("run-{:05}", self.runs.len()));
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&path)?);
        for (o, l) in idx {
            w.write_all(&l.to_le_bytes())?;
            w.write_all(&self.arena[o..o + l as usize])?;
        }
        w.flush()?;
        self.runs.push(path);
        self.arena.clear();
        Ok(())
    }

    /// Calls `f` with every distinct key in ascending order.
    pub fn finish(mut self, mut f: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        if self.runs.is_empty() {
            let idx = self.sorted_index();
            for (o, l) in idx {
                f(&self.arena[o..o + l as usize])?;
            }
            return Ok(());
        }
        if !self.index.is_empty() {
            self.spill()?;
        }
        self.arena = Vec::new();
        let mut readers: Vec<BufReader<File>> = self
            .runs
            .iter()
            .map(|p| File::open(p).map(|f| BufReader::with_capacity(1 << 18, f)))
            .collect::<io::Result<_>>()?;
        let mut heap = BinaryHeap::new();
        for (i, r) in readers.iter_mut().enumerate() {
            if let Some(k) = read_key(r)? {
                heap.push(Reverse((k, i)));
            }
        }
        let mut last: Option<Vec<u8>> = None;
        while let Some(Reverse((k, i))) = heap.pop() {
            if last.as_deref() != Some(&k[..]) {
                f(&k)?;
                last = Some(k);
            }
            if let Some(next) = read_key(&mut readers[i])? {
                heap.push(Reverse((next, i)));
            }
        }
        Ok(())
    }
}

fn read_key(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut k = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut k)?;
    Ok(Some(k))
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
        }
        let expected: Vec<[Vec<u8>; 4]> = by_tuple.iter().map(|r| r.map(|t| t.to_vec())).collect();
        assert_eq!(decoded, expected);
    }

    #[test]
    fn spilled_runs_merge_sorted_and_distinct() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Sorter::new(1 << 16, dir.path());
        let mut expected = Vec::new();
        for i in (0..20_000u32).rev() {
            let t = format!("<s{}>", i % 7000);
            s.push([t.as_bytes(), b"<p>", b"\"o\"", b"DEFAULT"]).unwrap();
            expected.push(t);
        }
        assert!(s.spilled_runs() > 1);
        expected.sort();
        expected.dedup();
        let mut got = Vec::new();
        s.finish(|k| {
            got.push(String::from_utf8(decode_key(k)[0].clone()).unwrap());
            Ok(())
        })
        .unwrap();
        assert_eq!(got, expected);
    }
}
