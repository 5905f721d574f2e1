//! Every view rendered with ratatui's TestBackend at 80×24 from a real demo
//! store (and damaged copies of it): what is on screen, and the colours of
//! magic, checksum and torn-tail bytes.

mod common;

use std::path::Path;

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier};
use ratatui::Terminal;

use cottas_tui::demo;
use cottas_tui::store::log::index::LogIndex;
use cottas_tui::store::log::Visibility;
use cottas_tui::tui::action::{self, Action};
use cottas_tui::tui::effect::Effect;
use cottas_tui::tui::state::{App, QueryTable, Tab};
use cottas_tui::tui::{command, views, worker};

/// The state after everything the UI loads at start has arrived (the
/// effects run in place instead of on workers).
fn app(dir: &Path, write: bool) -> App {
    let mut app = App::new(dir, write);
    let effects = app.startup();
    worker::settle(&mut app, effects);
    app
}

/// The state with the versions listed but the log not yet indexed.
fn app_before_the_log_index(dir: &Path) -> App {
    let mut app = App::new(dir, false);
    worker::settle(&mut app, vec![Effect::ListVersions]);
    app
}

/// Does what `action` asks, running its effects in place.
fn act(app: &mut App, action: Action) {
    let effects = action::update(app, action);
    worker::settle(app, effects);
}

/// A key pressed as the terminal reports it: mapped by the current view.
fn press(app: &mut App, code: KeyCode) {
    press_with(app, code, KeyModifiers::NONE);
}

fn press_with(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
    let ev = ratatui::crossterm::event::Event::Key(KeyEvent::new(code, modifiers));
    if let Some(action) = action::from_event(app, ev) {
        act(app, action);
    }
}

fn command(app: &mut App, line: &str) {
    let effects = command::run_command(app, line);
    worker::settle(app, effects);
}

fn draw(app: &App, w: u16, h: u16) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| views::render(f, app)).unwrap();
    t.backend().buffer().clone()
}

fn text(b: &Buffer) -> String {
    let mut s = String::new();
    for y in 0..b.area.height {
        for x in 0..b.area.width {
            s.push_str(b[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

/// The cell where `needle` starts on screen.
fn find(b: &Buffer, needle: &str) -> Option<(u16, u16)> {
    for y in 0..b.area.height {
        let row: Vec<String> = (0..b.area.width).map(|x| b[(x, y)].symbol().to_string()).collect();
        let line = row.concat();
        if let Some(byte) = line.find(needle) {
            let col = line[..byte].chars().count() as u16;
            return Some((col, y));
        }
    }
    None
}

/// Appends the start of a batch that never finished.
fn tear_the_log_tail(store: &Path) {
    demo::tear_log_tail(store).unwrap();
}

fn demo_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("demo");
    demo::ensure(&store, false).unwrap();
    (dir, store)
}

#[test]
fn the_store_view_shows_versions_current_and_row_groups() {
    let (_d, store) = demo_store();
    let b = draw(&app(&store, false), 80, 24);
    let t = text(&b);
    assert!(t.contains("current -> v2  (complete)"), "{t}");
    assert!(t.contains("v1") && t.contains("v2") && t.contains("rows (and bytes) per row group"), "{t}");
    assert!(t.contains("Tab  next view"), "the keybar: {t}");
    assert!(t.contains("[ro] demo › Store"), "the chunk's name stays at 80 columns: {t}");
    let wide = text(&draw(&app(&store, true), 120, 30));
    assert!(wide.contains("[rw] demo › Store"), "{wide}");
}

/// More row groups than bars fit: the Store view sums them up, draws each
/// one's bytes as a sparkline across the width, and names the first and last.
#[test]
fn the_store_view_sums_up_more_row_groups_than_bars_fit() {
    use cottas_tui::import::{import, ImportOptions};
    use cottas_tui::store::base::writer::BaseOptions;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("many.nq");
    let lines: String = (0..301)
        .map(|i| format!("<http://ex.org/s{i:03}> <http://ex.org/p> \"{i}\" <http://ex.org/g> .\n"))
        .collect();
    std::fs::write(&input, lines).unwrap();
    let store = dir.path().join("many");
    let mut opts = ImportOptions::new(vec![input], store.clone());
    opts.base = BaseOptions { row_group_size: 3, ..BaseOptions::default() };
    import(&opts, |_| {}).unwrap();
    let t = text(&draw(&app(&store, false), 80, 24));
    assert!(t.contains("row groups: 101, "), "{t}");
    assert!(t.contains("rows: 100 × 3, the last 1"), "{t}");
    assert!(t.contains("bytes: median "), "{t}");
    let axis = t.lines().find(|l| l.contains("rg0")).expect("the axis");
    assert!(axis.trim_end_matches('│').trim_end().ends_with("rg100"), "{axis}");
    assert!(!t.contains("rg1 "), "no bars: {t}");
    // Wide enough for every bar: the bar chart as before.
    let wide = text(&draw(&app(&store, false), 1100, 30));
    assert!(wide.contains("rows (and bytes) per row group") && wide.contains("rg100"), "{wide}");
}

#[test]
fn the_files_view_marks_a_damaged_magic() {
    let (_d, store) = demo_store();
    let dict = store.join("v2/data.cottas.s.dict");
    let mut bytes = std::fs::read(&dict).unwrap();
    bytes[0] = b'X';
    std::fs::write(&dict, bytes).unwrap();
    let mut a = app(&store, false);
    a.tab = Tab::Files;
    let b = draw(&a, 80, 24);
    let t = text(&b);
    let row = t.lines().find(|l| l.contains("v2/data.cottas.s.dict")).unwrap();
    assert!(row.contains('✗'), "{row}");
    let ok_row = t.lines().find(|l| l.contains("v2/data.cottas.p.dict")).unwrap();
    assert!(ok_row.contains('✓') && !ok_row.contains('✗'), "{ok_row}");
    let (x, y) = find(&b, "✗").unwrap();
    assert_eq!(b[(x, y)].fg, Color::Red);
}

/// NO_COLOR: the same frame without a colour, and what colour marked (the
/// selection, the decoder's highlighted span) still marked in reverse video.
#[test]
fn no_color_draws_without_colours_and_keeps_the_marks() {
    let (_d, store) = demo_store();
    tear_the_log_tail(&store); // the Log view draws it white on red
    let mut a = app(&store, false);
    command(&mut a, &format!(":open {}", store.join("v2/data.compacted-epoch").display()));
    let mut had_background = 0;
    for tab in [Tab::Store, Tab::Files, Tab::Decoder, Tab::Log, Tab::Timeline] {
        a.tab = tab;
        a.monochrome = false;
        let coloured = draw(&a, 100, 30);
        a.monochrome = true;
        let plain = draw(&a, 100, 30);
        assert_eq!(text(&plain), text(&coloured), "{tab:?}: the same text");
        for (c, p) in coloured.content.iter().zip(&plain.content) {
            assert_eq!((p.fg, p.bg), (Color::Reset, Color::Reset), "{tab:?}: no colour at all");
            if c.bg != Color::Reset {
                had_background += 1;
                assert!(
                    p.modifier.contains(Modifier::REVERSED),
                    "{tab:?}: a coloured background becomes reverse video"
                );
            }
        }
    }
    assert!(had_background > 0, "some view marks something with a background");
}

/// A click selects the row drawn under it, in every view with a list
/// (the Store view's list sits below a summary, the others at the top).
#[test]
fn a_click_selects_the_row_under_it_in_every_list() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    for tab in [Tab::Store, Tab::Files, Tab::Log] {
        a.tab = tab;
        let b = draw(&a, 100, 30);
        let needle = match tab {
            Tab::Store => "v1 ".to_owned(),
            Tab::Files => a.files.rows.last().unwrap().name.clone(),
            // The second batch's row: two lines under the header.
            _ => {
                let (_, header) = find(&b, "epoch").unwrap();
                let t = text(&b);
                t.lines().nth(header as usize + 2).unwrap().split_whitespace().nth(1).unwrap().to_owned()
            }
        };
        let (_, y) =
            find(&b, &needle).unwrap_or_else(|| panic!("{tab:?}: {needle:?} not on screen:\n{}", text(&b)));
        act(&mut a, Action::Click { col: 2, row: y });
        let b = draw(&a, 100, 30);
        let (x, y) = find(&b, &needle).unwrap();
        assert!(
            b[(x, y)].modifier.contains(Modifier::REVERSED),
            "{tab:?}: the clicked row {needle:?} is selected:\n{}",
            text(&b)
        );
    }
    assert_eq!(a.files.sel, a.files.rows.len() - 1);
    assert_eq!(a.log_view.sel, 1);
}

/// Tab completes `:` commands, and `:open`'s versions and files.
#[test]
fn tab_completes_the_command_line() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    let key = |a: &mut App, code: KeyCode| act(a, Action::CmdKey(KeyEvent::new(code, KeyModifiers::NONE)));
    let typed = |a: &mut App, text: &str| text.chars().for_each(|c| key(a, KeyCode::Char(c)));
    act(&mut a, Action::OpenCmdline(':'));
    typed(&mut a, "co");
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.cmdline.as_deref(), Some(":compact "));
    a.cmdline = Some(":op".into());
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.cmdline.as_deref(), Some(":open "));
    typed(&mut a, "v");
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.cmdline.as_deref(), Some(":open v"), "two versions share only `v`");
    assert!(a.status.contains("v1") && a.status.contains("v2"), "{}", a.status);
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains(":open v█   v1  v2"), "the candidates show beside the command line: {t}");
    let file = a.files.rows.iter().find(|r| r.name.ends_with(".s.offsets")).unwrap().name.clone();
    a.cmdline = Some(format!(":open {}", &file[..file.len() - 5]));
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.cmdline, Some(format!(":open {file}")));
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.tab, Tab::Decoder, "the completed name opens");
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains("s.offsets"), "{t}");
    act(&mut a, Action::OpenCmdline(':'));
    typed(&mut a, "zz");
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.cmdline.as_deref(), Some(":zz"));
    assert!(a.status.contains("nothing to complete"), "{}", a.status);
}

/// The log's checksum cell says what its index found: … before the index
/// reports, ✓ for a clean log, ✗ for a bad batch checksum.
#[test]
fn the_files_view_checks_the_log_checksums_for_real() {
    let (_d, store) = demo_store();
    let log_row = |a: &App| {
        let mut a2 = app_before_the_log_index(&store);
        a2.log = a.log.as_ref().map(|_| LogIndex::build(&a.log_path()));
        a2.tab = Tab::Files;
        let t = text(&draw(&a2, 100, 24));
        t.lines().find(|l| l.contains("data.deltalog")).unwrap().to_string()
    };
    let mut a = app_before_the_log_index(&store);
    assert!(log_row(&a).contains('…'), "not checked yet: {}", log_row(&a));
    a.log = Some(LogIndex::build(&a.log_path()));
    let row = log_row(&a);
    assert!(row.contains('✓') && !row.contains('✗'), "{row}");
    // Flip a byte of the last batch's checksum.
    let path = a.log_path();
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let row = log_row(&a);
    assert!(row.contains('✗'), "a bad batch checksum: {row}");
}

