//! Writing a new version directory from a stream of sorted, distinct rows:
//! `data.cottas` in row groups and the 11 sidecars, without holding the rows.
//!
//! Shared by import (rows from the external sort) and compaction (base rows
//! merged with the delta), so both produce byte-identical versions for the
//! same quads. The caller's thread only gathers rows into row groups; each
//! full row group goes to two threads at once: one encodes it into the base,
//! the other collects its dictionary ids for the sidecars (so the base is
//! never decoded again). Collecting ids on the caller's thread made it the
//! critical path (`perf` by thread): it merged the sorted rows, or decoded
//! the old base in a compaction, and hashed every cell while the encoders
//! waited for the next row group (compaction of 10M quads is 7–10% faster).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::store::base::writer::{BaseOptions, BaseWriter, Cells};
use crate::store::sidecars::stream::{Mode, SidecarWriter};
use crate::store::versions::layout::BASE;
use crate::store::StoreError;

/// What the sink wrote.
#[derive(Debug, Clone)]
pub struct Written {
    pub rows: u64,
    pub rg_sizes: Vec<usize>,
    /// Named graphs (the g dictionary without `DEFAULT`).
    pub graphs: u64,
    pub base_bytes: u64,
}

type Columns = [Cells; 4];

/// A full row group, read by the encoder and the id collector at once.
type Shared = Arc<Columns>;

pub struct VersionSink {
    dir: PathBuf,
    rg_size: usize,
    /// One row group's cells, one byte arena per column.
    columns: Columns,
    to_writer: Option<SyncSender<Shared>>,
    to_collector: Option<SyncSender<Shared>>,
    /// Row groups both threads are done with, emptied, for the next one: a
    /// fresh arena grew by doubling and faulted in new pages for every row
    /// group (a tenth of the importing thread's time on long literals).
    recycled: Receiver<Columns>,
    write_thread: Option<JoinHandle<parquet::errors::Result<Vec<usize>>>>,
    collect_thread: Option<JoinHandle<io::Result<SidecarWriter>>>,
    /// Rows of each row group sent to the two threads.
    sent: Vec<usize>,
    rows: u64,
    /// The previous row, to refuse rows out of SPOG order or repeated.
    last: Vec<u8>,
}

/// Hands a row group back for reuse once its last reader lets go of it.
fn release(shared: Shared, give_back: &Sender<Columns>) {
    if let Some(mut columns) = Arc::into_inner(shared) {
        columns.iter_mut().for_each(Cells::clear);
        // The sink may be finishing and gone: then nobody needs it.
        let _ = give_back.send(columns);
    }
}

