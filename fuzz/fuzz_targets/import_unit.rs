//! Fuzzes the import's parse of N-Quads and N-Triples against strict
//! parsing. The import takes shortcuts on every unit of input: canonical
//! lines become keys straight from their bytes, other statements go through
//! a lenient parse that is checked to equal a strict one. A shortcut that
//! accepted a line strict parsing refuses, or spelled a term differently,
//! would store wrong data without a word. Whatever the bytes, the unit's
//! keys, its errors (message and position) and whether it stopped must equal
//! a strict parse's. Needs the library's `full` feature
//! (`cargo fuzz run --features full import_unit`).
#![no_main]

use cottas_tui::import::{unit_differs_from_strict, InputFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for format in [InputFormat::NQuads, InputFormat::NTriples] {
        if let Some(difference) = unit_differs_from_strict(data, format) {
            panic!("{difference}");
        }
    }
});