#[test]
fn the_decoder_colours_magic_and_a_bad_checksum() {
    let (_d, store) = demo_store();
    let marker = store.join("v2/data.compacted-epoch");
    let mut bytes = std::fs::read(&marker).unwrap();
    bytes[20] ^= 0xff; // the checksum
    std::fs::write(&marker, &bytes).unwrap();
    let mut a = app(&store, false);
    command(&mut a, &format!(":open {}", marker.display()));
    assert_eq!(a.tab, Tab::Decoder);
    let b = draw(&a, 130, 30);
    let t = text(&b);
    assert!(t.contains("magic") && t.contains("checksum") && t.contains('✗'), "{t}");
    // The hex pane: "43 45 50 31" (CEP1) is cyan; the checksum byte red.
    let (x, y) = find(&b, "43 45 50 31").unwrap();
    assert_eq!(b[(x, y)].fg, Color::Cyan, "magic");
    let bad = format!("{:02x}", bytes[20]);
    let row2 = (0..b.area.height)
        .find(|&y| text(&b).lines().nth(y as usize).is_some_and(|l| l.contains("00000010")))
        .unwrap();
    let line: String = (0..b.area.width).map(|x| b[(x, row2)].symbol().to_string()).collect();
    let col = line.find(&format!("{bad} ")).map(|i| line[..i].chars().count() as u16).unwrap();
    assert_eq!(b[(col, row2)].fg, Color::Red, "a bad checksum is red");
}

#[test]
fn moving_in_the_hex_pane_selects_the_owning_field() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    command(&mut a, ":open v2/data.cottas.s.dict");
    assert_eq!(a.tab, Tab::Decoder);
    // Eight bytes right: offset 8, the token count.
    for _ in 0..8 {
        act(&mut a, Action::Right);
    }
    let d = a.decoder.as_ref().unwrap();
    assert_eq!(d.cursor, 8);
    assert_eq!(d.selected_span().unwrap().name, "num_tokens");
    command(&mut a, ":goto 0x4");
    let d = a.decoder.as_ref().unwrap();
    assert_eq!((d.cursor, d.selected_span().unwrap().name.as_str()), (4, "version"));
}

#[test]
fn the_log_view_shows_batches_expands_one_and_marks_a_torn_tail() {
    let (_d, store) = demo_store();
    tear_the_log_tail(&store);
    let mut a = app(&store, false);
    a.tab = Tab::Log;
    act(&mut a, Action::Enter);
    let b = draw(&a, 80, 24);
    let t = text(&b);
    assert!(t.contains("4 batches") && t.contains("visible"), "{t}");
    assert!(t.contains("            ADD    <https://demo.cottas.example"), "expanded entries: {t}");
    let (x, y) = find(&b, "TORN TAIL").unwrap();
    assert_eq!(b[(x, y)].bg, Color::Red);
}

#[test]
fn help_keybar_and_command_line() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    act(&mut a, Action::ToggleHelp);
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains("Help") && t.contains(":goto 0x1f0"), "{t}");
    act(&mut a, Action::ToggleHelp);
    a.tab = Tab::Timeline;
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains("v2: compacted-epoch 1 (current)") && t.contains("epoch    2"), "{t}");
    assert!(!t.contains(" c  compact"), "read-only: no compact key in the keybar: {t}");
    command(&mut a, ":open v1");
    assert_eq!((a.tab, a.store.sel), (Tab::Files, 0));
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains("Files of v1"), "{t}");
}

#[test]
fn the_query_view_shows_results_from_the_worker() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Query;
    act(&mut a, Action::RunQuery);
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains("Results — ") && t.contains(" rows in "), "{t}");
    assert!(a.status.contains("rows in"), "{}", a.status);
    assert_eq!(a.query.history.len(), 1);

    // One row is "1 row", in the title and the status.
    a.query.text = "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }".into();
    act(&mut a, Action::RunQuery);
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains("Results — 1 row in "), "{t}");
    assert!(a.status.starts_with("1 row in "), "{}", a.status);
}

/// A column is as wide as its widest cell in terminal columns: "東京😀" in
/// quotes takes 8, and shows whole beside the next column (long enough to
/// leave the table no room to spare).
#[test]
fn result_columns_fit_wide_characters() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Query;
    let long = "n".repeat(100);
    a.query.text = format!("SELECT ?x ?y {{ VALUES (?x ?y) {{ (\"東京😀\" \"next{long}\") }} }}");
    act(&mut a, Action::RunQuery);
    let t = text(&draw(&a, 80, 24));
    let row = t.lines().find(|l| l.contains('東') && !l.contains("SELECT")).unwrap_or_else(|| panic!("{t}"));
    let cells: String = row.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(cells.contains("\"東京😀\"\"nextnnn"), "{row}");
}

/// A column is capped so that the next ones fit, but a wide terminal gives
/// what is left to the capped one: a 100-character cell shows whole at 160
/// columns and is cut with `…` at 80.
#[test]
fn a_long_cell_shows_whole_when_the_terminal_has_room() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Query;
    let long = format!("urn:{}", "x".repeat(96));
    a.query.text = format!("SELECT ?s ?o {{ VALUES (?s ?o) {{ (<urn:a> <{long}>) }} }}");
    act(&mut a, Action::RunQuery);
    let wide = text(&draw(&a, 160, 24));
    assert!(wide.contains(&format!("<{long}>")), "{wide}");
    let narrow = text(&draw(&a, 80, 24));
    assert!(!narrow.contains(&format!("<{long}>")) && narrow.contains("xxx…"), "{narrow}");
}

/// Counts the query view answers from the sidecars (a count per graph, a
/// count of a union) equal the same counts evaluated (the shape broken by a
/// `FILTER(true)`, which no shortcut takes).
#[test]
fn the_query_view_counts_like_evaluation() {
    let (_d, store) = demo_store();
    let rows = |text: &str| {
        let mut a = app(&store, false);
        a.tab = Tab::Query;
        a.query.text = text.into();
        act(&mut a, Action::RunQuery);
        let mut rows = a.query.result.as_ref().expect("a result").rows.clone();
        rows.sort();
        rows
    };
    for (quick, evaluated) in [
        (
            "SELECT ?g (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g",
            "SELECT ?g (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o FILTER(true) } } GROUP BY ?g",
        ),
        (
            "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
            "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o FILTER(true) } UNION { GRAPH ?g { ?s ?p ?o } } }",
        ),
    ] {
        let want = rows(evaluated);
        assert!(!want.is_empty() && want.iter().all(|r| r.iter().all(|c| !c.is_empty())), "{want:?}");
        assert_eq!(rows(quick), want, "{quick}");
    }
}

/// `--memory-limit` reaches the query worker: with 4 KiB (mapped pages
/// released after every row group, nothing cached) the default query's rows
/// are those of the default limit.
#[test]
fn the_query_worker_answers_the_same_within_a_tiny_memory_limit() {
    let (_d, store) = demo_store();
    let rows = |limit: usize| {
        let mut a = app(&store, false);
        a.set_memory_limit(limit);
        a.tab = Tab::Query;
        act(&mut a, Action::RunQuery);
        let mut rows = a.query.result.as_ref().expect("a result").rows.clone();
        rows.sort();
        rows
    };
    let tight = rows(4 << 10);
    assert!(!tight.is_empty());
    assert_eq!(tight, rows(cottas_tui::tui::state::DEFAULT_MEMORY_LIMIT));
}

/// A query that reads the default graph of a store whose quads are all in
/// named graphs says why it answers nothing; one through GRAPH says nothing.
#[test]
fn a_query_over_an_empty_default_graph_says_where_the_quads_are() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        common::store_of(dir.path(), "<urn:a> <urn:p> \"x\" <urn:g> .\n<urn:b> <urn:p> \"y\" <urn:h> .\n");
    let mut a = app(&store, false);
    a.tab = Tab::Query;
    a.query.text = "SELECT ?s WHERE { ?s ?p ?o }".into();
    act(&mut a, Action::RunQuery);
    assert_eq!(a.query.result.as_ref().expect("a result").rows.len(), 0);
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains("note: the default graph is empty") && t.contains("GRAPH ?g"), "{t}");
    // Through GRAPH, and the default query (a UNION of both): no note.
    for query in ["SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }", &App::new(&store, false).query.text] {
        a.query.text = query.to_string();
        act(&mut a, Action::RunQuery);
        assert_eq!(a.query.result.as_ref().expect("a result").rows.len(), 2, "{query}");
        let t = text(&draw(&a, 80, 24));
        assert!(!t.contains("note:"), "{query}: {t}");
    }
}

/// Results stream: the worker sends the first screenful as soon as it
/// exists and the rest with the outcome; the table shows the first rows
/// while the query still runs. A query stopped part way keeps its rows.
#[test]
fn query_results_stream_in_and_a_stopped_query_keeps_its_rows() {
    use cottas_tui::tui::effect::Effect;
    use cottas_tui::tui::worker::Msg;
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Query;
    a.query.text = "SELECT * WHERE { GRAPH ?g { ?a ?b ?c } GRAPH ?h { ?d ?e ?f } }".into();
    let effects = action::update(&mut a, Action::RunQuery);
    let Some(Effect::Query { text: query, token }) =
        effects.iter().find(|e| matches!(e, Effect::Query { .. }))
    else {
        panic!("a query effect")
    };
    // The worker's messages, in the order it sends them.
    let (tx, rx) = std::sync::mpsc::channel();
    let effect = Effect::Query { text: query.clone(), token: token.clone() };
    let ctx = worker::Context::of(&a);
    cottas_tui::sparql::limits::on_request_stack(|| worker::perform(&ctx, effect, &tx));
    let msgs: Vec<Msg> = rx.try_iter().collect();
    assert!(msgs.len() >= 2, "rows, then the outcome");
    let Msg::QueryRows(_, first) = &msgs[0] else { panic!("rows first") };
    assert_eq!(first.len(), 100, "the first screenful as soon as it exists");
    let mut msgs = msgs.into_iter();
    act(&mut a, Action::Worker(msgs.next().unwrap()));
    assert!(a.query.running.is_some() && a.status.starts_with("100 rows so far"), "{}", a.status);
    let t = text(&draw(&a, 100, 30));
    assert!(t.contains("Results — 100 rows so far"), "rows are shown while the query runs: {t}");
    for m in msgs {
        act(&mut a, Action::Worker(m));
    }
    let quads = a.query.result.as_ref().unwrap().rows.len();
    let n = (quads as f64).sqrt() as usize;
    assert!(n > 10 && n * n == quads, "{quads} rows: every pair of quads");
    assert!(a.status.starts_with(&format!("{quads} rows in")), "{}", a.status);

    // Stopped part way: the rows so far stay, the status says so.
    let _not_run = action::update(&mut a, Action::RunQuery);
    assert!(a.query.result.is_none(), "a new run clears the last result");
    act(&mut a, Action::Worker(Msg::QueryRows(vec!["a".into()], vec![vec!["<x>".into()]; 100])));
    act(&mut a, Action::CancelQuery);
    let stopped = QueryTable { error: Some("cancelled".into()), total: 100, ..Default::default() };
    act(&mut a, Action::Worker(Msg::QueryDone(stopped)));
    assert_eq!(a.query.result.as_ref().unwrap().rows.len(), 100);
    assert!(a.status.starts_with("stopped after 100 rows"), "{}", a.status);
    let t = text(&draw(&a, 100, 30));
    assert!(t.contains("Results — stopped after 100 rows") && t.contains("<x>"), "{t}");
}

/// The store's most frequent namespaces are read from the current
/// version's dictionaries beside the first query, once per version, and name
/// IRIs in every result after.
#[test]
fn the_stores_namespaces_are_read_once_per_version() {
    use cottas_tui::tui::effect::Effect;
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Query;
    let effects = action::update(&mut a, Action::RunQuery);
    assert!(effects.iter().any(|e| matches!(e, Effect::Namespaces)), "read beside the first query");
    worker::settle(&mut a, effects);
    let (version, list) = a.query.store_namespaces.clone().expect("read");
    assert_eq!(version, "v2");
    assert!(list.iter().any(|(ns, _)| ns == "https://demo.cottas.example/people/"), "{list:?}");
    let t = text(&draw(&a, 120, 30));
    assert!(t.contains("people:"), "{t}");
    let again = action::update(&mut a, Action::RunQuery);
    assert!(!again.iter().any(|e| matches!(e, Effect::Namespaces)), "not read twice for one version");
}

