//! The command-line front end: argument parsing and output. All decoding and
//! store logic lives in the library modules; this layer only formats results
//! and maps them to exit codes users can script against:
//!
//! * 0 — success / decoded clean;
//! * 1 — ran, found problems (a damaged file, a failed check);
//! * 2 — could not run (unreadable input, usage error);
//! * 3 — the store is locked by another writer (retry, or pass `--wait`).

pub mod corpus;
pub mod dump;
pub mod hexview;
pub mod inventory;
pub mod query;
pub mod serve;
pub mod store_cmds;
pub mod triage;
pub mod update;
pub mod versions;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::exit::{Classify, ExitClass};

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "cottas-tui",
    version,
    about = "Inspect, verify and operate COTTAS RDF stores on disk",
    after_help = "`cottas-tui --batch DIR [query options]` is the same as `cottas-tui query DIR`."
)]
pub struct Cli {
    /// A chunk dir (or a corpus root holding chunk dirs) to open in the
    /// terminal UI; or, when stdout is not a terminal or with --list, to list
    /// with every file's status. Without one, the UI opens the demo corpus.
    pub path: Option<PathBuf>,
    /// Rebuild the demo corpus (a healthy chunk, one with pending updates,
    /// one damaged) before opening it.
    #[arg(long)]
    pub demo_reset: bool,
    /// In the UI: allow the update, compact and repair actions.
    #[arg(long)]
    pub write: bool,
    /// Print the file listing instead of opening the UI.
    #[arg(long)]
    pub list: bool,
    /// In the UI: memory for each query, export, verify or compaction it
    /// runs (e.g. 512M, 2G), as those commands' own --memory-limit.
    #[arg(long, default_value = "1G", value_parser = store_cmds::parse_size)]
    pub memory_limit: usize,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decode one store file and print its structure (exit 0 clean, 1 problems, 2 unreadable).
    Dump(dump::DumpArgs),
    /// Build the embedded demo store (if needed) and list what is in it.
    Demo(inventory::DemoArgs),
    /// Create a store from N-Quads, N-Triples, Turtle or TriG files.
    Import(store_cmds::ImportArgs),
    /// Build missing or invalid sidecars for a base (never touches data.cottas).
    Index(store_cmds::IndexArgs),
    /// Print the quads matching a pattern, through the sidecar-driven read path.
    Lookup(store_cmds::LookupArgs),
    /// Run SPARQL queries over base ⊕ delta (exit 1 on a query error).
    Query(query::QueryArgs),
    /// Apply SPARQL 1.1 Update requests: one durable delta-log batch each (exit 3 when locked).
    Update(update::UpdateArgs),
    /// Serve the SPARQL 1.1 Protocol over HTTP (read-only unless --write).
    Serve(serve::ServeArgs),
    /// Fold base ⊕ delta into a new version and make it current (writers keep writing).
    Compact(versions::CompactArgs),
    /// List the versions of a chunk, and debris of interrupted operations.
    Versions(versions::VersionsArgs),
    /// Remove old versions and debris (dry run unless --yes).
    Gc(versions::GcArgs),
    /// Point `current` at an older version (only with an empty log, or --force).
    Rollback(versions::RollbackArgs),
    /// Check every file of a store; read-only (exit 0 clean, 1 findings, 2 could not run).
    Verify(triage::VerifyArgs),
    /// One line per delta-log batch (in the spirit of pg_waldump).
    Log(triage::LogArgs),
    /// Copy-first repairs: truncate-torn-tail, rebuild-sidecars, reset-current, restore-footer.
    Repair(triage::RepairArgs),
    /// Commands over every chunk of a corpus (a directory of chunk dirs): list, verify, compact, export.
    Corpus(corpus::CorpusArgs),
}

#[derive(clap::Args, Debug, Clone)]
pub struct ColorChoice {
    /// When to colour output.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: When,
    /// Same as --color never.
    #[arg(long)]
    pub no_color: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    pub fn enabled(&self, is_tty: bool) -> bool {
        if self.no_color {
            return false;
        }
        match self.color {
            When::Always => true,
            When::Never => false,
            When::Auto => is_tty && std::env::var_os("NO_COLOR").is_none(),
        }
    }
}

