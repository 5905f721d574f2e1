//! Fuzzes `corpus sql`'s translation of SPARQL into DuckDB and Spark SQL.
//! Whatever query parses within the endpoint's bounds
//! (`sparql::limits::parse_query`, as the command parses it), translating it
//! gives a statement or names the construct it refuses; never a panic.
//! Needs the library's `full` feature
//! (`cargo fuzz run --features full corpus_sql`).
#![no_main]

use cottas_tui::corpus::sql::translate;
use cottas_tui::corpus::views::Dialect;
use cottas_tui::sparql::limits::parse_query;
use libfuzzer_sys::fuzz_target;
use spargebra::SparqlParser;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(query) = parse_query(SparqlParser::new(), text) else { return };
    for dialect in [Dialect::DuckDb, Dialect::Spark] {
        if let Ok(sql) = translate(&query, dialect) {
            assert!(!sql.trim().is_empty(), "an empty statement for {text:?}");
        }
    }
});