#[test]
fn it_fits_in_80_by_24_and_in_a_wide_terminal() {
    let (_d, store) = demo_store();
    let mut a = app(&store, true);
    command(&mut a, ":open v2/data.cottas.p.offsets");
    for tab in cottas_tui::tui::state::TABS {
        a.tab = tab;
        for (w, h) in [(80, 24), (160, 50), (40, 12)] {
            let t = text(&draw(&a, w, h));
            assert!(t.contains(tab.title()) || w < 60, "{tab:?} at {w}×{h}");
        }
    }
}

#[test]
fn the_decoder_shows_the_parquet_pages_and_dictionary() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    command(&mut a, ":open v2/data.cottas");
    let d = a.decoder.as_ref().unwrap();
    let names: Vec<&str> = d.spans.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"row_group[0].p.page[0].header"), "{names:?}");
    let dict = d.spans.iter().find(|s| s.name == "row_group[0].p.page[0].header").unwrap();
    assert!(dict.value.as_deref().unwrap().starts_with("dictionary page"), "{:?}", dict.value);
    let data = d.spans.iter().find(|s| s.name == "row_group[0].p.page[1].header").unwrap();
    assert!(data.value.as_deref().unwrap().contains("RLE_DICTIONARY"), "{:?}", data.value);
    // The tree: row groups and the footer closed; `e` opens every group
    // down to the page headers, their values in one column.
    let t = text(&draw(&a, 130, 40));
    assert!(t.contains("▸ row_group[0]") && t.contains("▸ footer") && !t.contains("page[0]"), "{t}");
    press(&mut a, KeyCode::Char('e'));
    let t = text(&draw(&a, 200, 60));
    assert!(t.contains("▾ row_group[0]") && t.contains("▾ page[0]"), "{t}");
    let header = t
        .lines()
        .find(|l| l.contains("▾ header") && l.contains("dictionary page"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(header.contains("PLAIN"), "{header}");
}

/// A log whose second batch fails its checksum: damaged groups open by
/// themselves (and only they: healthy ones close), the detail pane shows stored against computed in red, and
/// closing everything keeps the damage counted on the closed row.
#[test]
fn the_decoder_tree_folds_and_details_a_bad_checksum() {
    let (_d, store) = demo_store();
    let log = store.join("data.deltalog");
    let good = std::fs::read(&log).unwrap();
    let mut bytes = good.clone();
    bytes[0x1ae + 60] ^= 0x01; // inside batch[1]'s body
    std::fs::write(&log, &bytes).unwrap();
    let mut a = app(&store, false);
    command(&mut a, ":open data.deltalog");
    let b = draw(&a, 130, 40);
    let t = text(&b);
    // The bad batch checksum, the bad entry checksum inside, and the
    // leftover bytes that follow the last good batch.
    assert!(t.contains("▸ batch[0]") && t.contains("▾ batch[1]") && t.contains("✗ 2 bad"), "{t}");
    assert!(t.contains("leftover"), "{t}");
    let (x, y) = find(&b, "✗ 2 bad").unwrap();
    assert_eq!(b[(x, y)].fg, Color::Red);

    let bad =
        a.decoder.as_ref().unwrap().spans.iter().find(|s| s.name == "batch[1].checksum").unwrap().clone();
    assert!(!bad.is_ok());
    command(&mut a, &format!(":goto {:#x}", bad.range.start));
    let d = a.decoder.as_ref().unwrap();
    assert_eq!(d.selected_node().unwrap().path, "batch[1].checksum");
    let b = draw(&a, 130, 40);
    let t = text(&b);
    assert!(t.contains("detail — batch[1].checksum"), "{t}");
    let status = t.lines().find(|l| l.contains("status")).unwrap();
    assert!(status.contains("✗ stored 0x") && status.contains("computed 0x"), "{status}");
    let (x, y) = find(&b, "✗ stored").unwrap();
    assert_eq!(b[(x, y)].fg, Color::Red);
    let raw = format!("{:02x} {:02x}", bytes[bad.range.start as usize], bytes[bad.range.start as usize + 1]);
    assert!(t.lines().any(|l| l.contains("raw") && l.contains(&raw)), "{t}");

    // c closes all: the selection goes to its closed batch, which says why.
    press(&mut a, KeyCode::Char(' ')); // keys back to the tree
    press(&mut a, KeyCode::Char('c'));
    let t = text(&draw(&a, 130, 40));
    assert!(t.contains("▸ batch[0]") && t.contains("▸ batch[1]") && t.contains("✗ 2 bad"), "{t}");
    assert_eq!(a.decoder.as_ref().unwrap().selected_node().unwrap().path, "batch[1]");
    // Enter opens it again; l steps in; h goes back out.
    press(&mut a, KeyCode::Enter);
    assert!(text(&draw(&a, 130, 40)).contains("▾ batch[1]"));
    press(&mut a, KeyCode::Char('l'));
    assert_eq!(a.decoder.as_ref().unwrap().selected_node().unwrap().path, "batch[1].magic");
    press(&mut a, KeyCode::Char('h'));
    assert_eq!(a.decoder.as_ref().unwrap().selected_node().unwrap().path, "batch[1]");
    press(&mut a, KeyCode::Char('h'));
    assert!(text(&draw(&a, 130, 40)).contains("▸ batch[1]"));
}

/// A click on a tree row selects it; a click on a byte's digits or its
/// character moves the hex cursor there and selects the field that owns it.
#[test]
fn clicks_in_the_decoder_land_on_the_row_and_the_byte_under_them() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    act(&mut a, Action::Resize { width: 130, height: 40 });
    command(&mut a, ":open data.deltalog");
    let b = draw(&a, 130, 40);
    let (_, y) = find(&b, "version").unwrap();
    act(&mut a, Action::Click { col: 3, row: y });
    let d = a.decoder.as_ref().unwrap();
    assert_eq!((d.selected_node().unwrap().path.as_str(), d.tree_focus), ("version", true));
    let (x, y) = find(&b, "00000010").unwrap();
    act(&mut a, Action::Click { col: x + 10, row: y });
    let d = a.decoder.as_ref().unwrap();
    assert_eq!((d.cursor, d.tree_focus), (0x10, false));
    assert_eq!(d.selected_span().unwrap().name, "batch[0].length");
    act(&mut a, Action::Click { col: x + 10 + 3 * 9 + 1, row: y }); // byte 9, past the gap
    assert_eq!(a.decoder.as_ref().unwrap().cursor, 0x19);
    act(&mut a, Action::Click { col: x + 60 + 3, row: y }); // the character of byte 3
    assert_eq!(a.decoder.as_ref().unwrap().cursor, 0x13);
    let before = a.decoder.as_ref().unwrap().cursor;
    act(&mut a, Action::Click { col: x + 10 + 2, row: y }); // the space between bytes
    assert_eq!(a.decoder.as_ref().unwrap().cursor, before, "a click between bytes moves nothing");
}

/// The hex pane is 16 bytes a row once the tree still has room beside it,
/// 8 otherwise; the tree takes the rest. Bytes are coloured by class as
/// hexyl does (printable ASCII cyan, NUL grey) where no role colours them.
#[test]
fn the_decoder_layout_follows_the_width_and_colours_bytes_by_class() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    command(&mut a, ":open data.deltalog");
    let wide = draw(&a, 160, 40);
    let t = text(&wide);
    assert!(t.contains("00000010  ") && !t.contains("00000008  "), "16 a row at 160: {t}");
    let tree_w = t.lines().nth(1).unwrap().chars().position(|c| c == '┐').unwrap();
    assert_eq!(tree_w + 1, 160 - 78, "the hex pane takes what it needs, the tree the rest");
    let narrow = text(&draw(&a, 100, 40));
    assert!(narrow.contains("00000008  "), "8 a row at 100: {narrow}");
    // "https" of the first entry's subject: a payload, coloured by class.
    let (x, y) = find(&wide, "68 74 74 70 73").unwrap();
    assert_eq!(wide[(x, y)].fg, Color::Cyan);
    let row = text(&wide).lines().nth(y as usize).unwrap().to_string();
    let nul = row.find('⋄').map(|i| row[..i].chars().count() as u16).unwrap();
    assert_eq!(wide[(nul, y)].fg, Color::DarkGray, "{row}");
    // At 80×24 everything still fits: tree, detail and hex.
    let small = text(&draw(&a, 80, 24));
    assert!(small.contains("detail") && small.contains("00000000") && small.contains("magic"), "{small}");
}

/// The update step reads nothing: opening a file is an effect, and the
/// decoder appears only when the worker's message arrives.
#[test]
fn opening_a_file_is_an_effect_not_a_read() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Files;
    let effects = action::update(&mut a, Action::Enter);
    let log = store.join("data.deltalog");
    assert!(matches!(effects.as_slice(), [Effect::OpenFile { path, at: None }] if *path == log));
    assert!(a.decoder.is_none() && a.tab == Tab::Files, "nothing was read yet");
    worker::settle(&mut a, effects);
    assert_eq!(a.tab, Tab::Decoder);
    assert_eq!(a.decoder.as_ref().map(|d| d.path.clone()), Some(log));
    // A confirmed compaction is an effect too, and read-only asks for none.
    assert!(action::update(&mut a, Action::AskCompaction).is_empty());
    assert!(a.status.contains("read-only"), "{}", a.status);
}

/// Another process appends: the watcher's report makes the UI re-list the
/// versions, re-index the log and fold it again for the next query; a
/// report that matches what was seen asks for nothing.
#[test]
fn a_change_seen_by_the_watcher_reloads_versions_log_and_snapshot() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    let before = a.log.as_ref().unwrap().count;
    let same = cottas_tui::tui::load::observe(&store);
    assert!(action::update(&mut a, Action::Worker(worker::Msg::Observed(same))).is_empty());
    cottas_tui::sparql::update::Updater::open(&store, None)
        .unwrap()
        .apply("INSERT DATA { <http://x/from-outside> <http://x/p> 1 }")
        .unwrap();
    let now = cottas_tui::tui::load::observe(&store);
    let effects = action::update(&mut a, Action::Worker(worker::Msg::Observed(now)));
    assert!(matches!(effects.as_slice(), [Effect::ListVersions, Effect::IndexLog, Effect::ReadSnapshot]));
    assert!(a.status.contains("the log changed"), "{}", a.status);
    let kept_before = a.reads.held().unwrap();
    worker::settle(&mut a, effects);
    assert_eq!(a.log.as_ref().unwrap().count, before + 1);
    let kept_now = a.reads.held().unwrap();
    assert!(!std::sync::Arc::ptr_eq(&kept_before, &kept_now), "the log is folded again ahead of a query");
}