/// Parses `123` or `0x7b`.
pub fn parse_offset(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("{s:?} is not a byte offset (decimal or 0x-hex): {e}"))
}

/// Refuses a request argument that is the name of a file (`query STORE
/// report.rq`): it would fail as SPARQL, with a message about the text
/// `report.rq`, when the person meant `-f report.rq`.
pub fn not_a_file_name(texts: &[String]) -> anyhow::Result<()> {
    let file = texts
        .iter()
        .find(|t| !t.contains(char::is_whitespace) && t.as_str() != "-" && Path::new(t).is_file());
    match file {
        Some(f) => anyhow::bail!("{f:?} is a file, not SPARQL: to run what it holds, use -f {f}"),
        None => Ok(()),
    }
}

/// The texts of the inline requests (positional, then `-e`), then of `-f`
/// files, or else all of stdin: how `query` and `update` take their
/// requests. `-` in either place reads stdin (once; a second `-` gets what is
/// left, nothing).
pub fn request_texts(inline: &[String], files: &[PathBuf], what: &str) -> anyhow::Result<Vec<String>> {
    Ok(requests(inline, files, what)?.into_iter().map(|r| r.text).collect())
}

/// One request's text and where it came from, for error messages.
pub struct Request {
    /// `the command line`, `stdin` or the file's path.
    pub origin: String,
    pub text: String,
}

/// The requests of a command, in order: inline texts (`-` reads stdin), then
/// files (`-`: stdin); stdin alone when none is given.
pub fn requests(inline: &[String], files: &[PathBuf], what: &str) -> anyhow::Result<Vec<Request>> {
    use anyhow::Context;
    let stdin = || -> anyhow::Result<Request> {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .with_context(|| format!("reading the {what} from stdin"))?;
        Ok(Request { origin: "stdin".into(), text })
    };
    let mut requests = Vec::with_capacity(inline.len() + files.len());
    for text in inline {
        requests.push(if text == "-" {
            stdin()?
        } else {
            Request { origin: "the command line".into(), text: text.clone() }
        });
    }
    for f in files {
        requests.push(if f.as_os_str() == "-" {
            stdin()?
        } else {
            let text = std::fs::read_to_string(f).with_context(|| format!("{}: cannot read", f.display()))?;
            Request { origin: f.display().to_string(), text }
        });
    }
    if requests.is_empty() {
        requests.push(stdin()?);
    }
    Ok(requests)
}

