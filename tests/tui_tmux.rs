//! The real binary driven like a person would, under tmux (send-keys,
//! capture-pane) at 80×24: open a store, open a sidecar in the decoder, see a
//! bad checksum in red on a damaged copy, run a query, compact and watch
//! `current` move, and see another process's append show up. Skips with a
//! notice where tmux is not installed.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).output();
    }
}

impl Session {
    fn keys(&self, keys: &[&str]) {
        let st = Command::new("tmux").args(["send-keys", "-t", &self.0]).args(keys).status().unwrap();
        assert!(st.success());
    }
    fn literal(&self, text: &str) {
        let st = Command::new("tmux").args(["send-keys", "-t", &self.0, "-l", text]).status().unwrap();
        assert!(st.success());
    }
    fn screen(&self, escapes: bool) -> String {
        let mut c = Command::new("tmux");
        c.args(["capture-pane", "-p", "-t", &self.0]);
        if escapes {
            c.arg("-e");
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    }
    fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen(false);
            if s.contains(needle) {
                return s;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "waited for {needle:?}; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    fn command(&self, cmd: &str) {
        self.literal(cmd);
        self.keys(&["Enter"]);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), t).unwrap();
        } else if ft.is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

fn have_tmux() -> bool {
    if Command::new("tmux").arg("-V").output().map(|o| !o.status.success()).unwrap_or(true) {
        common::missing("tmux is not installed");
        return false;
    }
    true
}

/// The binary on `store` under a new tmux session of 80×24.
/// The demo store in a temp dir (kept alive by the first value).
fn demo_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("demo");
    cottas_tui::demo::ensure(&store, false).unwrap();
    (dir, store)
}

fn start(store: &Path, args: &str) -> Session {
    start_sized(store, args, 80, 24)
}

/// The binary on `store` in a terminal of `width`×`height` from its first
/// frame: a `resize-window` after the start races the keys sent next (on a
/// loaded machine the resize arrived after `PageDown`, which then moved by
/// a screen of the old height).
fn start_sized(store: &Path, args: &str, width: u16, height: u16) -> Session {
    let bin = env!("CARGO_BIN_EXE_cottas-tui");
    start_command_sized(&format!("{bin} {} {args}", store.display()), width, height)
}

/// A shell command line under a new tmux session of 80×24.
fn start_command(command: &str) -> Session {
    start_command_sized(command, 80, 24)
}

fn start_command_sized(command: &str, width: u16, height: u16) -> Session {
    static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("cottas-e2e-{}-{n}", std::process::id());
    let st = Command::new("tmux")
        .args(["new-session", "-d", "-s", &name, "-x", &width.to_string(), "-y", &height.to_string()])
        .arg(command)
        .env("TERM", "xterm-256color")
        .status()
        .unwrap();
    assert!(st.success());
    Session(name)
}

#[test]
fn a_person_at_the_keyboard() {
    if !have_tmux() {
        return;
    }
    let (dir, store) = demo_store();
    let damaged = dir.path().join("damaged");
    copy_dir(&store, &damaged);
    let marker = damaged.join("v2/data.compacted-epoch");
    let mut b = std::fs::read(&marker).unwrap();
    b[21] ^= 0x5a; // a checksum byte
    std::fs::write(&marker, b).unwrap();

    let bin = env!("CARGO_BIN_EXE_cottas-tui");
    let s = start(&store, "--write");

    // 1. The store opens on its Store view.
    s.wait_for("current -> v2  (complete)");
    // 2. A sidecar in the decoder, from the Files view (past Triage).
    s.keys(&["Tab", "Tab"]);
    s.wait_for("Files of v2");
    s.command(":open v2/data.cottas.s.dict");
    let screen = s.wait_for("num_tokens");
    let magic = screen.lines().find(|l| l.contains("magic")).unwrap_or_default();
    assert!(magic.contains("\"COTD\""), "the value column: {screen}");
    // 3. The damaged copy's checksum is red in the tree.
    s.command(&format!(":open {}", marker.display()));
    s.wait_for("checksum");
    let colours = s.screen(true);
    let line = colours.lines().find(|l| l.contains("checksum")).unwrap();
    assert!(
        line.contains("[31m")
            || line.contains(";31m")
            || line.contains("38;5;1m")
            || line.contains("38;5;9m"),
        "the bad checksum is drawn red: {line:?}"
    );
    // 4. A query.
    s.command(":query");
    s.wait_for("Query — i to edit");
    s.keys(&["Enter"]);
    s.wait_for(" rows in ");
    // 5. A compaction moves `current`.
    s.command(":compact");
    s.wait_for("Compact?");
    s.keys(&["y"]);
    s.wait_for("compact: OK v2 -> v3");
    s.wait_for("v3: compacted-epoch 2 (current)");
    assert_eq!(std::fs::read_link(store.join("current")).unwrap(), Path::new("v3"));
    // Another process appends: the log view shows it within a second or so.
    s.keys(&["Tab", "Tab", "Tab", "Tab", "Tab"]);
    s.wait_for("Delta log — 0 batches");
    let o = Command::new(bin)
        .arg("update")
        .arg(&store)
        .args(["-e", "INSERT DATA { <https://example.org/from-outside> <https://example.org/p> 1 }"])
        .output()
        .unwrap();
    assert!(o.status.success());
    s.wait_for("Delta log — 1 batch,");
    s.keys(&["q"]);
}

