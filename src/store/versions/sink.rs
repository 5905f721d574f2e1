//! Writing a new version directory from a stream of sorted, distinct rows:
//! `data.cottas` in row groups and the 11 sidecars, without holding the rows.
//!
//! Shared by import (rows from the external sort) and compaction (base rows
//! merged with the delta), so both produce byte-identical versions for the
//! same quads. Row groups are encoded on a second thread while the caller
//! produces the next one; dictionary ids for the sidecars are collected as
//! rows pass, so the base is never decoded again.

use std::io;
use std::path::{Path, PathBuf};

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

pub struct VersionSink {
    dir: PathBuf,
    rg_size: usize,
    /// One row group's cells, one byte arena per column.
    columns: Columns,
    tx: Option<std::sync::mpsc::SyncSender<Columns>>,
    /// Row groups the writer thread has encoded, emptied, for the next one:
    /// a fresh arena grew by doubling and faulted in new pages for every row
    /// group (a tenth of the importing thread's time on long literals).
    recycled: std::sync::mpsc::Receiver<Columns>,
    write_thread: Option<std::thread::JoinHandle<parquet::errors::Result<Vec<usize>>>>,
    /// Taken when the sidecars are built.
    collector: Option<SidecarWriter>,
    /// Rows of each row group sent to the writer thread.
    sent: Vec<usize>,
    rows: u64,
    /// The previous row, to refuse rows out of SPOG order or repeated.
    last: Vec<u8>,
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
        let (tx, rx) = std::sync::mpsc::sync_channel::<Columns>(2);
        let (give_back, recycled) = std::sync::mpsc::channel::<Columns>();
        let write_thread = std::thread::spawn(move || -> parquet::errors::Result<Vec<usize>> {
            for mut columns in rx {
                writer.write_columns(&columns)?;
                columns.iter_mut().for_each(Cells::clear);
                // The sink may be finishing and gone: then nobody needs it.
                let _ = give_back.send(columns);
            }
            writer.finish()
        });
        let collector = SidecarWriter::new(dir, spill_dir, budget, Mode::Write)
            .map_err(|e| StoreError::io(spill_dir, e))?;
        Ok(VersionSink {
            dir: dir.to_path_buf(),
            rg_size: opts.row_group_size.max(1),
            columns: Default::default(),
            tx: Some(tx),
            recycled,
            write_thread: Some(write_thread),
            collector: Some(collector),
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
        self.collector.as_mut().ok_or_else(|| io::Error::other("the sink is finished"))?.push(row)?;
        for (c, cell) in row.iter().enumerate() {
            self.columns[c].push(cell);
        }
        self.rows += 1;
        if self.columns[0].len() == self.rg_size {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> io::Result<()> {
        let next = match self.recycled.try_recv() {
            Ok(empty) => empty,
            Err(_) => self.columns.each_ref().map(Cells::sized_like),
        };
        let cols = std::mem::replace(&mut self.columns, next);
        self.sent.push(cols[0].len());
        match &self.tx {
            Some(tx) if tx.send(cols).is_ok() => Ok(()),
            _ => Err(io::Error::other("the base writer stopped")),
        }
    }

    /// Writes the last row group, the footer and the sidecars, all fsynced.
    /// The sidecars are built while the writer thread still encodes the last
    /// row groups: they need only the ids and the row-group sizes.
    pub fn finish(mut self) -> Result<Written, StoreError> {
        let base_path = self.dir.join(BASE);
        let sent = if self.columns[0].is_empty() { Ok(()) } else { self.send() };
        drop(self.tx.take());
        let write_thread = self.write_thread.take().expect("finish runs once");
        let wrote_sidecars = if sent.is_ok() { self.write_sidecars() } else { Ok(0) };
        let written = write_thread
            .join()
            .map_err(|_| StoreError::parquet(&base_path, "writing", "the base writer thread panicked"))?;
        // A writer error explains a failed send better than the send's own error.
        let rg_sizes = written.map_err(|e| StoreError::parquet(&base_path, "writing the base", e))?;
        sent.map_err(|e| StoreError::io(&base_path, e))?;
        let graphs = wrote_sidecars?;
        if rg_sizes != self.sent {
            return Err(StoreError::parquet(&base_path, "writing", "row groups differ from the rows sent"));
        }
        let base_bytes = std::fs::metadata(&base_path).map_err(|e| StoreError::io(&base_path, e))?.len();
        crate::store::base::digests::write(&self.dir)?;
        Ok(Written { rows: self.rows, rg_sizes, graphs, base_bytes })
    }

    /// Writes the 11 sidecars (streamed, each fsynced); returns the number
    /// of named graphs.
    fn write_sidecars(&mut self) -> Result<u64, StoreError> {
        let collector = self.collector.take().expect("sidecars are written once");
        let built = collector.finish(&self.sent).map_err(|e| StoreError::write(&self.dir, e))?;
        Ok(built.graphs)
    }
}

/// A sink dropped before `finish` (an error, or a compaction that starts over
/// through the sort) stops its writer thread before it is gone, so nothing
/// writes to the version's files once the caller moves on.
impl Drop for VersionSink {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.write_thread.take() {
            let _ = thread.join();
        }
    }
}
