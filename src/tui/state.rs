//! Everything the TUI shows. Rendering reads this and never changes it;
//! `action::update` is the only writer, and it reads no file: what comes
//! from disk arrives as a worker's message (see `load` and `worker`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::compact::CompactProgress;
use crate::format::kind::FileKind;
use crate::store::versions::layout::{self, LOG};
use crate::store::versions::Listing;
use crate::view::kept::{Budget, Snapshots};

pub use super::views::corpus::CorpusView;
pub use super::views::decoder::Decoder;
pub use super::views::files::FilesView;
pub use super::views::log::LogView;
pub use super::views::query::QueryState;
pub use super::views::store::StoreView;
pub use super::views::timeline::TimelineView;
pub use super::views::triage::TriageView;
pub use crate::triage::repair::Repair;

use crate::store::log::index::LogIndex;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    /// Only when the UI was opened on a corpus root.
    Corpus,
    Store,
    Triage,
    Files,
    Decoder,
    Log,
    Query,
    Timeline,
}

pub const TABS: [Tab; 7] =
    [Tab::Store, Tab::Triage, Tab::Files, Tab::Decoder, Tab::Log, Tab::Query, Tab::Timeline];

impl Tab {
    pub fn title(self) -> &'static str {
        match self {
            Tab::Corpus => "Corpus",
            Tab::Store => "Store",
            Tab::Triage => "Triage",
            Tab::Files => "Files",
            Tab::Decoder => "Decoder",
            Tab::Log => "Log",
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

#[derive(Debug, Default)]
pub struct QueryTable {
    pub vars: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub elapsed: Duration,
    pub error: Option<String>,
    /// For ASK.
    pub boolean: Option<bool>,
    /// Rows the query produced (more than `rows` past the display limit).
    pub total: usize,
    /// Said under the results (`sparql::hints`).
    pub note: Option<String>,
}

/// What a confirmed dialog starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pending {
    Compact,
    Repair(Repair),
    /// Quit once what runs has stopped (a compaction is cancelled first).
    QuitWhenIdle,
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
    /// Set to stop the compaction (honoured until it publishes).
    pub cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// `--memory-limit`'s default, as the CLI commands'.
pub const DEFAULT_MEMORY_LIMIT: usize = 1 << 30;

pub struct App {
    /// The chunk the chunk views show (the corpus root until one is opened).
    pub chunk: PathBuf,
    /// Opened on a corpus root: its chunks, and which one is open.
    pub corpus: Option<CorpusView>,
    pub write: bool,
    /// Memory for each query, export, verify or compaction a worker runs
    /// (`--memory-limit`).
    pub memory_limit: usize,
    /// The chunk's kept snapshot: queries and exports fold the log once
    /// while the disk does not change ([`App::set_memory_limit`] keeps it
    /// in step with the limit).
    pub reads: std::sync::Arc<Snapshots>,
    /// The last `:update`'s writer, kept for the next (`worker::update`).
    pub writer: super::worker::KeptWriter,
    pub tab: Tab,
    /// Drill-down history for Esc: where the user came from.
    pub back: Vec<Tab>,
    pub listing: Option<Listing>,
    pub listing_error: Option<String>,
    /// Each view's own state.
    pub store: StoreView,
    pub triage: TriageView,
    pub files: FilesView,
    pub decoder: Option<Decoder>,
    pub log_view: LogView,
    pub query: QueryState,
    pub timeline: TimelineView,
    /// The log's index (shared: the log, files and timeline views read it).
    pub log: Option<LogIndex>,
    pub compaction: Option<Compaction>,
    pub confirm: Option<Confirm>,
    pub help: bool,
    pub cmdline: Option<String>,
    pub status: String,
    pub tick: usize,
    pub quit: bool,
    /// Quit once the running compaction or repair has ended (and cleaned
    /// up after itself): asked for with `q` while one ran.
    pub quit_when_idle: bool,
    /// A repair runs on a worker.
    pub repairing: bool,
    /// What the last listing saw on disk; the watcher's reports are
    /// compared with it.
    pub watched: Observed,
    /// A listing was asked for and has not arrived: the watcher's reports
    /// wait for it.
    pub refreshing: bool,
    pub screen: Screen,
    /// Draw without colours (`NO_COLOR`, no-color.org): selections and
    /// highlights stay visible as reverse video.
    pub monochrome: bool,
}

/// What the terminal's size means for the views.
#[derive(Clone, Copy, Debug)]
pub struct Screen {
    /// Visible rows of the main list.
    pub page: usize,
    /// Columns: the decoder splits them between its panes.
    pub width: u16,
    /// Rows of the terminal (a click is placed in the decoder's panes by them).
    pub height: u16,
}

impl App {
    /// The state before anything is read: [`App::startup`] says what to load.
    pub fn new(chunk: &Path, write: bool) -> App {
        App {
            chunk: chunk.to_path_buf(),
            corpus: None,
            write,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            reads: std::sync::Arc::new(Snapshots::new(chunk, Budget::Memory(DEFAULT_MEMORY_LIMIT))),
            writer: Default::default(),
            tab: Tab::Store,
            back: Vec::new(),
            listing: None,
            listing_error: None,
            store: StoreView::default(),
            triage: TriageView::default(),
            files: FilesView::default(),
            decoder: None,
            log_view: LogView::default(),
            log: None,
            timeline: TimelineView::default(),
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
            quit_when_idle: false,
            repairing: false,
            watched: Observed::default(),
            refreshing: false,
            screen: Screen { page: 20, width: 120, height: 30 },
            monochrome: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
        }
    }

    /// Queries, exports, verify and compaction within `limit` bytes.
    pub fn set_memory_limit(&mut self, limit: usize) {
        self.memory_limit = limit;
        self.reads = std::sync::Arc::new(Snapshots::new(&self.chunk, Budget::Memory(limit)));
    }

    /// The state for a corpus root: its list of chunks, nothing open yet.
    pub fn for_corpus(root: &Path, write: bool) -> App {
        let mut app = App::new(root, write);
        app.corpus = Some(CorpusView::new(root.to_path_buf()));
        app.tab = Tab::Corpus;
        app
    }

    /// Whether the chunk views have a chunk to show.
    pub fn has_chunk(&self) -> bool {
        self.corpus.as_ref().is_none_or(|c| c.opened.is_some())
    }

    /// The tabs this session has: the corpus list first when there is one,
    /// the chunk views once a chunk is open.
    pub fn tabs(&self) -> Vec<Tab> {
        let corpus = self.corpus.is_some().then_some(Tab::Corpus);
        let chunk = if self.has_chunk() { &TABS[..] } else { &[] };
        corpus.into_iter().chain(chunk.iter().copied()).collect()
    }

    /// What to load first: the corpus's chunks; or the versions (then the
    /// selected one's files) and the log's index.
    pub fn startup(&mut self) -> Vec<super::effect::Effect> {
        if let Some(c) = self.corpus.as_mut().filter(|c| c.opened.is_none()) {
            c.ask_listing();
            return vec![super::effect::Effect::ListCorpus(c.root.clone())];
        }
        self.refreshing = true;
        use super::effect::Effect;
        vec![Effect::ListVersions, Effect::IndexLog, Effect::ReadSnapshot]
    }

    /// Shows `chunk` in the chunk views, everything read of the previous
    /// one dropped; returns what to load.
    pub fn open_chunk(&mut self, chunk: &Path) -> Vec<super::effect::Effect> {
        let Some(corpus) = self.corpus.take() else { return Vec::new() };
        let (write, monochrome, screen, memory) =
            (self.write, self.monochrome, self.screen, self.memory_limit);
        let query_text = std::mem::take(&mut self.query.text);
        let history = std::mem::take(&mut self.query.history);
        *self = App::new(chunk, write);
        self.set_memory_limit(memory);
        self.corpus = Some(CorpusView { opened: Some(chunk.to_path_buf()), ..corpus });
        (self.monochrome, self.screen) = (monochrome, screen);
        (self.query.text, self.query.history) = (query_text, history);
        self.back = vec![Tab::Corpus];
        self.startup()
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
                    self.store.sel = l
                        .versions
                        .iter()
                        .position(|v| v.is_current)
                        .unwrap_or(l.versions.len().saturating_sub(1));
                }
                self.store.sel = self.store.sel.min(l.versions.len().saturating_sub(1));
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
        self.store.row_groups = details.row_groups;
        self.files.rows = details.files;
        self.files.sel = self.files.sel.min(self.files.shown().len().saturating_sub(1));
    }

    pub fn selected_version_dir(&self) -> Option<PathBuf> {
        self.listing.as_ref()?.versions.get(self.store.sel).map(|v| v.path.clone())
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

    /// Which log batches the current version sees.
    pub fn current_visibility(&self) -> crate::store::log::Visibility {
        crate::store::log::Visibility::over(self.current_marker())
    }
}

/// Whether `name` names a version of this chunk (`:open v2`).
pub fn version_index(app: &App, name: &str) -> Option<usize> {
    layout::version_number(name)?;
    app.listing.as_ref()?.versions.iter().position(|v| v.name == name)
}
