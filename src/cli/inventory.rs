//! `cottas-tui PATH`: a one-line-per-file listing of a chunk or version dir,
//! with each file's kind and decode status, and the embedded demo store.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::dump;

#[derive(clap::Args, Debug, Default)]
pub struct DemoArgs {
    /// Where to build the demo store (default: the user cache dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Rebuild it even if it exists.
    #[arg(long)]
    pub rebuild: bool,
}

/// Lists `path` (a directory) or dumps it (a file).
pub fn run(path: &Path, out: &mut impl Write) -> Result<ExitCode> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}: cannot open", path.display()))?;
    if meta.is_file() {
        let args = dump::DumpArgs {
            file: path.to_path_buf(),
            json: false,
            hex: false,
            spans: false,
            offset: 0,
            length: None,
            color: super::ColorChoice { color: super::When::Never, no_color: true },
        };
        return Ok(dump::run(&args, out)?.code());
    }
    let mut problems = 0;
    list_dir(path, path, out, &mut problems)?;
    Ok(if problems == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn list_dir(root: &Path, dir: &Path, out: &mut impl Write, problems: &mut usize) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let rel = path.strip_prefix(root).unwrap_or(&path).display().to_string();
        let ft = e.file_type()?;
        if ft.is_symlink() {
            let target = std::fs::read_link(&path)?;
            let ok = path.exists();
            writeln!(
                out,
                "{} {rel} -> {}{}",
                if ok { "→" } else { "✗" },
                target.display(),
                if ok { "" } else { "  (dangling)" }
            )?;
            *problems += usize::from(!ok);
        } else if ft.is_dir() {
            writeln!(out, "  {rel}/")?;
            list_dir(root, &path, out, problems)?;
        } else {
            match dump::load(&path) {
                Ok(ins) => {
                    let status = match ins.problems.first() {
                        None => "ok".to_string(),
                        Some(p) => p.message.clone(),
                    };
                    *problems += usize::from(!ins.is_clean());
                    writeln!(
                        out,
                        "{} {rel:<32} {:<16} {:>10}  {status}",
                        if ins.is_clean() { "✓" } else { "✗" },
                        ins.kind.id(),
                        humansize::format_size(ins.size, humansize::BINARY)
                    )?;
                }
                Err(_) => writeln!(out, "  {rel:<32} {:<16}", "(other)")?,
            }
        }
    }
    Ok(())
}

/// Builds the demo store if missing, then lists it.
pub fn demo(args: &DemoArgs, out: &mut impl Write) -> Result<ExitCode> {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => crate::demo::default_dir(),
    };
    let built = crate::demo::ensure(&dir, args.rebuild)
        .with_context(|| format!("{}: cannot build the demo store", dir.display()))?;
    writeln!(out, "demo store {} at {}", if built { "built" } else { "found" }, dir.display())?;
    run(&dir, out)
}
