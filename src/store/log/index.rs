//! A sparse index over `data.deltalog`, so the log view can show any window
//! of a million-batch log without holding every decoded batch.
//!
//! The index is built from one [`super::Log`] decode, so its idea of where the
//! committed batches end (and why) is the decoder's, in either transport. It
//! keeps the offset of every `STRIDE`-th batch and a count of batches per
//! epoch, and drops the entries. A window is then decoded from the nearest
//! checkpoint. A legacy code-point log cannot be decoded from a byte offset,
//! so its (old, small) batches are kept whole instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Log, Tail};
use crate::format::deltalog::{self, BatchFrame};
use crate::format::transport::Transport;

pub const STRIDE: usize = 256;

#[derive(Debug, Default)]
pub struct LogIndex {
    pub path: PathBuf,
    pub len: u64,
    pub count: usize,
    checkpoints: Vec<u64>,
    /// Batches per db_epoch.
    pub epochs: BTreeMap<u64, usize>,
    /// The log's tail as the decoder classified it (`Clean` when unread).
    pub tail: Tail,
    /// The file is missing or its header is not a log.
    pub error: Option<String>,
    /// Every batch of a legacy-transport log.
    legacy: Option<Vec<BatchFrame>>,
    bytes: Vec<u8>,
}

impl LogIndex {
    pub fn build(path: &Path) -> LogIndex {
        let mut ix = LogIndex { path: path.to_path_buf(), ..LogIndex::default() };
        let log = match Log::read(path) {
            Ok(Some(log)) => log,
            Ok(None) => {
                ix.error = Some(format!("{}: no such file", path.display()));
                return ix;
            }
            Err(e) => {
                ix.error = Some(e.to_string());
                return ix;
            }
        };
        ix.len = log.bytes.len() as u64;
        ix.count = log.frames.len();
        for (i, f) in log.frames.iter().enumerate() {
            if i % STRIDE == 0 {
                ix.checkpoints.push(f.offset);
            }
            *ix.epochs.entry(f.batch.epoch).or_default() += 1;
        }
        ix.tail = log.tail;
        if log.transport == Transport::LegacyCodePoints {
            ix.legacy = Some(log.frames);
        }
        ix.bytes = log.bytes;
        ix
    }

    /// Where the committed prefix ends, how much follows, and why.
    pub fn leftover(&self) -> Option<(u64, u64, &'static str)> {
        self.tail.damage().map(|d| (d.offset, d.len, d.reason.as_str()))
    }

    /// Decodes `n` batches from batch number `start` (fewer at the end).
    pub fn window(&self, start: usize, n: usize) -> Vec<Result<BatchFrame, String>> {
        let n = n.min(self.count.saturating_sub(start));
        if let Some(frames) = &self.legacy {
            return frames.iter().skip(start).take(n).cloned().map(Ok).collect();
        }
        let Some(&cp) = self.checkpoints.get(start / STRIDE) else { return Vec::new() };
        let mut at = cp as usize;
        let mut out = Vec::with_capacity(n);
        for k in 0..start % STRIDE + n {
            let frame = deltalog::decode_batch_at(&self.bytes, at).result.map_err(|e| e.to_string());
            let next = frame.as_ref().map(|f| (f.offset + f.len) as usize).map_err(|_| ());
            if k >= start % STRIDE {
                out.push(frame);
            }
            match next {
                Ok(next) => at = next,
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
        assert_eq!(ix.leftover().map(|l| l.0), Some(full.committed_len()));
        for start in [0, 1, 255, 256, 257, 700, 995] {
            let w = ix.window(start, 10);
            for (k, f) in w.iter().enumerate() {
                assert_eq!(f.as_ref().unwrap(), &full.batches[start + k]);
            }
        }
        assert_eq!(ix.window(995, 10).len(), 5);
    }
}

#[cfg(test)]
mod legacy {
    use super::*;

    /// The legacy golden file is one clean batch, as `dump` decodes it.
    #[test]
    fn a_legacy_log_indexes_as_the_decoder_reads_it() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/golden/one-add.legacy.deltalog");
        let ix = LogIndex::build(&path);
        let full = deltalog::decode(&std::fs::read(&path).unwrap()).result.unwrap();
        assert_eq!(full.transport, Transport::LegacyCodePoints);
        assert_eq!(ix.error, None);
        assert_eq!(ix.count, full.batches.len());
        assert_eq!(ix.count, 1);
        assert_eq!(ix.tail, Tail::Clean);
        assert_eq!(ix.window(0, 5), vec![Ok(full.batches[0].clone())]);
    }
}
