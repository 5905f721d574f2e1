//! `import`, `index` and `lookup`: the store-building and read-path commands.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::format::term::{self, Term};
use crate::import::{self, ImportOptions, InputFormat, Progress};
use crate::store::sidecars::rebuild;
use crate::view::terms::Tok;
use crate::view::{Graphs, Quads, Snapshot};

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// N-Quads, N-Triples, Turtle or TriG files (plain, .gz or .zst); `-` for stdin.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The chunk directory to create (must not exist, or be empty).
    #[arg(long)]
    pub out: PathBuf,
    /// Syntax of every input (default: from each file name; stdin is N-Quads).
    #[arg(long, value_enum)]
    pub format: Option<InputFormat>,
    /// Put the statements of triple-only inputs into this graph.
    #[arg(long, value_name = "IRI")]
    pub graph: Option<String>,
    /// Memory for sorting before spilling to temp files (e.g. 512M, 2G).
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub memory_limit: usize,
    /// Skip malformed statements (count them, report the first few) instead of stopping.
    #[arg(long)]
    pub lenient: bool,
    /// ZSTD level of the s column, most of the raw bytes (1 fastest … 22 smallest).
    #[arg(long, default_value_t = crate::store::base::writer::BaseOptions::default().zstd_level)]
    pub zstd_level: i32,
    /// ZSTD level of the p, o and g columns (docs/benchmarks-history.md has the
    /// size/time trade-off of several levels).
    #[arg(long, default_value_t = crate::store::base::writer::BaseOptions::default().zstd_level_small)]
    pub zstd_level_small: i32,
    /// ZSTD level of a p, o or g page over a quarter of its row group's s
    /// chunk (long literals, which cost ZSTD far more per byte).
    #[arg(long, default_value_t = crate::store::base::writer::BaseOptions::default().zstd_level_large)]
    pub zstd_level_large: i32,
    /// Parser threads for N-Quads / N-Triples input, plain, compressed or
    /// stdin (default: one per core); Turtle and TriG parse on one thread.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
    /// Show progress even when stderr is not a terminal (one line per update).
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
}

pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim().to_ascii_uppercase();
    let (num, mult) = match t.trim_end_matches("IB").trim_end_matches('B') {
        x if x.ends_with('K') => (&x[..x.len() - 1], 1usize << 10),
        x if x.ends_with('M') => (&x[..x.len() - 1], 1 << 20),
        x if x.ends_with('G') => (&x[..x.len() - 1], 1 << 30),
        x => (x, 1),
    };
    let malformed = || format!("{s:?} is not a size like 512M or 2G");
    let n = num.trim();
    // Digits and at most one point: no sign, exponent, `inf` or `NaN`.
    let digits = n.chars().filter(|c| c.is_ascii_digit()).count();
    if digits == 0 || n.chars().any(|c| !c.is_ascii_digit() && c != '.') || n.matches('.').count() > 1 {
        return Err(if n.starts_with('-') {
            format!("{s:?}: a size cannot be negative")
        } else {
            malformed()
        });
    }
    let bytes = n.parse::<f64>().map_err(|_| malformed())? * mult as f64;
    if bytes >= usize::MAX as f64 {
        return Err(format!("{s:?} is larger than this machine can address"));
    }
    Ok(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_and_negative_or_malformed_ones_are_refused() {
        for (text, bytes) in
            [("512M", 512 << 20), ("2G", 2 << 30), ("1.5k", 1536), ("64 MiB", 64 << 20), ("7", 7)]
        {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        assert!(parse_size("-1G").unwrap_err().contains("cannot be negative"));
        for bad in ["", "G", "1e3", "inf", "NaN", "1.2.3M", "+5M", "5X", "99999999999999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad:?} was accepted");
        }
    }
}

pub fn run_import(args: &ImportArgs, out: &mut impl Write) -> Result<ExitCode> {
    let mut opts = ImportOptions::new(args.inputs.clone(), args.out.clone());
    opts.format = args.format;
    opts.graph = args.graph.clone();
    opts.memory_limit = args.memory_limit;
    opts.lenient = args.lenient;
    if let Some(n) = args.threads {
        opts.threads = n.max(1);
    }
    opts.base.zstd_level = args.zstd_level;
    opts.base.zstd_level_small = args.zstd_level_small;
    opts.base.zstd_level_large = args.zstd_level_large;
    if let Some(g) = &opts.graph {
        if !g.contains(':') {
            bail!("--graph {g:?} is not an absolute IRI");
        }
    }
    let tty = std::io::stderr().is_terminal();
    let show = args.progress || (!args.quiet && tty);
    let mut last = Instant::now();
    let mut last_phase = None;
    let progress = |p: &Progress| {
        let new_phase = last_phase != Some(p.phase);
        if show && (new_phase || last.elapsed().as_millis() > 100) {
            last = Instant::now();
            last_phase = Some(p.phase);
            let rate = if p.elapsed > 0.0 { p.quads as f64 / p.elapsed } else { 0.0 };
            let line = format!(
                "{:<18} {:>12} quads  {:>9.0} quads/s  {:>6.2}s",
                p.phase.as_str(),
                p.quads,
                rate,
                p.elapsed
            );
            if tty {
                crate::eprint_text!("\r\x1b[2K{line}");
            } else if new_phase {
                crate::eprint_line!("{line}");
            }
        }
    };
    let result = import::import(&opts, progress);
    if show && tty {
        crate::eprint_text!("\r\x1b[2K");
    }
    let summary = result.map_err(anyhow::Error::from)?;
    if summary.skipped > 0 {
        match summary.skipped {
            1 => crate::eprint_line!("skipped 1 malformed statement:"),
            n => crate::eprint_line!(
                "skipped {n} malformed statements; the first {}:",
                summary.first_errors.len()
            ),
        }
        for e in &summary.first_errors {
            crate::eprint_line!("  {e}");
        }
    }
    writeln!(out, "{summary}")?;
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args, Debug)]
pub struct IndexArgs {
    /// A chunk dir or version dir whose base needs sidecars.
    pub target: PathBuf,
    /// Memory the build may use (e.g. 512M, 2G); beyond it the dictionaries
    /// spill to temp files beside the version.
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub memory_limit: usize,
}

