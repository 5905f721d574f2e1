//! Fuzzes the N-Triples term-token parser: never a panic, and every parsed
//! term renders to a token that parses back to the same term.
#![no_main]

use cottas_tui::format::term::{self, Escaping};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(t) = term::parse_token(s) {
            for esc in Escaping::ALL {
                let tok = term::render(&t, esc);
                let back = term::parse_token(&tok);
                // Blank labels and IRIs are written verbatim, so any parsed term re-parses.
                assert_eq!(back.as_ref(), Ok(&t), "{tok:?}");
            }
        }
    }
});