fn press_ctrl(app: &mut App, c: char) {
    press_with(app, KeyCode::Char(c), KeyModifiers::CONTROL);
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

/// The demo store's Query view, editing `text` (the cursor at its end).
fn editing(text: &str) -> (tempfile::TempDir, App) {
    let (dir, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Query;
    a.query.text = text.into();
    press(&mut a, KeyCode::Char('i'));
    (dir, a)
}

/// The query editor and the command line: Ctrl-W kills the word before the
/// cursor, Ctrl-U the line (then, on an empty line, the break before it);
/// a Ctrl key neither knows types nothing (Ctrl-U used to type `u`).
#[test]
fn ctrl_u_and_ctrl_w_kill_text_and_other_ctrl_keys_type_nothing() {
    let (_d, mut a) = editing("SELECT * WHERE {\n  ?s ?p ?o }");
    press_ctrl(&mut a, 'w');
    assert_eq!(a.query.text, "SELECT * WHERE {\n  ?s ?p ?o ");
    press_ctrl(&mut a, 'x');
    press_ctrl(&mut a, 'w');
    assert_eq!(a.query.text, "SELECT * WHERE {\n  ?s ?p ");
    press_ctrl(&mut a, 'u');
    assert_eq!(a.query.text, "SELECT * WHERE {\n");
    press_ctrl(&mut a, 'u');
    assert_eq!(a.query.text, "SELECT * WHERE {");
    press_ctrl(&mut a, 'u');
    assert_eq!(a.query.text, "");
    press_ctrl(&mut a, 'w');
    press(&mut a, KeyCode::Char('A'));
    assert_eq!((a.query.text.as_str(), a.query.editing), ("A", true));

    press(&mut a, KeyCode::Esc);
    press(&mut a, KeyCode::Char(':'));
    type_text(&mut a, "open v2");
    press_ctrl(&mut a, 'w');
    assert_eq!(a.cmdline.as_deref(), Some(":open "));
    press_ctrl(&mut a, 'k');
    press_ctrl(&mut a, 'u');
    assert_eq!(a.cmdline.as_deref(), Some(":"), "the command line stays open with its colon");
}

/// The query editor edits anywhere, not only at its end: arrows, Home/End
/// and Ctrl-A/E move the cursor, text goes in at it, Backspace and Delete
/// remove around it, Ctrl-K kills to the line's end and Ctrl-U/W before the
/// cursor; the cursor is drawn in reverse video on its character, and a
/// long query scrolls to keep it in the box. The query run is the edited one.
#[test]
fn the_query_editor_moves_a_cursor_and_edits_at_it() {
    let (_d, mut a) = editing("SELECT * WHERE {\n  ?s ?p ?o }");
    press(&mut a, KeyCode::Up);
    press(&mut a, KeyCode::Home);
    for _ in 0.."SELECT ".len() {
        press(&mut a, KeyCode::Right);
    }
    press(&mut a, KeyCode::Delete);
    type_text(&mut a, "?s");
    assert_eq!(a.query.text, "SELECT ?s WHERE {\n  ?s ?p ?o }");
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::End);
    press(&mut a, KeyCode::Left);
    press(&mut a, KeyCode::Left);
    press(&mut a, KeyCode::Backspace);
    press(&mut a, KeyCode::Char('O'));
    assert_eq!(a.query.text, "SELECT ?s WHERE {\n  ?s ?p ?O }");
    // The cursor is on the space before `}`.
    let row = text(&draw(&a, 80, 24)).lines().position(|l| l.contains("?s ?p ?O")).unwrap();
    let b = draw(&a, 80, 24);
    let x = (0..80).find(|&x| b[(x, row as u16)].symbol() == "}").unwrap() - 1;
    assert!(b[(x, row as u16)].modifier.contains(Modifier::REVERSED), "cursor cell drawn reversed");
    assert!(!b[(x - 1, row as u16)].modifier.contains(Modifier::REVERSED));

    press_ctrl(&mut a, 'a');
    press_ctrl(&mut a, 'k');
    assert_eq!(a.query.text, "SELECT ?s WHERE {\n");
    press_ctrl(&mut a, 'k');
    assert_eq!(a.query.text, "SELECT ?s WHERE {\n", "nothing after the cursor");
    press(&mut a, KeyCode::Up);
    press_ctrl(&mut a, 'e');
    press(&mut a, KeyCode::Left);
    press_ctrl(&mut a, 'w');
    assert_eq!(a.query.text, "SELECT ?s {\n", "the word before the cursor, the rest kept");
    press_ctrl(&mut a, 'u');
    assert_eq!(a.query.text, "{\n");
    type_text(&mut a, "ASK");
    press(&mut a, KeyCode::End);
    press(&mut a, KeyCode::Left);
    press(&mut a, KeyCode::Char('}'));
    assert_eq!(a.query.text, "ASK}{\n");

    // Twenty lines: the box shows seven, and the cursor's line among them.
    a.query.text = (0..20).map(|i| format!("# line {i}")).collect::<Vec<_>>().join("\n");
    a.query.cursor = None;
    let shown = text(&draw(&a, 80, 24));
    assert!(shown.contains("# line 19") && !shown.contains("# line 5"), "{shown}");
    for _ in 0..15 {
        press(&mut a, KeyCode::Up);
    }
    let shown = text(&draw(&a, 80, 24));
    assert!(shown.contains("# line 4") && !shown.contains("# line 19"), "{shown}");

    a.query.text = "ASK { ?s ?p ?o }".into();
    a.query.cursor = Some(3);
    press_ctrl(&mut a, 'r');
    assert_eq!(a.query.result.as_ref().and_then(|r| r.boolean), Some(true));
}

/// Each view's keys: the query editor takes `q` as text, the log's Esc
/// first folds an expanded batch, the decoder's Esc goes back to Files.
#[test]
fn each_view_handles_its_own_keys() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Query;
    a.query.text.clear();
    press(&mut a, KeyCode::Char('i'));
    press(&mut a, KeyCode::Char('q'));
    press(&mut a, KeyCode::Esc);
    assert_eq!((a.query.text.as_str(), a.quit, a.query.editing), ("q", false, false));

    a.tab = Tab::Log;
    press(&mut a, KeyCode::Enter);
    assert_eq!(a.log_view.expanded, Some(0));
    press(&mut a, KeyCode::Esc);
    assert_eq!((a.log_view.expanded, a.tab), (None, Tab::Log));

    a.tab = Tab::Files;
    press(&mut a, KeyCode::Enter);
    assert_eq!(a.tab, Tab::Decoder);
    press(&mut a, KeyCode::Char('l'));
    assert_eq!(a.decoder.as_ref().unwrap().cursor, 1);
    press(&mut a, KeyCode::Esc);
    assert_eq!(a.tab, Tab::Files);
}

/// Changes one byte in the middle of the subject dictionary of v2: its
/// header still decodes, its digest and its cells no longer agree.
fn damage_the_subject_dictionary(store: &Path) {
    demo::damage_subject_dictionary(store).unwrap();
}

/// The selected finding (the view keeps its order).
fn selected_check(a: &App) -> &'static str {
    a.triage.selected_finding().unwrap().check
}

fn select_finding(a: &mut App, check: &str) {
    act(a, Action::Top);
    while selected_check(a) != check {
        let before = a.triage.sel;
        act(a, Action::Down(1));
        assert_ne!(a.triage.sel, before, "no finding {check:?}");
    }
}

/// Showing the Triage view runs verify on the chunk (through the library,
/// as the CLI does); its findings are grouped by file, errors first, each
/// with its offset and check, the selected one whole below the list; the
/// Files view's status column reads the same findings.
#[test]
fn the_triage_view_verifies_and_groups_findings_by_file() {
    let (_d, store) = demo_store();
    damage_the_subject_dictionary(&store);
    tear_the_log_tail(&store);
    let mut a = app(&store, false);
    assert!(a.triage.report().is_none(), "nothing runs verify before the view is shown");
    act(&mut a, Action::NextTab);
    assert_eq!(a.tab, Tab::Triage);
    let report = a.triage.report().expect("verify ran when the view was shown");
    let expected = cottas_tui::triage::verify::verify(&store, Default::default()).unwrap();
    let mut want: Vec<(String, &str)> = expected.findings.iter().map(|f| (f.file.clone(), f.check)).collect();
    let mut got: Vec<(String, &str)> = report.findings.iter().map(|f| (f.file.clone(), f.check)).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "the same findings as the CLI's verify");
    assert!(got.iter().any(|(f, c)| f == "data.deltalog" && *c == "log-tail"), "{got:?}");
    assert!(got.iter().any(|(f, _)| f == "v2/data.cottas.s.dict"), "{got:?}");

    let b = draw(&a, 120, 34);
    let t = text(&b);
    assert!(t.contains("error") && t.contains("files checked"), "the summary: {t}");
    assert!(t.contains("log-tail") && t.contains("v2/data.cottas.s.dict"), "{t}");
    let dict_rows = t.lines().filter(|l| l.contains("v2/data.cottas.s.dict")).count();
    let dict_findings = got.iter().filter(|(f, _)| f == "v2/data.cottas.s.dict").count();
    assert!(dict_findings >= 1);
    // The file is named once in the list (its group), and again in the
    // detail pane when one of its findings is selected.
    let in_detail = usize::from(a.triage.selected_finding().unwrap().file == "v2/data.cottas.s.dict");
    assert_eq!(dict_rows, 1 + in_detail, "{t}");
    let (x, y) = find(&b, "✗").unwrap();
    assert_eq!(b[(x, y)].fg, Color::Red, "an error is red");
    assert!(t.contains("next: cottas-tui"), "the suggested command: {t}");
    assert!(t.contains("start with --write to repair"), "read-only says how to repair: {t}");

    // The list is in display order: by file, errors first.
    let files: Vec<String> = (0..report.findings.len())
        .map(|i| {
            a.triage.sel = i;
            a.triage.selected_finding().unwrap().file.clone()
        })
        .collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);

    // A click selects the finding under it.
    a.triage.sel = 0;
    let b = draw(&a, 120, 34);
    let (_, header) = find(&b, "offset").unwrap();
    act(&mut a, Action::Click { col: 2, row: header + 2 });
    assert_eq!(a.triage.sel, 1.min(report_len(&a) - 1));

    a.tab = Tab::Files;
    let t = text(&draw(&a, 120, 34));
    let row = t.lines().find(|l| l.contains("v2/data.cottas.s.dict")).unwrap();
    assert!(row.contains("✗") && row.contains("error"), "the status column: {row}");
    let row = t.lines().find(|l| l.contains("v2/data.cottas.p.dict")).unwrap();
    assert!(row.contains("✓ verified"), "{row}");
}

fn report_len(a: &App) -> usize {
    a.triage.report().unwrap().findings.len()
}

/// Before anything has been verified the Files view says so; while verify
/// runs the Triage view shows a gauge.
#[test]
fn the_triage_view_shows_progress_and_the_files_view_says_unverified() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Files;
    let t = text(&draw(&a, 100, 24));
    let row = t.lines().find(|l| l.contains("v2/data.cottas.p.dict")).unwrap();
    assert!(row.contains("unverified"), "{row}");
    a.tab = Tab::Triage;
    assert!(a.triage.start(false));
    assert!(!a.triage.start(true), "one run at a time");
    a.triage.progress(3, 9);
    let b = draw(&a, 100, 24);
    let t = text(&b);
    assert!(t.contains("row group 3/9"), "{t}");
    let (_, y) = find(&b, "row group").unwrap();
    let filled = |x: u16| b[(x, y)].symbol() == "█";
    assert!(filled(1) && filled(30) && !filled(40) && !filled(98), "a third of the gauge is filled:\n{t}");
    let effects = action::update(&mut a, Action::Verify { deep: true });
    assert!(effects.is_empty() && a.status.contains("already running"), "{}", a.status);
}