impl VersionSink {
    /// Starts `dir/data.cottas`; `spill_dir` holds the id stream and the
    /// dictionary runs (deleted by the caller), spilled once the dictionary
    /// maps hold `budget` bytes.
    pub fn create(
        dir: &Path,
        spill_dir: &Path,
        opts: &BaseOptions,
        budget: usize,
    ) -> Result<VersionSink, StoreError> {
        let base_path = dir.join(BASE);
        let mut writer = BaseWriter::create(&base_path, opts)
            .map_err(|e| StoreError::parquet(&base_path, "writing", e))?;
        let mut collector = SidecarWriter::new(dir, spill_dir, budget, Mode::Write)
            .map_err(|e| StoreError::io(spill_dir, e))?;
        let (give_back, recycled) = std::sync::mpsc::channel::<Columns>();
        let (to_writer, for_writer) = std::sync::mpsc::sync_channel::<Shared>(2);
        let writer_gives_back = give_back.clone();
        let write_thread = std::thread::spawn(move || -> parquet::errors::Result<Vec<usize>> {
            for columns in for_writer {
                writer.write_columns(&columns)?;
                release(columns, &writer_gives_back);
            }
            writer.finish()
        });
        let (to_collector, for_collector) = std::sync::mpsc::sync_channel::<Shared>(2);
        let collect_thread = std::thread::spawn(move || -> io::Result<SidecarWriter> {
            for columns in for_collector {
                for i in 0..columns[0].len() {
                    collector.push(std::array::from_fn(|c| columns[c].get(i)))?;
                }
                release(columns, &give_back);
            }
            Ok(collector)
        });
        Ok(VersionSink {
            dir: dir.to_path_buf(),
            rg_size: opts.row_group_size.max(1),
            columns: Default::default(),
            to_writer: Some(to_writer),
            to_collector: Some(to_collector),
            recycled,
            write_thread: Some(write_thread),
            collect_thread: Some(collect_thread),
            sent: Vec::new(),
            rows: 0,
            last: Vec::new(),
        })
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds the next row; rows must come in strictly increasing SPOG order.
    pub fn push(&mut self, row: [&[u8]; 4]) -> io::Result<()> {
        self.push_unchecked(row, true)
    }

    /// As `push`; `check` false skips the order check (the caller's sort
    /// already guarantees it).
    pub fn push_unchecked(&mut self, row: [&[u8]; 4], check: bool) -> io::Result<()> {
        if check {
            // The sort's order-preserving key: byte order of keys is SPOG order.
            let mut key = Vec::new();
            crate::store::sort::encode_key(&mut key, row);
            if self.rows > 0 && key <= self.last {
                return Err(io::Error::other(format!(
                    "row {} is not after the previous one in SPOG order ({} {} {} {})",
                    self.rows,
                    String::from_utf8_lossy(row[0]),
                    String::from_utf8_lossy(row[1]),
                    String::from_utf8_lossy(row[2]),
                    String::from_utf8_lossy(row[3])
                )));
            }
            self.last = key;
        }
        for (c, cell) in row.iter().enumerate() {
            self.columns[c].push_toward(cell, self.rg_size);
        }
        self.rows += 1;
        if self.columns[0].len() == self.rg_size {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> io::Result<()> {
        let mut next = self.recycled.try_recv().unwrap_or_default();
        for (arena, full) in next.iter_mut().zip(&self.columns) {
            arena.make_room_like(full);
        }
        let full = Arc::new(std::mem::replace(&mut self.columns, next));
        self.sent.push(full[0].len());
        let to_writer = self.to_writer.as_ref().map(|tx| tx.send(Arc::clone(&full)));
        let to_collector = self.to_collector.as_ref().map(|tx| tx.send(full));
        match (to_writer, to_collector) {
            (Some(Ok(())), Some(Ok(()))) => Ok(()),
            (Some(Ok(())), _) => Err(io::Error::other("the sidecar collector stopped")),
            _ => Err(io::Error::other("the base writer stopped")),
        }
    }

    /// Writes the last row group, the footer and the sidecars, all fsynced.
    /// The sidecars are built while the writer thread still encodes the last
    /// row groups: they need only the ids and the row-group sizes.
    pub fn finish(mut self) -> Result<Written, StoreError> {
        let base_path = self.dir.join(BASE);
        let sent = if self.columns[0].is_empty() { Ok(()) } else { self.send() };
        drop(self.to_writer.take());
        drop(self.to_collector.take());
        let write_thread = self.write_thread.take().expect("finish runs once");
        let collect_thread = self.collect_thread.take().expect("finish runs once");
        let collected = collect_thread
            .join()
            .map_err(|_| StoreError::write(&self.dir, io::Error::other("the sidecar collector panicked")))?;
        let wrote_sidecars = match (&sent, collected) {
            (Ok(()), Ok(collector)) => self.write_sidecars(collector),
            (_, Err(e)) => Err(StoreError::write(&self.dir, e)),
            (Err(_), Ok(_)) => Ok(0),
        };
        let written = write_thread
            .join()
            .map_err(|_| StoreError::parquet(&base_path, "writing", "the base writer thread panicked"))?;
        // A thread's own error explains a failed send better than the send's.
        let rg_sizes = written.map_err(|e| StoreError::parquet(&base_path, "writing the base", e))?;
        let graphs = wrote_sidecars?;
        sent.map_err(|e| StoreError::io(&base_path, e))?;
        if rg_sizes != self.sent {
            return Err(StoreError::parquet(&base_path, "writing", "row groups differ from the rows sent"));
        }
        let base_bytes = std::fs::metadata(&base_path).map_err(|e| StoreError::io(&base_path, e))?.len();
        crate::store::base::digests::write(&self.dir)?;
        Ok(Written { rows: self.rows, rg_sizes, graphs, base_bytes })
    }

    /// Writes the 11 sidecars (streamed, each fsynced); returns the number
    /// of named graphs.
    fn write_sidecars(&self, collector: SidecarWriter) -> Result<u64, StoreError> {
        let built = collector.finish(&self.sent).map_err(|e| StoreError::write(&self.dir, e))?;
        Ok(built.graphs)
    }
}

/// A sink dropped before `finish` (an error, or a compaction that starts over
/// through the sort) stops its threads before it is gone, so nothing writes
/// to the version's files once the caller moves on.
impl Drop for VersionSink {
    fn drop(&mut self) {
        drop(self.to_writer.take());
        drop(self.to_collector.take());
        if let Some(thread) = self.write_thread.take() {
            let _ = thread.join();
        }
        if let Some(thread) = self.collect_thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The id collector's thread failing (its id stream on a full disk) is
    /// an error from the sink, with the cause, whether the rows' sends or
    /// `finish` meet it first: not a hang, not a panic.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_collector_that_cannot_write_is_an_error_from_the_sink() {
        let dir = tempfile::tempdir().unwrap();
        let (version, spill) = (dir.path().join("v1"), dir.path().join("spill"));
        std::fs::create_dir_all(&version).unwrap();
        std::fs::create_dir_all(&spill).unwrap();
        // Every write of the id stream fails with ENOSPC.
        std::os::unix::fs::symlink("/dev/full", spill.join("row-ids")).unwrap();
        let opts = BaseOptions { row_group_size: 1000, ..BaseOptions::default() };
        let mut sink = VersionSink::create(&version, &spill, &opts, 1 << 20).unwrap();
        let mut failed = None;
        // 16 bytes of ids a row: the stream's 1 MiB buffer fills at 65,536.
        for i in 0..100_000u32 {
            let s = format!("<http://ex.org/s{i:06}>");
            if let Err(e) = sink.push([s.as_bytes(), b"<http://ex.org/p>", b"\"o\"", b"DEFAULT"]) {
                failed = Some(e.to_string());
                break;
            }
        }
        let finished = sink.finish().map(|w| w.rows).map_err(|e| e.to_string());
        let e = finished.expect_err("the id stream could not be written");
        assert!(e.contains("No space left"), "finish: {e} (push: {failed:?})");
        if let Some(pushed) = failed {
            assert!(pushed.contains("collector stopped"), "{pushed}");
        }
    }
}
