//! `corpus export`: the corpus as plain files an engine reads, so DuckDB,
//! Spark (or anything that reads Parquet and runs SQL) sees every chunk's
//! base ⊕ delta without knowing the delta log exists.
//!
//! The export is a description, not a copy: `manifest.json` names each
//! chunk's resolved, immutable base (`vN/data.cottas`, never `current`,
//! which object stores cannot hold) and the log position the snapshot was
//! taken at; each chunk whose log changes anything gets one small Parquet
//! file of the log's *net* effect on that base (`op` `+`: after the log and
//! not in the base; `-`: in the base and not after the log). `-` rows carry
//! the base's own cells, byte for byte, so an engine removes them with a
//! plain equality anti-join whatever producer rendered the base; `+` rows
//! use the rendering our writers and pycottas use (docs/format.md §2).
//!
//! The cost is the deltas', not the bases' (`view::net` derives the net
//! effect from the reader's overlay): the bases are never read whole or
//! copied.
//!
//! Files are written beside their final names and renamed into place, the
//! manifest last: a directory with a `manifest.json` holds a complete export.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use super::chunk_name;
use crate::store::log::Log;
use crate::store::read::ColumnCache;
use crate::store::versions::open::Store;
use crate::store::StoreError;
use crate::view::net::{net_effect, NetRow};
use crate::view::overlay::Overlay;
use crate::view::union::{Facts, Overlaps, Shared};

/// The manifest's schema name and version: a reader checks both.
pub const MANIFEST_SCHEMA: &str = "cottas-tui.corpus-export";
/// Version 2: `cottas_quads` is a set (a quad several chunks hold is one
/// row) and the manifest lists the chunks not shown disjoint.
pub const MANIFEST_VERSION: u32 = 2;
/// The delta files' columns, in order.
pub const DELTA_COLUMNS: [&str; 5] = ["s", "p", "o", "g", "op"];
/// Rows per row group of a delta file (the bases' row-group size).
const DELTA_ROW_GROUP: usize = 122_880;

#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// Where the chunks' bases are, as the engine will see them (`s3://…`):
    /// replaces the local root in the generated SQL. The manifest keeps
    /// paths relative to the root either way.
    pub root_url: Option<String>,
    /// Where the export directory is, as the engine will see it.
    pub out_url: Option<String>,
    /// Column cache per chunk while finding removed quads in its base.
    pub cache_bytes: usize,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub schema: String,
    pub version: u32,
    /// The corpus root, absolute, when the export was taken.
    pub root: PathBuf,
    pub chunks: Vec<ChunkEntry>,
    /// Pairs of chunks that may hold a quad in common, and in which graphs:
    /// the `cottas_quads` view deduplicates those rows. Empty when every
    /// chunk is shown disjoint from every other ([`crate::view::union`]),
    /// the fast path.
    pub may_share: Vec<SharedPair>,
}

/// Two chunks (by name, earlier first) not shown disjoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SharedPair {
    pub chunks: (String, String),
    /// The graphs both may hold quads in (`DEFAULT` for the default
    /// graph); `null`: any graph.
    pub graphs: Option<Vec<String>>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ChunkEntry {
    /// The chunk's path under the root (`.` for the root itself).
    pub name: String,
    /// The version the snapshot read (`vN`), resolved through `current`.
    pub version: Option<String>,
    /// Relative to the root: the version directory and its base.
    pub version_dir: PathBuf,
    pub base: PathBuf,
    /// 4 (s p o g), or 3 for a triples-only base (pycottas): its quads are
    /// all in the default graph.
    pub columns: usize,
    /// Rows of the base, from its footer.
    pub rows: u64,
    pub log: LogPosition,
    /// The net-effect file, when the log changes anything.
    pub delta: Option<DeltaEntry>,
}

/// How much of the chunk's log the snapshot includes.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LogPosition {
    /// Bytes of committed batches read (a torn tail after them is not part
    /// of the snapshot); 0 without a log.
    pub committed_bytes: u64,
    /// The last committed batch's sequence number.
    pub last_seq: Option<u64>,
    /// The base's compacted-epoch marker: batches at or below it are
    /// already in the base.
    pub compacted_epoch: Option<u64>,
    pub batches_visible: usize,
    pub batches_shadowed: usize,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct DeltaEntry {
    /// Relative to the export directory.
    pub path: PathBuf,
    pub adds: u64,
    pub removes: u64,
}

