//! The 11 sidecars of a new version, written while its sorted rows stream
//! past, in memory bounded by a budget whatever the store's size.
//!
//! The sidecars of a 100M-quad store are about 6 GB; their dictionaries alone
//! are several times any sensible memory limit. So nothing here holds a
//! whole sidecar, or a whole dictionary:
//!
//! - Rows in SPOG order ([`Order::Spog`]: import, compaction, a base this
//!   program wrote) bring subjects sorted: their dictionary and `.s.offsets`
//!   are written as they go, and a subject's id is its rank. Rows in any
//!   other order ([`Order::Any`]: a base another producer wrote) intern
//!   subjects like the other columns, and `.s.offsets` is laid out by rank
//!   once the dictionaries are known ([`SubjectRuns`]).
//! - Predicates, objects and graphs get temporary ids from a hash map per
//!   column. When the maps outgrow the budget, the largest is sorted and
//!   spilled as a run, and its column starts a new *epoch* of temporary ids.
//!   A token seen in two epochs has two temporary ids; both get its rank
//!   when the runs are merged into the dictionary (an external sort of
//!   distinct tokens, as the rows are sorted).
//! - Each row's four ids go to a temp file. Once the dictionaries are known,
//!   it is replayed row group by row group; a row only uses its column's
//!   current epoch, so only that epoch's temporary id → rank table is held.
//! - `.presence`, `.p.offsets` and `.po.presence` are laid out row group by
//!   row group, so the replay writes them front to back (their offset
//!   tables, whose sizes are known by then, are written in place).
//!
//! Every layout comes from the `format` modules' header encoders; the output
//! is byte-identical to [`super::build`] over the same rows (property-tested).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use crate::format::po_presence::pair;
use crate::format::{dict, p_offsets, po_presence, presence, s_offsets};
use crate::store::sidecars::SUFFIXES;
use crate::store::sort::{shared_prefix, Tournament};

const BUF: usize = 1 << 20;

/// What a hash map entry costs beyond its token's bytes: the boxed slice's
/// pointer and length, the allocation's own overhead, the id, and the
/// table's slack.
const ENTRY_OVERHEAD: usize = 64;

/// The number of named graphs, the dictionary sizes (s, p, o, g), and in
/// [`Mode::Compare`] every sidecar that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    pub graphs: u64,
    pub tokens: [u32; 4],
    pub mismatches: Vec<Mismatch>,
}

/// Collects ids as rows arrive; [`SidecarWriter::finish`] writes the files.
pub struct SidecarWriter {
    /// The base whose sidecars these are: each goes to its path plus suffix.
    base: PathBuf,
    /// Where runs, epoch tables and the id stream go (the caller removes it).
    spill: PathBuf,
    /// Bytes the temporary-id maps may hold together.
    budget: usize,
    mode: Mode,
    subjects: Subjects,
    others: [Interner; 3],
    ids: BufWriter<File>,
    ids_path: PathBuf,
    rows: u64,
}

/// The order rows arrive in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Strictly increasing SPOG order; a subject out of order is an
    /// [`OutOfOrder`] error from [`SidecarWriter::push`].
    Spog,
    /// Any order, duplicates included.
    Any,
}

/// A row whose subject sorts before the previous row's, given to a writer
/// that expects [`Order::Spog`]: the caller may start again with [`Order::Any`].
#[derive(Debug)]
pub struct OutOfOrder {
    pub row: u64,
}

impl std::fmt::Display for OutOfOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "row {}: its subject sorts before the previous row's (rows are not in SPOG order)",
            self.row
        )
    }
}

impl std::error::Error for OutOfOrder {}

impl OutOfOrder {
    /// Whether `e` is this error.
    pub fn is(e: &io::Error) -> bool {
        e.get_ref().is_some_and(|inner| inner.is::<OutOfOrder>())
    }
}

/// The subject column: ranked as rows pass (SPOG order), or interned.
enum Subjects {
    Ranked(SubjectColumn),
    Interned(Interner),
}

impl SidecarWriter {
    /// `budget`: bytes the temporary-id maps may hold before one is spilled.
    /// Rows must come in SPOG order.
    /// The sidecars go to the version directory `dir`.
    pub fn new(dir: &Path, spill: &Path, budget: usize, mode: Mode) -> io::Result<Self> {
        let base = dir.join(crate::store::versions::layout::BASE);
        Self::with_order(&base, spill, budget, mode, Order::Spog)
    }

    /// As [`SidecarWriter::new`], for rows in `order`, the sidecars of the
    /// base at `base` (each at its path plus suffix, whatever its name).
    pub fn with_order(
        base: &Path,
        spill: &Path,
        budget: usize,
        mode: Mode,
        order: Order,
    ) -> io::Result<Self> {
        let ids_path = spill.join("row-ids");
        let subjects = match order {
            Order::Spog => Subjects::Ranked(SubjectColumn::new(base, spill, mode)?),
            Order::Any => Subjects::Interned(Interner::new(spill, 0)),
        };
        Ok(SidecarWriter {
            base: base.to_path_buf(),
            spill: spill.to_path_buf(),
            budget: budget.max(1 << 16),
            mode,
            subjects,
            others: [1, 2, 3].map(|c| Interner::new(spill, c)),
            ids: BufWriter::with_capacity(BUF, File::create(&ids_path)?),
            ids_path,
            rows: 0,
        })
    }

    /// The next row, in the writer's [`Order`].
    pub fn push(&mut self, row: [&[u8]; 4]) -> io::Result<()> {
        if self.rows >= u64::from(u32::MAX) {
            // .s.offsets counts rows in a u32 (reference §9).
            return Err(io::Error::other(
                "a version holds at most 2^32 - 1 rows (.s.offsets counts them in 32 bits)",
            ));
        }
        let subject = match &mut self.subjects {
            Subjects::Ranked(column) => column.push(row[0], self.rows)?,
            Subjects::Interned(interner) => interner.id(row[0]),
        };
        let mut ids = [subject, 0, 0, 0];
        for c in 0..3 {
            ids[c + 1] = self.others[c].id(row[c + 1]);
        }
        let mut bytes = [0u8; 16];
        for (c, id) in ids.iter().enumerate() {
            bytes[4 * c..4 * c + 4].copy_from_slice(&id.to_le_bytes());
        }
        self.ids.write_all(&bytes)?;
        self.rows += 1;
        self.spill_if_over_budget()
    }