/// Runs `f` `n` times (at least once) and prints the latency line that
/// `lookup --repeat` and `query --repeat` share (parsed by benches/*.py).
pub fn report_repeats(
    rows: usize,
    first_ms: f64,
    n: usize,
    mut f: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut times = Vec::with_capacity(n.max(1));
    for _ in 0..n.max(1) {
        let t = std::time::Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let pick = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    crate::eprint_line!(
        "timing: rows={rows} runs={} min_ms={:.4} median_ms={:.4} p95_ms={:.4} first_ms={first_ms:.4}",
        times.len(),
        times[0],
        pick(0.5),
        pick(0.95)
    );
    Ok(())
}

/// The error and its causes, `: `-separated, leaving out a cause whose text
/// the message already says (our errors put their source's text in their
/// message, for callers that print only `Display`).
fn error_chain(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The exit class of an error: the first link of its chain that is one of
/// ours says it (each type decides its own class); anything else is a
/// failure.
fn exit_class(e: &anyhow::Error) -> ExitClass {
    fn ask<T: Classify + std::error::Error + 'static>(
        e: &(dyn std::error::Error + 'static),
    ) -> Option<ExitClass> {
        e.downcast_ref::<T>().map(Classify::exit_class)
    }
    e.chain()
        .find_map(|c| {
            ask::<crate::store::StoreError>(c)
                .or_else(|| ask::<crate::sparql::run::QueryError>(c))
                .or_else(|| ask::<crate::sparql::update::UpdateError>(c))
                .or_else(|| ask::<crate::import::ImportError>(c))
        })
        .unwrap_or(ExitClass::Failure)
}

/// Leaves `value` to the process's exit instead of freeing it: a command
/// about to return from `main` holding a folded log (hundreds of thousands
/// of small allocations, 7% of an `update` process over a 200,000-quad log)
/// would spend that time freeing memory the exit frees at once. Only for
/// what a command holds when it finishes; never in a loop.
pub(crate) fn free_at_exit<T>(value: T) {
    std::mem::forget(value);
}

fn dispatch(cli: Cli, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    match (cli.command, cli.path) {
        (Some(Command::Dump(args)), _) => Ok(dump::run(&args, out)?.code()),
        (Some(Command::Demo(args)), _) => inventory::demo(&args, out),
        (Some(Command::Import(args)), _) => store_cmds::run_import(&args, out),
        (Some(Command::Index(args)), _) => store_cmds::run_index(&args, out),
        (Some(Command::Lookup(args)), _) => store_cmds::run_lookup(&args, out),
        (Some(Command::Query(args)), _) => query::run(&args, out),
        (Some(Command::Update(args)), _) => update::run(&args, out),
        (Some(Command::Serve(args)), _) => serve::run(&args),
        (Some(Command::Compact(args)), _) => versions::run_compact(&args, out),
        (Some(Command::Versions(args)), _) => versions::run_versions(&args, out),
        (Some(Command::Gc(args)), _) => versions::run_gc(&args, out),
        (Some(Command::Rollback(args)), _) => versions::run_rollback(&args, out),
        (Some(Command::Verify(args)), _) => triage::run_verify(&args, out),
        (Some(Command::Log(args)), _) => triage::run_log(&args, out),
        (Some(Command::Repair(args)), _) => triage::run_repair(&args, out),
        (Some(Command::Corpus(args)), _) => corpus::run(&args, out),
        (None, path) => {
            let tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
            if path.is_none() && cli.demo_reset {
                let dir = crate::demo::default_corpus_dir();
                crate::demo::ensure_corpus(&dir, true)
                    .map_err(|e| anyhow::anyhow!("{}: cannot build the demo corpus: {e}", dir.display()))?;
                if !tty {
                    writeln!(out, "demo corpus rebuilt at {}", dir.display())?;
                    return Ok(ExitCode::SUCCESS);
                }
            }
            if path.is_none() && (cli.list || !tty) {
                return inventory::demo(&inventory::DemoArgs::default(), out);
            }
            let dir = match path {
                Some(p) => p,
                None => {
                    let dir = crate::demo::default_corpus_dir();
                    crate::demo::ensure_corpus(&dir, cli.demo_reset).map_err(|e| {
                        anyhow::anyhow!("{}: cannot build the demo corpus: {e}", dir.display())
                    })?;
                    dir
                }
            };
            if cli.list || !tty || !dir.is_dir() {
                return inventory::run(&dir, out);
            }
            crate::tui::run(&dir, cli.write, cli.memory_limit)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Runs the CLI and returns the process exit code. Everything runs on a
/// thread with the stack [`crate::sparql::limits`] sizes for the deepest
/// request it accepts.
pub fn main() -> ExitCode {
    crate::sparql::limits::on_request_stack(run_cli)
}

fn run_cli() -> ExitCode {
    let _ = crate::tui::PROCESS_START.set(std::time::Instant::now());
    // `--batch DIR …` is the scripted spelling of `query DIR …`.
    let args = std::env::args_os()
        .enumerate()
        .map(|(i, a)| if i == 1 && a == "--batch" { "query".into() } else { a });
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = dispatch(cli, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            crate::eprint_line!("cottas-tui: error: {}", error_chain(&e));
            ExitCode::from(exit_class(&e).code())
        }
    }
}
