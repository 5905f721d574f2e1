//! Everything the TUI shows, and how it is loaded. Rendering reads this and
//! never changes it; `action::update` is the only writer.
//!
//! Loading is cheap on purpose: version listings read footers only, the file
//! list reads headers only, and the log is indexed on a worker thread. A file
//! is decoded in full only when the user opens it in the decoder.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::compact::CompactProgress;
use crate::format::kind::{self, FileKind};
use crate::format::span::Span;
use crate::store::layout::{self, BASE, CURRENT, LOG};
use crate::store::versions::{self, Listing};

use crate::store::log::index::LogIndex;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Store,
    Files,
    Decoder,
    Log,
    Query,
    Timeline,
}

pub const TABS: [Tab; 6] = [Tab::Store, Tab::Files, Tab::Decoder, Tab::Log, Tab::Query, Tab::Timeline];

impl Tab {
    pub fn title(self) -> &'static str {
        match self {
            Tab::Store => "Store",
            Tab::Files => "Files",
            Tab::Decoder => "Decoder",
            Tab::Log => "Delta log",
            Tab::Query => "Query",
            Tab::Timeline => "Timeline",
        }
    }
}

/// A check shown as ✓ / ✗ / – (not applicable) / … (not checked yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    Ok,
    Bad,
    NotApplicable,
    Pending,
}

#[derive(Clone, Debug)]
pub struct FileRow {
    pub path: PathBuf,
    pub name: String,
    pub size: u64,
    pub kind: Option<FileKind>,
    pub magic: Check,
    pub version: Check,
    pub checksum: Check,
}

/// Rows and compressed bytes per row group of the selected version (footer only).
#[derive(Clone, Debug, Default)]
pub struct RowGroups {
    pub rows: Vec<u64>,
    pub bytes: Vec<u64>,
}

#[derive(Debug)]
pub struct Decoder {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub kind: Option<FileKind>,
    pub spans: Vec<Span>,
    pub problems: Vec<String>,
    pub span_sel: usize,
    /// The byte under the hex cursor.
    pub cursor: u64,
    /// First hex row shown (16 bytes a row).
    pub top: u64,
    pub search: Option<Vec<u8>>,
    /// Whether the structure tree (true) or the hex pane has the keys.
    pub tree_focus: bool,
}

impl Decoder {
    /// The innermost span holding `offset`.
    pub fn span_at(&self, offset: u64) -> Option<usize> {
        self.spans
            .iter()
            .enumerate()
            .filter(|(_, s)| s.range.contains(&offset))
            .min_by_key(|(_, s)| s.range.end - s.range.start)
            .map(|(i, _)| i)
    }
}

#[derive(Debug, Default)]
pub struct QueryTable {
    pub vars: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub elapsed: Duration,
    pub error: Option<String>,
    /// For ASK.
    pub boolean: Option<bool>,
}

#[derive(Default)]
pub struct QueryState {
    pub text: String,
    pub editing: bool,
    pub history: Vec<String>,
    pub history_pos: Option<usize>,
    pub running: Option<(Instant, spareval::CancellationToken)>,
    pub result: Option<QueryTable>,
    pub scroll: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepairKind {
    TruncateTornTail,
    ResetCurrent,
    RebuildSidecars(String),
}

/// What a confirmed dialog starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pending {
    Compact,
    Repair(RepairKind),
}

#[derive(Debug)]
pub struct Confirm {
    pub title: String,
    pub text: String,
    pub then: Pending,
}

#[derive(Debug)]
pub struct Compaction {
    pub started: Instant,
    pub last: Option<CompactProgress>,
}

pub struct App {
    pub chunk: PathBuf,
    pub write: bool,
    pub tab: Tab,
    /// Drill-down history for Esc: where the user came from.
    pub back: Vec<Tab>,
    pub listing: Option<Listing>,
    pub listing_error: Option<String>,
    pub version_sel: usize,
    pub row_groups: RowGroups,
    pub files: Vec<FileRow>,
    pub file_sel: usize,
    pub decoder: Option<Decoder>,
    pub log: Option<LogIndex>,
    pub log_sel: usize,
    pub log_top: usize,
    pub log_expanded: Option<usize>,
    pub query: QueryState,
    pub compaction: Option<Compaction>,
    pub confirm: Option<Confirm>,
    pub help: bool,
    pub cmdline: Option<String>,
    pub status: String,
    pub tick: usize,
    pub quit: bool,
    /// Last seen (log length, log mtime, current target), for the watcher.
    pub watched: (u64, Option<std::time::SystemTime>, Option<PathBuf>),
    /// Visible rows of the main list, as the last frame laid them out.
    pub page: usize,
    /// Bytes per hex row in the decoder, as the last frame laid it out.
    pub hex_cols: u64,
}

impl App {
    pub fn new(chunk: &Path, write: bool) -> App {
        let mut app = App {
            chunk: chunk.to_path_buf(),
            write,
            tab: Tab::Store,
            back: Vec::new(),
            listing: None,
            listing_error: None,
            version_sel: 0,
            row_groups: RowGroups::default(),
            files: Vec::new(),
            file_sel: 0,
            decoder: None,
            log: None,
            log_sel: 0,
            log_top: 0,
            log_expanded: None,
            query: QueryState {
                text: "SELECT ?s ?p ?o ?g WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } } LIMIT 100"
                    .into(),
                ..QueryState::default()
            },
            compaction: None,
            confirm: None,
            help: false,
            cmdline: None,
            status: String::new(),
            tick: 0,
            quit: false,
            watched: (0, None, None),
            page: 20,
            hex_cols: 16,
        };
        app.reload_versions();
        app.watched = app.observe();
        app
    }

