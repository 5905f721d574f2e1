//! Measurement hooks for benches/tui_bench.sh, kept out of the event loop:
//! `COTTAS_TUI_FIRST_FRAME=1` prints when the first frame was drawn;
//! `COTTAS_TUI_BENCH_SCROLL=N` replaces the loop with N timed page-downs
//! through the log view.

use std::path::Path;
use std::time::Instant;

use super::action::{self, Action};
use super::state::{App, Tab};
use super::{views, worker, PROCESS_START};

/// `COTTAS_TUI_BENCH_SCROLL`, when set to a number.
pub fn scroll_frames() -> Option<usize> {
    std::env::var("COTTAS_TUI_BENCH_SCROLL").ok()?.parse().ok()
}

/// With `COTTAS_TUI_FIRST_FRAME` set: how long after the process started the
/// first frame was drawn.
pub fn report_first_frame() {
    if std::env::var_os("COTTAS_TUI_FIRST_FRAME").is_some() {
        let started = PROCESS_START.get().copied().unwrap_or_else(Instant::now);
        eprintln!("first frame {:.1} ms after the process started", started.elapsed().as_secs_f64() * 1e3);
    }
}

/// Loads the store (log index included), then pages through the log view
/// `n` times, timing each frame, and prints the figures to stderr.
pub fn scroll(terminal: &mut ratatui::DefaultTerminal, chunk: &Path, n: usize) -> std::io::Result<()> {
    let mut app = App::new(chunk, false);
    let t = Instant::now();
    let effects = app.startup();
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
    eprintln!(
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

/// A field of /proc/self/status (heap apart from the mapped log's pages).
fn status_field(key: &str) -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix(key)).map(|v| v.trim().to_string()).unwrap_or_default()
}