    /// Spills the largest map once the maps together hold more than the
    /// budget; the next row starts that column's new epoch.
    fn spill_if_over_budget(&mut self) -> io::Result<()> {
        let subjects = match &self.subjects {
            Subjects::Interned(interner) => interner.held,
            Subjects::Ranked(_) => 0,
        };
        let held: usize = subjects + self.others.iter().map(|i| i.held).sum::<usize>();
        if held <= self.budget {
            return Ok(());
        }
        let rows = self.rows;
        let mut interners: Vec<&mut Interner> = self.others.iter_mut().collect();
        if let Subjects::Interned(interner) = &mut self.subjects {
            interners.push(interner);
        }
        match interners.into_iter().max_by_key(|i| i.held) {
            Some(largest) => largest.spill(rows),
            None => Ok(()),
        }
    }

    /// Writes the 11 sidecars (each fsynced) for row groups of `rg_sizes`
    /// rows, which must add up to the rows pushed.
    pub fn finish(self, rg_sizes: &[usize]) -> io::Result<Built> {
        let SidecarWriter { base, spill, subjects, others, ids, ids_path, rows, mode, budget } = self;
        let self_budget = budget;
        if rg_sizes.iter().map(|&n| n as u64).sum::<u64>() != rows {
            return Err(io::Error::other("row-group sizes do not add up to the rows"));
        }
        drop(ids.into_inner().map_err(|e| e.into_error())?);
        let path = |i: usize| super::sidecar_path(&base, SUFFIXES[i]);
        let mut mismatches = Vec::new();
        // The four dictionaries are independent: each is written on a thread
        // of its own (sorting the distinct objects and writing the files of
        // one column after another was the last tenth of an import, on one
        // core).
        let (subjects, others) = std::thread::scope(|scope| {
            let (s_path, s_spill) = (path(0), &spill);
            let subjects = scope.spawn(move || {
                let mut found = Vec::new();
                let (n, epochs) = match subjects {
                    Subjects::Ranked(column) => {
                        (column.finish(&s_path, rows, !rg_sizes.is_empty(), mode, &mut found)?, None)
                    }
                    Subjects::Interned(interner) => {
                        let merged = interner.finish(&s_path, s_spill, mode, &mut found)?;
                        (merged.tokens, Some(merged.epochs))
                    }
                };
                Ok((n, epochs, found))
            });
            let others = others.map(|interner| {
                let (c_path, spill) = (path(interner.column), &spill);
                scope.spawn(move || {
                    let mut found = Vec::new();
                    let merged = interner.finish(&c_path, spill, mode, &mut found)?;
                    Ok((merged, found))
                })
            });
            (joined(subjects), others.map(joined))
        });
        let (n_s, subject_ranks, found) = subjects?;
        mismatches.extend(found);
        let mut tokens = [n_s, 0, 0, 0];
        let mut graphs = 0;
        let mut ranks = Vec::with_capacity(3);
        for (c, finished) in others.into_iter().enumerate() {
            let (merged, found) = finished?;
            mismatches.extend(found);
            tokens[c + 1] = merged.tokens;
            if c == 2 {
                graphs = merged.named_graphs;
            }
            ranks.push(merged.epochs);
        }
        let ranks: [Epochs; 3] = ranks.try_into().map_err(|_| io::Error::other("three columns"))?;
        let runs = match subject_ranks {
            Some(epochs) => Some((epochs, SubjectRuns::create(&spill)?)),
            None => None,
        };
        let runs = replay(&base, &ids_path, rg_sizes, tokens, ranks, runs, mode, &mut mismatches)?;
        std::fs::remove_file(&ids_path)?;
        if let Some(runs) = runs {
            let any_row_groups = !rg_sizes.is_empty();
            mismatches.extend(runs.finish(&path(10), n_s, rows, any_row_groups, self_budget, mode)?);
        }
        Ok(Built { graphs, tokens, mismatches })
    }
}

/// A thread's result when writing sidecars; its panic as an error.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, io::Result<T>>) -> io::Result<T> {
    handle.join().unwrap_or_else(|_| Err(io::Error::other("a thread writing sidecars panicked")))
}

/// Reads the id stream back a row group at a time, turns temporary ids into
/// ranks, and writes the id-based sidecars. With interned subjects (`runs`),
/// their ranks too, and each subject's runs are noted for `.s.offsets`.
#[allow(clippy::too_many_arguments)] // one call site, each argument a different thing
fn replay(
    base: &Path,
    ids_path: &Path,
    rg_sizes: &[usize],
    tokens: [u32; 4],
    mut ranks: [Epochs; 3],
    mut runs: Option<(Epochs, SubjectRuns)>,
    mode: Mode,
    mismatches: &mut Vec<Mismatch>,
) -> io::Result<Option<SubjectRuns>> {
    let mut parts = PartsWriter::create(base, rg_sizes.len() as u32, tokens, mode)?;
    let mut stream = BufReader::with_capacity(BUF, File::open(ids_path)?);
    let mut row = 0u64;
    let mut rows = Vec::new();
    let mut bytes = [0u8; 16];
    for &size in rg_sizes {
        rows.clear();
        for _ in 0..size {
            stream.read_exact(&mut bytes)?;
            let tmp: [u32; 4] = std::array::from_fn(|c| {
                u32::from_le_bytes([bytes[4 * c], bytes[4 * c + 1], bytes[4 * c + 2], bytes[4 * c + 3]])
            });
            let mut ids = [tmp[0], 0, 0, 0];
            if let Some((subject_ranks, noted)) = &mut runs {
                ids[0] = subject_ranks.rank(row, tmp[0])?;
                noted.see(ids[0], row)?;
            }
            for c in 0..3 {
                ids[c + 1] = ranks[c].rank(row, tmp[c + 1])?;
            }
            rows.push(ids);
            row += 1;
        }
        parts.add_row_group(&rows)?;
    }
    mismatches.extend(parts.finish()?);
    Ok(runs.map(|(_, noted)| noted))
}

/// `.s.offsets` for rows in any order. A subject's range is its last
/// contiguous run (the writer's rule, reference §9), so runs are appended to
/// a temp file as they close, in row order; the file is then read once per
/// slice of ranks whose table fits the budget, a later run of a subject
/// overwriting an earlier one, and each slice is appended to the output.
struct SubjectRuns {
    runs: BufWriter<File>,
    path: PathBuf,
    /// The open run: its subject's rank and first row.
    open: Option<(u32, u64)>,
}

/// Bytes of one closed run in the temp file: rank, start, end.
const RUN_LEN: usize = 20;

impl SubjectRuns {
    fn create(spill: &Path) -> io::Result<Self> {
        let path = spill.join("subject-runs");
        Ok(SubjectRuns { runs: BufWriter::with_capacity(BUF, scratch(&path)?), path, open: None })
    }

    /// Row `row` has the subject of rank `rank`.
    fn see(&mut self, rank: u32, row: u64) -> io::Result<()> {
        match self.open {
            Some((open, _)) if open == rank => Ok(()),
            Some((open, start)) => {
                self.open = Some((rank, row));
                self.close(open, start, row)
            }
            None => {
                self.open = Some((rank, row));
                Ok(())
            }
        }
    }

