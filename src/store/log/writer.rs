//! The one delta-log writer: every front end (CLI `update`, the TUI, the
//! compactor's carry-over) appends through this module, so the commit
//! protocol is written down once (docs/format.md §10 "Writing").
//!
//! The protocol, in order:
//! 1. take the exclusive writer lock (`writer.lock` in the chunk dir);
//! 2. decode the log; if anything follows the last committed batch (a torn
//!    append, a bad checksum, an invalid entry), copy those bytes to a
//!    sibling `data.deltalog.cut-at-<offset>.<time>`, fsync the copy, then cut
//!    the log back and fsync it: a batch is never appended behind garbage,
//!    where every reader would stop before it (reference §11.5);
//! 3. stamp db_epoch = the compacted epoch of the live version + 1 (1 without
//!    a marker) and db_seq = the last committed seq + 1;
//! 4. append one frame with `write_all`, then fsync: the fsync's return is the
//!    commit point, and only then is success reported.
//!
//! A write error after some bytes went out cuts the file back to where the
//! append started, so a failed append leaves no torn tail of its own.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{Log, Tail};
use crate::format::deltalog::{self, Batch, BatchFrame, Entry, StopReason};
use crate::format::transport::Transport;
use crate::store::fsutil::{sync_dir, unix_now, utc_timestamp, write_synced};
use crate::store::versions::layout::{self, Resolution, LOG};
use crate::store::versions::open::read_marker;
use crate::store::StoreError;

/// The lock file's name inside the chunk dir.
pub const LOCK: &str = "writer.lock";

/// The exclusive writer lock, held until dropped.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    pub path: PathBuf,
}

impl WriterLock {
    /// Takes the lock, or fails with who holds it. With `wait`, retries until
    /// that much time has passed.
    pub fn acquire(chunk: &Path, wait: Option<Duration>) -> Result<WriterLock, StoreError> {
        let path = chunk.join(LOCK);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        let deadline = wait.map(|w| Instant::now() + w);
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    if deadline.is_some_and(|d| Instant::now() < d) {
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    }
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    let holder =
                        if holder.is_empty() { "another process".to_string() } else { holder.to_string() };
                    return Err(StoreError::Locked { path, holder });
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io(&path, e)),
            }
        }
        // Who holds it, for the message a second writer prints. Not fsynced:
        // it is advice, and the lock itself lives in the kernel.
        let note = format!("pid {} (since {})\n", std::process::id(), utc_timestamp(unix_now()));
        let _ = file.set_len(0).and_then(|_| file.write_all(note.as_bytes()));
        Ok(WriterLock { file, path })
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

/// Bytes the writer cut from the end of the log before appending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutTail {
    pub offset: u64,
    pub len: u64,
    pub reason: StopReason,
    /// The sibling file that keeps the cut bytes.
    pub saved_to: PathBuf,
}

/// What one committed append wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub seq: u64,
    pub epoch: u64,
    pub offset: u64,
    pub len: u64,
    pub adds: usize,
    pub removes: usize,
    pub graph_ops: usize,
    /// From the start of the write to the end of the fsync.
    pub commit_time: Duration,
}

impl std::fmt::Display for Receipt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "batch seq={} epoch={}: +{} \u{2212}{}, {} ({} at offset {})",
            self.seq,
            self.epoch,
            self.adds,
            self.removes,
            crate::text::plural(self.graph_ops, "graph op", "graph ops"),
            crate::text::plural(self.len, "byte", "bytes"),
            self.offset
        )
    }
}

/// An open log with the lock held, ready to append.
pub struct LogWriter {
    pub path: PathBuf,
    file: File,
    transport: Transport,
    end: u64,
    last_seq: Option<u64>,
    epoch: u64,
    /// Set when opening cut a torn or invalid tail.
    pub cut: Option<CutTail>,
    /// Set when opening created the log.
    pub created: bool,
    /// Set when [`reopen`](Self::reopen) trusted the kept position instead
    /// of reading the log.
    pub resumed: bool,
    /// The version `current` named when the lock was taken.
    version_dir: PathBuf,
    _lock: WriterLock,
}

/// Where a writer left the log: what [`LogWriter::reopen`] needs to append
/// again without reading the log, if nothing has touched it since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogPosition {
    version_dir: PathBuf,
    file: FileIdentity,
    transport: Transport,
    last_seq: Option<u64>,
    epoch: u64,
}

/// A file as `stat` tells it apart: the same inode, length and modification
/// time mean no write has happened since (appends grow the file and move
/// its time; a rewrite or a cut moves its time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileIdentity {
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileIdentity {
    fn of(file: &File) -> std::io::Result<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata()?;
        Ok(FileIdentity { inode: m.ino(), len: m.len(), modified: m.modified().ok() })
    }
}

