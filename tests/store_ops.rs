//! Scripts of writes, compactions and reopenings run on real stores and
//! checked after every step against a model of the quads they should hold
//! (`store_model`, shared with the `store_ops` fuzz target, which runs the
//! same code on libFuzzer's bytes).

#[path = "store_model/mod.rs"]
mod store_model;

use proptest::prelude::*;
use store_model::{run, Scratch, Script};

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_script_leaves_the_store_holding_what_the_model_holds(
        bytes in proptest::collection::vec(any::<u8>(), 0..160)
    ) {
        let script = Script::decode(&bytes);
        let dir = Scratch::new();
        if let Err(e) = run(&script, &dir.0) {
            panic!("{e}\nscript: {script:#?}");
        }
    }
}

/// Every kind of step at least once, on a store with one quad per row group.
#[test]
fn a_script_with_every_kind_of_step_matches_the_model() {
    // Initial quads, row-group size 1, then the 14 kinds of step in turn,
    // each followed by choices that make it touch quads the store holds.
    let mut bytes = vec![6];
    bytes.extend([0, 0, 4, 4, 1, 0, 1, 1, 5, 5, 2, 2, 2, 1, 7, 3, 3, 0, 3, 8, 0, 1, 2, 2, 9, 1, 1, 3]);
    bytes.push(0);
    for kind in 0u8..14 {
        bytes.extend([kind, 1, 2, 3, 1, 2, 0, 1, 3, 2, 1, 0]);
    }
    let script = Script::decode(&bytes);
    assert!(script.steps.len() >= 14, "{script:#?}");
    let dir = Scratch::new();
    if let Err(e) = run(&script, &dir.0) {
        panic!("{e}\nscript: {script:#?}");
    }
}