    fn close(&mut self, rank: u32, start: u64, end: u64) -> io::Result<()> {
        let mut run = [0u8; RUN_LEN];
        run[..4].copy_from_slice(&rank.to_le_bytes());
        run[4..12].copy_from_slice(&start.to_le_bytes());
        run[12..].copy_from_slice(&end.to_le_bytes());
        self.runs.write_all(&run)
    }

    /// Writes (or compares) `.s.offsets` at `path`; it does not exist
    /// without row groups or subjects (the writer rule).
    fn finish(
        mut self,
        path: &Path,
        n_s: u32,
        rows: u64,
        any_row_groups: bool,
        budget: usize,
        mode: Mode,
    ) -> io::Result<Option<Mismatch>> {
        if let Some((open, start)) = self.open.take() {
            self.close(open, start, rows)?;
        }
        let mut runs = self.runs.into_inner().map_err(|e| e.into_error())?;
        let found = if !any_row_groups || n_s == 0 {
            Out::absent(path, mode)?
        } else {
            let mut out = Out::create(path, mode, 0)?;
            out.append(&s_offsets::encode_header(n_s, rows as u32))?;
            let slice = (budget / 16).clamp(1 << 12, 1 << 26) as u32;
            let mut table = Vec::new();
            let mut first = 0u32;
            while first < n_s {
                let last = first.saturating_add(slice).min(n_s);
                table.clear();
                table.resize(16 * (last - first) as usize, 0u8);
                runs.seek(SeekFrom::Start(0))?;
                let mut reader = BufReader::with_capacity(BUF, &mut runs);
                let mut run = [0u8; RUN_LEN];
                loop {
                    match reader.read_exact(&mut run) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                        Err(e) => return Err(e),
                    }
                    let rank = u32::from_le_bytes([run[0], run[1], run[2], run[3]]);
                    if (first..last).contains(&rank) {
                        let at = 16 * (rank - first) as usize;
                        table[at..at + 16].copy_from_slice(&run[4..]);
                    }
                }
                out.append(&table)?;
                first = last;
            }
            out.finish()?
        };
        drop(runs);
        std::fs::remove_file(&self.path)?;
        Ok(found)
    }
}

/// What [`SidecarWriter`] does with the bytes it produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Writes new files (import, compaction).
    Write,
    /// Compares them with the files already there (verify): the same code
    /// that writes a version checks one, in the same bounded memory.
    Compare,
}

/// Where a sidecar differs from the one the rows give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub path: PathBuf,
    /// The first differing byte; the shorter length when one is a prefix.
    pub offset: u64,
    /// `None`: the file does not exist.
    pub have_len: Option<u64>,
    pub want_len: u64,
}

/// One sidecar file, written or compared. Bytes are appended at a cursor
/// (buffered) or put at an offset (offset tables whose slots are known only
/// row group by row group).
struct Out {
    path: PathBuf,
    file: Option<File>,
    cursor: u64,
    /// The furthest byte produced.
    end: u64,
    sink: Sink,
}

enum Sink {
    Write(BufWriter<File>),
    Compare {
        reader: Option<BufReader<File>>,
        have_len: Option<u64>,
        first_diff: Option<u64>,
        scratch: Vec<u8>,
    },
}

impl Out {
    /// `cursor`: where appended bytes start.
    fn create(path: &Path, mode: Mode, cursor: u64) -> io::Result<Self> {
        let (file, sink) = match mode {
            Mode::Write => {
                let file = File::create(path)?;
                let mut appender = file.try_clone()?;
                appender.seek(SeekFrom::Start(cursor))?;
                (Some(file), Sink::Write(BufWriter::with_capacity(BUF, appender)))
            }
            Mode::Compare => match File::open(path) {
                Ok(file) => {
                    let have_len = file.metadata()?.len();
                    let mut reader = file.try_clone()?;
                    reader.seek(SeekFrom::Start(cursor))?;
                    let reader = Some(BufReader::with_capacity(BUF, reader));
                    let sink = Sink::Compare {
                        reader,
                        have_len: Some(have_len),
                        first_diff: None,
                        scratch: Vec::new(),
                    };
                    (Some(file), sink)
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => (
                    None,
                    Sink::Compare { reader: None, have_len: None, first_diff: Some(0), scratch: Vec::new() },
                ),
                Err(e) => return Err(e),
            },
        };
        Ok(Out { path: path.to_path_buf(), file, cursor, end: cursor, sink })
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let at = self.cursor;
        self.cursor += bytes.len() as u64;
        self.end = self.end.max(self.cursor);
        match &mut self.sink {
            Sink::Write(w) => w.write_all(bytes),
            Sink::Compare { reader: Some(r), have_len: Some(len), first_diff, scratch } => {
                let n = bytes.len().min(len.saturating_sub(at) as usize);
                scratch.resize(n, 0);
                r.read_exact(scratch)?;
                note_diff(first_diff, at, &bytes[..n], scratch);
                Ok(())
            }
            Sink::Compare { .. } => Ok(()),
        }
    }

    fn put_at(&mut self, bytes: &[u8], offset: u64) -> io::Result<()> {
        self.end = self.end.max(offset + bytes.len() as u64);
        let Some(file) = &self.file else { return Ok(()) };
        match &mut self.sink {
            Sink::Write(_) => file.write_all_at(bytes, offset),
            Sink::Compare { have_len: Some(len), first_diff, scratch, .. } => {
                let n = bytes.len().min(len.saturating_sub(offset) as usize);
                scratch.resize(n, 0);
                file.read_exact_at(scratch, offset)?;
                note_diff(first_diff, offset, &bytes[..n], scratch);
                Ok(())
            }
            Sink::Compare { .. } => Ok(()),
        }
    }

    /// Written: flushed and fsynced. Compared: where the file differs, if
    /// anywhere (a length difference counts).
    fn finish(self) -> io::Result<Option<Mismatch>> {
        match self.sink {
            Sink::Write(w) => {
                drop(w.into_inner().map_err(|e| e.into_error())?);
                if let Some(file) = self.file {
                    file.sync_all()?;
                }
                Ok(None)
            }
            Sink::Compare { have_len, first_diff, .. } => {
                let short = have_len.filter(|&len| len != self.end).map(|len| len.min(self.end));
                let offset = match (first_diff, short) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                Ok(offset.map(|offset| Mismatch { path: self.path, offset, have_len, want_len: self.end }))
            }
        }
    }

    /// A file the writer rule says does not exist (reference §4).
    fn absent(path: &Path, mode: Mode) -> io::Result<Option<Mismatch>> {
        match (mode, std::fs::metadata(path)) {
            (Mode::Write, _) => Ok(None),
            (Mode::Compare, Ok(m)) => Ok(Some(Mismatch {
                path: path.to_path_buf(),
                offset: 0,
                have_len: Some(m.len()),
                want_len: 0,
            })),
            (Mode::Compare, Err(e)) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            (Mode::Compare, Err(e)) => Err(e),
        }
    }
}

fn note_diff(first: &mut Option<u64>, at: u64, want: &[u8], have: &[u8]) {
    if first.is_some_and(|f| f <= at) || want == have {
        return;
    }
    if let Some(i) = want.iter().zip(have).position(|(a, b)| a != b) {
        *first = Some(first.map_or(at + i as u64, |f| f.min(at + i as u64)));
    }
}

/// The subject column: tokens arrive sorted, so each new subject is the next
/// rank. Its dictionary and `.s.offsets` are written as rows pass.
struct SubjectColumn {
    dict: DictFileWriter,
    last: Vec<u8>,
    /// The open subject's first row.
    run_start: u64,
    ranges: Out,
    count: u64,
}

impl SubjectColumn {
    fn new(base: &Path, spill: &Path, mode: Mode) -> io::Result<Self> {
        let ranges_path = super::sidecar_path(base, SUFFIXES[10]);
        // The header is put last, when the counts are known.
        let ranges = Out::create(&ranges_path, mode, s_offsets::HEADER_LEN)?;
        Ok(SubjectColumn {
            dict: DictFileWriter::new(spill, "s")?,
            last: Vec::new(),
            run_start: 0,
            ranges,
            count: 0,
        })
    }