/// Enter on a finding opens its file in the Decoder with the cursor on
/// its offset and the field there selected; Esc comes back.
#[test]
fn enter_on_a_finding_opens_the_decoder_at_its_offset() {
    let (_d, store) = demo_store();
    tear_the_log_tail(&store);
    let mut a = app(&store, false);
    command(&mut a, ":verify");
    assert_eq!(a.tab, Tab::Triage);
    select_finding(&mut a, "log-tail");
    let offset = a.triage.selected_finding().unwrap().offset.unwrap();
    act(&mut a, Action::Enter);
    assert_eq!(a.tab, Tab::Decoder);
    let d = a.decoder.as_ref().unwrap();
    assert!(d.path.ends_with("data.deltalog"));
    assert_eq!(d.cursor, offset);
    let sel = d.selected_span().unwrap();
    assert!(sel.range.contains(&offset), "{sel:?}");
    assert!(!sel.is_ok() && sel.name == "leftover", "the damage, not a field inside it: {sel:?}");
    let t = text(&draw(&a, 120, 34));
    assert!(t.contains(&format!("{offset:#x}")), "{t}");
    act(&mut a, Action::Back);
    assert_eq!(a.tab, Tab::Triage);
}

/// `r` on a finding plans its repair and shows exactly what will change
/// and where the backup goes; `y` applies it and verify runs again. In a
/// read-only session `r` only says how.
#[test]
fn a_repair_from_triage_shows_the_plan_then_verifies_again() {
    let (_d, store) = demo_store();
    tear_the_log_tail(&store);
    let log_len = std::fs::metadata(store.join("data.deltalog")).unwrap().len();

    let mut ro = app(&store, false);
    command(&mut ro, ":verify");
    select_finding(&mut ro, "log-tail");
    act(&mut ro, Action::RepairSelected);
    assert!(ro.confirm.is_none() && ro.status.contains("--write"), "{}", ro.status);

    let mut a = app(&store, true);
    command(&mut a, ":verify");
    select_finding(&mut a, "log-tail");
    let t = text(&draw(&a, 120, 34));
    assert!(t.contains(" r  cut the torn tail off the log"), "{t}");
    act(&mut a, Action::RepairSelected);
    let confirm = a.confirm.as_ref().expect("a plan to confirm");
    assert!(confirm.text.contains("10 bytes"), "what will change: {}", confirm.text);
    assert!(confirm.text.contains("cottas-tui-backups"), "where the backup goes: {}", confirm.text);
    assert!(confirm.text.contains("repair truncate-torn-tail"), "the same command: {}", confirm.text);
    let t = text(&draw(&a, 120, 34));
    assert!(t.contains("Repair?") && t.contains("cottas-tui-backups"), "{t}");
    assert_eq!(std::fs::metadata(store.join("data.deltalog")).unwrap().len(), log_len, "nothing yet");

    act(&mut a, Action::ConfirmYes);
    assert_eq!(std::fs::metadata(store.join("data.deltalog")).unwrap().len(), log_len - 10);
    let report = a.triage.report().unwrap();
    assert!(report.is_clean(), "verify ran again after the repair: {:?}", report.findings);
    let t = text(&draw(&a, 120, 34));
    assert!(t.contains("clean"), "{t}");
    let backups = std::fs::read_dir(store.join("cottas-tui-backups")).unwrap().count();
    assert_eq!(backups, 1, "the cut bytes were kept");
}

/// A damaged sidecar's findings are repaired by rebuilding its version's
/// sidecars, the repair `verify` suggests; a finding with no repair of its
/// own says what to run instead.
#[test]
fn each_finding_names_the_repair_verify_suggests() {
    use cottas_tui::triage::repair::Repair;
    let (_d, store) = demo_store();
    damage_the_subject_dictionary(&store);
    tear_the_log_tail(&store);
    let report = cottas_tui::triage::verify::verify(&store, Default::default()).unwrap();
    for f in &report.findings {
        let next = f.next.as_deref().unwrap_or("");
        let repair = Repair::for_finding(f);
        if next.contains("repair ") {
            let want = repair.as_ref().map(|r| r.command(&store)).unwrap_or_default();
            assert!(next.starts_with(want.trim_end_matches(" --yes")), "{f:?}: {repair:?}");
        } else {
            assert_eq!(repair, None, "{f:?}");
        }
    }
    let dict = report.findings.iter().find(|f| f.file == "v2/data.cottas.s.dict").unwrap();
    assert_eq!(Repair::for_finding(dict), Some(Repair::RebuildSidecars("v2".into())));

    let mut a = app(&store, true);
    command(&mut a, ":verify");
    select_finding(&mut a, dict.check);
    act(&mut a, Action::RepairSelected);
    let confirm = a.confirm.as_ref().expect("a plan to confirm");
    assert!(confirm.text.contains("rebuild-sidecars") && confirm.text.contains("v2"), "{}", confirm.text);
    act(&mut a, Action::ConfirmYes);
    let left: Vec<&str> = a.triage.report().unwrap().findings.iter().map(|f| f.check).collect();
    assert_eq!(left, ["log-tail"], "the sidecars are whole again; the torn tail is still there");
}

/// A corpus root with three chunks: two healthy demo stores (one two levels
/// down) and one with a torn log tail.
fn demo_corpus() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    demo::ensure(&root.join("alpha"), false).unwrap();
    demo::ensure(&root.join("broken"), false).unwrap();
    demo::ensure(&root.join("region/eu/gamma"), false).unwrap();
    tear_the_log_tail(&root.join("broken"));
    (dir, root)
}

/// The corpus list on screen is made again once it is `RELIST_EVERY` old:
/// a new chunk and another process's append show up without a key, and
/// the selection stays on the chunk it was on.
#[test]
fn the_corpus_list_is_made_again_when_it_is_old() {
    use cottas_tui::tui::views::corpus::RELIST_EVERY;
    let (_d, root) = demo_corpus();
    let mut a = App::for_corpus(&root, false);
    let effects = a.startup();
    worker::settle(&mut a, effects);
    act(&mut a, Action::Down(1)); // broken
    let pending = |a: &App, name: &str| {
        let chunks = a.corpus.as_ref().unwrap().chunks.clone().unwrap();
        chunks.iter().find(|c| c.name == name).and_then(|c| c.pending_batches)
    };
    let before = pending(&a, "alpha").unwrap();
    act(&mut a, Action::Tick);
    assert!(a.corpus.as_ref().unwrap().listing.is_none(), "a fresh list is not made again");
    cottas_tui::sparql::update::Updater::open(&root.join("alpha"), None)
        .unwrap()
        .apply("INSERT DATA { <https://example.org/meanwhile> <https://example.org/p> 1 }")
        .unwrap();
    demo::ensure(&root.join("aardvark"), false).unwrap();
    let old = std::time::Instant::now().checked_sub(RELIST_EVERY).unwrap();
    a.corpus.as_mut().unwrap().listed_at = Some(old);
    act(&mut a, Action::Tick);
    assert_eq!(pending(&a, "alpha"), Some(before + 1), "the append is counted");
    let t = text(&draw(&a, 100, 24));
    assert!(t.contains("4 chunks") && t.contains("aardvark") && t.contains("listed 0 s ago"), "{t}");
    let c = a.corpus.as_ref().unwrap();
    assert_eq!(c.chunks.as_ref().unwrap()[c.sel].name, "broken", "the selection follows its chunk");
}

/// `cottas-tui ROOT` on a corpus root lists its chunks (as `corpus list`
/// sees them); `v` verifies every chunk; Enter opens one in the chunk views,
/// and Esc comes back to the list.
#[test]
fn the_corpus_view_lists_verifies_and_opens_chunks() {
    let (_d, root) = demo_corpus();
    let mut a = App::for_corpus(&root, false);
    let effects = a.startup();
    worker::settle(&mut a, effects);
    assert_eq!(a.tabs(), [Tab::Corpus], "no chunk views before a chunk is open");
    let b = draw(&a, 100, 24);
    let t = text(&b);
    assert!(t.contains("3 chunks"), "{t}");
    let row = t.lines().find(|l| l.contains("region/eu/gamma")).unwrap();
    assert!(row.contains("v2") && row.contains("not run") && row.contains("ok"), "{row}");
    // Damage first: the whole text above the table, the row marked.
    let row = t.lines().find(|l| l.contains("broken") && l.contains("v2")).unwrap();
    assert!(row.contains("✗ damaged"), "{row}");
    let alarm = t.lines().position(|l| l.starts_with("✗ broken: torn log tail")).expect("the alarm");
    let table = t.lines().position(|l| l.contains("chunk") && l.contains("status")).unwrap();
    assert!(alarm < table, "the damage comes first:\n{t}");
    let (x, y) = find(&b, "torn log tail").unwrap();
    assert_eq!(b[(x, y)].fg, Color::Red);
    let quads = cottas_tui::corpus::summarize(&root, &root.join("alpha")).base_quads.unwrap();
    let row = t.lines().find(|l| l.contains("alpha")).unwrap();
    assert!(row.contains(&format!(" {quads} ")), "the base's rows: {row}");

    act(&mut a, Action::Verify { deep: false });
    let b = draw(&a, 100, 24);
    let t = text(&b);
    let row = t.lines().find(|l| l.contains("broken") && l.contains("v2")).unwrap();
    assert!(row.contains("✗ 1 error"), "{row}");
    let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("✗ broken: torn log tail") && flat.contains("verify found 1 error"), "{t}");
    let row = t.lines().find(|l| l.contains("alpha")).unwrap();
    assert!(row.contains("✓ verified"), "{row}");
    assert!(a.status.contains("verified 3 chunks: 1 with errors"), "{}", a.status);

    act(&mut a, Action::Down(1));
    act(&mut a, Action::Enter);
    assert_eq!((a.tab, a.chunk.clone()), (Tab::Store, root.join("broken")));
    assert_eq!(a.tabs()[0], Tab::Corpus);
    assert!(a.tabs().contains(&Tab::Triage));
    let t = text(&draw(&a, 100, 24));
    assert!(t.contains("current -> v2") && t.contains("corpus/broken"), "{t}");
    act(&mut a, Action::NextTab);
    assert_eq!(a.tab, Tab::Triage);
    assert!(a.triage.report().is_some_and(|r| r.errors() == 1));
    act(&mut a, Action::Back);
    assert_eq!(a.tab, Tab::Corpus, "Esc from the top of a chunk returns to the corpus");
    act(&mut a, Action::Down(1));
    act(&mut a, Action::Enter);
    assert_eq!(a.chunk, root.join("region/eu/gamma"));
    assert!(a.triage.report().is_none(), "nothing of the last chunk is kept");
    act(&mut a, Action::Back);
    assert_eq!(a.tab, Tab::Corpus);
    // A chunk dir still opens straight into its Store view.
    let single = app(&root.join("alpha"), false);
    assert_eq!((single.tab, single.tabs().contains(&Tab::Corpus)), (Tab::Store, false));
}