/// On call, from the demo corpus (`cottas-tui` with no argument builds it):
/// its damaged chunk has a changed sidecar byte and a torn log tail. Enter
/// opens the chunk, Tab shows the Triage view listing both; Enter shows the
/// torn tail's bytes in the Decoder at its offset; `r` and `y` repair each,
/// and the verify that follows is clean. Only keys, as a person would.
#[test]
fn triage_to_repaired_at_the_keyboard() {
    if !have_tmux() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_cottas-tui");
    let s = start_command(&format!("XDG_CACHE_HOME={} {bin} --write", cache.path().display()));
    let screen = s.wait_for("3 chunks");
    assert!(screen.contains("healthy") && screen.contains("pending"), "{screen}");
    let store = cache.path().join("cottas-tui/demo-corpus/damaged");
    let log = store.join("data.deltalog");
    let committed = std::fs::metadata(&log).unwrap().len() - 10;
    // The damaged chunk is the first, in name order.
    s.keys(&["Enter"]);
    s.wait_for("current -> v2");
    s.keys(&["Tab"]);
    let screen = s.wait_for("files checked");
    assert!(screen.contains("log-tail") && screen.contains("v2/data.cottas.s.dict"), "{screen}");
    assert!(screen.contains("dict-cells"), "{screen}");
    // The torn tail is the first finding: Enter shows its bytes.
    let screen = s.wait_for("check log-tail");
    assert!(screen.contains(&format!("byte {committed} ({committed:#x})")), "{screen}");
    s.keys(&["Enter"]);
    let screen = s.wait_for(&format!("at byte {committed} ({committed:#x})"));
    assert!(screen.contains(&format!("cursor {committed:#x}")) && screen.contains("leftover"), "{screen}");
    s.keys(&["Escape"]);
    s.wait_for("check log-tail");
    // Repair it: the plan first, then y.
    s.keys(&["r"]);
    let screen = s.wait_for("Repair?");
    assert!(screen.contains("cut 10 bytes"), "{screen}");
    s.keys(&["y"]);
    // Verify runs again: the sidecar's findings are left.
    let screen = s.wait_for("3 errors, 0 warnings");
    assert!(!screen.contains("log-tail"), "{screen}");
    assert_eq!(std::fs::metadata(&log).unwrap().len(), committed);
    // The sidecar: rebuild v2's sidecars.
    s.wait_for("rebuild the sidecars of v2");
    s.keys(&["r"]);
    // The plan's dialog, not the finding's hint (already on screen): a `y`
    // sent before the plan is ready answers nothing.
    let screen = s.wait_for("Repair?");
    assert!(screen.contains("rebuild-sidecars"), "{screen}");
    s.keys(&["y"]);
    s.wait_for(": clean");
    assert!(cottas_tui::triage::verify::verify(&store, Default::default()).unwrap().is_clean());
    s.keys(&["q"]);
}

/// `cottas-tui ROOT` on a corpus root: the list of chunks, Enter into one,
/// Esc back out, Enter into another.
#[test]
fn a_corpus_at_the_keyboard() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    cottas_tui::demo::ensure(&root.join("north"), false).unwrap();
    cottas_tui::demo::ensure(&root.join("south"), false).unwrap();
    let s = start(&root, "");
    let screen = s.wait_for("2 chunks");
    assert!(screen.contains("north") && screen.contains("south"), "{screen}");
    s.keys(&["Enter"]);
    s.wait_for("current -> v2");
    s.wait_for("corpus/north");
    s.keys(&["Escape"]);
    s.wait_for("2 chunks");
    s.keys(&["j", "Enter"]);
    s.wait_for("corpus/south");
    s.keys(&["q"]);
}

/// A demo store under tmux with a compaction started from the keyboard
/// (`:compact`, `y`), held at a debug pause (`POINT=MS`).
fn compaction_held_at(pause: &str) -> (tempfile::TempDir, std::path::PathBuf, Session) {
    let (dir, store) = demo_store();
    let bin = env!("CARGO_BIN_EXE_cottas-tui");
    let s = start_command(&format!(
        "COTTAS_TUI_DEBUG_PAUSE={pause} {bin} {} --write 2>/dev/null",
        store.display()
    ));
    s.wait_for("current -> v2");
    s.command(":compact");
    s.wait_for("Compact?");
    s.keys(&["y"]);
    (dir, store, s)
}

