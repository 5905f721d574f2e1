//! The SQL views over an export (`duckdb.sql`, `spark.sql`): the one
//! statement of what a chunk's visible quads are, for engines.
//!
//! `cottas_base` is every chunk's base with its chunk's name (a triples-only
//! base gets `g = 'DEFAULT'`); `cottas_delta` is every net-effect file with
//! its chunk's name; `cottas_chunk_quads` is each chunk's visible quads, the
//! bases less the `-` rows of their own chunk, plus the `+` rows. That is
//! the whole rule: the export already reduced the log to its net effect, so
//! no ordering or replay is left for the engine. The dialects differ only in
//! how a Parquet file is named in `FROM`, the string type's name and how a
//! view is created; the view text is otherwise the same, so a Spark cluster
//! runs what DuckDB runs.
//!
//! `cottas_quads` is the corpus as a set, as `cottas-tui query` over the
//! corpus sees it (`view::union`): a quad two chunks hold is one row. The
//! chunks the manifest shows disjoint pass straight through (no engine
//! pays a DISTINCT over them); only the chunks in `may_share` are
//! deduplicated.

use std::fmt::Write;
use std::path::Path;

use super::export::Manifest;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    DuckDb,
    Spark,
}

impl Dialect {
    pub fn file_name(self) -> &'static str {
        match self {
            Dialect::DuckDb => "duckdb.sql",
            Dialect::Spark => "spark.sql",
        }
    }

    /// A Parquet file as a `FROM` item.
    fn parquet(self, url: &str) -> String {
        match self {
            Dialect::DuckDb => format!("read_parquet('{}')", url.replace('\'', "''")),
            Dialect::Spark => format!("parquet.`{}`", url.replace('`', "``")),
        }
    }

    /// A string literal: DuckDB takes backslashes as they are; Spark reads
    /// them as escapes, so they are doubled there.
    pub fn string_literal(self, s: &str) -> String {
        match self {
            Dialect::DuckDb => format!("'{}'", s.replace('\'', "''")),
            Dialect::Spark => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        }
    }

    /// A quoted identifier (a result column named after a variable).
    pub fn ident(self, name: &str) -> String {
        match self {
            Dialect::DuckDb => format!("\"{}\"", name.replace('"', "\"\"")),
            Dialect::Spark => format!("`{}`", name.replace('`', "``")),
        }
    }

    pub fn string_type(self) -> &'static str {
        match self {
            Dialect::DuckDb => "VARCHAR",
            Dialect::Spark => "STRING",
        }
    }

    fn create_view(self, name: &str) -> String {
        match self {
            Dialect::DuckDb => format!("CREATE OR REPLACE VIEW {name} AS"),
            Dialect::Spark => format!("CREATE OR REPLACE TEMPORARY VIEW {name} AS"),
        }
    }
}

/// `url` joined with a relative path, `/`-separated whatever the platform.
fn join_url(url: &str, rel: &Path) -> String {
    let rel: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    format!("{}/{}", url.trim_end_matches('/'), rel.join("/"))
}

/// The three views, each statement ending with `;` on its own line.
pub fn create_views(manifest: &Manifest, d: Dialect, root_url: &str, out_url: &str) -> String {
    let mut sql = String::new();
    let _ = writeln!(
        sql,
        "-- cottas-tui corpus export: {} of {root_url}; manifest.json describes the same snapshot.",
        crate::text::plural(manifest.chunks.len(), "chunk", "chunks"),
    );
    let bases: Vec<String> = manifest
        .chunks
        .iter()
        .map(|c| {
            let g = if c.columns == 3 { "'DEFAULT' AS g" } else { "g" };
            let from = d.parquet(&join_url(root_url, &c.base));
            format!("  SELECT {} AS chunk, s, p, o, {g} FROM {from}", d.string_literal(&c.name))
        })
        .collect();
    let deltas: Vec<String> = manifest
        .chunks
        .iter()
        .filter_map(|c| c.delta.as_ref().map(|delta| (c, delta)))
        .map(|(c, delta)| {
            let from = d.parquet(&join_url(out_url, &delta.path));
            format!("  SELECT {} AS chunk, s, p, o, g, op FROM {from}", d.string_literal(&c.name))
        })
        .collect();
    let empty = |cols: &[&str]| {
        let t = d.string_type();
        let cells: Vec<String> = cols.iter().map(|c| format!("CAST(NULL AS {t}) AS {c}")).collect();
        format!("  SELECT {} WHERE 1 = 0", cells.join(", "))
    };
    let union = |parts: Vec<String>, cols: &[&str]| {
        if parts.is_empty() {
            empty(cols)
        } else {
            parts.join("\n  UNION ALL\n")
        }
    };
    let _ =
        writeln!(sql, "{}\n{};", d.create_view("cottas_base"), union(bases, &["chunk", "s", "p", "o", "g"]));
    let _ = writeln!(
        sql,
        "{}\n{};",
        d.create_view("cottas_delta"),
        union(deltas, &["chunk", "s", "p", "o", "g", "op"])
    );
    let _ = writeln!(
        sql,
        "{}
  SELECT b.chunk, b.s, b.p, b.o, b.g FROM cottas_base b
  WHERE NOT EXISTS (
    SELECT 1 FROM cottas_delta d
    WHERE d.op = '-' AND d.chunk = b.chunk AND d.s = b.s AND d.p = b.p AND d.o = b.o AND d.g = b.g)
  UNION ALL
  SELECT chunk, s, p, o, g FROM cottas_delta WHERE op = '+';",
        d.create_view("cottas_chunk_quads")
    );
    let _ = writeln!(sql, "{}\n{};", d.create_view("cottas_quads"), set_of_quads(manifest, d));
    sql
}

/// The corpus's quads as a set: rows no other chunk may hold as they are,
/// the others (a pair's chunks, in the graphs they may share) through one
/// `DISTINCT`.
fn set_of_quads(manifest: &Manifest, d: Dialect) -> String {
    let all = "  SELECT s, p, o, g FROM cottas_chunk_quads";
    if manifest.may_share.is_empty() {
        return all.to_owned();
    }
    let list = |items: &[&str]| items.iter().map(|c| d.string_literal(c)).collect::<Vec<_>>().join(", ");
    let shared: Vec<String> = manifest
        .may_share
        .iter()
        .map(|pair| {
            let chunks = format!("chunk IN ({})", list(&[&pair.chunks.0, &pair.chunks.1]));
            match &pair.graphs {
                None => format!("({chunks})"),
                Some(graphs) => {
                    let graphs: Vec<&str> = graphs.iter().map(String::as_str).collect();
                    format!("({chunks} AND g IN ({}))", list(&graphs))
                }
            }
        })
        .collect();
    let shared = shared.join(" OR ");
    format!(
        "{all} WHERE NOT ({shared})\n  UNION ALL\n  SELECT DISTINCT s, p, o, g FROM cottas_chunk_quads WHERE {shared}"
    )
}
