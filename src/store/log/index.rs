//! A sparse index over `data.deltalog`, so the log view can show any window
//! of a million-batch log without holding every decoded batch.
//!
//! The index is built from one [`super::Log::scan`] of the file's bytes
//! (read, not mapped: a writer may cut the tail as it is read), so its
//! idea of where the committed batches end (and why) is the decoder's, in
//! either transport; the scan hands over one batch at a time, and the index
//! keeps the offset of every `STRIDE`-th batch and a count of batches per
//! epoch. Memory is `count / STRIDE` offsets plus one entry per epoch once
//! built (the bytes are dropped after the scan). A window is then read and
//! decoded from the nearest checkpoint. A legacy code-point log cannot be decoded from a byte offset,
//! so its (old, small) batches are kept whole instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Log, Tail};
use crate::format::deltalog::{self, BatchFrame};
use crate::text::plural;

pub const STRIDE: usize = 256;

/// The visible part of a log, counted: what compaction would fold in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pending {
    pub batches: usize,
    pub added: usize,
    pub removed: usize,
    pub graph_ops: usize,
}

#[derive(Debug, Default)]
pub struct LogIndex {
    pub path: PathBuf,
    pub len: u64,
    pub count: usize,
    checkpoints: Vec<u64>,
    /// Batches per db_epoch.
    pub epochs: BTreeMap<u64, usize>,
    /// Entries per db_epoch: quads added, quads removed, graph operations.
    pub ops: BTreeMap<u64, [usize; 3]>,
    /// The log's tail as the decoder classified it (`Clean` when unread).
    pub tail: Tail,
    /// The file is missing or its header is not a log.
    pub error: Option<String>,
    /// Every batch of a legacy-transport log.
    legacy: Option<Vec<BatchFrame>>,
    /// The file, open: windows are read from it (`pread`) between
    /// checkpoints, inside the committed batches, which never change.
    file: Option<std::fs::File>,
}

