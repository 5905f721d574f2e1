//! The delta log as the store reads it. This is the one place that turns the
//! bytes of `data.deltalog` into committed batches, classifies what follows
//! them, and decides which batches a version's marker lets through
//! (docs/format.md §9). The writer, the overlay, compaction, verify, repair,
//! the `log` command and the TUI all come through here, so the rules cannot
//! drift apart between a reader and the writer that must agree with it.

pub mod index;
pub mod writer;

use std::path::{Path, PathBuf};

use super::StoreError;
use crate::format::deltalog::{self, BatchFrame, Detail, StopReason};
use crate::format::transport::Transport;
use crate::format::FormatError;

/// Which batches a version sees, from its compacted-epoch marker: the one
/// place that decides it. Every reader of the log (the overlay, compaction's
/// net delta, counts, the `log` command, the TUI's log view) asks this, so
/// none compares epochs itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Visibility {
    marker: Option<u64>,
}

/// What a batch is to a version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchState {
    /// Above the version's marker (or the version has none): folded in on open.
    Visible,
    /// At or below the marker: folded into the base already, or a write the
    /// marker silently hides (which `verify` reports).
    Shadowed,
}

impl BatchState {
    /// The word the `log` command and the TUI print.
    pub fn label(self) -> &'static str {
        match self {
            BatchState::Visible => "visible",
            BatchState::Shadowed => "shadowed",
        }
    }
}

impl Visibility {
    /// Over a version whose compacted epoch is `marker` (`None`: no marker).
    pub fn over(marker: Option<u64>) -> Self {
        Visibility { marker }
    }

    /// The marker this was built from, for display.
    pub fn marker(self) -> Option<u64> {
        self.marker
    }

    /// A batch stamped `epoch` is visible above the marker, or always
    /// without one.
    pub fn of_epoch(self, epoch: u64) -> BatchState {
        if self.marker.is_none_or(|m| epoch > m) {
            BatchState::Visible
        } else {
            BatchState::Shadowed
        }
    }

    pub fn of(self, frame: &BatchFrame) -> BatchState {
        self.of_epoch(frame.batch.epoch)
    }

    pub fn sees(self, frame: &BatchFrame) -> bool {
        self.of(frame) == BatchState::Visible
    }
}

/// What follows the last committed batch.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Tail {
    /// The file ends right after the last committed batch.
    #[default]
    Clean,
    /// Bytes that are not a whole batch, with nothing valid after them: what
    /// a crash mid-append leaves. Readers ignore them; the next append cuts
    /// them off (keeping a copy).
    Torn(Damage),
    /// Damage with whole, valid batches after it (`hidden`, their offsets):
    /// committed writes no reader can reach. Readers and writers refuse;
    /// cutting them is a person's decision (`repair truncate-torn-tail`).
    Hiding(Damage, Vec<u64>),
}

/// Where the committed prefix stops and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    pub offset: u64,
    pub len: u64,
    pub reason: StopReason,
    pub error: Option<FormatError>,
}

/// What [`Log::scan`] learns besides the batches.
#[derive(Debug)]
pub struct Scanned {
    pub transport: Transport,
    pub tail: Tail,
    /// A legacy-transport log's batches, decoded whole.
    pub legacy: Option<Vec<BatchFrame>>,
}

impl Tail {
    /// Classifies what the decoder left over: nothing, a torn end, or
    /// damage with valid batches hidden behind it.
    fn after(bytes: &[u8], l: deltalog::Leftover) -> Tail {
        if l.reason == StopReason::CleanEnd {
            return Tail::Clean;
        }
        let damage = Damage { offset: l.offset, len: l.len, reason: l.reason, error: l.error };
        let hidden = deltalog::hidden_batches(bytes, damage.offset as usize);
        if hidden.is_empty() {
            Tail::Torn(damage)
        } else {
            Tail::Hiding(damage, hidden)
        }
    }

    pub fn damage(&self) -> Option<&Damage> {
        match self {
            Tail::Clean => None,
            Tail::Torn(d) | Tail::Hiding(d, _) => Some(d),
        }
    }
    pub fn hidden(&self) -> &[u64] {
        match self {
            Tail::Hiding(_, h) => h,
            _ => &[],
        }
    }
}

/// A whole log, read once: its committed batches and its tail.
#[derive(Clone, Debug)]
pub struct Log {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub transport: Transport,
    pub frames: Vec<BatchFrame>,
    pub tail: Tail,
}