/// A query on a corpus root, before a chunk is open, reads every chunk as
/// one dataset (as `cottas-tui query ROOT` does): a quad only one chunk
/// holds is counted, quads every chunk holds once; `:export` writes the
/// same answer; the commands that act on one chunk say so, and `:verify`
/// verifies every chunk.
#[test]
fn a_query_on_a_corpus_root_reads_every_chunk_as_one_dataset() {
    let (_d, root) = demo_corpus();
    for (chunk, quad) in
        [("alpha", "<urn:only-in-alpha> <urn:p> 1"), ("region/eu/gamma", "<urn:only-in-gamma> <urn:p> 2")]
    {
        cottas_tui::sparql::update::Updater::open(&root.join(chunk), None)
            .unwrap()
            .apply(&format!("INSERT DATA {{ {quad} }}"))
            .unwrap();
    }
    let all = "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }";
    let count = |a: &mut App| {
        a.query.text = all.into();
        act(a, Action::RunQuery);
        let r = a.query.result.as_ref().expect("a result");
        assert_eq!(r.error, None);
        r.rows[0][0].trim_matches('"').split('"').next().unwrap().parse::<usize>().unwrap()
    };
    let mut alpha = app(&root.join("alpha"), false);
    alpha.tab = Tab::Query;
    let in_alpha = count(&mut alpha);

    let mut a = App::for_corpus(&root, false);
    let effects = a.startup();
    worker::settle(&mut a, effects);
    command(&mut a, ":query");
    assert_eq!(a.tab, Tab::Query);
    assert!(text(&draw(&a, 100, 24)).contains("Query over every chunk of the corpus"));
    assert_eq!(count(&mut a), in_alpha + 1, "alpha's quads, and gamma's one more, each once");

    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("n.tsv");
    command(&mut a, &format!(":export {}", file.display()));
    assert!(a.status.starts_with("exported 1 result"), "{}", a.status);
    let tsv = std::fs::read_to_string(&file).unwrap();
    assert!(tsv.contains(&format!("{}", in_alpha + 1)), "{tsv}");

    for cmd in [":update INSERT DATA { <urn:a> <urn:b> <urn:c> }", ":compact", ":repair log-tail", ":open v1"]
    {
        command(&mut a, cmd);
        assert!(a.status.contains("works on one chunk: open it first"), "{cmd}: {}", a.status);
    }
    command(&mut a, ":verify");
    assert_eq!(a.tab, Tab::Corpus);
    assert!(a.status.contains("verified 3 chunks: 1 with errors"), "{}", a.status);
    // Once a chunk is open, a query reads that chunk alone.
    act(&mut a, Action::Enter);
    assert_eq!(a.chunk, root.join("alpha"));
    a.tab = Tab::Query;
    assert_eq!(count(&mut a), in_alpha);
    assert!(!text(&draw(&a, 100, 24)).contains("every chunk of the corpus"));
}

/// The demo corpus (what `cottas-tui` with no argument opens): a healthy
/// chunk with several row groups and named graphs, one whose pending
/// batches span two epochs, and one whose verify finds a damaged sidecar
/// and a torn log tail.
#[test]
fn the_demo_corpus_has_something_for_every_view() {
    use cottas_tui::store::log::Log;
    use cottas_tui::store::versions::open::Store;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo-corpus");
    assert!(demo::ensure_corpus(&root, false).unwrap());
    assert!(!demo::ensure_corpus(&root, false).unwrap(), "built once");
    let healthy = Store::open(&root.join("healthy")).unwrap();
    assert!(healthy.base.num_rows() >= 10_000, "{}", healthy.base.num_rows());
    assert!(healthy.base.num_row_groups() >= 3, "{}", healthy.base.num_row_groups());
    assert!(cottas_tui::triage::verify::verify(&root.join("healthy"), Default::default())
        .unwrap()
        .is_clean());

    let pending = Store::open(&root.join("pending")).unwrap();
    let marker = pending.marker.map(|m| m.epoch);
    let log = Log::read(&root.join("pending/data.deltalog")).unwrap().unwrap();
    let mut epochs: Vec<u64> = log.visible(Visibility::over(marker)).map(|b| b.batch.epoch).collect();
    epochs.dedup();
    assert!(epochs.len() >= 2, "pending batches across two epochs: {epochs:?}");

    let report = cottas_tui::triage::verify::verify(&root.join("damaged"), Default::default()).unwrap();
    let checks: Vec<(&str, &str)> = report.findings.iter().map(|f| (f.file.as_str(), f.check)).collect();
    assert!(checks.contains(&("data.deltalog", "log-tail")), "{checks:?}");
    assert!(checks.iter().any(|(f, _)| *f == "v2/data.cottas.s.dict"), "{checks:?}");

    let mut a = App::for_corpus(&root, false);
    let effects = a.startup();
    worker::settle(&mut a, effects);
    let t = text(&draw(&a, 100, 24));
    assert!(t.contains("3 chunks") && t.contains("torn log tail"), "{t}");
}

/// Results for people: IRIs under the query's PREFIXes and the result's own
/// namespaces (named in a legend line), `a` shows them whole; h/l scroll the
/// columns sideways when they do not fit; Enter shows the selected row with
/// every cell whole, Esc closes it.
#[test]
fn the_query_view_abbreviates_scrolls_and_shows_a_row_whole() {
    use ratatui::crossterm::event::Event;
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    command(
        &mut a,
        ":query PREFIX foaf: <http://xmlns.com/foaf/0.1/> SELECT ?person ?name ?g ?extra WHERE { GRAPH ?g { ?person foaf:name ?name } BIND(?person AS ?extra) } ORDER BY ?name",
    );
    press(&mut a, KeyCode::Enter);
    let rows = a.query.result.as_ref().unwrap().rows.len();
    assert!(rows >= 2, "{rows}");
    let t = text(&draw(&a, 100, 24));
    assert!(t.contains("people:ada") && t.contains("graph:people"), "{t}");
    assert!(t.contains("people: <https://demo.cottas.example/people/>"), "the legend: {t}");
    assert!(!t.contains("<https://demo.cottas.example/people/ada>"), "{t}");

    press(&mut a, KeyCode::Char('a'));
    let t = text(&draw(&a, 100, 24));
    assert!(t.contains("<https://demo.cottas.example/people/ada>"), "whole IRIs: {t}");
    press(&mut a, KeyCode::Char('a'));

    // At 60 columns the four do not fit: l shows the later ones.
    // The table's header row (the query text above names every variable).
    let header = |t: &str| {
        let mut lines = t.lines().skip_while(|l| !l.contains("Results — "));
        lines.nth(1).unwrap().to_string()
    };
    let t = text(&draw(&a, 60, 24));
    assert!(header(&t).contains("?person") && !header(&t).contains("?extra"), "{t}");
    assert!(t.contains("columns 1-") && t.contains("→"), "{t}");
    press(&mut a, KeyCode::Char('l'));
    press(&mut a, KeyCode::Char('l'));
    let t = text(&draw(&a, 60, 24));
    assert!(!header(&t).contains("?person") && header(&t).contains("?extra"), "{t}");
    assert!(t.contains("←"), "{t}");
    press(&mut a, KeyCode::Char('h'));
    press(&mut a, KeyCode::Char('h'));

    press(&mut a, KeyCode::Char('j'));
    press(&mut a, KeyCode::Enter);
    assert!(a.query.detail);
    let selected = a.query.result.as_ref().unwrap().rows[1].clone();
    let t = text(&draw(&a, 100, 24));
    assert!(t.contains(&format!("Row 2 of {rows}")), "{t}");
    assert!(t.contains(&selected[0]), "the whole IRI {:?}: {t}", selected[0]);
    press(&mut a, KeyCode::Esc);
    assert!(!a.query.detail && a.tab == Tab::Query);
    // Ctrl-R runs again with a result on screen; Enter no longer does.
    let ev = Event::Key(KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL));
    assert!(matches!(action::from_event(&a, ev), Some(Action::RunQuery)));
}

/// `x` (or Ctrl-C) during a compaction started from the UI stops it: the
/// status says nothing was changed, and nothing was: no new version, the
/// same `current`, the same log.
#[test]
fn a_compaction_cancelled_from_the_ui_changes_nothing() {
    let (_d, store) = demo_store();
    let log_before = std::fs::read(store.join("data.deltalog")).unwrap();
    let mut a = app(&store, true);
    command(&mut a, ":compact");
    assert!(a.confirm.as_ref().is_some_and(|c| c.title == "Compact?"));
    let effects = action::update(&mut a, Action::ConfirmYes);
    assert!(a.compaction.is_some());
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains("x  cancel compaction"), "the keybar while compacting: {t}");
    // Ctrl-C and q ask before they stop a compaction halfway; n keeps it.
    press_with(&mut a, KeyCode::Char('c'), KeyModifiers::CONTROL);
    let confirm = a.confirm.as_ref().expect("a question");
    assert!(
        confirm.title == "Quit?" && confirm.text.contains("leave its temp dir behind"),
        "{}",
        confirm.text
    );
    assert!(!a.quit);
    press(&mut a, KeyCode::Char('n'));
    press(&mut a, KeyCode::Char('q'));
    assert!(a.confirm.as_ref().is_some_and(|c| c.title == "Quit?") && !a.quit);
    press(&mut a, KeyCode::Char('n'));
    assert!(a.compaction.is_some() && !a.quit);
    press(&mut a, KeyCode::Char('x'));
    assert!(a.status.contains("cancelling the compaction"), "{}", a.status);
    worker::settle(&mut a, effects);
    assert!(a.compaction.is_none());
    assert!(a.status.contains("compaction cancelled: nothing was changed"), "{}", a.status);
    assert_eq!(std::fs::read_link(store.join("current")).unwrap(), Path::new("v2"));
    assert!(!store.join("v3").exists());
    assert_eq!(std::fs::read(store.join("data.deltalog")).unwrap(), log_before);
    common::assert_no_compaction_leftovers(&store);
}

/// The timeline during a compaction started from the UI (its messages fed
/// through the update step as the worker would send them): the epochs being
/// folded are marked, a batch appended meanwhile is an event, and the flip
/// of `current` with what was carried is the last one.
#[test]
fn the_timeline_shows_a_compaction_as_it_happens() {
    use cottas_tui::compact::{CompactPhase, CompactProgress};
    use cottas_tui::tui::worker::{CompactEnd, Msg};
    let (_d, store) = demo_store();
    let mut a = app(&store, true);
    command(&mut a, ":compact");
    let _effects = action::update(&mut a, Action::ConfirmYes); // not run: the messages come below
    let progress = |phase| CompactProgress {
        phase,
        rows_done: 5,
        rows_total: 21,
        bytes_written: 0,
        epochs: (Some(1), 2),
    };
    act(&mut a, Action::Worker(Msg::CompactProgress(progress(CompactPhase::Folding))));
    let b = draw(&a, 100, 30);
    let t = text(&b);
    assert!(t.contains("compaction of v2 started") && t.contains("folding 4 batches of epochs 2..=2"), "{t}");
    let (x, y) = find(&b, "(folding)").unwrap();
    assert_eq!(b[(x, y)].fg, Color::Yellow, "the epochs being folded");
    // On the log axis, the folding epoch's band is yellow too, and the
    // current version's marker (epoch 1, below every batch) at its start.
    let (x, y) = find(&b, "log │").unwrap();
    assert_eq!(b[(x + 5, y)].fg, Color::Yellow, "{t}");
    let marks = t.lines().nth(y as usize + 2).unwrap();
    assert!(marks.contains("▲v2 (current)"), "{t}");
    let axis = t.lines().nth(y as usize).unwrap();
    assert!(axis.contains('░') && axis.contains('█'), "5 of 21 rows folded: part filled: {axis}");
    assert!(t.contains("folding 5/21 rows"), "the gauge: {t}");
    // Another writer appends; the watcher's report re-indexes the log.
    cottas_tui::sparql::update::Updater::open(&store, None)
        .unwrap()
        .apply("INSERT DATA { <https://example.org/meanwhile> <https://example.org/p> 1 }")
        .unwrap();
    let reindexed = LogIndex::build(&a.log_path());
    act(&mut a, Action::Worker(Msg::LogIndexed(Box::new(reindexed))));
    let t = text(&draw(&a, 100, 30));
    assert!(t.contains("1 batch appended while compacting"), "{t}");
    assert!(!t.contains("carried into the new log"), "not before the flip: {t}");
    // A second append is the same line, counted again: the milestones stay.
    cottas_tui::sparql::update::Updater::open(&store, None)
        .unwrap()
        .apply("INSERT DATA { <https://example.org/again> <https://example.org/p> 2 }")
        .unwrap();
    let reindexed = LogIndex::build(&a.log_path());
    act(&mut a, Action::Worker(Msg::LogIndexed(Box::new(reindexed))));
    let t = text(&draw(&a, 100, 30));
    assert!(t.contains("2 batches appended while compacting") && !t.contains("1 batch appended"), "{t}");
    assert!(t.contains("compaction of v2 started") && t.contains("folding 4 batches"), "{t}");
    let done = CompactEnd::Done {
        text: "compact: OK v2 -> v3".into(),
        from: "v2".into(),
        to: "v3".into(),
        carried: 2,
    };
    act(&mut a, Action::Worker(Msg::CompactDone(done)));
    let t = text(&draw(&a, 100, 30));
    assert!(t.contains("`current` flipped v2 → v3; 2 batches carried"), "{t}");
    assert!(t.contains("2 batches appended while compacting: carried into the new log"), "{t}");
    assert!(a.compaction.is_none() && !t.contains("(folding)"), "{t}");
}

