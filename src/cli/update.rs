//! `cottas-tui update CHUNK_DIR`: SPARQL 1.1 Update, one durable delta-log
//! batch per request. Each committed request prints its receipt on stdout
//! after the fsync; notes and repairs go to stderr.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::sparql::update::Updater;

#[derive(clap::Args, Debug)]
pub struct UpdateArgs {
    /// The chunk dir (holding `current` and data.deltalog).
    pub target: PathBuf,
    /// Update requests to apply, in order, before any -e and -f ones (`-`
    /// reads one from stdin).
    #[arg(value_name = "UPDATE")]
    pub texts: Vec<String>,
    /// An update request; repeat to apply several, each its own batch, in order.
    #[arg(short = 'e', long = "execute", value_name = "UPDATE")]
    pub requests: Vec<String>,
    /// Read a request from a file (`-`: stdin); repeatable. Without a
    /// request, -e or -f, stdin.
    #[arg(short, long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// When another writer holds the lock, wait up to this long for it.
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
}

/// Runs the command; once per process (its folded log is freed by the exit).
pub fn run(args: &UpdateArgs, out: &mut impl Write) -> Result<ExitCode> {
    super::not_a_file_name(&args.texts)?;
    let texts = super::request_texts(&[&args.texts[..], &args.requests[..]].concat(), &args.files, "update")?;
    let mut updater = Updater::open(&args.target, args.wait.map(Duration::from_secs_f64))?;
    let w = updater.writer();
    if w.created {
        crate::eprint_line!("cottas-tui: created {} (there was no delta log)", w.path.display());
    }
    if let Some(cut) = &w.cut {
        crate::eprint_line!(
            "cottas-tui: cut {} at offset {} from {} ({}); they are saved in {}",
            crate::text::plural(cut.len, "byte", "bytes"),
            cut.offset,
            w.path.display(),
            cut.reason.as_str(),
            cut.saved_to.display()
        );
    }
    for (i, text) in texts.iter().enumerate() {
        let outcome = updater.apply(text).with_context(|| {
            if texts.len() > 1 {
                format!("request {} of {} (the ones before it are committed)", i + 1, texts.len())
            } else {
                "the request (nothing was appended)".to_string()
            }
        })?;
        for n in &outcome.notes {
            crate::eprint_line!("cottas-tui: note: {n}");
        }
        writeln!(out, "{outcome}")?;
        out.flush()?;
    }
    // The writer (and its lock) goes now; the folded log is left to the
    // process's exit (see `super::free_at_exit`).
    super::free_at_exit(updater.into_overlay());
    Ok(ExitCode::SUCCESS)
}