    /// The id of the subject of row `row`.
    fn push(&mut self, token: &[u8], row: u64) -> io::Result<u32> {
        if self.count == 0 || self.last != token {
            if self.count > 0 && token < &self.last[..] {
                return Err(io::Error::new(io::ErrorKind::InvalidData, OutOfOrder { row }));
            }
            if self.count > 0 {
                self.close_run(row)?;
            }
            self.dict.push(token)?;
            self.last.clear();
            self.last.extend_from_slice(token);
            self.run_start = row;
            self.count += 1;
        }
        Ok((self.count - 1) as u32)
    }

    fn close_run(&mut self, end: u64) -> io::Result<()> {
        let mut range = [0u8; 16];
        range[..8].copy_from_slice(&self.run_start.to_le_bytes());
        range[8..].copy_from_slice(&end.to_le_bytes());
        self.ranges.append(&range)
    }

    /// Writes `.s.dict` to `dict_path` and completes `.s.offsets` (removed
    /// again when the writer rule says it does not exist: no row groups or
    /// no subjects). Returns the number of subjects.
    fn finish(
        mut self,
        dict_path: &Path,
        rows: u64,
        any_row_groups: bool,
        mode: Mode,
        mismatches: &mut Vec<Mismatch>,
    ) -> io::Result<u32> {
        if self.count > 0 {
            self.close_run(rows)?;
        }
        let n = self.dict.finish(dict_path, mode, mismatches)?;
        let path = self.ranges.path.clone();
        if !any_row_groups || n == 0 {
            drop(self.ranges);
            if mode == Mode::Write {
                std::fs::remove_file(&path)?;
            }
            mismatches.extend(Out::absent(&path, mode)?);
            return Ok(n);
        }
        self.ranges.put_at(&s_offsets::encode_header(n, rows as u32), 0)?;
        mismatches.extend(self.ranges.finish()?);
        Ok(n)
    }
}

/// A dictionary file written from tokens given in ascending order: token
/// bytes and their end offsets go to temp files until the count, which the
/// header and the offset arrays depend on, is known.
struct DictFileWriter {
    tokens: BufWriter<File>,
    tokens_path: PathBuf,
    ends: BufWriter<File>,
    ends_path: PathBuf,
    bytes: u64,
    count: u64,
}

impl DictFileWriter {
    fn new(spill: &Path, name: &str) -> io::Result<Self> {
        let tokens_path = spill.join(format!("dict-{name}.tokens"));
        let ends_path = spill.join(format!("dict-{name}.ends"));
        Ok(DictFileWriter {
            tokens: BufWriter::with_capacity(BUF, scratch(&tokens_path)?),
            tokens_path,
            ends: BufWriter::with_capacity(BUF, scratch(&ends_path)?),
            ends_path,
            bytes: 0,
            count: 0,
        })
    }

    fn push(&mut self, token: &[u8]) -> io::Result<()> {
        self.tokens.write_all(token)?;
        self.bytes += token.len() as u64;
        self.ends.write_all(&self.bytes.to_le_bytes())?;
        self.count += 1;
        Ok(())
    }

    /// Writes (or compares) the dictionary at `path`; returns its token count.
    fn finish(self, path: &Path, mode: Mode, mismatches: &mut Vec<Mismatch>) -> io::Result<u32> {
        let n = u32::try_from(self.count)
            .map_err(|_| io::Error::other("a dictionary holds at most 2^32 - 1 tokens"))?;
        let mut tokens = self.tokens.into_inner().map_err(|e| e.into_error())?;
        let mut ends = self.ends.into_inner().map_err(|e| e.into_error())?;
        let mut out = Out::create(path, mode, 0)?;
        out.append(&dict::encode_header(n, 0))?;
        let mut chunk = Vec::with_capacity(BUF);
        for id in 0..n {
            chunk.extend_from_slice(&id.to_le_bytes());
            if chunk.len() >= BUF {
                out.append(&chunk)?;
                chunk.clear();
            }
        }
        let base = dict::data_offset(u64::from(n));
        chunk.extend_from_slice(&base.to_le_bytes());
        ends.seek(SeekFrom::Start(0))?;
        let mut ends = BufReader::with_capacity(BUF, ends);
        let mut end = [0u8; 8];
        for _ in 0..n {
            ends.read_exact(&mut end)?;
            chunk.extend_from_slice(&(base + u64::from_le_bytes(end)).to_le_bytes());
            if chunk.len() >= BUF {
                out.append(&chunk)?;
                chunk.clear();
            }
        }
        out.append(&chunk)?;
        tokens.seek(SeekFrom::Start(0))?;
        chunk.resize(BUF, 0);
        loop {
            let got = tokens.read(&mut chunk)?;
            if got == 0 {
                break;
            }
            out.append(&chunk[..got])?;
        }
        mismatches.extend(out.finish()?);
        drop((tokens, ends));
        std::fs::remove_file(&self.tokens_path)?;
        std::fs::remove_file(&self.ends_path)?;
        Ok(n)
    }
}

/// A temp file written, then read back through the same handle.
fn scratch(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)
}

/// The object column's number among s p o g.
const OBJECTS: usize = 2;