impl Log {
    /// Reads the log at `path`; `Ok(None)` when there is no such file (a
    /// store with no updates yet).
    pub fn read(path: &Path) -> Result<Option<Log>, StoreError> {
        match std::fs::read(path) {
            Ok(bytes) => Log::decode(path, bytes).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(path, e)),
        }
    }

    /// Reads the log, or an empty one when the file does not exist.
    pub fn read_or_empty(path: &Path) -> Result<Log, StoreError> {
        match Log::read(path)? {
            Some(log) => Ok(log),
            None => Log::decode(path, deltalog::encode_header()),
        }
    }

    /// Decodes bytes already read from `path`. Only a bad file header is an
    /// error here; damage after it is the [`Tail`].
    pub fn decode(path: &Path, bytes: Vec<u8>) -> Result<Log, StoreError> {
        let log = deltalog::decode_with(&bytes, Detail::None)
            .result
            .map_err(|e| StoreError::from_format(path, &e))?;
        let tail = Tail::after(&bytes, log.leftover);
        Ok(Log { path: path.to_path_buf(), bytes, transport: log.transport, frames: log.batches, tail })
    }

    /// The log's committed batches handed to `visit` one at a time, over
    /// `bytes` (from [`Log::read_bytes`]), without keeping them: a
    /// million-batch log costs its bytes and one decoded batch. Same decoder and tail rules as
    /// [`Log::decode`]. A log that may be in the legacy transport (the raw
    /// reading stops early and bytes above 0x7f exist) is decoded whole
    /// instead and its frames are returned: `visit` then saw only frames that
    /// the caller must forget.
    pub fn scan(path: &Path, bytes: &[u8], visit: &mut dyn FnMut(BatchFrame)) -> Result<Scanned, StoreError> {
        let raw = deltalog::scan_raw(bytes, visit).map_err(|e| StoreError::from_format(path, &e))?;
        let maybe_legacy = raw.leftover.reason != StopReason::CleanEnd && bytes.iter().any(|&b| b >= 0x80);
        if maybe_legacy {
            let log = Log::decode(path, bytes.to_vec())?;
            if log.transport == Transport::LegacyCodePoints {
                return Ok(Scanned { transport: log.transport, tail: log.tail, legacy: Some(log.frames) });
            }
        }
        Ok(Scanned { transport: raw.transport, tail: Tail::after(bytes, raw.leftover), legacy: None })
    }

    /// Where the committed batches end.
    pub fn committed_len(&self) -> u64 {
        self.tail.damage().map_or(self.bytes.len() as u64, |d| d.offset)
    }

    /// The batches a version sees.
    pub fn visible(&self, seen: Visibility) -> impl Iterator<Item = &BatchFrame> {
        self.frames.iter().filter(move |f| seen.sees(f))
    }

    /// The batches a version's marker hides.
    pub fn shadowed(&self, seen: Visibility) -> impl Iterator<Item = &BatchFrame> {
        self.frames.iter().filter(move |f| !seen.sees(f))
    }

    /// An error when damage hides committed batches: answering (or appending)
    /// without them would be silently wrong. `doing` says what was refused.
    pub fn refuse_hidden(&self, doing: &str) -> Result<(), StoreError> {
        self.tail.refuse_hidden(&self.path, doing)
    }

    /// The log file's bytes for [`Log::scan`], read (`pread`), never
    /// mapped: a writer may cut the file after its committed batches at any
    /// moment (a failed append, `repair truncate-torn-tail`), and a read of a
    /// cut file only comes back short where a mapping would fault (SIGBUS)
    /// and kill the reader. `Ok(None)` when there is no such file.
    pub fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(path, e)),
        }
    }
}

impl Tail {
    /// An error when damage hides committed batches of the log at `path`.
    pub fn refuse_hidden(&self, path: &Path, doing: &str) -> Result<(), StoreError> {
        let Tail::Hiding(d, hidden) = self else { return Ok(()) };
        Err(StoreError::format(
            path,
            d.offset,
            format!(
                "the log is damaged here ({}), and {} the damage (the first at offset {}); \
                 {doing}. `cottas-tui verify` shows the damage; \
                 `cottas-tui repair truncate-torn-tail` cuts it off, keeping a copy",
                d.reason.as_str(),
                crate::text::plural(hidden.len(), "valid batch follows", "valid batches follow"),
                hidden[0]
            ),
        ))
    }
}
