//! A sparse index over `data.deltalog`, so the log view can show any window
//! of a million-batch log without decoding (or holding) all of it.
//!
//! One pass over the mapped file walks the frames by their length fields and
//! checks each batch checksum (the same stop rule as the decoder); it keeps
//! the offset of every `STRIDE`-th batch and a count of batches per epoch.
//! A window is then decoded from the nearest checkpoint. Memory is
//! `count / STRIDE` offsets plus one entry per distinct epoch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::format::checksum::simple_checksum;
use crate::format::deltalog::{self, BatchFrame, BATCH_MAGIC, HEADER_LEN, MAGIC};

pub const STRIDE: usize = 256;

#[derive(Debug, Default)]
pub struct LogIndex {
    pub path: PathBuf,
    pub len: u64,
    pub count: usize,
    checkpoints: Vec<u64>,
    /// Batches per db_epoch.
    pub epochs: BTreeMap<u64, usize>,
    /// Where the committed prefix ends and why (`None`: clean end).
    pub leftover: Option<(u64, u64, String)>,
    /// The file is missing or its header is not a log.
    pub error: Option<String>,
    map: Option<memmap2::Mmap>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl LogIndex {
    pub fn build(path: &Path) -> LogIndex {
        let mut ix = LogIndex { path: path.to_path_buf(), ..LogIndex::default() };
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) => {
                ix.error = Some(format!("{}: {e}", path.display()));
                return ix;
            }
        };
        // SAFETY: read-only map; the log is only appended to or replaced by
        // rename, never rewritten in place (a cut shortens it: we re-index).
        let map = match unsafe { memmap2::Mmap::map(&file) } {
            Ok(m) => m,
            Err(e) => {
                ix.error = Some(format!("{}: {e}", path.display()));
                return ix;
            }
        };
        let b: &[u8] = &map;
        ix.len = b.len() as u64;
        if b.len() < HEADER_LEN as usize || b[..4] != MAGIC || u32_at(b, 4) != Some(1) {
            ix.error = Some("not a delta log (no DLOG version 1 header)".into());
            ix.map = Some(map);
            return ix;
        }
        let mut at = HEADER_LEN as usize;
        loop {
            if at == b.len() {
                break;
            }
            let why = match Self::frame_at(b, at) {
                Ok((next, epoch)) => {
                    if ix.count.is_multiple_of(STRIDE) {
                        ix.checkpoints.push(at as u64);
                    }
                    ix.count += 1;
                    *ix.epochs.entry(epoch).or_default() += 1;
                    at = next;
                    continue;
                }
                Err(why) => why,
            };
            ix.leftover = Some((at as u64, (b.len() - at) as u64, why.into()));
            break;
        }
        ix.map = Some(map);
        ix
    }

    /// The end of the frame at `at` and its epoch, or why it is not one.
    fn frame_at(b: &[u8], at: usize) -> Result<(usize, u64), &'static str> {
        if b.len() - at < 12 {
            return Err("torn-frame");
        }
        if b[at..at + 4] != BATCH_MAGIC || u32_at(b, at + 4) != Some(1) {
            return Err("bad-frame");
        }
        let len = u32_at(b, at + 8).unwrap_or(0) as usize;
        let body = at + 12;
        let end = body.checked_add(len).and_then(|e| e.checked_add(4)).ok_or("torn-frame")?;
        if end > b.len() {
            return Err("torn-frame");
        }
        if u32_at(b, body + len) != Some(simple_checksum(&b[body..body + len])) {
            return Err("bad-checksum");
        }
        Ok((end, u64_at(b, body + 8).unwrap_or(0)))
    }

    /// Decodes `n` batches from batch number `start` (fewer at the end).
    pub fn window(&self, start: usize, n: usize) -> Vec<Result<BatchFrame, String>> {
        let Some(map) = &self.map else { return Vec::new() };
        let b: &[u8] = map;
        let Some(&cp) = self.checkpoints.get(start / STRIDE) else { return Vec::new() };
        let mut at = cp as usize;
        for _ in 0..start % STRIDE {
            match Self::frame_at(b, at) {
                Ok((next, _)) => at = next,
                Err(_) => return Vec::new(),
            }
        }
        let mut out = Vec::new();
        for _ in 0..n.min(self.count.saturating_sub(start)) {
            let d = deltalog::decode_batch_at(b, at);
            let next = Self::frame_at(b, at).map(|(n, _)| n);
            out.push(d.result.map_err(|e| e.to_string()));
            match next {
                Ok(n) => at = n,
                Err(_) => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::deltalog::{Batch, Entry};
    use crate::format::transport::Transport;

    #[test]
    fn windows_match_a_full_decode_across_checkpoints() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.deltalog");
        let batches: Vec<Batch> = (0..1000)
            .map(|i| Batch {
                seq: i,
                epoch: 1 + i / 400,
                entries: vec![Entry::create(format!("http://g/{i}"))],
            })
            .collect();
        let mut bytes = deltalog::encode_batches(&batches, Transport::Raw);
        bytes.extend_from_slice(b"DLB1\x01\x00\x00\x00");
        std::fs::write(&path, &bytes).unwrap();
        let ix = LogIndex::build(&path);
        assert_eq!(ix.count, 1000);
        assert_eq!(ix.epochs.values().sum::<usize>(), 1000);
        assert_eq!(ix.epochs.get(&3), Some(&200));
        let full = deltalog::decode(&bytes).result.unwrap();
        assert_eq!(ix.leftover.as_ref().map(|l| l.0), Some(full.committed_len()));
        for start in [0, 1, 255, 256, 257, 700, 995] {
            let w = ix.window(start, 10);
            for (k, f) in w.iter().enumerate() {
                assert_eq!(f.as_ref().unwrap(), &full.batches[start + k]);
            }
        }
        assert_eq!(ix.window(995, 10).len(), 5);
    }
}