/// Temporary ids of one column (p, o or g), in epochs; see the module banner.
#[derive(Default)]
struct Interner {
    map: FxHashMap<Box<[u8]>, u32>,
    /// The predicate or graph interned last and its id: rows come in SPOG
    /// order, so a subject's rows repeat their predicate and graph, and
    /// comparing with the last token costs less than hashing it. (Objects
    /// rarely repeat their neighbour; copying each one would cost more.)
    /// Cleared when an epoch is spilled: ids start again in the next.
    last: Option<u32>,
    last_token: Vec<u8>,
    /// Bytes the map holds, as estimated with [`ENTRY_OVERHEAD`].
    held: usize,
    /// Spilled epochs: their run file, id count and first row.
    spilled: Vec<Epoch>,
    /// The first row of the epoch the map belongs to.
    first_row: u64,
    spill: PathBuf,
    column: usize,
}

struct Epoch {
    run: PathBuf,
    ids: u32,
    first_row: u64,
}

impl Interner {
    fn new(spill: &Path, column: usize) -> Self {
        Interner { spill: spill.to_path_buf(), column, ..Interner::default() }
    }

    fn id(&mut self, token: &[u8]) -> u32 {
        if self.column == OBJECTS {
            return self.lookup(token);
        }
        match self.last {
            Some(id) if self.last_token == token => id,
            _ => {
                let id = self.lookup(token);
                self.last_token.clear();
                self.last_token.extend_from_slice(token);
                self.last = Some(id);
                id
            }
        }
    }

    fn lookup(&mut self, token: &[u8]) -> u32 {
        if let Some(&id) = self.map.get(token) {
            return id;
        }
        let id = self.map.len() as u32;
        self.map.insert(token.into(), id);
        self.held += token.len() + ENTRY_OVERHEAD;
        id
    }

    /// The map's entries, sorted by token.
    fn sorted(&mut self) -> Vec<(Box<[u8]>, u32)> {
        let mut entries: Vec<(Box<[u8]>, u32)> = std::mem::take(&mut self.map).into_iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.held = 0;
        self.last = None;
        entries
    }

    /// Writes the map as a sorted run and starts a new epoch at `next_row`.
    fn spill(&mut self, next_row: u64) -> io::Result<()> {
        let run = self.spill.join(format!("tokens-{}-{:05}", self.column, self.spilled.len()));
        let entries = self.sorted();
        let mut w = BufWriter::with_capacity(BUF, File::create(&run)?);
        for (token, id) in &entries {
            w.write_all(&(token.len() as u32).to_le_bytes())?;
            w.write_all(token)?;
            w.write_all(&id.to_le_bytes())?;
        }
        w.flush()?;
        self.spilled.push(Epoch { run, ids: entries.len() as u32, first_row: self.first_row });
        self.first_row = next_row;
        Ok(())
    }

    /// Writes the column's dictionary to `path`, and returns what the replay
    /// needs to turn temporary ids into ranks.
    fn finish(
        mut self,
        path: &Path,
        spill: &Path,
        mode: Mode,
        mismatches: &mut Vec<Mismatch>,
    ) -> io::Result<Merged> {
        let mut dict = DictFileWriter::new(spill, &format!("c{}", self.column))?;
        let mut named_graphs = 0u64;
        let mut emit = |token: &[u8], dict: &mut DictFileWriter| -> io::Result<()> {
            if token != crate::format::term::DEFAULT_GRAPH.as_bytes() {
                named_graphs += 1;
            }
            dict.push(token)
        };
        let epochs = if self.spilled.is_empty() {
            // Everything fitted: no run files, the one table built in memory.
            let entries = self.sorted();
            let mut table = vec![0u32; entries.len()];
            for (rank, (token, id)) in entries.iter().enumerate() {
                table[*id as usize] = rank as u32;
                emit(token, &mut dict)?;
            }
            Epochs::in_memory(table)
        } else {
            let next_row = u64::MAX;
            self.spill(next_row)?;
            merge_runs(&self.spilled, spill, self.column, |t| emit(t, &mut dict))?
        };
        let tokens = dict.finish(path, mode, mismatches)?;
        Ok(Merged { tokens, named_graphs, epochs })
    }
}

struct Merged {
    tokens: u32,
    named_graphs: u64,
    epochs: Epochs,
}

/// Merges the sorted runs of one column: `emit` gets every distinct token in
/// ascending order, and each epoch's (temporary id, rank) pairs go to a file
/// the replay loads when it reaches that epoch's rows.
fn merge_runs(
    epochs: &[Epoch],
    spill: &Path,
    column: usize,
    mut emit: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<Epochs> {
    let mut readers = Vec::with_capacity(epochs.len());
    let mut tables = Vec::with_capacity(epochs.len());
    for (e, epoch) in epochs.iter().enumerate() {
        readers.push(BufReader::with_capacity(1 << 16, File::open(&epoch.run)?));
        let path = spill.join(format!("ranks-{column}-{e:05}"));
        tables.push((BufWriter::with_capacity(1 << 16, File::create(&path)?), path));
    }
    let mut heads: Vec<Option<(Vec<u8>, u32)>> =
        readers.iter_mut().map(read_entry).collect::<io::Result<_>>()?;
    fn token_of(heads: &[Option<(Vec<u8>, u32)>], e: usize) -> Option<&[u8]> {
        heads[e].as_ref().map(|(token, _)| &token[..])
    }
    let mut game = Tournament::new(heads.len(), |e| token_of(&heads, e));
    let mut rank: u32 = 0;
    let mut any = false;
    while let Some(e) = game.winner() {
        let Some((token, id)) = heads[e].take() else { break };
        if !game.repeats() {
            if any {
                rank += 1;
            }
            emit(&token)?;
            any = true;
        }
        tables[e].0.write_all(&id.to_le_bytes())?;
        tables[e].0.write_all(&rank.to_le_bytes())?;
        heads[e] = read_entry(&mut readers[e])?;
        let shared = token_of(&heads, e).map_or(0, |next| shared_prefix(&token, next));
        game.replay(shared, |e| token_of(&heads, e));
    }
    let mut files = Vec::with_capacity(epochs.len());
    for ((mut w, path), epoch) in tables.into_iter().zip(epochs) {
        w.flush()?;
        std::fs::remove_file(&epoch.run)?;
        files.push(EpochFile { path, ids: epoch.ids, first_row: epoch.first_row });
    }
    Ok(Epochs::on_disk(files))
}

fn read_entry(r: &mut impl Read) -> io::Result<Option<(Vec<u8>, u32)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut token = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut token)?;
    let mut id = [0u8; 4];
    r.read_exact(&mut id)?;
    Ok(Some((token, u32::from_le_bytes(id))))
}

struct EpochFile {
    path: PathBuf,
    ids: u32,
    first_row: u64,
}

/// Temporary id → rank, for the epoch the replay is in.
struct Epochs {
    files: Vec<EpochFile>,
    /// The next file to load.
    next: usize,
    /// The first row past the loaded epoch.
    until: u64,
    table: Vec<u32>,
}