/// The Store view says how much of the log the current version still folds
/// in (counted here from a full decode of the log) and shows a torn tail.
#[test]
fn the_store_view_sums_up_the_pending_log_and_its_damage() {
    let (_d, store) = demo_store();
    let log = cottas_tui::store::log::Log::read(&store.join("data.deltalog")).unwrap().unwrap();
    let marker = app(&store, false).current_marker();
    let visible: Vec<_> = log.visible(Visibility::over(marker)).collect();
    let count = |want: fn(&cottas_tui::format::deltalog::Entry) -> bool| {
        visible.iter().flat_map(|f| &f.batch.entries).filter(|e| want(e)).count()
    };
    use cottas_tui::format::deltalog::Entry;
    let (added, removed) = (count(|e| matches!(e, Entry::Add(_))), count(|e| matches!(e, Entry::Remove(_))));
    assert!(!visible.is_empty(), "the demo has pending batches");
    let t = text(&draw(&app(&store, false), 160, 30));
    let expected = format!(
        "log: {} batches, {}; {} pending over v2: +{added} \u{2212}{removed} quads",
        log.frames.len(),
        humansize::format_size(log.bytes.len(), humansize::BINARY),
        visible.len()
    );
    assert!(t.contains(&expected), "{expected}\n{t}");
    assert!(!t.contains("TORN TAIL"), "{t}");

    tear_the_log_tail(&store);
    let b = draw(&app(&store, false), 160, 30);
    let (x, y) = find(&b, "TORN TAIL at byte").unwrap_or_else(|| panic!("{}", text(&b)));
    assert_eq!(b[(x, y)].fg, Color::Red);
    assert!(text(&b).lines().nth(y as usize).unwrap().starts_with("✗ log: TORN TAIL"), "damage first");
    assert!(text(&b).contains(&format!("TORN TAIL at byte {}", log.bytes.len())), "{}", text(&b));
}

/// Queries read the log folded once (at start) and kept: the same snapshot
/// while the disk is unchanged, a new one after another writer's append (whose quad
/// the next query sees), and after the UI's own update the writer's fold,
/// which the next query reads as it is.
#[test]
fn queries_fold_the_log_once_until_the_disk_changes() {
    use std::sync::Arc;
    let (_d, store) = demo_store();
    let mut a = app(&store, true);
    a.tab = Tab::Query;
    let count = |a: &mut App| {
        a.query.text = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }".into();
        act(a, Action::RunQuery);
        let rows = &a.query.result.as_ref().expect("a result").rows;
        rows[0][0].trim_matches('"').split('"').next().unwrap().parse::<u64>().unwrap()
    };
    let first = a.reads.held().expect("the log is folded at start, before the first query");
    let before = count(&mut a);
    assert!(Arc::ptr_eq(&first, &a.reads.held().unwrap()), "the first query read what was folded at start");
    assert_eq!(count(&mut a), before);
    assert!(Arc::ptr_eq(&first, &a.reads.held().unwrap()), "read again although nothing changed");

    let mut other = cottas_tui::sparql::update::Updater::open(&store, None).unwrap();
    other.apply("INSERT DATA { GRAPH <http://ex.org/g> { <http://ex.org/a> <http://ex.org/p> 1 } }").unwrap();
    drop(other);
    assert_eq!(count(&mut a), before + 1, "another writer's quad");
    let second = a.reads.held().unwrap();
    assert!(!Arc::ptr_eq(&first, &second));

    command(
        &mut a,
        "update INSERT DATA { GRAPH <http://ex.org/g> { <http://ex.org/b> <http://ex.org/p> 2 } }",
    );
    assert!(a.status.contains("1 added") || a.status.contains("+1"), "{}", a.status);
    let handed = a.reads.held().expect("the writer's fold is kept");
    assert!(!Arc::ptr_eq(&second, &handed));
    assert_eq!(count(&mut a), before + 2, "the UI's own quad");
    assert!(Arc::ptr_eq(&handed, &a.reads.held().unwrap()), "the writer's fold was read as it is");

    // The UI's writer is kept between its updates; another process's write
    // in between is read before the next one (the quads of all three count).
    assert!(a.writer.lock().unwrap().is_some(), "the writer is kept");
    let mut other = cottas_tui::sparql::update::Updater::open(&store, None).unwrap();
    other.apply("INSERT DATA { GRAPH <http://ex.org/g> { <http://ex.org/c> <http://ex.org/p> 3 } }").unwrap();
    drop(other);
    command(
        &mut a,
        "update INSERT DATA { GRAPH <http://ex.org/g> { <http://ex.org/d> <http://ex.org/p> 4 } }",
    );
    command(
        &mut a,
        "update DELETE DATA { GRAPH <http://ex.org/g> { <http://ex.org/a> <http://ex.org/p> 1 } }",
    );
    assert_eq!(count(&mut a), before + 3, "a, b, c, d added; a deleted again");
    let fresh = cottas_tui::view::Snapshot::open(&store, 1 << 20).unwrap();
    let (all, _) = fresh.view().quads(None, None, None, cottas_tui::view::Graphs::AnyNamed).unwrap();
    assert_eq!(all.count() as u64, before + 3, "the disk agrees");
}

/// Results for people: a count reads as a number, and with IRIs whole
/// (`a`) a cell wider than its column ends in `…`, at 80 columns and wide.
#[test]
fn numbers_read_as_numbers_and_cut_cells_end_in_an_ellipsis() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    a.tab = Tab::Query;
    let long = format!("<http://www.Department0.University0.edu/{}>", "GraduateStudent".repeat(5));
    let count = "\"24297\"^^<http://www.w3.org/2001/XMLSchema#integer>".to_string();
    let table = QueryTable {
        vars: vec!["who".into(), "n".into()],
        rows: vec![vec![long.clone(), count]],
        total: 1,
        ..Default::default()
    };
    act(&mut a, Action::Worker(worker::Msg::QueryDone(table)));
    act(&mut a, Action::ToggleIris);
    assert!(a.query.full_iris);
    // Cut at 80 columns; whole at 200, where the row has room for it.
    for (w, h, cut) in [(80, 24, true), (200, 50, false)] {
        let t = text(&draw(&a, w, h));
        assert!(t.contains("24297") && !t.contains("XMLSchema#integer"), "{w}×{h}: {t}");
        let line = t.lines().find(|l| l.contains("<http://www.Department0.University0.edu/Graduate"));
        assert_eq!(line.is_some_and(|l| l.contains('…')), cut, "{w}×{h}: {t}");
        assert_eq!(!t.contains(&long), cut, "the long IRI at {w}×{h}");
    }
}

/// Changes the first byte of a footer field of `store`'s `version` to
/// another valid varint: the base still parses, only its digest and the
/// footer copy tell. Returns the byte's offset.
fn change_a_footer_field(store: &Path, version: &str) -> u64 {
    let base = store.join(version).join("data.cottas");
    let mut bytes = std::fs::read(&base).unwrap();
    let (spans, _) = cottas_tui::format::parquet::footer_fields(&bytes);
    let field = spans.iter().find(|s| s.name.ends_with("columns[1].meta_data.data_page_offset")).unwrap();
    let at = field.range.start;
    bytes[at as usize] ^= 0x04;
    std::fs::write(&base, bytes).unwrap();
    at
}

/// Damage first, at 80×24 and 160×45: a version whose footer changed and
/// a torn log tail are the top lines of the Store view, whole (wrapped),
/// each with what fixes it, in words (no Rust names); the title keeps the
/// chunk's name. `r` plans the first repair (the footer from its copy), the
/// status stops saying the plan is coming, and `y` mends it.
#[test]
fn the_store_view_puts_damage_first_with_what_fixes_it() {
    let (_d, store) = demo_store();
    let at = change_a_footer_field(&store, "v2");
    tear_the_log_tail(&store);
    for (w, h) in [(80, 24), (160, 45)] {
        let a = app(&store, true);
        let t = text(&draw(&a, w, h));
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].contains("[rw] demo"), "{t}");
        assert!(lines[1].starts_with("✗ v2 (current) does not open: data.cottas: at byte"), "{t}");
        let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&format!("byte {at} differs from the footer copy")), "{t}");
        assert!(flat.contains("r: put back the footer of v2/data.cottas from its copy"), "{t}");
        assert!(flat.contains("✗ log: TORN TAIL") && flat.contains("readers ignore them"), "{t}");
        assert!(flat.contains("cut the torn tail off the log: cottas-tui repair truncate-torn-tail"), "{t}");
        let alarms_end = lines.iter().position(|l| l.starts_with("chunk ")).unwrap();
        let table = lines.iter().position(|l| l.contains("version") && l.contains("status")).unwrap();
        assert!(alarms_end < table, "the damage is above the versions: {t}");
        assert!(lines.iter().any(|l| l.contains("v2") && l.contains("✗ damaged")), "{t}");
        for rust in ["TornFrame", "Some(", "Err(", "Format {"] {
            assert!(!t.contains(rust), "{rust} on screen: {t}");
        }
    }
    let mut ro = app(&store, false);
    let t = text(&draw(&ro, 80, 24));
    assert!(t.contains("start with --write") || t.contains("restore-footer"), "{t}");
    press(&mut ro, KeyCode::Char('r'));
    assert!(ro.confirm.is_none(), "read-only plans nothing");

    let mut a = app(&store, true);
    press(&mut a, KeyCode::Char('r'));
    let confirm = a.confirm.as_ref().expect("the plan");
    assert!(confirm.text.contains(&format!("byte {at} differs")), "{}", confirm.text);
    assert!(confirm.text.contains("repair restore-footer"), "{}", confirm.text);
    assert!(!a.status.contains("planning"), "{}", a.status);
    act(&mut a, Action::ConfirmYes);
    let t = text(&draw(&a, 80, 24));
    assert!(!t.contains("does not open") && t.contains("current -> v2  (complete)"), "{t}");
    assert!(t.contains("✗ log: TORN TAIL"), "the other damage stays until it is repaired: {t}");
    press(&mut a, KeyCode::Char('r'));
    assert!(a.confirm.as_ref().is_some_and(|c| c.text.contains("truncate-torn-tail")), "the next repair");
}

/// Leftovers of interrupted operations are listed with a clean-up action:
/// `r` removes them after a plan, as `gc --leftovers` does.
#[test]
fn leftovers_are_listed_with_a_clean_up_action() {
    let (_d, store) = demo_store();
    let leftover = store.join(".v3.compact-tmp.999999999");
    std::fs::create_dir(&leftover).unwrap();
    std::fs::write(leftover.join("data.cottas"), vec![0u8; 5000]).unwrap();
    let mut a = app(&store, true);
    let t = text(&draw(&a, 80, 24));
    let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("! 1 leftover of interrupted operations"), "{t}");
    assert!(flat.contains("r: remove the leftovers of interrupted operations"), "{t}");
    press(&mut a, KeyCode::Char('r'));
    assert!(
        a.confirm.as_ref().is_some_and(|c| c.text.contains(".v3.compact-tmp.999999999")),
        "{:?}",
        a.confirm
    );
    act(&mut a, Action::ConfirmYes);
    assert!(!leftover.exists());
    let t = text(&draw(&a, 80, 24));
    assert!(!t.contains("leftover"), "{t}");
}