/// A compaction started from the keyboard and cancelled with `x` (held
/// just before it publishes by a debug pause) leaves the store as it was.
#[test]
fn a_compaction_cancelled_at_the_keyboard() {
    if !have_tmux() {
        return;
    }
    let (_dir, store, s) = compaction_held_at("compact-before-publish=5000");
    let log_before = std::fs::read(store.join("data.deltalog")).unwrap();
    s.wait_for("x  cancel compaction");
    s.keys(&["x"]);
    // "cancelling the compaction" shows only until the worker stops, which
    // can be sooner than one poll of the screen when `x` reaches it before
    // the pause (a loaded machine): wait for the outcome, not the transient.
    s.wait_for("compaction cancelled: nothing was changed");
    assert_eq!(std::fs::read_link(store.join("current")).unwrap(), Path::new("v2"));
    assert!(!store.join("v3").exists());
    assert_eq!(std::fs::read(store.join("data.deltalog")).unwrap(), log_before);
    common::assert_no_compaction_leftovers(&store);
    s.keys(&["q"]);
}

/// A compaction run to the end while another process appends (held before
/// taking the writer lock by a debug pause): the timeline's events show the
/// epochs folded, the batch appended meanwhile, and the flip of `current`
/// with the batch carried.
#[test]
fn a_compaction_with_an_append_meanwhile_shows_the_carried_batch() {
    if !have_tmux() {
        return;
    }
    let (_dir, store, s) = compaction_held_at("compact-before-lock=4000");
    let bin = env!("CARGO_BIN_EXE_cottas-tui");
    s.wait_for("folding ");
    let o = Command::new(bin)
        .arg("update")
        .arg(&store)
        .args(["-e", "INSERT DATA { <https://example.org/meanwhile> <https://example.org/p> 1 }"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    s.wait_for("1 batch appended while compacting");
    let screen = s.wait_for("1 batch carried");
    assert!(screen.contains("flipped v2 → v3"), "{screen}");
    assert_eq!(std::fs::read_link(store.join("current")).unwrap(), Path::new("v3"));
    s.keys(&["q"]);
}

/// Footer damage at the keyboard, at 80×24 and 160×45: the Store view
/// says it first with its repair, `r` shows the plan, `y` puts the footer
/// back from its copy, and the version opens again.
#[test]
fn a_changed_footer_is_found_and_restored_at_the_keyboard() {
    if !have_tmux() {
        return;
    }
    for (w, h) in [(80, 24), (160, 45)] {
        let (_dir, store) = demo_store();
        let base = store.join("v2/data.cottas");
        let pristine = std::fs::read(&base).unwrap();
        let mut bytes = pristine.clone();
        let (spans, _) = cottas_tui::format::parquet::footer_fields(&bytes);
        let field = spans.iter().find(|s| s.name.ends_with("columns[1].meta_data.data_page_offset")).unwrap();
        bytes[field.range.start as usize] ^= 0x04;
        std::fs::write(&base, &bytes).unwrap();
        let s = start_sized(&store, "--write", w, h);
        let screen = s.wait_for("r: put back the footer of v2/data.cottas from its copy");
        let first = screen.lines().nth(1).unwrap();
        assert!(first.starts_with("✗ v2 (current) does not open"), "{w}×{h}: {screen}");
        s.keys(&["r"]);
        s.wait_for("Repair?");
        s.keys(&["y"]);
        s.wait_for("current -> v2  (complete)");
        assert_eq!(std::fs::read(&base).unwrap(), pristine, "{w}×{h}");
        s.keys(&["q"]);
    }
}

/// `q` while a compaction runs (held by a debug pause) asks first; `y`
/// cancels it, its temp dir goes, and the program ends.
#[test]
fn quitting_during_a_compaction_asks_and_cleans_up() {
    if !have_tmux() {
        return;
    }
    let (_dir, store, s) = compaction_held_at("compact-before-publish=4000");
    s.wait_for("x  cancel compaction");
    s.keys(&["q"]);
    s.wait_for("Quit?");
    s.keys(&["y"]);
    let start = Instant::now();
    while Command::new("tmux").args(["has-session", "-t", &s.0]).status().unwrap().success() {
        assert!(start.elapsed() < Duration::from_secs(20), "still running: {}", s.screen(false));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_link(store.join("current")).unwrap(), Path::new("v2"));
    common::assert_no_compaction_leftovers(&store);
}

/// Moving around a file in the decoder at 160×45: `:goto 50%`, PgDn by a
/// screen of bytes, the position in the status line.
#[test]
fn the_decoder_moves_by_screens_and_percentages_at_the_keyboard() {
    if !have_tmux() {
        return;
    }
    let (_dir, store) = demo_store();
    let s = start_sized(&store, "", 160, 45);
    s.wait_for("current -> v2");
    s.command(":open v2/data.cottas");
    s.wait_for("data.cottas —");
    let len = std::fs::metadata(store.join("v2/data.cottas")).unwrap().len();
    s.command(":goto 50%");
    s.keys(&["PageDown"]);
    let screen = s.wait_for(&format!(" of {len} ("));
    let at: u64 = screen
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("byte ").and_then(|r| r.split(' ').next()?.parse().ok()))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(at > len / 2 + 16 * 10, "a screen of bytes past the middle: {at} of {len}\n{screen}");
    s.keys(&["q"]);
}