impl Epochs {
    fn in_memory(table: Vec<u32>) -> Self {
        Epochs { files: Vec::new(), next: 0, until: u64::MAX, table }
    }

    fn on_disk(files: Vec<EpochFile>) -> Self {
        Epochs { files, next: 0, until: 0, table: Vec::new() }
    }

    fn rank(&mut self, row: u64, tmp: u32) -> io::Result<u32> {
        while row >= self.until {
            self.load_next()?;
        }
        self.table
            .get(tmp as usize)
            .copied()
            .ok_or_else(|| io::Error::other(format!("row {row}: temporary id {tmp} outside its epoch")))
    }

    fn load_next(&mut self) -> io::Result<()> {
        let file = self
            .files
            .get(self.next)
            .ok_or_else(|| io::Error::other("the id stream has more rows than the epochs"))?;
        let mut table = vec![0u32; file.ids as usize];
        let mut r = BufReader::with_capacity(1 << 16, File::open(&file.path)?);
        let mut pair = [0u8; 8];
        for _ in 0..file.ids {
            r.read_exact(&mut pair)?;
            let id = u32::from_le_bytes([pair[0], pair[1], pair[2], pair[3]]) as usize;
            let rank = u32::from_le_bytes([pair[4], pair[5], pair[6], pair[7]]);
            *table.get_mut(id).ok_or_else(|| io::Error::other("an epoch table names an id outside it"))? =
                rank;
        }
        std::fs::remove_file(&file.path)?;
        self.table = table;
        self.next += 1;
        self.until = self.files.get(self.next).map_or(u64::MAX, |f| f.first_row);
        Ok(())
    }
}

/// Epochs the replay never reached (one that begins after the last row)
/// leave no file behind.
impl Drop for Epochs {
    fn drop(&mut self) {
        for file in self.files.iter().skip(self.next) {
            let _ = std::fs::remove_file(&file.path);
        }
    }
}

/// `.presence` ×4, `.p.offsets` and `.po.presence`, written row group by row
/// group from rows of final ids.
struct PartsWriter {
    presence: [BitRows; 4],
    p_offsets: Option<OffsetsWriter>,
    po_presence: Option<PairsWriter>,
    /// Files the writer rule leaves out, checked for absence in compare mode.
    absent: Vec<PathBuf>,
    mode: Mode,
    rg: u32,
}

impl PartsWriter {
    fn create(base: &Path, num_rgs: u32, tokens: [u32; 4], mode: Mode) -> io::Result<Self> {
        let path = |i: usize| super::sidecar_path(base, SUFFIXES[i]);
        let mut presence = Vec::with_capacity(4);
        for (c, &n) in tokens.iter().enumerate() {
            presence.push(BitRows::create(&path(4 + c), num_rgs, n, mode)?);
        }
        let [_, n_p, n_o, _] = tokens;
        let mut absent = Vec::new();
        // The writer rule (reference §4): not written when a dimension is 0.
        let p_offsets = if num_rgs > 0 && n_p > 0 {
            Some(OffsetsWriter::create(&path(8), num_rgs, n_p, mode)?)
        } else {
            absent.push(path(8));
            None
        };
        let po_presence = if num_rgs > 0 && n_p > 0 && n_o > 0 {
            Some(PairsWriter::create(&path(9), num_rgs, n_p, n_o, mode)?)
        } else {
            absent.push(path(9));
            None
        };
        Ok(PartsWriter {
            presence: presence.try_into().map_err(|_| io::Error::other("four columns"))?,
            p_offsets,
            po_presence,
            absent,
            mode,
            rg: 0,
        })
    }

    /// The pairs of `.po.presence` on a second thread, the other five files
    /// on this one (one after another they were the import's last step, on
    /// one core).
    fn add_row_group(&mut self, rows: &[[u32; 4]]) -> io::Result<()> {
        let rg = self.rg;
        let (presence, p_offsets) = (&mut self.presence, &mut self.p_offsets);
        let (pairs, others) = std::thread::scope(|scope| {
            let pairs = self.po_presence.as_mut().map(|w| scope.spawn(move || w.add_row_group(rg, rows)));
            let others = (|| {
                for (c, bits) in presence.iter_mut().enumerate() {
                    bits.add_row_group(rows.iter().map(|r| r[c]))?;
                }
                p_offsets.as_mut().map_or(Ok(()), |w| w.add_row_group(rg, rows))
            })();
            (pairs.map(joined), others)
        });
        others?;
        pairs.transpose()?;
        self.rg += 1;
        Ok(())
    }

    fn finish(self) -> io::Result<Vec<Mismatch>> {
        let mut mismatches = Vec::new();
        let (pairs, presence, p_offsets) = (self.po_presence, self.presence, self.p_offsets);
        let (pairs, others) = std::thread::scope(|scope| {
            let pairs = pairs.map(|w| scope.spawn(move || w.finish()));
            let others = (|| -> io::Result<Vec<Mismatch>> {
                let mut found = Vec::new();
                for bits in presence {
                    found.extend(bits.finish()?);
                }
                if let Some(w) = p_offsets {
                    found.extend(w.finish()?);
                }
                Ok(found)
            })();
            (pairs.map(joined), others)
        });
        mismatches.extend(others?);
        mismatches.extend(pairs.transpose()?.flatten());
        for path in &self.absent {
            mismatches.extend(Out::absent(path, self.mode)?);
        }
        Ok(mismatches)
    }
}

/// A `.presence` file: one row of `num_tokens` bits per row group, packed
/// with no padding between rows (reference §6), so rows after the first
/// usually start inside a byte.
struct BitRows {
    out: Out,
    num_tokens: usize,
    /// The open row group's bits.
    words: Vec<u64>,
    /// Bits written to no byte yet (fewer than 8), low bits first.
    carry: u64,
    carried: u32,
    bytes: Vec<u8>,
}

impl BitRows {
    fn create(path: &Path, num_rgs: u32, num_tokens: u32, mode: Mode) -> io::Result<Self> {
        let mut out = Out::create(path, mode, 0)?;
        out.append(&presence::encode_header(num_rgs, num_tokens))?;
        let n = num_tokens as usize;
        Ok(BitRows {
            out,
            num_tokens: n,
            words: vec![0; n.div_ceil(64)],
            carry: 0,
            carried: 0,
            bytes: Vec::new(),
        })
    }

    fn add_row_group(&mut self, ids: impl Iterator<Item = u32>) -> io::Result<()> {
        // Only the words set are cleared afterwards: a subject row group
        // touches a few hundred words of a row that can be millions long.
        let (mut lo, mut hi) = (usize::MAX, 0);
        for id in ids {
            let w = id as usize / 64;
            self.words[w] |= 1 << (id % 64);
            lo = lo.min(w);
            hi = hi.max(w + 1);
        }
        self.write_row()?;
        if lo < hi {
            self.words[lo..hi].fill(0);
        }
        Ok(())
    }

