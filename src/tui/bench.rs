//! Measurement hooks for benches/tui_bench.sh, kept out of the event loop:
//! `COTTAS_TUI_FIRST_FRAME=1` prints when the first frame was drawn;
//! `COTTAS_TUI_BENCH_SCROLL=N` replaces the loop with N timed page-downs
//! through the log view; `COTTAS_TUI_BENCH_KEYS=1` replaces it with key
//! presses in every view, each timed from the key to the frame drawn, and
//! the decoder opened on the base and on the largest sidecar.

use std::path::Path;
use std::time::Instant;

use super::action::{self, Action};
use super::state::{App, Tab};
use super::{views, worker, PROCESS_START};

/// `COTTAS_TUI_BENCH_SCROLL`, when set to a number.
pub fn scroll_frames() -> Option<usize> {
    std::env::var("COTTAS_TUI_BENCH_SCROLL").ok()?.parse().ok()
}

/// `COTTAS_TUI_BENCH_KEYS`, when set.
pub fn keys_requested() -> bool {
    std::env::var_os("COTTAS_TUI_BENCH_KEYS").is_some()
}

/// With `COTTAS_TUI_FIRST_FRAME` set: how long after the process started the
/// first frame was drawn.
pub fn report_first_frame() {
    if std::env::var_os("COTTAS_TUI_FIRST_FRAME").is_some() {
        let started = PROCESS_START.get().copied().unwrap_or_else(Instant::now);
        crate::eprint_line!(
            "first frame {:.1} ms after the process started",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
}

/// Loads the store (log index included), then pages through the log view
/// `n` times, timing each frame, and prints the figures to stderr.
pub fn scroll(terminal: &mut ratatui::DefaultTerminal, chunk: &Path, n: usize) -> std::io::Result<()> {
    let mut app = App::new(chunk, false);
    let t = Instant::now();
    let (_fold, effects) = startup_apart_from_the_fold(&mut app);
    worker::settle(&mut app, effects);
    let indexed = t.elapsed();
    let size = terminal.size()?;
    action::update(&mut app, Action::Resize { width: size.width, height: size.height });
    app.tab = Tab::Log;
    let mut times = Vec::with_capacity(n.max(1));
    for i in 0..n.max(1) {
        let rows = if i % 2 == 0 { app.screen.page * 97 } else { app.screen.page };
        action::update(&mut app, Action::Down(rows));
        let t = Instant::now();
        terminal.draw(|f| views::render(f, &app))?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let batches = app.log.as_ref().map_or(0, |l| l.count);
    ratatui::restore();
    let n = times.len();
    crate::eprint_line!(
        "log of {batches} batches indexed in {:.1} ms; {n} frames: median {:.2} ms, p99 {:.2} ms, max {:.2} ms; RssAnon {}, RssFile {}",
        indexed.as_secs_f64() * 1e3,
        times[n / 2],
        times[(n * 99 / 100).min(n - 1)],
        times[n - 1],
        status_field("RssAnon:"),
        status_field("RssFile:")
    );
    Ok(())
}

/// The start-up effects, the log's fold for queries apart (it runs on a
/// worker of its own; timed apart where it is timed at all).
fn startup_apart_from_the_fold(app: &mut App) -> (Vec<super::effect::Effect>, Vec<super::effect::Effect>) {
    app.startup().into_iter().partition(|e| matches!(e, super::effect::Effect::ReadSnapshot))
}

/// A field of /proc/self/status (heap apart from the mapped log's pages).
fn status_field(key: &str) -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix(key)).map(|v| v.trim().to_string()).unwrap_or_default()
}

/// Key response: for each view, keys pressed as a person would (through
/// the same key mapping and update step as the event loop), each timed from
/// the key to the end of the frame it causes. Work the key starts on a
/// worker (loading a version, opening a file, a query) is timed apart: the
/// UI answers at once and shows the result when it arrives.
pub fn keys(terminal: &mut ratatui::DefaultTerminal, chunk: &Path) -> std::io::Result<()> {
    use ratatui::crossterm::event::KeyCode::{self, Char, Enter, PageDown};
    let mut app = App::new(chunk, false);
    let (fold, effects) = startup_apart_from_the_fold(&mut app);
    worker::settle(&mut app, effects);
    let t = Instant::now();
    worker::settle(&mut app, fold);
    let folded = format!("log folded for queries in {:.1} ms (on a worker at start)", ms(t));
    let size = terminal.size()?;
    action::update(&mut app, Action::Resize { width: size.width, height: size.height });
    let moves: Vec<KeyCode> =
        [vec![Char('j'); 40], vec![PageDown; 10], vec![Char('G'), Char('g')], vec![PageDown; 5]].concat();
    let mut lines = vec![folded];
    for tab in [Tab::Store, Tab::Files, Tab::Log, Tab::Timeline] {
        app.tab = tab;
        let times = press_all(terminal, &mut app, &moves)?;
        lines.push(summary(&format!("{tab:?}"), &times));
    }
    app.tab = Tab::Query;
    let t = Instant::now();
    let effects = action::update(&mut app, Action::RunQuery);
    // The store's prefixes are read on a worker of their own beside the
    // query: timed apart, after it.
    let (prefixes, query): (Vec<_>, Vec<_>) =
        effects.into_iter().partition(|e| matches!(e, super::effect::Effect::Namespaces));
    worker::settle(&mut app, query);
    terminal.draw(|f| views::render(f, &app))?;
    let rows = app.query.result.as_ref().map_or(0, |r| r.rows.len());
    lines.push(format!("default query: {rows} rows in {:.1} ms (on a worker)", ms(t)));
    let t = Instant::now();
    if !prefixes.is_empty() {
        worker::settle(&mut app, prefixes);
        lines.push(format!("store prefixes read in {:.1} ms (on a worker beside the query)", ms(t)));
    }
    let times = press_all(
        terminal,
        &mut app,
        &[vec![Char('j'); 40], vec![Char('l'); 3], vec![Char('h'); 3]].concat(),
    )?;
    lines.push(summary("Query results", &times));
    for file in decoder_files(&app) {
        let t = Instant::now();
        worker::settle(&mut app, vec![super::effect::Effect::OpenFile { path: file.clone(), at: None }]);
        let opened = ms(t);
        let spans = app.decoder.as_ref().map_or(0, |d| d.spans.len());
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let size = std::fs::metadata(&file).map_or(0, |m| m.len());
        lines.push(format!(
            "decoder: {name} ({}) opened in {opened:.1} ms (on a worker), {spans} spans",
            humansize::format_size(size, humansize::BINARY)
        ));
        let keys = [
            moves.clone(),
            vec![Char('e'), Char('c'), Enter, Char(' ')],
            vec![Char('j'); 20],
            vec![PageDown; 10],
        ]
        .concat();
        let times = press_all(terminal, &mut app, &keys)?;
        lines.push(summary(&format!("Decoder {name}"), &times));
    }
    ratatui::restore();
    for l in lines {
        crate::eprint_line!("{l}");
    }
    crate::eprint_line!("RssAnon {}, RssFile {}", status_field("RssAnon:"), status_field("RssFile:"));
    Ok(())
}

/// The current version's base and its largest sidecar.
fn decoder_files(app: &App) -> Vec<std::path::PathBuf> {
    let Some(current) = app.listing.as_ref().and_then(|l| l.current.clone()) else { return Vec::new() };
    let dir = app.chunk.join(current);
    let base = dir.join(crate::store::versions::layout::BASE);
    let largest = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p != &base && p.to_string_lossy().contains("data.cottas."))
        .max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()));
    std::iter::once(base).chain(largest).collect()
}

/// Times each key from its event to the frame drawn after it; what the key
/// starts on workers runs afterwards, untimed.
fn press_all(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    keys: &[ratatui::crossterm::event::KeyCode],
) -> std::io::Result<Vec<f64>> {
    use ratatui::crossterm::event::{Event, KeyEvent, KeyModifiers};
    let mut times = Vec::with_capacity(keys.len());
    for &code in keys {
        let t = Instant::now();
        let ev = Event::Key(KeyEvent::new(code, KeyModifiers::NONE));
        let effects = action::from_event(app, ev).map(|a| action::update(app, a)).unwrap_or_default();
        terminal.draw(|f| views::render(f, app))?;
        times.push(ms(t));
        worker::settle(app, effects);
    }
    Ok(times)
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn summary(what: &str, times: &[f64]) -> String {
    let mut t = times.to_vec();
    t.sort_by(|a, b| a.total_cmp(b));
    let n = t.len().max(1);
    let at = |q: usize| t.get((n * q / 100).min(n - 1)).copied().unwrap_or(0.0);
    format!("{what}: {} keys, median {:.2} ms, p99 {:.2} ms, max {:.2} ms", t.len(), at(50), at(99), at(100))
}
