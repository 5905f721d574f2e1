//! The embedded demo store: something real to open on a fresh machine.
//!
//! Built from `assets/` into the user cache dir, through the real importer:
//! `v1` (the demo quads), `v2` (v1 plus a few more, epoch marker 1),
//! `current -> v2`, and a delta log whose batches (epoch 2, so visible over
//! v2) use every entry kind.

use std::fs;
use std::path::{Path, PathBuf};

use std::io::{Error, ErrorKind, Result};

use crate::format::deltalog::{self, Batch, Entry, Object, Quad, Subject};
use crate::format::epoch::{self, EpochMarker};
use crate::format::term;
use crate::format::transport::Transport;
use crate::import::ImportOptions;
use crate::store::fsutil::{replace_symlink, sync_dir, write_synced};

const DEMO_NQ: &str = include_str!("../assets/demo.nq");
const DEMO_V2_NQ: &str = include_str!("../assets/demo-v2-additions.nq");
const EX: &str = "https://demo.cottas.example";

pub fn default_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("cottas-tui").join("demo")
}

/// Imports the demo assets (through the real importer) into `out`.
fn import_assets(scratch: &Path, out: &Path, texts: &[(&str, &str)]) -> Result<()> {
    let mut inputs = Vec::new();
    for (name, text) in texts {
        let p = scratch.join(name);
        fs::write(&p, text)?;
        inputs.push(p);
    }
    crate::import::import(&ImportOptions::new(inputs, out.to_path_buf()), |_| {}).map_err(Error::other)?;
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
    let parent =
        dir.parent().ok_or_else(|| Error::new(ErrorKind::InvalidInput, "the demo dir has no parent"))?;
    fs::create_dir_all(parent)?;
    let tmp = parent.join(format!(".demo.tmp.{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;

    // v1: the demo quads, as `import` writes them.
    let scratch = parent.join(format!(".demo.scratch.{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch)?;
    fs::remove_dir(&tmp)?;
    import_assets(&scratch, &tmp, &[("demo.nq", DEMO_NQ)])?;
    // v2: v1 plus a few more quads, as if a compaction had folded epoch 1.
    let second = scratch.join("second");
    import_assets(&scratch, &second, &[("demo.nq", DEMO_NQ), ("demo-v2.nq", DEMO_V2_NQ)])?;
    fs::rename(second.join("v1"), tmp.join("v2"))?;
    let summary = tmp.join("v2").join("summary.json");
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&summary)?)?;
    v["version"] = "v2".into();
    write_synced(&summary, format!("{}\n", serde_json::to_string_pretty(&v)?).as_bytes())?;
    write_synced(&tmp.join("v2").join("data.compacted-epoch"), &epoch::encode(&EpochMarker::new(1)))?;
    sync_dir(&tmp.join("v2"))?;
    fs::remove_dir_all(&scratch)?;
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

/// The demo corpus's chunks: one healthy and larger, one with updates
/// pending across two epochs, one damaged (a torn log tail and a sidecar
/// whose bytes changed), so every view has something real to show.
pub const CORPUS_CHUNKS: [&str; 3] = ["healthy", "pending", "damaged"];

/// Quads of the healthy chunk, and rows per row group (small, so its base
/// has several row groups to chart and prune).
const HEALTHY_QUADS: usize = 40_000;
const HEALTHY_ROW_GROUP: usize = 10_000;

pub fn default_corpus_dir() -> PathBuf {
    default_dir().with_file_name("demo-corpus")
}

/// Builds the demo corpus at `root` unless it is already there (or
/// `rebuild`). Returns whether it built. Built beside `root` and renamed
/// into place, so an interrupted build leaves no half corpus.
pub fn ensure_corpus(root: &Path, rebuild: bool) -> Result<bool> {
    let complete = CORPUS_CHUNKS.iter().all(|c| root.join(c).join("current").exists());
    if complete && !rebuild {
        return Ok(false);
    }
    let parent =
        root.parent().ok_or_else(|| Error::new(ErrorKind::InvalidInput, "the demo dir has no parent"))?;
    fs::create_dir_all(parent)?;
    let tmp = parent.join(format!(".demo-corpus.tmp.{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    build_healthy(&tmp, &tmp.join("healthy"))?;
    ensure(&tmp.join("pending"), true)?;
    write_synced(&tmp.join("pending/data.deltalog"), &pending_log())?;
    ensure(&tmp.join("damaged"), true)?;
    damage(&tmp.join("damaged"))?;
    sync_dir(&tmp)?;
    if root.exists() {
        fs::remove_dir_all(root)?;
    }
    fs::rename(&tmp, root)?;
    sync_dir(parent)?;
    Ok(true)
}

/// Tens of thousands of quads in four named graphs and the default graph,
/// imported with small row groups.
fn build_healthy(scratch_parent: &Path, out: &Path) -> Result<()> {
    let scratch = scratch_parent.join(".scratch");
    fs::create_dir_all(&scratch)?;
    let input = scratch.join("healthy.nq");
    fs::write(&input, healthy_quads())?;
    let mut opts = ImportOptions::new(vec![input], out.to_path_buf());
    opts.base.row_group_size = HEALTHY_ROW_GROUP;
    crate::import::import(&opts, |_| {}).map_err(Error::other)?;
    fs::remove_dir_all(&scratch)
}

fn healthy_quads() -> String {
    use std::fmt::Write;
    let graphs = ["graph/people", "graph/orgs", "graph/docs", "graph/events"];
    let mut text = String::with_capacity(HEALTHY_QUADS * 140);
    for i in 0..HEALTHY_QUADS {
        let kind = ["person", "org", "doc", "event"][i % 4];
        let subject = iri(&format!("{kind}/{}", i / 4));
        let graph = if i % 10 == 9 { String::new() } else { format!(" <{}>", iri(graphs[i % 4])) };
        let (p, o) = match i % 5 {
            0 => (
                "http://www.w3.org/1999/02/22-rdf-syntax-ns#type".to_string(),
                format!("<{}>", iri(&format!("vocab/{kind}"))),
            ),
            1 => (iri("vocab/label"), format!("\"{kind} number {i}\"")),
            2 => (iri("vocab/size"), format!("\"{}\"^^<http://www.w3.org/2001/XMLSchema#integer>", i % 997)),
            3 => (
                iri("vocab/related"),
                format!("<{}>", iri(&format!("{kind}/{}", (i * 7919) % (HEALTHY_QUADS / 4)))),
            ),
            _ => (iri("vocab/note"), format!("\"note {i}\"@en")),
        };
        let _ = writeln!(text, "<{subject}> <{p}> {o}{graph} .");
    }
    text
}

/// The demo log and two more batches of a later epoch: both epochs are
/// above v2's marker, so a reader applies all of them (as after a
/// compaction that moved the epoch on and never flipped `current`).
fn pending_log() -> Vec<u8> {
    let lit =
        |s: &str| Object::Literal { lexical: s.into(), datatype: term::XSD_STRING.into(), language: None };
    let add = |s: &str, o: &str| {
        Entry::add(Quad {
            subject: Subject::Iri(iri(s)),
            predicate: iri("vocab/status"),
            object: lit(o),
            graph: Some(iri("graph/people")),
        })
    };
    let mut batches = demo_batches();
    let seq = batches.iter().map(|b| b.seq).max().unwrap_or(0);
    batches.push(Batch { seq: seq + 1, epoch: 3, entries: vec![add("people/ada", "on call")] });
    batches.push(Batch {
        seq: seq + 2,
        epoch: 3,
        entries: vec![add("people/grace", "on call"), add("people/charles", "off")],
    });
    deltalog::encode_batches(&batches, Transport::Raw)
}

/// A changed byte in the middle of v2's subject dictionary and the start
/// of a batch that never finished at the end of the log.
fn damage(chunk: &Path) -> Result<()> {
    damage_subject_dictionary(chunk)?;
    tear_log_tail(chunk)
}

/// Flips a bit in the middle of v2's subject dictionary: what `verify`
/// reports as a digest mismatch and `repair rebuild-sidecars v2` mends.
/// Public so tests damage stores the way the demo does.
pub fn damage_subject_dictionary(chunk: &Path) -> Result<()> {
    let dict = chunk.join("v2/data.cottas.s.dict");
    let mut bytes = fs::read(&dict)?;
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    write_synced(&dict, &bytes)
}

/// Appends the first 10 bytes of a batch frame that never finished (its
/// length cut short): a torn tail, as a crash mid-append leaves.
pub fn tear_log_tail(chunk: &Path) -> Result<()> {
    let log = chunk.join("data.deltalog");
    let mut bytes = fs::read(&log)?;
    bytes.extend_from_slice(b"DLB1\x01\x00\x00\x00\x40\x00");
    write_synced(&log, &bytes)
}
