//! Builds the 11 sidecars of a base from its rows (reference §4–§9).
//!
//! Every number in a sidecar is a function of the base's rows and row-group
//! boundaries. [`build`] computes them in memory: the definition, and the
//! oracle the tests hold the streaming writer ([`stream`], through
//! [`derive`] for an existing base) to. Import, compaction, `index`, repair
//! and `verify` all use the streaming writer.

#[cfg(feature = "full")]
pub mod checked;
#[cfg(feature = "full")]
pub mod derive;
#[cfg(feature = "full")]
pub mod mapped;
#[cfg(feature = "full")]
pub mod rebuild;
#[cfg(feature = "full")]
pub mod stream;

use std::collections::HashMap;

use crate::format::dict::{self, Dict};
use crate::format::p_offsets::{self, POffsets};
use crate::format::po_presence::{self, pair, PoPresence};
use crate::format::presence::{self, Presence};
use crate::format::s_offsets::{self, SOffsets};

/// Column order of a quad row.
pub const COLUMNS: [&str; 4] = ["s", "p", "o", "g"];

/// Where the sidecar with `suffix` of the base at `base` lives: the base's
/// own path with the suffix appended (`data.cottas.s.dict`).
#[cfg(feature = "full")]
pub fn sidecar_path(base: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(suffix);
    std::path::PathBuf::from(s)
}

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
        (0..SUFFIXES.len()).filter_map(|i| Some((SUFFIXES[i], self.file(i)?))).collect()
    }

    /// The bytes of sidecar `SUFFIXES[i]`, if it exists.
    pub fn file(&self, i: usize) -> Option<Vec<u8>> {
        Some(match i {
            0..=3 => dict::encode(&self.dicts[i]),
            4..=7 => presence::encode(&self.presence[i - 4]),
            8 => p_offsets::encode(self.p_offsets.as_ref()?),
            9 => po_presence::encode(self.po_presence.as_ref()?),
            10 => s_offsets::encode(self.s_offsets.as_ref()?),
            _ => return None,
        })
    }
}

/// Accumulates the id-based sidecars row group by row group, once the four
/// dictionaries are known.
pub struct Accumulator<'d> {
    ids: Vec<HashMap<&'d [u8], u32>>,
    num_rgs: u32,
    n_p: u32,
    presence: [Presence; 4],
    p_cells: Vec<Vec<u32>>,
    po_groups: Vec<Vec<u64>>,
    ranges: Vec<(u64, u64)>,
    /// The subject whose run is open, and the global row where it began.
    current: Option<(u32, u64)>,
    global: u64,
    rg: usize,
}

impl<'d> Accumulator<'d> {
    pub fn new(dicts: &'d [Dict; 4], num_rgs: u32) -> Self {
        Self::with_token_maps(dicts, num_rgs, true)
    }

    /// `token_maps: false` skips the token → id maps, for callers that only
    /// use [`Accumulator::add_row_group_ids`].
    pub fn with_token_maps(dicts: &'d [Dict; 4], num_rgs: u32, token_maps: bool) -> Self {
        let ids = dicts
            .iter()
            .map(|d| {
                if token_maps {
                    d.tokens().enumerate().map(|(i, t)| (t, i as u32)).collect()
                } else {
                    HashMap::new()
                }
            })
            .collect();
        let sizes = dicts.each_ref().map(|d| d.len() as u32);
        Accumulator {
            ids,
            num_rgs,
            n_p: sizes[1],
            presence: std::array::from_fn(|c| Presence::new(num_rgs, sizes[c])),
            p_cells: vec![Vec::new(); num_rgs as usize * sizes[1] as usize],
            po_groups: vec![Vec::new(); num_rgs as usize],
            ranges: vec![(0, 0); sizes[0] as usize],
            current: None,
            global: 0,
            rg: 0,
        }
    }

    /// Adds the next row group given as dictionary ids (s, p, o, g).
    pub fn add_row_group_ids(&mut self, rows: &[[u32; 4]]) {
        let rg = self.rg;
        for (local, rid) in rows.iter().enumerate() {
            self.add_row(rg, local, *rid);
        }
        let g = &mut self.po_groups[rg];
        g.sort_unstable();
        g.dedup();
        self.rg += 1;
    }

