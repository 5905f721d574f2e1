//! SIGKILL the real writer process at random moments, 300 times, on one
//! store, and check after every kill that:
//! * every acknowledged batch is in the log (no lost acknowledgement), and
//!   at most the one request in flight is there without an acknowledgement;
//! * the view shows exactly the committed batches (no torn entry visible);
//! * the next update succeeds and is visible.
//!
//! The child is `cottas-tui update` with many `-e` requests; it prints each
//! receipt after the fsync. `COTTAS_TUI_DEBUG_PAUSE` stretches the window
//! before the write, mid-write and before the fsync so kills land there.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use cottas_tui::format::deltalog::{self, Entry, Object, StopReason};
use cottas_tui::import::{self, ImportOptions};
use cottas_tui::sparql::update::Updater;
use cottas_tui::store::read::ColumnCache;
use cottas_tui::store::versions::open::Store;
use cottas_tui::view::overlay::Overlay;

const KILLS: usize = 300;
const PER_CHILD: usize = 25;

use common::Rng;

fn request(n: usize) -> String {
    format!("INSERT DATA {{ <https://example.org/k{n}> <https://example.org/p> \"{n}\" }}")
}

/// The `n` of every committed `k{n}` quad, in log order, and whether a torn
/// or otherwise uncommitted tail follows them.
fn committed(chunk: &Path) -> (Vec<usize>, bool) {
    let bytes = std::fs::read(chunk.join("data.deltalog")).unwrap();
    let log = deltalog::decode(&bytes).result.unwrap();
    let mut ns = Vec::new();
    for b in &log.batches {
        for e in &b.batch.entries {
            if let Entry::Add(q) = e {
                if let Object::Literal { lexical, .. } = &q.object {
                    if let Ok(n) = lexical.parse() {
                        ns.push(n);
                    }
                }
            }
        }
    }
    (ns, log.leftover.reason != StopReason::CleanEnd)
}

fn visible_count(chunk: &Path) -> usize {
    let store = Store::open(chunk).unwrap();
    let cache = ColumnCache::new(16 << 20);
    let ov = Overlay::load(&store, &cache).unwrap();
    ov.graphs.values().map(|g| g.added.len()).sum()
}

#[test]
fn sigkill_during_updates_never_loses_an_acknowledged_batch() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.nq");
    std::fs::write(&empty, "").unwrap();
    let chunk = dir.path().join("chunk");
    import::import(&ImportOptions::new(vec![empty], chunk.clone()), |_| {}).unwrap();

    let pauses = ["", "before-write=3", "mid-write=3", "before-fsync=3"];
    let mut rng = Rng(0x5eed_c077);
    let mut next_n = 0usize;
    let mut acked: BTreeSet<usize> = BTreeSet::new();
    let mut known: BTreeSet<usize> = BTreeSet::new();
    let (mut torn_states, mut in_flight_committed, mut lost) = (0, 0, 0);
    let mut child_acks = 0;
    for kill in 0..KILLS {
        let pause = pauses[kill % pauses.len()];
        let first = next_n;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cottas-tui"));
        cmd.arg("update").arg(&chunk);
        for n in first..first + PER_CHILD {
            cmd.args(["-e", &request(n)]);
        }
        next_n += PER_CHILD;
        let mut child = cmd
            .env("COTTAS_TUI_DEBUG_PAUSE", pause)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter(|l| l.starts_with("batch seq="))
                .count()
        });
        std::thread::sleep(Duration::from_micros(rng.next() % 40_000));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        let acks = reader.join().unwrap();
        if status.success() {
            // It finished before the kill: every request was acknowledged.
            assert_eq!(acks, PER_CHILD);
        }
        acked.extend(first..first + acks);
        child_acks += acks;

        let (ns, torn) = committed(&chunk);
        torn_states += usize::from(torn);
        let now: BTreeSet<usize> = ns.iter().copied().collect();
        assert_eq!(now.len(), ns.len(), "a request was committed twice");
        lost += acked.difference(&now).count();
        let extra: Vec<usize> = now.difference(&known).filter(|n| !acked.contains(n)).copied().collect();
        assert!(extra.len() <= 1, "kill {kill}: more than the one in-flight request committed: {extra:?}");
        if let Some(&n) = extra.first() {
            assert_eq!(n, first + acks, "kill {kill}: the committed unacknowledged request is the next one");
            in_flight_committed += 1;
        }
        known = now;
        assert_eq!(visible_count(&chunk), known.len(), "kill {kill}: the view is not the committed batches");

        // The next update succeeds (cutting any torn tail) and is visible.
        let n = next_n;
        next_n += 1;
        let out = Updater::open(&chunk, Some(Duration::from_secs(10))).unwrap().apply(&request(n)).unwrap();
        assert!(out.receipt.is_some());
        acked.insert(n);
        known.insert(n);
        assert_eq!(visible_count(&chunk), known.len());
    }
    eprintln!(
        "update crash test: {KILLS} kills, {KILLS} recoveries, {torn_states} torn states cut on recovery, \
         {in_flight_committed} in-flight requests committed without an acknowledgement, {lost} lost acknowledgements, \
         {child_acks} batches acknowledged by the killed writers"
    );
    assert_eq!(lost, 0);
    assert!(torn_states > 0, "no kill landed mid-append: the test did not exercise torn tails");
    assert!(child_acks > KILLS / 3, "the killed writers got work done before dying: {child_acks}");
}
