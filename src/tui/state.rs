//! Everything the TUI shows. Rendering reads this and never changes it;
//! `action::update` is the only writer, and it reads no file: what comes
//! from disk arrives as a worker's message (see `load` and `worker`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::compact::CompactProgress;
use crate::format::kind::FileKind;
use crate::format::span::Span;
use crate::store::versions::layout::{self, LOG};
use crate::store::versions::Listing;

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

/// What the watcher compares: the log's length and mtime, `current`'s target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    pub log_len: u64,
    pub log_mtime: Option<std::time::SystemTime>,
    pub current: Option<PathBuf>,
}

/// The row groups and files of one version directory, as a worker read them.
#[derive(Clone, Debug)]
pub struct VersionDetails {
    pub dir: PathBuf,
    pub row_groups: RowGroups,
    pub files: Vec<FileRow>,
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
    pub fn new(
        path: PathBuf,
        bytes: Vec<u8>,
        kind: Option<FileKind>,
        spans: Vec<Span>,
        problems: Vec<String>,
    ) -> Decoder {
        Decoder {
            path,
            bytes,
            kind,
            spans,
            problems,
            span_sel: 0,
            cursor: 0,
            top: 0,
            search: None,
            tree_focus: true,
        }
    }

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
    /// What the last listing saw on disk; the watcher's reports are
    /// compared with it.
    pub watched: Observed,
    /// A listing was asked for and has not arrived: the watcher's reports
    /// wait for it.
    pub refreshing: bool,
    /// Visible rows of the main list, as the last frame laid them out.
    pub page: usize,
    /// Bytes per hex row in the decoder, as the last frame laid it out.
    pub hex_cols: u64,
}

impl App {
    /// The state before anything is read: [`App::startup`] says what to load.
    pub fn new(chunk: &Path, write: bool) -> App {
        App {
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
            watched: Observed::default(),
            refreshing: false,
            page: 20,
            hex_cols: 16,
        }
    }

    /// What to load first: the versions (then the selected one's files) and
    /// the log's index.
    pub fn startup(&mut self) -> Vec<super::effect::Effect> {
        self.refreshing = true;
        vec![super::effect::Effect::ListVersions, super::effect::Effect::IndexLog]
    }

    pub fn log_path(&self) -> PathBuf {
        self.chunk.join(LOG)
    }

    /// Takes a fresh listing; keeps the selection where it was, or starts on
    /// the current version.
    pub fn apply_listing(&mut self, listing: Result<Listing, String>, observed: Observed) {
        self.refreshing = false;
        self.watched = observed;
        match listing {
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
            Err(e) => self.listing_error = Some(e),
        }
    }

    /// Takes a version's details if it is still the selected one.
    pub fn apply_version(&mut self, details: VersionDetails) {
        if self.selected_version_dir().as_deref() != Some(details.dir.as_path()) {
            return;
        }
        self.row_groups = details.row_groups;
        self.files = details.files;
        self.file_sel = self.file_sel.min(self.files.len().saturating_sub(1));
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
}

/// Whether `name` names a version of this chunk (`:open v2`).
pub fn version_index(app: &App, name: &str) -> Option<usize> {
    layout::version_number(name)?;
    app.listing.as_ref()?.versions.iter().position(|v| v.name == name)
}