    pub fn log_path(&self) -> PathBuf {
        self.chunk.join(LOG)
    }

    /// (log length, log mtime, `current` target) now.
    pub fn observe(&self) -> (u64, Option<std::time::SystemTime>, Option<PathBuf>) {
        let meta = std::fs::metadata(self.log_path()).ok();
        (
            meta.as_ref().map_or(0, |m| m.len()),
            meta.and_then(|m| m.modified().ok()),
            std::fs::read_link(self.chunk.join(CURRENT)).ok(),
        )
    }

    pub fn reload_versions(&mut self) {
        match versions::list(&self.chunk) {
            Ok(l) => {
                if self.listing.is_none() {
                    self.version_sel = l
                        .versions
                        .iter()
                        .position(|v| v.is_current)
                        .unwrap_or(l.versions.len().saturating_sub(1));
                }
                self.version_sel = self.version_sel.min(l.versions.len().saturating_sub(1));
                self.listing = Some(l);
                self.listing_error = None;
            }
            Err(e) => self.listing_error = Some(e.to_string()),
        }
        self.load_version_details();
    }

    pub fn selected_version_dir(&self) -> Option<PathBuf> {
        self.listing.as_ref()?.versions.get(self.version_sel).map(|v| v.path.clone())
    }

    /// What a file's checksum column shows: for the log, what its index
    /// found (every batch checksum, and whether anything follows the last
    /// committed batch); pending until the index is built.
    pub fn checksum_check(&self, file: &FileRow) -> Check {
        if file.kind != Some(FileKind::DeltaLog) || file.path != self.log_path() {
            return file.checksum;
        }
        match &self.log {
            None => Check::Pending,
            Some(ix) if ix.error.is_some() || ix.tail != crate::store::log::Tail::Clean => Check::Bad,
            Some(_) => Check::Ok,
        }
    }

    pub fn current_marker(&self) -> Option<u64> {
        self.listing.as_ref()?.versions.iter().find(|v| v.is_current).and_then(|v| v.marker)
    }

    /// Row-group figures and the file list of the selected version: footers
    /// and headers only.
    pub fn load_version_details(&mut self) {
        self.row_groups = RowGroups::default();
        self.files.clear();
        let Some(dir) = self.selected_version_dir() else { return };
        if let Ok(base) = crate::store::base::Base::open(&dir.join(BASE)) {
            for rg in base.metadata().row_groups() {
                self.row_groups.rows.push(rg.num_rows().max(0) as u64);
                self.row_groups.bytes.push(rg.compressed_size().max(0) as u64);
            }
        }
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect())
            .unwrap_or_default();
        paths.sort();
        paths.insert(0, self.log_path());
        self.files = paths.into_iter().filter(|p| p.exists()).map(|p| file_row(&self.chunk, &p)).collect();
        self.file_sel = self.file_sel.min(self.files.len().saturating_sub(1));
    }

    /// Opens a file in the decoder (the one explicit full decode).
    pub fn open_decoder(&mut self, path: &Path) {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                self.status = format!("{}: {e}", path.display());
                return;
            }
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let ins = crate::inspect::inspect(&name, &bytes);
        let (kind, mut spans, problems) = match ins {
            Some(i) => (
                Some(i.kind),
                i.spans,
                i.problems.iter().map(|p| format!("at byte {}: {}", p.offset, p.message)).collect(),
            ),
            None => (None, Vec::new(), vec!["not a store file: shown as raw bytes".to_string()]),
        };
        spans.sort_by_key(|s| (s.range.start, std::cmp::Reverse(s.range.end)));
        self.decoder = Some(Decoder {
            path: path.to_path_buf(),
            bytes,
            kind,
            spans,
            problems,
            span_sel: 0,
            cursor: 0,
            top: 0,
            search: None,
            tree_focus: true,
        });
    }
}

fn check(ok: bool) -> Check {
    if ok {
        Check::Ok
    } else {
        Check::Bad
    }
}

/// Size, kind and header checks of one file, from its first bytes (and, for
/// the 24-byte marker, its whole content).
pub fn file_row(chunk: &Path, path: &Path) -> FileRow {
    let name = path.strip_prefix(chunk).unwrap_or(path).display().to_string();
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let mut head = [0u8; 8];
    let n = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
    let fname = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let kind = kind::detect(&fname, &head[..n]);
    let na = Check::NotApplicable;
    let (magic, version, checksum) = match kind {
        None => (na, na, na),
        Some(FileKind::Parquet) => (check(head[..n.min(4)] == *b"PAR1"), na, na),
        Some(FileKind::EpochMarker) => {
            let full = std::fs::read(path).unwrap_or_default();
            let ok = crate::format::epoch::decode(&full).result.is_ok();
            (check(head.starts_with(b"CEP1")), check(n >= 8 && head[4..8] == [1, 0, 0, 0]), check(ok))
        }
        Some(k) => {
            let magic_ok = n >= 4 && head[..4] == k.magic();
            let version_ok = n >= 8 && head[4..8] == [1, 0, 0, 0];
            // The log's batch checksums are checked by the log index, on a
            // worker: until it reports, nothing has been checked.
            (check(magic_ok), check(version_ok), if k == FileKind::DeltaLog { Check::Pending } else { na })
        }
    };
    FileRow { path: path.to_path_buf(), name, size, kind, magic, version, checksum }
}

/// Whether `path` names a version of this chunk (`:open v2`).
pub fn version_index(app: &App, name: &str) -> Option<usize> {
    layout::version_number(name)?;
    app.listing.as_ref()?.versions.iter().position(|v| v.name == name)
}