    /// Appends the open row's `num_tokens` bits after the bits already written.
    fn write_row(&mut self) -> io::Result<()> {
        let k = self.carried;
        let full = self.num_tokens / 64;
        let bytes = &mut self.bytes;
        bytes.clear();
        for &w in &self.words[..full] {
            let out = self.carry | (w << k);
            bytes.extend_from_slice(&out.to_le_bytes());
            self.carry = if k == 0 { 0 } else { w >> (64 - k) };
        }
        let rem = (self.num_tokens % 64) as u32;
        if rem > 0 {
            let w = self.words[full];
            let mut combined = u128::from(self.carry) | (u128::from(w) << k);
            let mut valid = k + rem;
            while valid >= 8 {
                bytes.push(combined as u8);
                combined >>= 8;
                valid -= 8;
            }
            self.carry = combined as u64;
            self.carried = valid;
        }
        self.out.append(bytes)
    }

    fn finish(mut self) -> io::Result<Option<Mismatch>> {
        if self.carried > 0 {
            self.out.append(&[self.carry as u8])?;
        }
        self.out.finish()
    }
}

/// A file whose offset table (one u64 per slot) precedes its data: the
/// table's size is known up front, so the data is appended in order while
/// each row group's slots are put in place.
struct TableAndData {
    out: Out,
}

impl TableAndData {
    fn create(path: &Path, header: &[u8], data_start: u64, mode: Mode) -> io::Result<Self> {
        let mut out = Out::create(path, mode, data_start)?;
        out.put_at(header, 0)?;
        Ok(TableAndData { out })
    }

    fn put_slots(&mut self, at: u64, slots: &[u64]) -> io::Result<()> {
        let bytes: Vec<u8> = slots.iter().flat_map(|s| s.to_le_bytes()).collect();
        self.out.put_at(&bytes, at)
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.append(bytes)
    }

    fn position(&self) -> u64 {
        self.out.cursor
    }

    fn finish(mut self, last_slot_at: u64) -> io::Result<Option<Mismatch>> {
        let end = self.position();
        self.out.put_at(&end.to_le_bytes(), last_slot_at)?;
        self.out.finish()
    }
}

/// `.p.offsets`: per (row group, predicate) the local rows holding it.
struct OffsetsWriter {
    file: TableAndData,
    num_rgs: u32,
    num_preds: u32,
    counts: Vec<u32>,
    order: Vec<u32>,
}

impl OffsetsWriter {
    fn create(path: &Path, num_rgs: u32, num_preds: u32, mode: Mode) -> io::Result<Self> {
        let cells = u64::from(num_rgs) * u64::from(num_preds);
        let header = p_offsets::encode_header(num_rgs, num_preds);
        Ok(OffsetsWriter {
            file: TableAndData::create(path, &header, p_offsets::data_offset(cells), mode)?,
            num_rgs,
            num_preds,
            counts: vec![0; num_preds as usize + 1],
            order: Vec::new(),
        })
    }

    /// A counting sort of the row group's local rows by predicate keeps each
    /// cell's rows ascending.
    fn add_row_group(&mut self, rg: u32, rows: &[[u32; 4]]) -> io::Result<()> {
        self.counts.fill(0);
        for r in rows {
            self.counts[r[1] as usize + 1] += 1;
        }
        for p in 1..self.counts.len() {
            self.counts[p] += self.counts[p - 1];
        }
        let start = self.file.position();
        let slots: Vec<u64> =
            self.counts[..self.num_preds as usize].iter().map(|&c| start + 4 * u64::from(c)).collect();
        self.order.clear();
        self.order.resize(rows.len(), 0);
        let mut next = self.counts.clone();
        for (local, r) in rows.iter().enumerate() {
            let p = r[1] as usize;
            self.order[next[p] as usize] = local as u32;
            next[p] += 1;
        }
        let bytes: Vec<u8> = self.order.iter().flat_map(|r| r.to_le_bytes()).collect();
        self.file.append(&bytes)?;
        let at = p_offsets::HEADER_LEN + 8 * u64::from(rg) * u64::from(self.num_preds);
        self.file.put_slots(at, &slots)
    }

    fn finish(self) -> io::Result<Option<Mismatch>> {
        let cells = u64::from(self.num_rgs) * u64::from(self.num_preds);
        self.file.finish(p_offsets::HEADER_LEN + 8 * cells)
    }
}

/// `.po.presence`: per row group its distinct (p, o) pairs, ascending.
struct PairsWriter {
    file: TableAndData,
    num_rgs: u32,
    pairs: Vec<u64>,
}

impl PairsWriter {
    fn create(path: &Path, num_rgs: u32, n_p: u32, n_o: u32, mode: Mode) -> io::Result<Self> {
        let header = po_presence::encode_header(num_rgs, n_p, n_o);
        let data_start = po_presence::data_offset(u64::from(num_rgs));
        Ok(PairsWriter {
            file: TableAndData::create(path, &header, data_start, mode)?,
            num_rgs,
            pairs: Vec::new(),
        })
    }

    fn add_row_group(&mut self, rg: u32, rows: &[[u32; 4]]) -> io::Result<()> {
        self.pairs.clear();
        self.pairs.extend(rows.iter().map(|r| pair(r[1], r[2])));
        self.pairs.sort_unstable();
        self.pairs.dedup();
        let at = po_presence::HEADER_LEN + 8 * u64::from(rg);
        let start = self.file.position();
        self.file.put_slots(at, &[start])?;
        let bytes: Vec<u8> = self.pairs.iter().flat_map(|p| p.to_le_bytes()).collect();
        self.file.append(&bytes)
    }

