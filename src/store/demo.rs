//! The embedded demo store: something real to open on a fresh machine.
//!
//! Built from `assets/` into the user cache dir: `v1` (the demo quads), `v2`
//! (v1 plus a few more, epoch marker 1), `current -> v2`, and a delta log
//! whose batches (epoch 2, so visible over v2) use every entry kind.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::base_writer::{write_base, BaseOptions};
use super::fsutil::{replace_symlink, sync_dir, write_synced};
use super::sidecars;
use crate::format::deltalog::{self, Batch, Entry, Object, Quad, Subject};
use crate::format::epoch::{self, EpochMarker};
use crate::format::term::{self, Escaping};
use crate::format::transport::Transport;

const DEMO_NQ: &str = include_str!("../../assets/demo.nq");
const DEMO_V2_NQ: &str = include_str!("../../assets/demo-v2-additions.nq");
const EX: &str = "https://demo.cottas.example";

pub fn default_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("cottas-tui").join("demo")
}

/// Splits one N-Quads line of the demo assets into cell tokens. The assets
/// are written so that literals are the only tokens that contain spaces and
/// they are always followed by a datatype, tag or the graph; the full N-Quads
/// importer (oxttl) replaces this in the import milestone.
fn demo_rows(text: &str) -> Result<Vec<[String; 4]>> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let body = line
            .strip_suffix('.')
            .map(str::trim_end)
            .with_context(|| format!("demo line {}: no final '.'", n + 1))?;
        let mut toks: Vec<String> = Vec::new();
        let mut rest = body;
        while !rest.is_empty() {
            let end = if rest.starts_with('"') {
                let close = find_closing_quote(rest)
                    .with_context(|| format!("demo line {}: unterminated literal", n + 1))?;
                close + rest[close..].find(' ').unwrap_or(rest.len() - close)
            } else {
                rest.find(' ').unwrap_or(rest.len())
            };
            let tok = &rest[..end];
            let t = term::parse_token(tok).map_err(|e| anyhow::anyhow!("demo line {}: {e}", n + 1))?;
            toks.push(term::render(&t, Escaping::Pycottas));
            rest = rest[end..].trim_start();
        }
        if toks.len() == 3 {
            toks.push(term::DEFAULT_GRAPH.to_string());
        }
        let row: [String; 4] =
            toks.try_into().map_err(|_| anyhow::anyhow!("demo line {}: expected 3 or 4 terms", n + 1))?;
        rows.push(row);
    }
    rows.sort();
    rows.dedup();
    Ok(rows)
}

fn find_closing_quote(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn write_version(dir: &Path, rows: &[[String; 4]], epoch_marker: u64) -> Result<()> {
    fs::create_dir_all(dir)?;
    let base = dir.join("data.cottas");
    let sizes = write_base(&base, rows, &BaseOptions::default())?;
    for (suffix, bytes) in sidecars::build(rows, &sizes).files() {
        write_synced(&dir.join(format!("data.cottas{suffix}")), &bytes)?;
    }
    write_synced(&dir.join("data.compacted-epoch"), &epoch::encode(&EpochMarker::new(epoch_marker)))?;
    sync_dir(dir)?;
    Ok(())
}

fn iri(path: &str) -> String {
    format!("{EX}/{path}")
}

fn demo_batches() -> Vec<Batch> {
    let foaf = |x: &str| format!("http://xmlns.com/foaf/0.1/{x}");
    let people = Some(iri("graph/people"));
    let lit =
        |s: &str| Object::Literal { lexical: s.into(), datatype: term::XSD_STRING.into(), language: None };
    let quad = |s: &str, p: String, o: Object, g: Option<String>| Quad {
        subject: Subject::Iri(iri(s)),
        predicate: p,
        object: o,
        graph: g,
    };
    vec![
        Batch {
            seq: 1,
            epoch: 2,
            entries: vec![
                Entry::add(quad("people/alan", foaf("name"), lit("Alan Turing"), people.clone())),
                Entry::add(quad(
                    "people/alan",
                    foaf("knows"),
                    Object::Iri(iri("people/grace")),
                    people.clone(),
                )),
            ],
        },
        Batch {
            seq: 2,
            epoch: 2,
            entries: vec![
                Entry::remove(quad(
                    "people/grace",
                    foaf("nick"),
                    Object::Literal {
                        lexical: "Grand-mère du COBOL".into(),
                        datatype: term::RDF_LANG_STRING.into(),
                        language: Some("fr".into()),
                    },
                    people.clone(),
                )),
                Entry::add(quad(
                    "people/grace",
                    foaf("nick"),
                    Object::Literal {
                        lexical: "Grandma COBOL".into(),
                        datatype: term::RDF_LANG_STRING.into(),
                        language: Some("en".into()),
                    },
                    people,
                )),
            ],
        },
        Batch { seq: 3, epoch: 2, entries: vec![Entry::create(iri("graph/scratch"))] },
        Batch {
            seq: 4,
            epoch: 2,
            entries: vec![
                Entry::add(quad("scratch/1", iri("vocab/tmp"), lit("temporary"), Some(iri("graph/scratch")))),
                Entry::clear(Some(iri("graph/scratch"))),
                Entry::drop_graph(iri("graph/scratch")),
            ],
        },
    ]
}

/// Builds the demo store at `dir` unless it is already there. Returns whether it built.
pub fn ensure(dir: &Path, rebuild: bool) -> Result<bool> {
    if dir.join("current").exists() && !rebuild {
        return Ok(false);
    }
    let parent = dir.parent().context("the demo dir has no parent")?;
    fs::create_dir_all(parent)?;
    let tmp = parent.join(format!(".demo.tmp.{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;

    let v1 = demo_rows(DEMO_NQ)?;
    let mut v2 = v1.clone();
    v2.extend(demo_rows(DEMO_V2_NQ)?);
    v2.sort();
    v2.dedup();
    write_version(&tmp.join("v1"), &v1, 0)?;
    write_version(&tmp.join("v2"), &v2, 1)?;
    write_synced(&tmp.join("data.deltalog"), &deltalog::encode_batches(&demo_batches(), Transport::Raw))?;
    replace_symlink(&tmp, "current", "v2")?;
    sync_dir(&tmp)?;
    if dir.exists() {
        fs::remove_dir_all(dir)?;
    }
    fs::rename(&tmp, dir)?;
    sync_dir(parent)?;
    Ok(true)
}