/// Debug pauses for crash tests: `COTTAS_TUI_DEBUG_PAUSE=before-write=5,mid-write=5,before-fsync=5`
/// (milliseconds; the compactor has its own points). Read once; absent in
/// normal use. A pause announces itself on stderr so a test can kill there.
pub fn debug_pause(point: &str) {
    static PAUSES: OnceLock<Vec<(String, u64)>> = OnceLock::new();
    let pauses = PAUSES.get_or_init(|| {
        std::env::var("COTTAS_TUI_DEBUG_PAUSE")
            .unwrap_or_default()
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .filter_map(|(k, v)| Some((k.trim().to_string(), v.trim().parse().ok()?)))
            .collect()
    });
    if let Some((_, ms)) = pauses.iter().find(|(k, _)| k == point) {
        crate::eprint_line!("cottas-tui: debug pause at {point} for {ms} ms");
        std::thread::sleep(Duration::from_millis(*ms));
    }
}

impl LogWriter {
    /// Takes the lock and prepares `chunk`'s log for appending (steps 1–3 of
    /// the protocol above).
    pub fn open(chunk: &Path, wait: Option<Duration>) -> Result<LogWriter, StoreError> {
        let lock = WriterLock::acquire(chunk, wait)?;
        Self::open_locked(lock, chunk).map(|(writer, _)| writer)
    }

    /// [`open`](Self::open), also handing over the committed batches it
    /// decoded to find the log's end: a writer that folds the log next
    /// (an update) folds these instead of reading and decoding it again.
    pub fn open_with_batches(
        chunk: &Path,
        wait: Option<Duration>,
    ) -> Result<(LogWriter, Vec<BatchFrame>), StoreError> {
        let lock = WriterLock::acquire(chunk, wait)?;
        Self::open_locked(lock, chunk)
    }

    /// [`open`](Self::open) for a writer that appended before and kept its
    /// [`position`](Self::position): when `current` names the same version
    /// and the log is the same file, at the same length and time, nothing
    /// was written since, and the log is not read again (a long-lived
    /// writer, the endpoint, appends in O(1) instead of O(log)). Otherwise
    /// it reads the log as `open` does; `resumed` tells which.
    pub fn reopen(
        chunk: &Path,
        wait: Option<Duration>,
        known: &LogPosition,
    ) -> Result<LogWriter, StoreError> {
        let lock = WriterLock::acquire(chunk, wait)?;
        let layout = layout::resolve(chunk)?;
        let path = chunk.join(LOG);
        // Anything unexpected (the log gone or unreadable) takes the full
        // path, which creates or reports it as `open` does.
        let same_file = |file: &File| FileIdentity::of(file).ok() == Some(known.file);
        let opened = OpenOptions::new().read(true).write(true).open(&path).ok().filter(same_file);
        if let Some(file) = opened.filter(|_| layout.version_dir == known.version_dir) {
            return Ok(LogWriter {
                path,
                file,
                transport: known.transport,
                end: known.file.len,
                last_seq: known.last_seq,
                epoch: known.epoch,
                cut: None,
                created: false,
                resumed: true,
                version_dir: layout.version_dir,
                _lock: lock,
            });
        }
        Self::open_locked(lock, chunk).map(|(writer, _)| writer)
    }

    /// Where this writer leaves the log, for [`reopen`](Self::reopen).
    pub fn position(&self) -> Result<LogPosition, StoreError> {
        let file = FileIdentity::of(&self.file).map_err(|e| StoreError::io(&self.path, e))?;
        if file.len != self.end {
            return Err(StoreError::format_anywhere(
                &self.path,
                format!(
                    "the log is {} long where its writer ended at byte {}",
                    crate::text::plural(file.len, "byte", "bytes"),
                    self.end
                ),
            ));
        }
        Ok(LogPosition {
            version_dir: self.version_dir.clone(),
            file,
            transport: self.transport,
            last_seq: self.last_seq,
            epoch: self.epoch,
        })
    }