    fn finish(self) -> io::Result<Option<Mismatch>> {
        self.file.finish(po_presence::HEADER_LEN + 8 * u64::from(self.num_rgs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Sorted, distinct rows over small vocabularies, so tokens repeat across
    /// row groups and epochs; `DEFAULT` is among the graphs.
    fn rows() -> impl Strategy<Value = Vec<[String; 4]>> {
        let term = |prefix: &'static str, n: u32| (0..n).prop_map(move |i| format!("<{prefix}{i}>"));
        let graph = prop_oneof![Just("DEFAULT".to_string()), term("g", 5)];
        proptest::collection::vec((term("s", 40), term("p", 9), term("o", 70), graph), 0..400).prop_map(|v| {
            let mut rows: Vec<[String; 4]> = v.into_iter().map(|(s, p, o, g)| [s, p, o, g]).collect();
            rows.sort();
            rows.dedup();
            rows
        })
    }

    fn written(rows: &[[String; 4]], rg_sizes: &[usize], budget: usize) -> Vec<(&'static str, Vec<u8>)> {
        written_in(rows, rg_sizes, budget, Order::Spog)
    }

    fn written_in(
        rows: &[[String; 4]],
        rg_sizes: &[usize],
        budget: usize,
        order: Order,
    ) -> Vec<(&'static str, Vec<u8>)> {
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join("spill");
        std::fs::create_dir(&spill).unwrap();
        let base = dir.path().join(crate::store::versions::layout::BASE);
        let mut w = SidecarWriter::with_order(&base, &spill, budget, Mode::Write, order).unwrap();
        w.budget = budget; // below new()'s floor, to force many epochs
        for r in rows {
            w.push(std::array::from_fn(|c| r[c].as_bytes())).unwrap();
        }
        w.finish(rg_sizes).unwrap();
        assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0, "temp files are removed");
        SUFFIXES
            .iter()
            .filter_map(|suf| {
                let path = dir.path().join(format!("{}{suf}", crate::store::versions::layout::BASE));
                std::fs::read(path).ok().map(|b| (*suf, b))
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Whatever the row-group cut and however often the maps spill, the
        /// streamed files are the in-memory builder's, byte for byte.
        #[test]
        fn streamed_sidecars_equal_the_in_memory_build(
            rows in rows(),
            rg_size in 1usize..70,
            budget in prop_oneof![Just(0usize), 100usize..2000, Just(1usize << 30)],
        ) {
            let sizes: Vec<usize> = (0..rows.len()).step_by(rg_size).map(|i| rg_size.min(rows.len() - i)).collect();
            let expected = crate::store::sidecars::build(&rows, &sizes).files();
            prop_assert_eq!(written(&rows, &sizes, budget), expected);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Rows in any order, repeated rows and runs of a subject split
        /// apart included: the same files as the in-memory builder, whose
        /// `.s.offsets` keeps each subject's last contiguous run.
        #[test]
        fn rows_in_any_order_give_the_in_memory_build(
            sorted in rows(),
            seed in any::<u64>(),
            repeats in 0usize..20,
            rg_size in 1usize..70,
            budget in prop_oneof![Just(0usize), 100usize..2000, Just(1usize << 30)],
        ) {
            let mut rows = sorted;
            let mut rng = seed;
            let mut next = move || { rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (rng >> 33) as usize };
            for _ in 0..repeats.min(rows.len()) {
                let r = rows[next() % rows.len()].clone();
                rows.push(r);
            }
            for i in (1..rows.len()).rev() {
                rows.swap(i, next() % (i + 1));
            }
            let sizes: Vec<usize> = (0..rows.len()).step_by(rg_size).map(|i| rg_size.min(rows.len() - i)).collect();
            let expected = crate::store::sidecars::build(&rows, &sizes).files();
            prop_assert_eq!(written_in(&rows, &sizes, budget, Order::Any), expected);
        }
    }

    #[test]
    fn a_subject_out_of_spog_order_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SidecarWriter::new(dir.path(), dir.path(), 1 << 20, Mode::Write).unwrap();
        w.push([b"<s2>", b"<p>", b"<o>", b"DEFAULT"]).unwrap();
        let e = w.push([b"<s1>", b"<p>", b"<o>", b"DEFAULT"]).unwrap_err();
        assert!(OutOfOrder::is(&e), "{e}");
        assert!(e.to_string().contains("row 1"), "{e}");
    }

    #[test]
    fn presence_rows_that_start_inside_a_byte_are_packed_without_gaps() {
        // 13 tokens: every row group after the first starts mid-byte.
        let rows: Vec<[String; 4]> =
            (0..13).map(|i| [format!("<s{i:02}>"), "<p>".into(), "<o>".into(), "DEFAULT".into()]).collect();
        let sizes = [5, 1, 7];
        assert_eq!(written(&rows, &sizes, 0), crate::store::sidecars::build(&rows, &sizes).files());
    }

    /// Writes the sidecars of `rows` into a temp dir, lets `damage` change
    /// them, then compares: the mismatches found.
    fn compared_after(damage: impl FnOnce(&Path)) -> Vec<Mismatch> {
        let rows: Vec<[String; 4]> = (0..50)
            .map(|i| {
                [format!("<s{:02}>", i / 3), format!("<p{}>", i % 4), format!("\"{i}\""), "DEFAULT".into()]
            })
            .collect();
        let sizes = [20, 20, 10];
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join("spill");
        std::fs::create_dir(&spill).unwrap();
        let run = |mode: Mode| {
            let mut w = SidecarWriter::new(dir.path(), &spill, 0, mode).unwrap();
            for r in &rows {
                w.push(std::array::from_fn(|c| r[c].as_bytes())).unwrap();
            }
            w.finish(&sizes).unwrap().mismatches
        };
        assert!(run(Mode::Write).is_empty());
        damage(dir.path());
        run(Mode::Compare)
    }

    fn sidecar(dir: &Path, suffix: &str) -> PathBuf {
        dir.join(format!("{}{suffix}", crate::store::versions::layout::BASE))
    }

    #[test]
    fn comparing_finds_each_kind_of_difference_and_nothing_else() {
        assert_eq!(compared_after(|_| {}), vec![]);
        for (suffix, at) in [
            (".s.dict", 40u64),
            (".o.presence", 17),
            (".p.offsets", 9),
            (".po.presence", 100),
            (".s.offsets", 30),
        ] {
            let found = compared_after(|dir| {
                let path = sidecar(dir, suffix);
                let mut bytes = std::fs::read(&path).unwrap();
                bytes[at as usize] ^= 0x10;
                std::fs::write(&path, bytes).unwrap();
            });
            assert_eq!(found.len(), 1, "{suffix}: {found:?}");
            assert_eq!(
                (found[0].path.clone(), found[0].offset),
                (sidecar_path_of(&found[0].path, suffix), at)
            );
        }
        let truncated = compared_after(|dir| {
            let f = std::fs::OpenOptions::new().write(true).open(sidecar(dir, ".g.dict")).unwrap();
            f.set_len(37).unwrap();
        });
        assert_eq!((truncated[0].offset, truncated[0].have_len), (37, Some(37)));
        let missing = compared_after(|dir| std::fs::remove_file(sidecar(dir, ".p.presence")).unwrap());
        assert_eq!((missing.len(), missing[0].have_len), (1, None));
    }

    fn sidecar_path_of(path: &Path, suffix: &str) -> PathBuf {
        assert!(path.to_string_lossy().ends_with(suffix), "{} is not the {suffix} file", path.display());
        path.to_path_buf()
    }

    #[test]
    fn sizes_that_do_not_add_up_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SidecarWriter::new(dir.path(), dir.path(), 1 << 20, Mode::Write).unwrap();
        w.push([b"<s>", b"<p>", b"<o>", b"DEFAULT"]).unwrap();
        assert!(w.finish(&[2]).is_err());
    }
}
