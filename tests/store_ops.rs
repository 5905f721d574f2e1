//! Scripts of writes, compactions and reopenings run on real stores and
//! checked after every step against a model of the quads they should hold
//! (`store_model`, shared with the `store_ops` fuzz target, which runs the
//! same code on libFuzzer's bytes).

#[path = "store_model/mod.rs"]
mod store_model;

use cottas_tui::compact::CompactPhase;
use proptest::prelude::*;
use store_model::{run, Scratch, Script, Step, Target, Transfer, FRESH, G, GRAPHS, PREDICATES, Q, SUBJECTS};

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

/// Every kind of step at least once, on a store with one quad per row
/// group, each touching quads the store holds; writes made from inside a
/// compaction at each phase it reports.
#[test]
fn a_script_with_every_kind_of_step_matches_the_model() {
    let q = |s: usize, p: usize, o: &'static str, g: G| Q { s: SUBJECTS[s], p: PREDICATES[p], o, g };
    let (g0, g1, g2) = (G::Named(GRAPHS[0]), G::Named(GRAPHS[1]), G::Named(GRAPHS[2]));
    let initial = vec![
        q(0, 0, "\"a\"", G::Default),
        q(0, 1, SUBJECTS[1], g0),
        q(1, 0, "\"b\"@en", g0),
        q(1, 2, SUBJECTS[0], g1),
        q(2, 1, "\"a\"", G::Default),
        q(3, 0, SUBJECTS[2], g1),
    ];
    let during = |phase, step| Step::Compact { during: Some((phase, Box::new(step))) };
    let steps = vec![
        Step::Insert(vec![q(2, 2, "\"b\"@en", g2), q(3, 1, "\"a\"", G::Default)]),
        Step::Delete(vec![q(0, 0, "\"a\"", G::Default)]),
        Step::InsertThenDelete(
            vec![q(0, 2, SUBJECTS[3], g0)],
            vec![q(0, 2, SUBJECTS[3], g0), q(1, 0, "\"b\"@en", g0)],
        ),
        Step::Compact { during: None },
        Step::Transfer { kind: Transfer::Copy, from: g1, to: g2 },
        Step::Transfer { kind: Transfer::Move, from: G::Default, to: g0 },
        Step::Transfer { kind: Transfer::Add, from: g0, to: G::Default },
        during(CompactPhase::Folding, Step::DeleteSubject(SUBJECTS[3], g1)),
        Step::Rename { p: PREDICATES[1], from: g0, to_p: PREDICATES[2], to: g2 },
        Step::TagNamed { p: PREDICATES[0], o: SUBJECTS[3] },
        Step::Reopen,
        Step::ViaEndpoint(Box::new(Step::Insert(vec![q(3, 2, "\"a\"", g1)]))),
        Step::ViaEndpoint(Box::new(Step::Failing(vec![q(3, 2, "\"b\"@en", g1)]))),
        Step::ViaEndpoint(Box::new(Step::Transfer { kind: Transfer::Copy, from: g1, to: g0 })),
        Step::Insert(vec![q(0, 1, "\"b\"@en", g2)]),
        Step::ViaEndpoint(Box::new(Step::Rename { p: PREDICATES[2], from: g0, to_p: PREDICATES[0], to: g1 })),
        Step::DeleteObjectInNamed(SUBJECTS[3]),
        Step::CreateSilent(GRAPHS[0]),
        Step::Failing(vec![q(1, 1, "\"a\"", g1)]),
        during(CompactPhase::Planning, Step::Clear { target: Target::Graph(g2), drop: false }),
        during(CompactPhase::Indexing, Step::Insert(vec![q(1, 1, SUBJECTS[1], g1)])),
        during(CompactPhase::Publishing, Step::Transfer { kind: Transfer::Copy, from: g1, to: G::Default }),
        during(CompactPhase::Swapping, Step::Delete(vec![q(1, 1, SUBJECTS[1], g1)])),
        during(CompactPhase::Done, Step::Insert(vec![q(2, 0, "\"b\"@en", g2)])),
        Step::ViaEndpoint(Box::new(Step::Delete(vec![q(2, 0, "\"b\"@en", g2)]))),
        Step::Clear { target: Target::AllNamed, drop: true },
        Step::Insert(vec![q(0, 0, "\"a\"", g1)]),
        Step::Gc,
        Step::Clear { target: Target::All, drop: false },
        Step::Compact { during: None },
        Step::Gc,
    ];
    let script = Script { initial, row_group_size: 1, steps };
    let dir = Scratch::new();
    if let Err(e) = run(&script, &dir.0) {
        panic!("{e}\nscript: {script:#?}");
    }
}

/// Blank nodes in subjects and objects: each request's is a new node, also
/// after compactions, `gc` and through the endpoint's way of writing, even
/// with the statements of one the store holds; COPY, MOVE, DELETE/INSERT
/// WHERE and INSERT over `GRAPH ?g` keep a node itself.
#[test]
fn blank_nodes_stay_themselves_and_new_ones_stay_new() {
    let (g0, g1, g2) = (G::Named(GRAPHS[0]), G::Named(GRAPHS[1]), G::Named(GRAPHS[2]));
    let fresh = |p: usize, o: &'static str, g: G| Q { s: FRESH, p: PREDICATES[p], o, g };
    let to_fresh = |s: usize, p: usize, g: G| Q { s: SUBJECTS[s], p: PREDICATES[p], o: FRESH, g };
    let same_as_the_first = || Step::Insert(vec![fresh(0, "\"a\"", G::Default)]);
    let during = |phase, step| Step::Compact { during: Some((phase, Box::new(step))) };
    let initial = vec![fresh(0, "\"a\"", G::Default), to_fresh(0, 0, g0)];
    let steps = vec![
        same_as_the_first(),
        Step::Compact { during: None },
        Step::Insert(vec![fresh(0, "\"a\"", G::Default), fresh(1, FRESH, g1), to_fresh(1, 2, g1)]),
        Step::Transfer { kind: Transfer::Copy, from: G::Default, to: g2 },
        Step::Rename { p: PREDICATES[0], from: g2, to_p: PREDICATES[2], to: g0 },
        Step::TagNamed { p: PREDICATES[1], o: "\"b\"@en" },
        during(CompactPhase::Folding, same_as_the_first()),
        Step::Gc,
        Step::ViaEndpoint(Box::new(same_as_the_first())),
        Step::Compact { during: None },
        same_as_the_first(),
        Step::InsertThenDelete(vec![to_fresh(2, 1, g2)], vec![Q { s: SUBJECTS[0], ..fresh(0, "\"a\"", g0) }]),
        Step::DeleteObjectInNamed("\"b\"@en"),
        Step::Transfer { kind: Transfer::Move, from: g0, to: G::Default },
        Step::Failing(vec![fresh(2, "\"a\"", g2)]),
        Step::Reopen,
        same_as_the_first(),
        Step::Compact { during: None },
    ];
    let script = Script { initial, row_group_size: 2, steps };
    let dir = Scratch::new();
    if let Err(e) = run(&script, &dir.0) {
        panic!("{e}\nscript: {script:#?}");
    }
}
