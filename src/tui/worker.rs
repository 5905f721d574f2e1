//! Long work off the UI thread: indexing the log, queries, compaction and
//! exports. Each worker opens what it needs itself and reports back over the
//! channel; the UI thread only ever receives messages.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::Instant;

use spareval::{CancellationToken, QueryEvaluator, QueryResults};
use spargebra::SparqlParser;

use super::state::QueryTable;
use crate::compact::{self, CompactOptions, CompactProgress};
use crate::sparql::dataset::StoreDataset;
use crate::sparql::limits::spawn_request_thread;
use crate::sparql::run::{run_query, OutputFormat, QueryOptions};
use crate::store::log::index::LogIndex;
use crate::store::open::Store;
use crate::store::read::{ColumnCache, Explain};
use crate::view::overlay::Overlay;

/// Rows kept for display; the status line says when a result has more.
pub const MAX_ROWS: usize = 10_000;

pub enum Msg {
    LogIndexed(Box<LogIndex>),
    QueryDone(QueryTable),
    CompactProgress(CompactProgress),
    CompactDone(Result<String, String>),
    Exported(Result<String, String>),
    /// An update request or a repair finished (the message says what it did).
    Wrote(Result<String, String>),
}

/// One SPARQL Update request through the same writer as `cottas-tui update`.
pub fn spawn_update(chunk: PathBuf, text: String, tx: Sender<Msg>) {
    spawn_request_thread(move || {
        let r = crate::sparql::update::Updater::open(&chunk, Some(std::time::Duration::from_secs(5)))
            .and_then(|mut u| u.apply(&text))
            .map(|o| o.to_string())
            .map_err(|e| e.to_string());
        let _ = tx.send(Msg::Wrote(r));
    });
}

/// A repair through the same code as `cottas-tui repair … --yes`.
pub fn spawn_repair(chunk: PathBuf, what: super::state::RepairKind, tx: Sender<Msg>) {
    use super::state::RepairKind;
    use crate::triage::repair;
    std::thread::spawn(move || {
        let wait = Some(std::time::Duration::from_secs(5));
        let r = match &what {
            RepairKind::TruncateTornTail => repair::truncate_tail(&chunk, wait),
            RepairKind::ResetCurrent => repair::reset_current(&chunk, wait),
            RepairKind::RebuildSidecars(v) => repair::rebuild_sidecars(&chunk, v, wait),
        };
        let _ = tx.send(Msg::Wrote(r.map(|a| a.lines.join("; ")).map_err(|e| e.to_string())));
    });
}

pub fn spawn_log_index(path: PathBuf, tx: Sender<Msg>) {
    std::thread::spawn(move || {
        let _ = tx.send(Msg::LogIndexed(Box::new(LogIndex::build(&path))));
    });
}

pub fn spawn_query(chunk: PathBuf, text: String, token: CancellationToken, tx: Sender<Msg>) {
    spawn_request_thread(move || {
        let started = Instant::now();
        let mut table = run_for_table(&chunk, &text, token)
            .unwrap_or_else(|e| QueryTable { error: Some(e), ..QueryTable::default() });
        table.elapsed = started.elapsed();
        let _ = tx.send(Msg::QueryDone(table));
    });
}

fn run_for_table(chunk: &Path, text: &str, token: CancellationToken) -> Result<QueryTable, String> {
    let query = crate::sparql::limits::parse_query(SparqlParser::new(), text)
        .map_err(|e| crate::sparql::run::QueryError::from(e).to_string())?;
    let store = Store::open(chunk).map_err(|e| e.to_string())?;
    let cache = ColumnCache::new(256 << 20);
    let overlay = Overlay::load(&store, &cache).map_err(|e| e.to_string())?;
    let explain = RefCell::new(Explain::default());
    let dataset = StoreDataset {
        store: &store,
        overlay: &overlay,
        cache: &cache,
        explain: &explain,
        union_default_graph: false,
        named: Default::default(),
    };
    let evaluator = QueryEvaluator::new().with_cancellation_token(token.clone());
    let cancelled = |e: spareval::QueryEvaluationError| {
        if token.is_cancelled() {
            "cancelled".to_string()
        } else {
            e.to_string()
        }
    };
    let mut table = QueryTable::default();
    match evaluator.prepare(&query).execute(dataset).map_err(cancelled)? {
        QueryResults::Boolean(b) => table.boolean = Some(b),
        QueryResults::Solutions(sols) => {
            table.vars = sols.variables().iter().map(|v| v.as_str().to_string()).collect();
            for s in sols {
                let s = s.map_err(cancelled)?;
                if table.rows.len() < MAX_ROWS {
                    table.rows.push(
                        s.values()
                            .iter()
                            .map(|t| t.as_ref().map(|t| t.to_string()).unwrap_or_default())
                            .collect(),
                    );
                }
            }
        }
        QueryResults::Graph(triples) => {
            table.vars = vec!["subject".into(), "predicate".into(), "object".into()];
            for t in triples {
                let t = t.map_err(cancelled)?;
                if table.rows.len() < MAX_ROWS {
                    table.rows.push(vec![
                        t.subject.to_string(),
                        t.predicate.to_string(),
                        t.object.to_string(),
                    ]);
                }
            }
        }
    }
    Ok(table)
}

pub fn spawn_compact(chunk: PathBuf, tx: Sender<Msg>) {
    std::thread::spawn(move || {
        let progress_tx = tx.clone();
        let r = compact::compact(&chunk, &CompactOptions::default(), |p| {
            let _ = progress_tx.send(Msg::CompactProgress(p.clone()));
        });
        let _ = tx.send(Msg::CompactDone(r.map(|s| s.to_string()).map_err(|e| e.to_string())));
    });
}

pub fn spawn_export(chunk: PathBuf, text: String, out: PathBuf, format: OutputFormat, tx: Sender<Msg>) {
    spawn_request_thread(move || {
        let r = (|| -> Result<String, String> {
            let store = Store::open(&chunk).map_err(|e| e.to_string())?;
            let cache = ColumnCache::new(256 << 20);
            let overlay = Overlay::load(&store, &cache).map_err(|e| e.to_string())?;
            let mut file = std::io::BufWriter::new(
                std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?,
            );
            let opts = QueryOptions { format: Some(format), ..QueryOptions::default() };
            let s =
                run_query(&store, &overlay, &cache, &text, &opts, &mut file).map_err(|e| e.to_string())?;
            std::io::Write::flush(&mut file).map_err(|e| e.to_string())?;
            Ok(format!("exported {} results to {}", s.rows, out.display()))
        })();
        let _ = tx.send(Msg::Exported(r));
    });
}
