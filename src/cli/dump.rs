//! `cottas-tui dump FILE`: decode one store file and show its structure.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;

use super::hexview::{self, HexOptions};
use super::ColorChoice;
use crate::inspect::{inspect, Inspection};

/// The JSON schema identifier; bumped on any incompatible change (docs/dump-json.md).
pub const JSON_SCHEMA: &str = "cottas-tui.dump/1";

#[derive(clap::Args, Debug)]
pub struct DumpArgs {
    /// A store file: any sidecar, data.deltalog, data.compacted-epoch or data.cottas.
    pub file: PathBuf,
    /// Emit the documented JSON schema (docs/dump-json.md) instead of text.
    #[arg(long, conflicts_with = "hex")]
    pub json: bool,
    /// Print a hex view with the decoded fields marked.
    #[arg(long)]
    pub hex: bool,
    /// Print the table of named byte spans.
    #[arg(long)]
    pub spans: bool,
    /// With --hex: first byte to show (decimal or 0x-prefixed hex).
    #[arg(long, value_parser = super::parse_offset, default_value = "0")]
    pub offset: u64,
    /// With --hex: number of bytes to show.
    #[arg(long, value_parser = super::parse_offset)]
    pub length: Option<u64>,
    #[command(flatten)]
    pub color: ColorChoice,
}

pub enum Outcome {
    Clean,
    Problems,
}

impl Outcome {
    pub fn code(&self) -> ExitCode {
        match self {
            Outcome::Clean => ExitCode::SUCCESS,
            Outcome::Problems => ExitCode::from(1),
        }
    }
}

/// Reads and inspects a file; `Err` means it could not be read or identified (exit 2).
pub fn load(path: &Path) -> Result<Inspection> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut ins = inspect(&name, &bytes).with_context(|| {
        format!(
            "{}: not a COTTAS store file (unknown magic {:02x?} and an unrecognised name)",
            path.display(),
            &bytes[..bytes.len().min(4)]
        )
    })?;
    let recorded = crate::inspect::recorded_problems(path, &bytes);
    crate::inspect::mark_spans(&mut ins.spans, &recorded);
    ins.problems.extend(recorded);
    Ok(ins)
}

pub fn run(args: &DumpArgs, out: &mut impl Write) -> Result<Outcome> {
    let ins = load(&args.file)?;
    let bytes = if args.hex { std::fs::read(&args.file)? } else { Vec::new() };
    if args.json {
        let v = to_json(&args.file, &ins, args.spans);
        serde_json::to_writer_pretty(&mut *out, &v)?;
        writeln!(out)?;
    } else {
        write_text(out, &args.file, &ins)?;
        if args.spans {
            writeln!(out, "\nspans:")?;
            for s in &ins.spans {
                writeln!(out, "  {s}")?;
            }
        }
        if args.hex {
            let color = args.color.enabled(std::io::stdout().is_terminal());
            let opts = HexOptions { color, from: args.offset, len: args.length };
            writeln!(out)?;
            out.write_all(hexview::render(&bytes, &ins.spans, &opts).as_bytes())?;
        }
    }
    Ok(if ins.is_clean() { Outcome::Clean } else { Outcome::Problems })
}

pub fn write_text(out: &mut impl Write, path: &Path, ins: &Inspection) -> std::io::Result<()> {
    writeln!(out, "{}", path.display())?;
    writeln!(out, "  kind      {} ({})", ins.kind.description(), ins.kind.id())?;
    writeln!(
        out,
        "  size      {} ({})",
        humansize::format_size(ins.size, humansize::BINARY),
        crate::text::plural(ins.size, "byte", "bytes")
    )?;
    match ins.problems.len() {
        0 => writeln!(out, "  status    ok")?,
        n => writeln!(out, "  status    {n} problem{}", if n == 1 { "" } else { "s" })?,
    }
    for p in &ins.problems {
        writeln!(out, "  PROBLEM   [{}] {}", p.class, p.message)?;
    }
    for n in &ins.notes {
        writeln!(out, "  note      {n}")?;
    }
    let width = ins.fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in &ins.fields {
        writeln!(out, "  {k:<width$}  {v}")?;
    }
    if !ins.items.is_empty() {
        writeln!(out, "  entries:")?;
        for i in &ins.items {
            writeln!(out, "    {i}")?;
        }
    }
    if !ins.is_clean() && ins.fields.is_empty() {
        writeln!(out, "  decoded before the problem (run with --hex to see the bytes):")?;
        for s in ins.spans.iter().take(40) {
            writeln!(out, "    {s}")?;
        }
    }
    Ok(())
}

pub fn to_json(path: &Path, ins: &Inspection, spans: bool) -> serde_json::Value {
    let mut v = json!({
        "schema": JSON_SCHEMA,
        "file": path.display().to_string(),
        "kind": ins.kind.id(),
        "description": ins.kind.description(),
        "size": ins.size,
        "status": if ins.is_clean() { "ok" } else { "problems" },
        "notes": ins.notes,
        "problems": ins.problems.iter().map(|p| json!({"offset": p.offset, "class": p.class, "message": p.message})).collect::<Vec<_>>(),
        "fields": ins.fields.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
        "value": ins.value,
    });
    if spans {
        v["spans"] = ins
            .spans
            .iter()
            .map(|s| {
                json!({
                    "name": s.name, "start": s.range.start, "end": s.range.end,
                    "role": s.role.as_str(), "value": s.value,
                    "status": if s.is_ok() { "ok" } else { "bad" }, "reason": s.reason,
                })
            })
            .collect();
    }
    v
}
