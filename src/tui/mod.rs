//! The interactive terminal UI. One channel feeds the loop: terminal input
//! (from an input thread), the watcher's reports and the workers' results
//! all arrive as `worker::Msg`. Each becomes an action; `action::update`
//! changes the state and returns effects, which the loop hands to workers;
//! `views::render` draws the state and changes nothing. Every effect calls
//! the same library code as the CLI.

pub mod action;
pub mod bench;
pub mod effect;
pub mod load;
pub mod state;
pub mod views;
pub mod worker;

use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use ratatui::crossterm::execute;

use action::Action;
use effect::Effect;
use state::App;
use worker::Msg;

/// When the process started (set first thing in `cli::main`), for the
/// first-frame measurement.
pub static PROCESS_START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// How often the spinner turns when nothing else happens.
const TICK: Duration = Duration::from_millis(250);

/// Runs the TUI on `chunk` until the user quits.
pub fn run(chunk: &Path, write: bool) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    let _ = execute!(std::io::stdout(), EnableMouseCapture);
    let result = match bench::scroll_frames() {
        Some(n) => bench::scroll(&mut terminal, chunk, n),
        None => event_loop(&mut terminal, chunk, write),
    };
    let _ = execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

fn event_loop(terminal: &mut ratatui::DefaultTerminal, chunk: &Path, write: bool) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel();
    let mut app = App::new(chunk, write);
    let size = terminal.size()?;
    let mut effects = app.startup();
    effects.extend(action::update(&mut app, Action::Resize { width: size.width, height: size.height }));
    run_effects(&app, effects, &tx);
    worker::spawn_input(tx.clone());
    worker::spawn_watcher(chunk.to_path_buf(), tx.clone());
    terminal.draw(|f| views::render(f, &app))?;
    bench::report_first_frame();
    while !app.quit {
        let action = match rx.recv_timeout(TICK) {
            Ok(msg) => Action::Worker(msg),
            Err(mpsc::RecvTimeoutError::Timeout) => Action::Tick,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let effects = action::update(&mut app, action);
        run_effects(&app, effects, &tx);
        drain(&mut app, &rx, &tx);
        terminal.draw(|f| views::render(f, &app))?;
    }
    Ok(())
}

/// Handles whatever else is already waiting, so a burst of input or
/// progress costs one frame, not one each.
fn drain(app: &mut App, rx: &Receiver<Msg>, tx: &Sender<Msg>) {
    while !app.quit {
        let Ok(msg) = rx.try_recv() else { return };
        let effects = action::update(app, Action::Worker(msg));
        run_effects(app, effects, tx);
    }
}

fn run_effects(app: &App, effects: Vec<Effect>, tx: &Sender<Msg>) {
    for effect in effects {
        worker::spawn(&app.chunk, effect, tx);
    }
}