/// Exports the snapshot of every chunk in `chunks` (under `root`) into
/// `out`, which must exist. Any chunk that cannot be read fails the whole
/// export: a snapshot missing a chunk would be silently wrong.
pub fn export(
    root: &Path,
    chunks: &[PathBuf],
    out: &Path,
    opts: &ExportOptions,
) -> Result<Manifest, StoreError> {
    let abs_root = std::path::absolute(root).map_err(|e| StoreError::io(root, e))?;
    let deltas = out.join("deltas");
    std::fs::create_dir_all(&deltas).map_err(|e| StoreError::io(&deltas, e))?;
    let mut entries = Vec::with_capacity(chunks.len());
    let mut facts = Vec::with_capacity(chunks.len());
    for (i, chunk) in chunks.iter().enumerate() {
        let name = chunk_name(root, chunk);
        let delta_name = PathBuf::from("deltas").join(format!("{i:05}-{}.parquet", file_safe(&name)));
        let (entry, fact) = export_chunk(root, chunk, name, out, &delta_name, opts)?;
        entries.push(entry);
        facts.push(fact);
    }
    let may_share = Overlaps::from_facts(&facts)
        .pairs()
        .into_iter()
        .map(|(a, b, shared)| SharedPair {
            chunks: (entries[a].name.clone(), entries[b].name.clone()),
            graphs: match shared {
                Shared::Graphs(g) => Some(g.iter().cloned().collect()),
                _ => None,
            },
        })
        .collect();
    let manifest = Manifest {
        schema: MANIFEST_SCHEMA.into(),
        version: MANIFEST_VERSION,
        root: abs_root,
        chunks: entries,
        may_share,
    };
    let abs_out = std::path::absolute(out).map_err(|e| StoreError::io(out, e))?;
    let root_url = opts.root_url.clone().unwrap_or_else(|| manifest.root.display().to_string());
    let out_url = opts.out_url.clone().unwrap_or_else(|| abs_out.display().to_string());
    for dialect in [super::views::Dialect::DuckDb, super::views::Dialect::Spark] {
        let sql = super::views::create_views(&manifest, dialect, &root_url, &out_url);
        write_atomically(&out.join(dialect.file_name()), sql.as_bytes())?;
    }
    let json =
        serde_json::to_vec_pretty(&manifest).map_err(|e| StoreError::io(out, std::io::Error::other(e)))?;
    write_atomically(&out.join("manifest.json"), &json)?;
    Ok(manifest)
}

fn export_chunk(
    root: &Path,
    chunk: &Path,
    name: String,
    out: &Path,
    delta_name: &Path,
    opts: &ExportOptions,
) -> Result<(ChunkEntry, Facts), StoreError> {
    let store = Store::open(chunk)?;
    let cache = ColumnCache::new(opts.cache_bytes.max(1 << 20));
    let log = match &store.layout.log {
        Some(path) => Log::read(path)?,
        None => None,
    };
    let mut position =
        LogPosition { compacted_epoch: store.marker.map(|m| m.epoch), ..LogPosition::default() };
    let overlay = match log {
        Some(log) => {
            log.refuse_hidden("refusing to export without them")?;
            position.committed_bytes = log.committed_len();
            position.last_seq = log.frames.last().map(|f| f.batch.seq);
            Overlay::from_batches(&store, &cache, log.frames)?
        }
        None => Overlay::default(),
    };
    position.batches_visible = overlay.batches_visible;
    position.batches_shadowed = overlay.batches_shadowed;
    let facts = Facts::of(&crate::view::View::new(&store, &overlay, &cache))?;
    let mut net = net_effect(&store, &overlay, &cache)?;
    let delta = if net.is_empty() {
        None
    } else {
        net.sort_unstable();
        let removes = net.iter().filter(|r| r.1 == b'-').count() as u64;
        let adds = net.len() as u64 - removes;
        write_delta(&out.join(delta_name), &net)?;
        Some(DeltaEntry { path: delta_name.to_path_buf(), adds, removes })
    };
    let layout = &store.layout;
    let relative = |p: &Path| p.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| p.to_path_buf());
    let entry = ChunkEntry {
        name,
        version: layout.version.clone(),
        version_dir: relative(&layout.version_dir),
        base: relative(&layout.base),
        columns: store.base.num_columns(),
        rows: store.base.num_rows(),
        log: position,
        delta,
    };
    Ok((entry, facts))
}

/// Writes the sorted net rows as Parquet: five UTF-8 columns, ZSTD.
fn write_delta(path: &Path, rows: &[NetRow]) -> Result<(), StoreError> {
    let fail = |e: parquet::errors::ParquetError| StoreError::io(path, std::io::Error::other(e));
    let schema = Arc::new(
        parse_message_type(
            "message cottas_delta { required binary s (STRING); required binary p (STRING); \
             required binary o (STRING); required binary g (STRING); required binary op (STRING); }",
        )
        .map_err(fail)?,
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
            .set_created_by(format!("cottas-tui {}", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let tmp = temp_beside(path);
    let file = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
    let mut writer = SerializedFileWriter::new(file, schema, props).map_err(fail)?;
    for group in rows.chunks(DELTA_ROW_GROUP) {
        let mut rg = writer.next_row_group().map_err(fail)?;
        for c in 0..DELTA_COLUMNS.len() {
            let values: Vec<ByteArray> = group
                .iter()
                .map(|(cells, op)| ByteArray::from(if c < 4 { cells[c].clone() } else { vec![*op] }))
                .collect();
            let mut col = rg.next_column().map_err(fail)?.expect("five columns");
            col.typed::<ByteArrayType>().write_batch(&values, None, None).map_err(fail)?;
            col.close().map_err(fail)?;
        }
        rg.close().map_err(fail)?;
    }
    let file = writer.into_inner().map_err(fail)?;
    file.sync_all().map_err(|e| StoreError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))
}

fn temp_beside(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `bytes` to `path` through a temp file and a rename, fsynced.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = temp_beside(path);
    let mut f = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(|e| StoreError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))
}

/// A chunk name as one file name: path separators and anything unusual
/// become `_` (the number in front keeps names apart).
fn file_safe(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if s == "." {
        "root".into()
    } else {
        s
    }
}