impl LogIndex {
    pub fn build(path: &Path) -> LogIndex {
        let mut ix = LogIndex { path: path.to_path_buf(), ..LogIndex::default() };
        // Opened first: windows read this file even if the log is replaced
        // by a rename (compaction) after the scan.
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                ix.error = Some(format!("{}: no such file", path.display()));
                return ix;
            }
            Err(e) => {
                ix.error = Some(format!("{}: {e}", path.display()));
                return ix;
            }
        };
        let bytes = match read_all(&file) {
            Ok(b) => b,
            Err(e) => {
                ix.error = Some(format!("{}: {e}", path.display()));
                return ix;
            }
        };
        ix.len = bytes.len() as u64;
        let scanned = Log::scan(path, &bytes, &mut |f| ix.add(&f));
        match scanned {
            Ok(s) => {
                ix.tail = s.tail;
                if let Some(frames) = s.legacy {
                    (ix.count, ix.checkpoints) = (0, Vec::new());
                    (ix.epochs, ix.ops) = (BTreeMap::new(), BTreeMap::new());
                    frames.iter().for_each(|f| ix.add(f));
                    ix.legacy = Some(frames);
                }
            }
            Err(e) => ix.error = Some(e.to_string()),
        }
        ix.file = Some(file);
        ix
    }

    /// Where the committed batches end.
    fn committed_end(&self) -> u64 {
        self.tail.damage().map_or(self.len, |d| d.offset)
    }

    /// Counts one committed batch, keeping every `STRIDE`-th offset.
    fn add(&mut self, f: &BatchFrame) {
        if self.count.is_multiple_of(STRIDE) {
            self.checkpoints.push(f.offset);
        }
        self.count += 1;
        *self.epochs.entry(f.batch.epoch).or_default() += 1;
        let (added, removed, graph_ops) = super::writer::count_ops(&f.batch.entries);
        let ops = self.ops.entry(f.batch.epoch).or_default();
        for (sum, n) in ops.iter_mut().zip([added, removed, graph_ops]) {
            *sum += n;
        }
    }

    /// The batches a version still sees in the log (`seen`),
    /// log, and their entries added up.
    pub fn pending(&self, seen: super::Visibility) -> Pending {
        let mut p = Pending::default();
        for (&epoch, &batches) in &self.epochs {
            if seen.of_epoch(epoch) == super::BatchState::Visible {
                p.batches += batches;
                let [a, r, g] = self.ops.get(&epoch).copied().unwrap_or_default();
                (p.added, p.removed, p.graph_ops) = (p.added + a, p.removed + r, p.graph_ops + g);
            }
        }
        p
    }

    /// Where the committed prefix ends, how much follows, and why.
    pub fn leftover(&self) -> Option<(u64, u64, &'static str)> {
        self.tail.damage().map(|d| (d.offset, d.len, d.reason.as_str()))
    }

    /// One line on the log for a person: its batches and bytes, and what of
    /// it the version `current` (which sees `seen`) still folds in on
    /// every open.
    pub fn summary(&self, current: &str, seen: super::Visibility) -> String {
        let size = humansize::format_size(self.len, humansize::BINARY);
        let mut text = format!("log: {}, {size}", plural(self.count, "batch", "batches"));
        let pending = self.pending(seen);
        if pending.batches == 0 {
            text +=
                if self.count == 0 { "; nothing pending" } else { "; all folded into the current version" };
            return text;
        }
        text += &format!(
            "; {} pending over {current}: +{} \u{2212}{} quads",
            pending.batches, pending.added, pending.removed
        );
        if pending.graph_ops > 0 {
            text += &format!(", {}", plural(pending.graph_ops, "graph op", "graph ops"));
        }
        text + " (`compact` folds them in)"
    }

    /// What is wrong at the log's end, for a person: a torn tail readers
    /// ignore, or damage hiding committed batches; each with its byte offset.
    pub fn damage_summary(&self) -> Option<String> {
        let d = self.tail.damage()?;
        let why = d.reason.as_str();
        Some(match self.tail.hidden() {
            [] => format!(
                "TORN TAIL at byte {}: {} after {} committed ({why}); readers ignore {}",
                d.offset,
                plural(d.len, "byte", "bytes"),
                plural(self.count, "batch", "batches"),
                crate::text::noun(d.len, "it", "them")
            ),
            h => format!(
                "DAMAGE at byte {} ({why}) hides {}: readers refuse the store \
                 (`cottas-tui repair truncate-torn-tail`)",
                d.offset,
                plural(h.len(), "committed batch", "committed batches")
            ),
        })
    }

    /// Decodes `n` batches from batch number `start` (fewer at the end).
    pub fn window(&self, start: usize, n: usize) -> Vec<Result<BatchFrame, String>> {
        let n = n.min(self.count.saturating_sub(start));
        if let Some(frames) = &self.legacy {
            return frames.iter().skip(start).take(n).cloned().map(Ok).collect();
        }
        let Some(&from) = self.checkpoints.get(start / STRIDE) else { return Vec::new() };
        // Up to the checkpoint after the window's last batch: committed bytes.
        let until = self.checkpoints.get((start + n) / STRIDE + 1).copied().unwrap_or(self.committed_end());
        let bytes = match self.read_range(from, until) {
            Ok(b) => b,
            Err(e) => return vec![Err(format!("{}: {e}", self.path.display()))],
        };
        let mut at = 0usize;
        let mut out = Vec::with_capacity(n);
        for k in 0..start % STRIDE + n {
            let frame = match deltalog::decode_batch_at(&bytes, at).result {
                Ok(mut f) => {
                    f.offset += from;
                    Ok(f)
                }
                Err(mut e) => {
                    e.offset += from;
                    Err(e.to_string())
                }
            };
            let next = frame.as_ref().map(|f| (f.offset + f.len - from) as usize).map_err(|_| ());
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

    /// Bytes `from..until` of the log, read.
    fn read_range(&self, from: u64, until: u64) -> std::io::Result<Vec<u8>> {
        let Some(file) = &self.file else { return Ok(Vec::new()) };
        let mut bytes = vec![0u8; until.saturating_sub(from) as usize];
        std::os::unix::fs::FileExt::read_exact_at(file, &mut bytes, from)?;
        Ok(bytes)
    }
}

/// The whole file, read from its start with `pread` (however long it is now).
fn read_all(file: &std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let mut reader = file;
    reader.read_to_end(&mut bytes)?;
    Ok(bytes)
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
        let over_2 = Pending { batches: 200, added: 0, removed: 0, graph_ops: 200 };
        assert_eq!(ix.pending(super::super::Visibility::over(Some(2))), over_2);
        assert_eq!(ix.pending(super::super::Visibility::over(None)).graph_ops, 1000);
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

    /// Damage in the middle with whole batches after it: the index's tail is
    /// the log module's (`Hiding`, with the hidden batches' offsets), and it
    /// counts only the batches before the damage.
    #[test]
    fn damage_hiding_batches_is_classified_as_the_log_module_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.deltalog");
        let batches: Vec<Batch> = (0..10)
            .map(|i| Batch { seq: i, epoch: 1, entries: vec![Entry::create(format!("http://g/{i}"))] })
            .collect();
        let mut bytes = deltalog::encode_batches(&batches, Transport::Raw);
        let third = deltalog::decode(&bytes).result.unwrap().batches[3].clone();
        bytes[third.offset as usize + 30] ^= 0x40; // inside batch 3's body
        std::fs::write(&path, &bytes).unwrap();
        let ix = LogIndex::build(&path);
        let log = Log::read(&path).unwrap().unwrap();
        assert!(matches!(log.tail, Tail::Hiding(..)), "{:?}", log.tail);
        assert_eq!(ix.tail, log.tail);
        assert_eq!((ix.count, log.frames.len()), (3, 3));
        assert_eq!(ix.window(0, 5).len(), 3);
    }
}

#[cfg(test)]
mod legacy {
    use super::*;
    use crate::format::transport::Transport;

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