    fn add_row(&mut self, rg: usize, local: usize, rid: [u32; 4]) {
        for (c, p) in self.presence.iter_mut().enumerate() {
            p.set(rg as u32, rid[c]);
        }
        self.p_cells[rg * self.n_p as usize + rid[1] as usize].push(local as u32);
        self.po_groups[rg].push(pair(rid[1], rid[2]));
        // A subject's range is its last contiguous run (the writer's semantics).
        match self.current {
            Some((s, _)) if s == rid[0] => {}
            Some((s, run_start)) => {
                self.ranges[s as usize] = (run_start, self.global);
                self.current = Some((rid[0], self.global));
            }
            None => self.current = Some((rid[0], self.global)),
        }
        self.global += 1;
    }

    /// Adds the next row group. Every token must be in its column's dictionary.
    pub fn add_row_group<T: AsRef<[u8]>>(&mut self, columns: [&[T]; 4]) {
        let rg = self.rg;
        let [cs, cp, co, cg] = columns;
        let cells = cs.iter().zip(cp).zip(co.iter().zip(cg));
        for (local, ((s, p), (o, g))) in cells.enumerate() {
            let cell = [s.as_ref(), p.as_ref(), o.as_ref(), g.as_ref()];
            let rid: [u32; 4] = std::array::from_fn(|c| self.ids[c][cell[c]]);
            self.add_row(rg, local, rid);
        }
        let g = &mut self.po_groups[rg];
        g.sort_unstable();
        g.dedup();
        self.rg += 1;
    }

    /// The id-based sidecars; join them with the dictionaries via [`Sidecars::new`].
    pub fn finish(mut self) -> Parts {
        if let Some((s, run_start)) = self.current {
            self.ranges[s as usize] = (run_start, self.global);
        }
        let (num_rgs, n_p) = (self.num_rgs, self.n_p);
        let (n_s, n_o) = (self.presence[0].num_tokens, self.presence[2].num_tokens);
        let p_offsets = (num_rgs > 0 && n_p > 0).then(|| POffsets::from_cells(num_rgs, n_p, &self.p_cells));
        let po_presence =
            (num_rgs > 0 && n_p > 0 && n_o > 0).then(|| PoPresence::from_groups(n_p, n_o, &self.po_groups));
        let s_offsets = (num_rgs > 0 && n_s > 0)
            .then_some(SOffsets { num_rows_total: self.global as u32, ranges: self.ranges });
        Parts { presence: self.presence, p_offsets, po_presence, s_offsets }
    }
}

/// Everything but the dictionaries (which the accumulator borrows).
pub struct Parts {
    pub presence: [Presence; 4],
    pub p_offsets: Option<POffsets>,
    pub po_presence: Option<PoPresence>,
    pub s_offsets: Option<SOffsets>,
}

impl Sidecars {
    pub fn new(dicts: [Dict; 4], parts: Parts) -> Self {
        let Parts { presence, p_offsets, po_presence, s_offsets } = parts;
        Sidecars { dicts, presence, p_offsets, po_presence, s_offsets }
    }
}

/// The canonical dictionary of a set of distinct tokens.
pub fn dict_of<T: AsRef<[u8]>>(mut tokens: Vec<T>) -> Dict {
    tokens.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
    tokens.dedup_by(|a, b| a.as_ref() == b.as_ref());
    Dict::from_sorted(tokens.iter().map(|t| t.as_ref()))
}

/// Builds all sidecars. `rows` are in file order; `rg_sizes` are the row
/// counts of the row groups in footer order and must sum to `rows.len()`.
pub fn build<T: AsRef<[u8]>>(rows: &[[T; 4]], rg_sizes: &[usize]) -> Sidecars {
    assert_eq!(rg_sizes.iter().sum::<usize>(), rows.len(), "row-group sizes must cover the rows");
    let dicts: [Dict; 4] = std::array::from_fn(|col| dict_of(rows.iter().map(|r| r[col].as_ref()).collect()));
    let parts = {
        let mut acc = Accumulator::new(&dicts, rg_sizes.len() as u32);
        let mut start = 0;
        for &size in rg_sizes {
            let cols: [Vec<&[u8]>; 4] =
                std::array::from_fn(|c| rows[start..start + size].iter().map(|r| r[c].as_ref()).collect());
            acc.add_row_group([&cols[0][..], &cols[1][..], &cols[2][..], &cols[3][..]]);
            start += size;
        }
        acc.finish()
    };
    Sidecars::new(dicts, parts)
}
