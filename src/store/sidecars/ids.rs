//! Dictionary ids for the sidecars, gathered while sorted rows stream past,
//! so import never decodes the base it just wrote.
//!
//! Rows arrive in SPOG order, so subjects appear in rank order and their
//! temporary id is already their rank. Predicates, objects and graphs get
//! temporary ids by first appearance, remapped to ranks once all are known.
//! The per-row ids go to a temp file (16 bytes a row), read back one row
//! group at a time.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::format::dict::Dict;
use crate::store::sidecars::{Accumulator, Parts};

pub struct IdCollector {
    subjects: Vec<u8>,
    subject_ends: Vec<usize>,
    others: [rustc_hash::FxHashMap<Box<[u8]>, u32>; 3],
    stream: BufWriter<File>,
    path: PathBuf,
    rows: u64,
}

impl IdCollector {
    pub fn new(dir: &Path) -> io::Result<Self> {
        let path = dir.join("row-ids");
        Ok(IdCollector {
            subjects: Vec::new(),
            subject_ends: Vec::new(),
            others: Default::default(),
            stream: BufWriter::with_capacity(1 << 20, File::create(&path)?),
            path,
            rows: 0,
        })
    }

    fn last_subject(&self) -> Option<&[u8]> {
        let end = *self.subject_ends.last()?;
        let start =
            if self.subject_ends.len() > 1 { self.subject_ends[self.subject_ends.len() - 2] } else { 0 };
        Some(&self.subjects[start..end])
    }

    /// The next row in SPOG order.
    pub fn push(&mut self, row: [&[u8]; 4]) -> io::Result<()> {
        if self.last_subject() != Some(row[0]) {
            self.subjects.extend_from_slice(row[0]);
            self.subject_ends.push(self.subjects.len());
        }
        let mut ids = [(self.subject_ends.len() - 1) as u32, 0, 0, 0];
        for c in 0..3 {
            let map = &mut self.others[c];
            let next = map.len() as u32;
            ids[c + 1] = match map.get(row[c + 1]) {
                Some(&id) => id,
                None => {
                    map.insert(row[c + 1].into(), next);
                    next
                }
            };
        }
        for id in ids {
            self.stream.write_all(&id.to_le_bytes())?;
        }
        self.rows += 1;
        Ok(())
    }

    /// Builds the dictionaries, then replays the id stream row group by row
    /// group into the sidecar accumulator.
    pub fn finish(mut self, rg_sizes: &[usize]) -> io::Result<([Dict; 4], Parts)> {
        self.stream.flush()?;
        drop(self.stream);
        let mut s = Dict::default();
        s.data = self.subjects;
        s.ends = self.subject_ends;
        s.ids = (0..s.ends.len() as u32).collect();
        let mut ranks: Vec<Vec<u32>> = Vec::with_capacity(3);
        let mut dicts: Vec<Dict> = vec![s];
        for map in self.others {
            let mut toks: Vec<(Box<[u8]>, u32)> = map.into_iter().collect();
            toks.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let mut rank = vec![0u32; toks.len()];
            for (r, (_, tmp)) in toks.iter().enumerate() {
                rank[*tmp as usize] = r as u32;
            }
            ranks.push(rank);
            dicts.push(Dict::from_sorted(toks.iter().map(|t| &t.0[..])));
        }
        let dicts: [Dict; 4] = dicts.try_into().map_err(|_| io::Error::other("four dictionaries"))?;
        let parts = {
            let mut acc = Accumulator::with_token_maps(&dicts, rg_sizes.len() as u32, false);
            let mut r = BufReader::with_capacity(1 << 20, File::open(&self.path)?);
            let mut buf = vec![0u8; 16];
            for &size in rg_sizes {
                let mut rows = Vec::with_capacity(size);
                for _ in 0..size {
                    r.read_exact(&mut buf)?;
                    let v: [u32; 4] = std::array::from_fn(|c| {
                        u32::from_le_bytes(buf[4 * c..4 * c + 4].try_into().unwrap_or([0; 4]))
                    });
                    rows.push([
                        v[0],
                        ranks[0][v[1] as usize],
                        ranks[1][v[2] as usize],
                        ranks[2][v[3] as usize],
                    ]);
                }
                acc.add_row_group_ids(&rows);
            }
            acc.finish()
        };
        std::fs::remove_file(&self.path)?;
        Ok((dicts, parts))
    }
}