    fn open_locked(lock: WriterLock, chunk: &Path) -> Result<(LogWriter, Vec<BatchFrame>), StoreError> {
        let layout = layout::resolve(chunk)?;
        if !matches!(layout.resolution, Resolution::ViaCurrent | Resolution::HighestVersion) {
            return Err(StoreError::not_a_store(
                chunk,
                "updates go to a chunk dir (the one holding `current` and data.deltalog), not a version dir or a bare file",
            ));
        }
        let marker = read_marker(&layout.version_dir.join(layout::MARKER))?;
        let epoch = marker.map_or(1, |m| m.epoch.saturating_add(1));
        let path = chunk.join(LOG);
        let created = ensure_log(&path, chunk)?;
        let mut file =
            OpenOptions::new().read(true).write(true).open(&path).map_err(|e| StoreError::io(&path, e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| StoreError::io(&path, e))?;
        let log = Log::decode(&path, bytes)?;
        // Cutting a crash's torn tail is routine; cutting valid batches that
        // sit behind damage is a decision for a person (`repair`).
        log.refuse_hidden("not appending")?;
        let end = log.committed_len();
        let cut = match &log.tail {
            Tail::Torn(d) => Some(cut_tail(&path, chunk, &file, &log.bytes, end, d.reason)?),
            _ => None,
        };
        if epoch == u64::MAX && marker.is_some() {
            return Err(StoreError::format_anywhere(
                &path,
                "the compacted epoch is u64::MAX: no epoch is left to stamp",
            ));
        }
        let writer = LogWriter {
            path,
            file,
            transport: log.transport,
            end,
            last_seq: log.frames.last().map(|b| b.batch.seq),
            epoch,
            cut,
            created,
            resumed: false,
            version_dir: layout.version_dir,
            _lock: lock,
        };
        Ok((writer, log.frames))
    }

    /// The db_epoch the next batch gets.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The db_seq the next batch gets.
    pub fn next_seq(&self) -> u64 {
        self.last_seq.map_or(1, |s| s.saturating_add(1))
    }

    /// The committed length of the log.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Appends `entries` as one batch and fsyncs (step 4). An empty request
    /// appends nothing and returns `None`.
    pub fn append(&mut self, entries: Vec<Entry>) -> Result<Option<Receipt>, StoreError> {
        self.append_stamped(entries, None)
    }

    /// As [`append`](Self::append), with an explicit db_epoch (the compactor
    /// carries batches over with raised epochs). The epoch is never below the
    /// writer's own.
    pub fn append_stamped(
        &mut self,
        entries: Vec<Entry>,
        epoch: Option<u64>,
    ) -> Result<Option<Receipt>, StoreError> {
        if entries.is_empty() {
            return Ok(None);
        }
        for (i, e) in entries.iter().enumerate() {
            e.validate().map_err(|why| StoreError::BadEntry {
                path: self.path.clone(),
                index: i,
                detail: format!("({}) cannot be logged: {why}", e.kind_name()),
            })?;
        }
        let (adds, removes, graph_ops) = count_ops(&entries);
        let batch =
            Batch { seq: self.next_seq(), epoch: epoch.unwrap_or(self.epoch).max(self.epoch), entries };
        let frame = deltalog::encode_batch(&batch, self.transport);
        let started = Instant::now();
        self.write_frame(&frame)?;
        let receipt = Receipt {
            seq: batch.seq,
            epoch: batch.epoch,
            offset: self.end,
            len: frame.len() as u64,
            adds,
            removes,
            graph_ops,
            commit_time: started.elapsed(),
        };
        self.end += frame.len() as u64;
        self.last_seq = Some(batch.seq);
        Ok(Some(receipt))
    }

    fn write_frame(&mut self, frame: &[u8]) -> Result<(), StoreError> {
        let io = |e| StoreError::io(&self.path, e);
        self.file.seek(SeekFrom::Start(self.end)).map_err(io)?;
        debug_pause("before-write");
        let half = frame.len() / 2;
        let written = self
            .file
            .write_all(&frame[..half])
            .map(|_| debug_pause("mid-write"))
            .and_then(|_| self.file.write_all(&frame[half..]))
            .map(|_| debug_pause("before-fsync"))
            .and_then(|_| self.file.sync_data());
        if let Err(e) = written {
            // Leave no torn frame of our own behind; if even this fails, the
            // next writer's open cuts it.
            let _ = self.file.set_len(self.end).and_then(|_| self.file.sync_data());
            return Err(io(e));
        }
        Ok(())
    }
}

/// (adds, removes, graph ops) in `entries`.
pub fn count_ops(entries: &[Entry]) -> (usize, usize, usize) {
    entries.iter().fold((0, 0, 0), |(a, r, g), e| match e {
        Entry::Add(_) => (a + 1, r, g),
        Entry::Remove(_) => (a, r + 1, g),
        _ => (a, r, g + 1),
    })
}

/// Creates a header-only log when there is none: header, fsync, dir fsync.
fn ensure_log(path: &Path, chunk: &Path) -> Result<bool, StoreError> {
    if path.exists() {
        return Ok(false);
    }
    let tmp = chunk.join(format!(".{LOG}.new.{}", std::process::id()));
    write_synced(&tmp, &deltalog::encode_header()).map_err(|e| StoreError::write(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))?;
    sync_dir(chunk).map_err(|e| StoreError::io(chunk, e))?;
    Ok(true)
}

/// Keeps `bytes[end..]` of the log in `data.deltalog.cut-at-<end>.<time>`
/// beside it (fsynced, with the directory) before anything cuts them off.
pub fn save_cut_bytes(chunk: &Path, bytes: &[u8], end: u64) -> Result<PathBuf, StoreError> {
    let now = utc_timestamp(unix_now()).replace(':', "");
    let saved_to = chunk.join(format!("{LOG}.cut-at-{end}.{now}"));
    write_synced(&saved_to, &bytes[end as usize..]).map_err(|e| StoreError::write(&saved_to, e))?;
    sync_dir(chunk).map_err(|e| StoreError::io(chunk, e))?;
    Ok(saved_to)
}

/// Saves `bytes[end..]` beside the log, then cuts the log to `end`.
fn cut_tail(
    path: &Path,
    chunk: &Path,
    file: &File,
    bytes: &[u8],
    end: u64,
    reason: StopReason,
) -> Result<CutTail, StoreError> {
    let saved_to = save_cut_bytes(chunk, bytes, end)?;
    file.set_len(end).and_then(|_| file.sync_data()).map_err(|e| StoreError::io(path, e))?;
    Ok(CutTail { offset: end, len: bytes.len() as u64 - end, reason, saved_to })
}
