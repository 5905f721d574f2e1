//! The sidecars of a base that already exists, derived from its rows.
//!
//! `index`, `repair rebuild-sidecars` and `verify` all come here, and this
//! comes only to the streaming writer import and compaction use
//! ([`super::stream`]): a sidecar one of them derives is byte for byte the
//! one another writes, in the same bounded memory at any size. (The
//! in-memory builder, [`super::build`], is the oracle the tests hold both
//! to.)
//!
//! Row groups are decoded on one thread and fed to the writer on another,
//! two in flight. A base this program wrote is in SPOG order and takes the
//! writer's fast path, which ranks subjects as they pass; at the first
//! subject out of order (another producer's row order) the work starts again
//! in [`Order::Any`], which interns subjects like the other columns.

use std::path::Path;
use std::sync::mpsc::sync_channel;

use super::stream::{Built, Mode, Order, OutOfOrder, SidecarWriter};
use crate::store::base::Base;
use crate::store::StoreError;

/// Progress: row groups done, of all.
pub type OnProgress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// Why the sidecars could not be derived.
#[derive(Debug)]
pub enum DeriveError {
    /// A page of the base does not decode (or does not match its digest).
    Base(StoreError),
    /// Writing or reading the sidecars or the temp files failed.
    Io(StoreError),
}

impl DeriveError {
    pub fn into_store_error(self) -> StoreError {
        match self {
            DeriveError::Base(e) | DeriveError::Io(e) => e,
        }
    }
}

/// Writes (or, in [`Mode::Compare`], compares) the 11 sidecars of `base`
/// as those of the base path `out` (each at `out` plus its suffix: `base`'s
/// own path to compare them in place, a path in a temp dir to write new
/// ones). `spill` is an empty directory for temp files (left empty);
/// `budget` is what the writer's token maps may hold.
pub fn derive(
    base: &Base,
    out: &Path,
    spill: &Path,
    budget: usize,
    mode: Mode,
    progress: OnProgress,
) -> Result<Built, DeriveError> {
    let done = |result: Result<Built, Stop>| match result {
        Ok(built) => Ok(built),
        Err(Stop::Failed(e)) => Err(e),
        // Only `Order::Spog` stops for this; [`Order::Any`] takes any row.
        Err(Stop::OutOfOrder) => Err(DeriveError::Io(StoreError::format_anywhere(
            base.path(),
            "rows out of order where any order is taken",
        ))),
    };
    match pass(base, out, spill, budget, mode, Order::Spog, progress) {
        Err(Stop::OutOfOrder) => {
            empty(spill).map_err(|e| DeriveError::Io(StoreError::write(spill, e)))?;
            done(pass(base, out, spill, budget, mode, Order::Any, progress))
        }
        first => done(first),
    }
}

enum Stop {
    OutOfOrder,
    Failed(DeriveError),
}

/// One pass over the rows in the given order.
fn pass(
    base: &Base,
    out: &Path,
    spill: &Path,
    budget: usize,
    mode: Mode,
    order: Order,
    progress: OnProgress,
) -> Result<Built, Stop> {
    let io = |e: std::io::Error| {
        if OutOfOrder::is(&e) {
            Stop::OutOfOrder
        } else {
            Stop::Failed(DeriveError::Io(StoreError::write(spill, e)))
        }
    };
    let n = base.num_row_groups();
    let rg_sizes: Vec<usize> = (0..n).map(|rg| base.metadata().row_group(rg).num_rows() as usize).collect();
    let mut writer = SidecarWriter::with_order(out, spill, budget, mode, order).map_err(io)?;
    let (tx, rx) = sync_channel(2);
    std::thread::scope(|s| {
        s.spawn(move || {
            for rg in 0..n {
                let cols: Result<Vec<_>, StoreError> = (0..4).map(|c| base.read_column(rg, c)).collect();
                // Each row group's pages are read once: let them go, or the
                // whole mapped base (half a GB at 100M quads) stays resident.
                super::checked::release_mapped_pages(base.mapped_bytes());
                // The receiver is gone when the pass stopped early.
                if tx.send(cols).is_err() {
                    return;
                }
            }
        });
        for (rg, cols) in rx.into_iter().enumerate() {
            let cols = cols.map_err(|e| Stop::Failed(DeriveError::Base(e)))?;
            #[allow(clippy::needless_range_loop)] // one row across four columns
            for i in 0..cols[0].len() {
                writer.push(std::array::from_fn(|c| cols[c][i].data())).map_err(io)?;
            }
            progress(rg as u64 + 1, n as u64);
        }
        Ok(())
    })?;
    writer.finish(&rg_sizes).map_err(io)
}

/// Removes what a stopped pass left in `dir`.
fn empty(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}
