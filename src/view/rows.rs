//! Base ⊕ delta as raw rows, for writing a new version: compaction's side of
//! the one merge. [`View`](super::View) answers readers with terms from the
//! in-memory [`Overlay`](super::overlay::Overlay); this answers a writer with
//! the cells of the next version, under the same replay rules, in memory
//! bounded by a budget whatever the size of the log.
//!
//! [`NetDelta`] reduces the visible batches to their net effect: every quad
//! an add or remove names, with the last operation on it after its graph's
//! last clear, sorted in SPOG order by the external sort (so a delta of
//! millions of quads spills to disk instead of living in hash maps: the
//! overlay held 1.1 KB per added quad). [`RowMerge`] then walks the sorted
//! base rows and the net records together: an added quad is emitted in its
//! place (once, when the base has it too), a removed quad and every row of
//! a cleared graph are left out. A base that is not in SPOG order is sorted
//! first by the caller.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use crate::format::deltalog::{BatchFrame, Entry};
use crate::format::term::DEFAULT_GRAPH;
use crate::store::log::Visibility;
use crate::store::sort::{decode_key, encode_key, write_run_file, RunReader, Sorter};

use super::overlay::{canonical_token, graph_key, key_of};

/// One row: s, p, o, g cells as the base stores them.
pub type Row<'r> = [&'r [u8]; 4];

/// The last byte of a net record: the quad is in the new version, or not.
const ADDED: u8 = b'+';
const REMOVED: u8 = b'-';

/// The visible batches' net effect on the base, as a sorted run file.
pub struct NetDelta {
    /// Canonical tokens of the graphs a visible batch cleared or dropped:
    /// their base rows are all left out (those added back are net adds).
    cleared: HashSet<String>,
    /// Canonical tokens of every graph a net record names.
    touched: HashSet<String>,
    /// Net records: a row key (`sort::encode_key`, canonical tokens) and
    /// [`ADDED`] or [`REMOVED`], ascending.
    run: PathBuf,
    /// How many net records add a quad.
    pub adds: u64,
}

impl NetDelta {
    /// Reduces the batches `seen` lets through, holding at most about
    /// `budget` bytes of keys in memory (the rest spills into `spill`).
    pub fn build(
        batches: &[BatchFrame],
        seen: Visibility,
        spill: &Path,
        budget: usize,
    ) -> io::Result<NetDelta> {
        let mut sorter = Sorter::new(budget, spill);
        // The sequence number of each graph's last clear or drop.
        let mut clears: HashMap<String, u64> = HashMap::new();
        let mut key = Vec::new();
        let mut seq = 0u64;
        let visible = batches.iter().filter(|f| seen.sees(f));
        for e in visible.flat_map(|f| &f.batch.entries) {
            seq += 1;
            let op = match e {
                Entry::Add(q) | Entry::Remove(q) => {
                    (key_of(q), if matches!(e, Entry::Add(_)) { ADDED } else { REMOVED })
                }
                Entry::Clear(g) => {
                    clears.insert(graph_key(g), seq);
                    continue;
                }
                Entry::Drop(g) => {
                    clears.insert(graph_key(&Some(g.clone())), seq);
                    continue;
                }
                Entry::Create(_) => continue,
            };
            key.clear();
            encode_key(&mut key, std::array::from_fn(|c| op.0[c].as_bytes()));
            key.extend_from_slice(&seq.to_be_bytes());
            key.push(op.1);
            sorter.push_key(&key)?;
        }
        let run = spill.join("net-delta");
        let mut touched = HashSet::new();
        let mut adds = 0u64;
        write_run_file(&run, |put| {
            // Keys of one quad are adjacent, by sequence number: the last one
            // before the next quad decides, unless its graph was cleared after.
            let mut last: Option<Vec<u8>> = None;
            let mut decide = |k: &[u8], put: &mut dyn FnMut(&[u8]) -> io::Result<()>| -> io::Result<()> {
                let (quad, seq, op) = split_record(k);
                let g = String::from_utf8_lossy(&decode_key(quad)[3]).into_owned();
                if clears.get(&g).is_some_and(|&c| c > seq) {
                    return Ok(());
                }
                adds += u64::from(op == ADDED);
                let mut record = quad.to_vec();
                record.push(op);
                touched.insert(g);
                put(&record)
            };
            sorter.finish(|k| {
                if let Some(prev) = &last {
                    if split_record(prev).0 != split_record(k).0 {
                        decide(prev, &mut *put)?;
                    }
                }
                let prev = last.get_or_insert_with(Vec::new);
                prev.clear();
                prev.extend_from_slice(k);
                Ok(())
            })?;
            match last {
                Some(prev) => decide(&prev, put),
                None => Ok(()),
            }
        })?;
        touched.extend(clears.keys().cloned());
        Ok(NetDelta { cleared: clears.into_keys().collect(), touched, run, adds })
    }
}

