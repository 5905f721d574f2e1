//! What handling an action asks for, as data. `action::update` returns
//! effects and never performs them; the event loop hands each one to
//! `worker::spawn`, and render tests run them in place with
//! `worker::settle`. That is what keeps the update step pure: it reads no
//! file, starts no thread and decodes nothing.

use std::path::PathBuf;

use spareval::CancellationToken;

use super::state::Repair;
use crate::sparql::run::OutputFormat;

pub enum Effect {
    /// List the versions (footers only) → `Msg::Listed`.
    ListVersions,
    /// Row groups and header checks of one version directory → `Msg::VersionLoaded`.
    LoadVersion(PathBuf),
    /// Index the log → `Msg::LogIndexed`.
    IndexLog,
    /// Decode one file for the decoder, the cursor at `at` → `Msg::Opened`.
    OpenFile {
        path: PathBuf,
        at: Option<u64>,
    },
    /// The current version's most frequent namespaces → `Msg::Namespaces`.
    Namespaces,
    /// Fold the log into the chunk's kept snapshot ahead of the first
    /// query, so a large pending log is folded while the person reads the
    /// first screen → `Msg::SnapshotRead`.
    ReadSnapshot,
    /// Run a query for the results table → `Msg::QueryDone`.
    Query {
        text: String,
        token: CancellationToken,
    },
    /// Run a query into a file → `Msg::Exported`.
    Export {
        text: String,
        out: PathBuf,
        format: OutputFormat,
    },
    /// Apply one SPARQL Update as one batch → `Msg::Wrote`.
    Update(String),
    /// Say what compaction would do → `Msg::Planned`.
    PlanCompaction,
    /// Compact; `cancel` set from the UI stops it → `Msg::CompactDone`.
    Compact {
        cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    },
    /// Say what a repair would do → `Msg::Planned`.
    PlanRepair(Repair),
    Repair(Repair),
    /// Verify the chunk (`deep`: every sidecar rebuilt and compared) →
    /// `Msg::VerifyProgress`…, then `Msg::Verified`.
    Verify {
        deep: bool,
    },
    /// The batches of the log whose offset, seq, epoch or entries hold
    /// every word of the text (`/` in the Log view) → `Msg::LogFiltered`.
    FilterLog(String),
    /// Find and summarise the chunks under a corpus root → `Msg::CorpusListed`.
    ListCorpus(PathBuf),
    /// Verify every chunk under a corpus root → `Msg::CorpusVerified`.
    VerifyCorpus(PathBuf),
}
