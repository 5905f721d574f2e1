//! The interactive terminal UI: events → actions → `update(&mut App)` →
//! `render(&App)`. Long work runs on worker threads that report back over a
//! channel; the store is watched so appends and compactions by other
//! processes show up within a second. Every action calls the same library
//! code as the CLI.

pub mod action;
pub mod state;
pub mod views;
pub mod worker;

use std::path::Path;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, DisableMouseCapture, EnableMouseCapture};
use ratatui::crossterm::execute;

use state::App;

/// When the process started (set first thing in `cli::main`), for the
/// first-frame measurement.
pub static PROCESS_START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Runs the TUI on `chunk` until the user quits.
pub fn run(chunk: &Path, write: bool) -> anyhow::Result<()> {
    let mut terminal = ratatui::init();
    let _ = execute!(std::io::stdout(), EnableMouseCapture);
    let result = event_loop(&mut terminal, chunk, write);
    let _ = execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

fn event_loop(terminal: &mut ratatui::DefaultTerminal, chunk: &Path, write: bool) -> anyhow::Result<()> {
    let started = PROCESS_START.get().copied().unwrap_or_else(Instant::now);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut app = App::new(chunk, write);
    worker::spawn_log_index(app.log_path(), tx.clone());
    let mut first = true;
    let mut last_watch = Instant::now();
    while !app.quit {
        terminal.draw(|f| {
            app.page = views::list_rows(f.area()).saturating_sub(4).max(1);
            app.hex_cols = views::hex_cols_for(f.area().width);
            views::render(f, &app)
        })?;
        if first {
            first = false;
            if std::env::var_os("COTTAS_TUI_FIRST_FRAME").is_some() {
                eprintln!(
                    "first frame {:.1} ms after the process started",
                    started.elapsed().as_secs_f64() * 1e3
                );
            }
            if let Some(n) = std::env::var("COTTAS_TUI_BENCH_SCROLL").ok().and_then(|v| v.parse().ok()) {
                return bench_scroll(terminal, &mut app, &rx, &tx, n);
            }
        }
        if event::poll(Duration::from_millis(100))? {
            if let Some(a) = action::from_event(&app, event::read()?) {
                action::update(&mut app, a, &tx);
            }
        }
        while let Ok(msg) = rx.try_recv() {
            action::update(&mut app, action::Action::Worker(msg), &tx);
        }
        app.tick = app.tick.wrapping_add(1);
        if last_watch.elapsed() > Duration::from_millis(500) {
            last_watch = Instant::now();
            action::watch(&mut app, &tx);
        }
    }
    Ok(())
}

/// Measurement hook (`COTTAS_TUI_BENCH_SCROLL=N`): waits for the log index,
/// then pages through the log view N times, timing each frame, and prints
/// the figures to stderr. Used by benches/tui_bench.sh.
fn bench_scroll(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    rx: &std::sync::mpsc::Receiver<worker::Msg>,
    tx: &std::sync::mpsc::Sender<worker::Msg>,
    n: usize,
) -> anyhow::Result<()> {
    let t = Instant::now();
    while app.log.is_none() {
        if let Ok(msg) = rx.recv_timeout(Duration::from_secs(60)) {
            action::update(app, action::Action::Worker(msg), tx);
        }
    }
    let indexed = t.elapsed();
    app.tab = state::Tab::Log;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let step =
            if i % 2 == 0 { action::Action::Down(app.page * 97) } else { action::Action::Down(app.page) };
        action::update(app, step, tx);
        let t = Instant::now();
        terminal.draw(|f| views::render(f, app))?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let batches = app.log.as_ref().map_or(0, |l| l.count);
    ratatui::restore();
    // Heap (anonymous) memory apart from the mapped log's pages.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        status.lines().find(|l| l.starts_with(k)).map(|l| l[k.len()..].trim().to_string()).unwrap_or_default()
    };
    eprintln!(
        "log of {batches} batches indexed in {:.1} ms; {n} frames: median {:.2} ms, p99 {:.2} ms, max {:.2} ms; RssAnon {}, RssFile {}",
        indexed.as_secs_f64() * 1e3,
        times[n / 2],
        times[(n * 99 / 100).min(n - 1)],
        times[n - 1],
        field("RssAnon:"),
        field("RssFile:")
    );
    app.quit = true;
    Ok(())
}