pub fn run_index(args: &IndexArgs, out: &mut impl Write) -> Result<ExitCode> {
    let shown = crate::cli::triage::progress_line("index");
    let progress = shown.as_ref().map(|p| p as &(dyn Fn(u64, u64) + Sync));
    let r = rebuild::index(&args.target, rebuild::Options { memory_limit: args.memory_limit, progress });
    crate::cli::triage::end_progress(&shown);
    let r = r?;
    for (name, action) in &r.files {
        writeln!(out, "{:<28} {}", name, action.describe())?;
    }
    writeln!(out, "{} sidecars in {}", r.files.len(), r.version_dir.display())?;
    if let Some(b) = &r.backed_up {
        writeln!(out, "the replaced files were copied to {} first", b.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args, Debug)]
pub struct LookupArgs {
    /// A chunk dir, version dir or data.cottas.
    pub target: PathBuf,
    /// Subject, in N-Triples syntax (`<http://…>`, `_:b0`).
    #[arg(short, long)]
    pub s: Option<String>,
    /// Predicate (`<http://…>`).
    #[arg(short, long)]
    pub p: Option<String>,
    /// Object (`<http://…>`, `"text"@en`, `"42"^^<…#integer>`).
    #[arg(short, long)]
    pub o: Option<String>,
    /// Graph: `<http://…>` or DEFAULT.
    #[arg(short, long)]
    pub g: Option<String>,
    /// Print the pruning figures to stderr.
    #[arg(long)]
    pub explain: bool,
    /// Print only the number of matching quads.
    #[arg(long)]
    pub count: bool,
    /// Answer from the base alone, without the delta log's pending changes
    /// (what the last compaction left on disk).
    #[arg(long)]
    pub base_only: bool,
    /// Benchmark: run the lookup N more times on the warm store and print
    /// the latency (min, median, p95) to stderr.
    #[arg(long, value_name = "N")]
    pub repeat: Option<usize>,
}

fn parse_term(flag: &str, v: &Option<String>) -> Result<Option<Term>> {
    v.as_deref()
        .map(|t| term::parse_token(t).with_context(|| format!("-{flag} {t:?} is not an N-Triples term")))
        .transpose()
}

/// A pattern term as the view's canonical token.
fn lookup_tok(flag: &str, v: &Option<String>) -> Result<Option<Tok<'static>>> {
    Ok(parse_term(flag, v)?.map(|t| Tok::Own(term::render(&t, term::Escaping::Pycottas).into_bytes().into())))
}

/// Writes the quads as N-Quads lines; returns how many.
fn write_nquads(quads: Quads<'_>, out: &mut impl Write) -> Result<usize> {
    let mut n = 0;
    for q in quads {
        let q = q?;
        for t in [&q.s, &q.p, &q.o].into_iter().chain(q.g.as_ref()) {
            out.write_all(t.bytes())?;
            out.write_all(b" ")?;
        }
        out.write_all(b".\n")?;
        n += 1;
    }
    Ok(n)
}

pub fn run_lookup(args: &LookupArgs, out: &mut impl Write) -> Result<ExitCode> {
    let [s, p, o] = [("s", &args.s), ("p", &args.p), ("o", &args.o)].map(|(f, v)| lookup_tok(f, v));
    let (s, p, o) = (s?, p?, o?);
    let g = lookup_tok("g", &args.g)?;
    let snapshot = if args.base_only {
        Snapshot::open_base_only(&args.target, 256 << 20)?
    } else {
        Snapshot::open(&args.target, 256 << 20)?
    };
    let view = snapshot.view();
    let graphs = match &g {
        None => Graphs::All,
        Some(t) if t.bytes() == term::DEFAULT_GRAPH.as_bytes() => Graphs::Default,
        Some(t) => Graphs::Named(t),
    };
    let sink = std::cell::RefCell::new(crate::store::read::Explain::default());
    let run = || view.quads(s.as_ref(), p.as_ref(), o.as_ref(), graphs).map(|(q, _)| q.report_to(&sink));
    let t = Instant::now();
    let quads = run()?;
    let n = if args.count { quads.try_count()? } else { write_nquads(quads, out)? };
    let took = t.elapsed();
    let ex = sink.take();
    if args.count {
        writeln!(out, "{n}")?;
    }
    if let Some(reps) = args.repeat {
        super::report_repeats(n, took.as_secs_f64() * 1e3, reps, || {
            std::hint::black_box(run()?.try_count()?);
            Ok(())
        })?;
    }
    let store = &snapshot.store;
    if args.explain {
        crate::eprint_line!(
            "store: {} ({})",
            store.layout.base.display(),
            store.layout.resolution.describe()
        );
        for p in &store.sidecars.problems() {
            crate::eprint_line!("sidecar not used: {p}");
        }
        crate::eprint_line!("{ex}");
        let o = &snapshot.overlay;
        crate::eprint_line!(
            "delta                  {} visible batches, {} shadowed{}",
            o.batches_visible,
            o.batches_shadowed,
            if args.base_only { " (not applied: --base-only)" } else { "" }
        );
        crate::eprint_line!("time                   {:.3} ms", took.as_secs_f64() * 1e3);
    }
    Ok(ExitCode::SUCCESS)
}
