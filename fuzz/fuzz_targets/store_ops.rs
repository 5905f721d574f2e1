//! Fuzzes the write path end to end: the bytes are a script (initial quads,
//! a row-group size, then SPARQL Update requests, compactions and
//! reopenings of the writer) run on a real store in a temp dir, checked
//! after every step against a model of the quads it should hold. The script
//! and the checks are `tests/store_model`, which `tests/store_ops.rs` runs
//! as a property test. Needs the library's `full` feature
//! (`cargo fuzz run --features full store_ops`).
#![no_main]

#[path = "../../tests/store_model/mod.rs"]
mod store_model;

use libfuzzer_sys::fuzz_target;
use store_model::{run, Scratch, Script};

fuzz_target!(|data: &[u8]| {
    let script = Script::decode(data);
    let dir = Scratch::new();
    if let Err(e) = run(&script, &dir.0) {
        panic!("{e}\nscript: {script:#?}");
    }
});