/// A sorted key of [`NetDelta::build`]: the quad's key, its sequence number
/// and operation.
fn split_record(k: &[u8]) -> (&[u8], u64, u8) {
    let (quad, tail) = k.split_at(k.len() - 9);
    (quad, u64::from_be_bytes(tail[..8].try_into().expect("8 bytes")), tail[8])
}

pub struct RowMerge<'a> {
    net: &'a NetDelta,
    records: RunReader,
    /// The current net record (quad key then operation), if any is left.
    has_record: bool,
    graphs: GraphKeys,
    row_key: Vec<u8>,
    canonical: [String; 3],
}

impl<'a> RowMerge<'a> {
    pub fn new(net: &'a NetDelta) -> io::Result<Self> {
        let mut records = RunReader::open(&net.run)?;
        let has_record = records.advance()?;
        let (graphs, row_key, canonical) = Default::default();
        Ok(RowMerge { net, records, has_record, graphs, row_key, canonical })
    }

    /// Feeds the next base row, in SPOG order: emits every added quad
    /// before it, then the row unless the delta removes it or cleared its
    /// graph (an added quad equal to the row is emitted once).
    pub fn push_base<E: From<io::Error>>(
        &mut self,
        row: Row,
        mut emit: impl FnMut(Row) -> Result<(), E>,
    ) -> Result<(), E> {
        let g = self.graphs.canonical(row[3]);
        let touched = self.net.touched.contains(g);
        let cleared = touched && self.net.cleared.contains(g);
        self.row_key.clear();
        if touched {
            // Another producer's cells may render a literal differently:
            // the log's quads are compared in the canonical rendering.
            for (c, cell) in self.canonical.iter_mut().zip(row) {
                *c = canonical_token(cell).unwrap_or_default();
            }
            let t = &self.canonical;
            encode_key(&mut self.row_key, [t[0].as_bytes(), t[1].as_bytes(), t[2].as_bytes(), g.as_bytes()]);
        } else {
            encode_key(&mut self.row_key, row);
        }
        let mut same = None;
        while self.has_record {
            let (quad, op) = self.record();
            match quad.cmp(self.row_key.as_slice()) {
                std::cmp::Ordering::Less if op == ADDED => emit_key(quad, &mut emit)?,
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => same = Some(op),
                std::cmp::Ordering::Greater => break,
            }
            self.has_record = self.records.advance()?;
            if same.is_some() {
                break;
            }
        }
        match same {
            Some(op) if op == ADDED => emit(row),
            Some(_) => Ok(()),
            None if cleared => Ok(()),
            None => emit(row),
        }
    }

    /// Emits the added quads after the last base row.
    pub fn finish<E: From<io::Error>>(mut self, mut emit: impl FnMut(Row) -> Result<(), E>) -> Result<(), E> {
        while self.has_record {
            let (quad, op) = self.record();
            if op == ADDED {
                emit_key(quad, &mut emit)?;
            }
            self.has_record = self.records.advance()?;
        }
        Ok(())
    }

    fn record(&self) -> (&[u8], u8) {
        let k = self.records.key();
        (&k[..k.len() - 1], k[k.len() - 1])
    }
}

fn emit_key<E>(quad: &[u8], emit: &mut impl FnMut(Row) -> Result<(), E>) -> Result<(), E> {
    let cols = decode_key(quad);
    emit(std::array::from_fn(|c| cols[c].as_slice()))
}

/// The canonical graph token of each distinct g cell, so a row's graph is
/// rendered once per distinct cell (a LUBM-like store has hundreds of graphs),
/// not once per row.
#[derive(Default)]
struct GraphKeys {
    seen: HashMap<Vec<u8>, String>,
}

impl GraphKeys {
    fn canonical(&mut self, cell: &[u8]) -> &str {
        if !self.seen.contains_key(cell) {
            let g = if cell == DEFAULT_GRAPH.as_bytes() {
                DEFAULT_GRAPH.to_string()
            } else {
                canonical_token(cell).unwrap_or_default()
            };
            self.seen.insert(cell.to_vec(), g);
        }
        &self.seen[cell]
    }
}
