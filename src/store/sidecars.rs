//! Builds the 11 sidecars of a base from its rows (reference §4–§9).
//!
//! Every number in a sidecar is a function of the base's rows and row-group
//! boundaries, so this one builder serves import, compaction, `index`, and
//! `verify --deep` (which rebuilds in memory and compares byte for byte).

use std::collections::HashMap;

use crate::format::dict::{self, Dict};
use crate::format::p_offsets::{self, POffsets};
use crate::format::po_presence::{self, pair, PoPresence};
use crate::format::presence::{self, Presence};
use crate::format::s_offsets::{self, SOffsets};

/// Column order of a quad row.
pub const COLUMNS: [&str; 4] = ["s", "p", "o", "g"];

/// File-name suffixes appended to the base's path (`data.cottas` + suffix).
pub const SUFFIXES: [&str; 11] = [
    ".s.dict",
    ".p.dict",
    ".o.dict",
    ".g.dict",
    ".s.presence",
    ".p.presence",
    ".o.presence",
    ".g.presence",
    ".p.offsets",
    ".po.presence",
    ".s.offsets",
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sidecars {
    pub dicts: [Dict; 4],
    pub presence: [Presence; 4],
    /// Absent when there are no row groups or no predicates (the writer rule).
    pub p_offsets: Option<POffsets>,
    pub po_presence: Option<PoPresence>,
    pub s_offsets: Option<SOffsets>,
}

impl Sidecars {
    /// `(suffix, bytes)` for every sidecar that exists, in [`SUFFIXES`] order.
    pub fn files(&self) -> Vec<(&'static str, Vec<u8>)> {
        let mut out = Vec::with_capacity(11);
        for (i, d) in self.dicts.iter().enumerate() {
            out.push((SUFFIXES[i], dict::encode(d)));
        }
        for (i, p) in self.presence.iter().enumerate() {
            out.push((SUFFIXES[4 + i], presence::encode(p)));
        }
        if let Some(p) = &self.p_offsets {
            out.push((SUFFIXES[8], p_offsets::encode(p)));
        }
        if let Some(p) = &self.po_presence {
            out.push((SUFFIXES[9], po_presence::encode(p)));
        }
        if let Some(s) = &self.s_offsets {
            out.push((SUFFIXES[10], s_offsets::encode(s)));
        }
        out
    }
}

/// Builds all sidecars. `rows` are in file order; `rg_sizes` are the row
/// counts of the row groups in footer order and must sum to `rows.len()`.
pub fn build<T: AsRef<[u8]>>(rows: &[[T; 4]], rg_sizes: &[usize]) -> Sidecars {
    assert_eq!(rg_sizes.iter().sum::<usize>(), rows.len(), "row-group sizes must cover the rows");
    let num_rgs = rg_sizes.len() as u32;

    // Dictionaries: distinct tokens per column in byte order; id = rank.
    let dicts: [Dict; 4] = std::array::from_fn(|col| {
        let mut toks: Vec<&[u8]> = rows.iter().map(|r| r[col].as_ref()).collect();
        toks.sort_unstable();
        toks.dedup();
        Dict::from_sorted(toks)
    });
    let ids: Vec<HashMap<&[u8], u32>> =
        dicts.iter().map(|d| d.tokens().enumerate().map(|(i, t)| (t, i as u32)).collect()).collect();
    let id = |col: usize, row: &[T; 4]| ids[col][row[col].as_ref()];
    let sizes = dicts.each_ref().map(|d| d.len() as u32);
    let (n_s, n_p, n_o) = (sizes[0], sizes[1], sizes[2]);

    let mut presence: [Presence; 4] = std::array::from_fn(|c| Presence::new(num_rgs, sizes[c]));
    let mut p_cells = vec![Vec::new(); num_rgs as usize * n_p as usize];
    let mut po_groups = vec![Vec::new(); num_rgs as usize];
    let mut ranges = vec![(0u64, 0u64); n_s as usize];
    let mut current: Option<(u32, u64)> = None; // (subject id, start of its run)

    let mut global = 0u64;
    for (rg, &size) in rg_sizes.iter().enumerate() {
        let start = global as usize;
        for (local, row) in rows[start..start + size].iter().enumerate() {
            let rid: [u32; 4] = std::array::from_fn(|c| id(c, row));
            for (c, p) in presence.iter_mut().enumerate() {
                p.set(rg as u32, rid[c]);
            }
            p_cells[rg * n_p as usize + rid[1] as usize].push(local as u32);
            po_groups[rg].push(pair(rid[1], rid[2]));
            // A subject's range is its last contiguous run (the writer's semantics).
            match current {
                Some((s, _)) if s == rid[0] => {}
                Some((s, run_start)) => {
                    ranges[s as usize] = (run_start, global);
                    current = Some((rid[0], global));
                }
                None => current = Some((rid[0], global)),
            }
            global += 1;
        }
    }
    if let Some((s, run_start)) = current {
        ranges[s as usize] = (run_start, global);
    }
    for g in &mut po_groups {
        g.sort_unstable();
        g.dedup();
    }

    let p_offsets = (num_rgs > 0 && n_p > 0).then(|| POffsets::from_cells(num_rgs, n_p, &p_cells));
    let po_presence =
        (num_rgs > 0 && n_p > 0 && n_o > 0).then(|| PoPresence::from_groups(n_p, n_o, &po_groups));
    let s_offsets =
        (num_rgs > 0 && n_s > 0).then_some(SOffsets { num_rows_total: rows.len() as u32, ranges });
    Sidecars { dicts, presence, p_offsets, po_presence, s_offsets }
}