/// `q` during a compaction, answered `y`: the compaction is cancelled, its
/// temp dir removed, and the UI quits once it has stopped; the batches
/// appended meanwhile are said to stay in the log, not to be carried.
#[test]
fn quitting_during_a_compaction_cancels_it_cleans_up_and_then_quits() {
    use cottas_tui::tui::worker::{CompactEnd, Msg};
    let (_d, store) = demo_store();
    let mut a = app(&store, true);
    command(&mut a, ":compact");
    let effects = action::update(&mut a, Action::ConfirmYes);
    press(&mut a, KeyCode::Char('q'));
    act(&mut a, Action::ConfirmYes);
    assert!(!a.quit, "not before the compaction has stopped");
    assert!(a.status.contains("quitting when it has stopped"), "{}", a.status);
    worker::settle(&mut a, effects);
    assert!(a.quit, "quit once it stopped");
    assert!(!store.join("v3").exists());
    common::assert_no_compaction_leftovers(&store);

    // A cancelled compaction's count line says the batches stay.
    let mut a = app(&store, true);
    command(&mut a, ":compact");
    let _ = action::update(&mut a, Action::ConfirmYes);
    a.timeline.progress((Some(1), 2), a.log.as_ref());
    a.timeline.count_at_start -= 1;
    let reindexed = LogIndex::build(&a.log_path());
    a.timeline.reindexed(&reindexed);
    act(&mut a, Action::Worker(Msg::CompactDone(CompactEnd::Cancelled)));
    let t = text(&draw(&a, 100, 30));
    assert!(t.contains("1 batch appended while compacting: left in the log as they were"), "{t}");
    assert!(!t.contains("carried into the new log"), "{t}");
    // Without a compaction or a repair, q quits at once.
    press(&mut a, KeyCode::Char('q'));
    assert!(a.quit && a.confirm.is_none());
}

/// The Events pane uses the room it has and scrolls with j/k.
#[test]
fn the_events_pane_uses_its_room_and_scrolls() {
    let (_d, store) = demo_store();
    let mut a = app(&store, true);
    for i in 0..40 {
        a.timeline.event(format!("event number {i}"));
    }
    act(&mut a, Action::NextTab);
    while a.tab != Tab::Timeline {
        act(&mut a, Action::NextTab);
    }
    let t = text(&draw(&a, 160, 45));
    let shown = t.lines().filter(|l| l.contains("event number")).count();
    assert!(shown > 6, "more than six rows at 160×45: {shown}\n{t}");
    assert!(t.contains("event number 39") && t.contains("(j/k scroll)"), "{t}");
    act(&mut a, Action::Up(5));
    let t = text(&draw(&a, 160, 45));
    assert!(!t.contains("event number 39") && t.contains("event number 34"), "{t}");
    let small = text(&draw(&a, 80, 24));
    assert!(small.lines().filter(|l| l.contains("event number")).count() >= 4, "{small}");
}

/// The decoder on a large file: PgDn moves a screen of bytes, `]` the next
/// structure, `!` the next damage (here a footer field whose byte the
/// version's records say changed).
#[test]
fn the_decoder_pages_by_screens_and_jumps_to_structure_and_damage() {
    let (_d, store) = demo_store();
    let at = change_a_footer_field(&store, "v2");
    let mut a = app(&store, false);
    command(&mut a, ":open v2/data.cottas");
    assert_eq!(a.tab, Tab::Decoder);
    act(&mut a, Action::Resize { width: 120, height: 40 });
    let d = a.decoder.as_ref().unwrap();
    assert!(d.problems.iter().any(|p| p.contains(&format!("at byte {at}"))), "{:?}", d.problems);
    let t = text(&draw(&a, 120, 40));
    assert!(t.contains(&format!("at byte {at}: the Parquet footer")), "the problem is listed: {t}");
    let before = a.decoder.as_ref().unwrap().cursor;
    press(&mut a, KeyCode::PageDown);
    let d = a.decoder.as_ref().unwrap();
    let step = d.cursor - before;
    assert!(step >= 8 * a.screen.page as u64, "a screen of bytes, not a few rows: {step}");
    assert!(a.status.starts_with(&format!("byte {} of ", d.cursor)), "{}", a.status);
    press(&mut a, KeyCode::PageUp);
    assert_eq!(a.decoder.as_ref().unwrap().cursor, before);
    press(&mut a, KeyCode::Char(']'));
    let next = a.decoder.as_ref().unwrap().cursor;
    assert!(next > before, "{next}");
    press(&mut a, KeyCode::Char('['));
    assert!(a.decoder.as_ref().unwrap().cursor < next);
    command(&mut a, ":goto 50%");
    let len = a.decoder.as_ref().unwrap().bytes.len() as u64;
    assert_eq!(a.decoder.as_ref().unwrap().cursor, len / 2, "{}", a.status);
    command(&mut a, ":goto 0");
    press(&mut a, KeyCode::Char('!'));
    let d = a.decoder.as_ref().unwrap();
    assert_eq!(d.cursor, at, "{}", a.status);
    assert!(a.status.starts_with("damage 1 of 1"), "{}", a.status);
    let t = text(&draw(&a, 120, 40));
    assert!(t.contains("✗"), "the changed field is marked: {t}");
}

/// `/` filters every list (Corpus, Files, Triage): only matching rows,
/// moves and Enter among them, the title says how many; Esc shows all.
#[test]
fn slash_filters_the_lists() {
    let (_d, root) = demo_corpus();
    damage_the_subject_dictionary(&root.join("broken"));
    let mut a = App::for_corpus(&root, false);
    let effects = a.startup();
    worker::settle(&mut a, effects);
    press(&mut a, KeyCode::Char('/'));
    type_text(&mut a, "gamma");
    press(&mut a, KeyCode::Enter);
    for (w, h) in [(80, 24), (160, 45)] {
        let t = text(&draw(&a, w, h));
        assert!(t.contains("region/eu/gamma") && !t.contains("alpha "), "{w}×{h}: {t}");
        assert!(t.contains("1 of 3 match \"gamma\""), "{w}×{h}: {t}");
    }
    act(&mut a, Action::Enter);
    assert_eq!(a.chunk, root.join("region/eu/gamma"), "Enter opens the chunk shown");
    act(&mut a, Action::Back);
    press(&mut a, KeyCode::Esc);
    let t = text(&draw(&a, 100, 24));
    assert!(t.contains("alpha") && t.contains("broken") && !t.contains("match"), "{t}");

    // Triage of the broken chunk: its findings filtered by check.
    act(&mut a, Action::Down(1));
    act(&mut a, Action::Enter);
    assert_eq!(a.chunk, root.join("broken"));
    command(&mut a, ":verify");
    let all = report_len(&a);
    press(&mut a, KeyCode::Char('/'));
    type_text(&mut a, "log-tail");
    press(&mut a, KeyCode::Enter);
    assert_eq!(selected_check(&a), "log-tail");
    assert!(a.status.contains(&format!("1 of {all} findings shown")), "{}", a.status);
    let t = text(&draw(&a, 80, 24));
    assert!(t.contains("match \"log-tail\"") && !t.contains("data.cottas.s.dict"), "{t}");
    press(&mut a, KeyCode::Esc);
    let t = text(&draw(&a, 80, 24));
    assert!(a.tab == Tab::Triage && !t.contains("match \"log-tail\""), "Esc clears the filter first: {t}");
    assert!(all > 1 && t.contains("data.cottas.s.dict"), "every finding is listed again: {t}");

    // Files of the version: by name.
    command(&mut a, ":open v2");
    go_to(&mut a, Tab::Files);
    press(&mut a, KeyCode::Char('/'));
    type_text(&mut a, "dict");
    press(&mut a, KeyCode::Enter);
    let t = text(&draw(&a, 80, 24));
    let listed: Vec<&str> = t.lines().filter(|l| l.contains("data.cottas")).collect();
    assert!(!listed.is_empty() && listed.iter().all(|l| l.contains(".dict")), "{t}");
    assert!(a.status.contains("of") && a.status.contains("files shown"), "{}", a.status);
}

fn go_to(a: &mut App, tab: Tab) {
    for _ in 0..12 {
        if a.tab == tab {
            return;
        }
        act(a, Action::NextTab);
    }
    panic!("no {tab:?} tab");
}

/// `/` in the Log view: the batches that hold the text are found on a
/// worker (every batch decoded once), only they are listed, Enter expands
/// the one selected, Esc lists every batch again.
#[test]
fn slash_filters_the_log_by_what_its_batches_hold() {
    let (_d, store) = demo_store();
    common::update(&store, "INSERT DATA { <https://example.org/needle> <https://example.org/p> 1 }");
    let mut a = app(&store, false);
    go_to(&mut a, Tab::Log);
    let all = a.log.as_ref().unwrap().count;
    assert!(all >= 3, "{all}");
    press(&mut a, KeyCode::Char('/'));
    type_text(&mut a, "needle");
    press(&mut a, KeyCode::Enter);
    assert!(a.status.contains(&format!("1 of {all} batches hold \"needle\"")), "{}", a.status);
    for (w, h) in [(80, 24), (160, 45)] {
        let t = text(&draw(&a, w, h));
        assert!(t.contains(&format!("1 of {all} match \"needle\"")), "{w}×{h}: {t}");
        let rows = t.lines().filter(|l| l.contains("visible") || l.contains("shadowed")).count();
        assert_eq!(rows, 1, "{w}×{h}: {t}");
    }
    act(&mut a, Action::Enter);
    let t = text(&draw(&a, 160, 45));
    assert!(t.contains("https://example.org/needle"), "the batch's entries: {t}");
    press(&mut a, KeyCode::Esc);
    press(&mut a, KeyCode::Esc);
    let t = text(&draw(&a, 160, 45));
    let rows = t.lines().filter(|l| l.contains("visible") || l.contains("shadowed")).count();
    assert_eq!(rows, all, "every batch again: {t}");
}

/// `/` in the Store view lists only the versions that match and moves the
/// selection (and the Files view) onto one of them; Esc lists all again.
#[test]
fn slash_filters_the_versions() {
    let (_d, store) = demo_store();
    let mut a = app(&store, false);
    assert_eq!(a.listing.as_ref().unwrap().versions[a.store.sel].name, "v2");
    press(&mut a, KeyCode::Char('/'));
    type_text(&mut a, "v1");
    press(&mut a, KeyCode::Enter);
    assert_eq!(a.listing.as_ref().unwrap().versions[a.store.sel].name, "v1", "{}", a.status);
    for (w, h) in [(80, 24), (160, 45)] {
        let t = text(&draw(&a, w, h));
        assert!(
            t.contains("1 of 2 match \"v1\"") && !t.lines().any(|l| l.starts_with("│v2")),
            "{w}×{h}: {t}"
        );
    }
    act(&mut a, Action::Down(1));
    assert_eq!(a.listing.as_ref().unwrap().versions[a.store.sel].name, "v1", "moves stay among the shown");
    press(&mut a, KeyCode::Esc);
    let t = text(&draw(&a, 80, 24));
    assert!(t.lines().any(|l| l.starts_with("│v2")) && !t.contains("match"), "{t}");
}
