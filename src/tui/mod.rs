//! The interactive terminal UI. One channel feeds the loop: terminal input
//! (from an input thread), the watcher's reports and the workers' results
//! all arrive as `worker::Msg`. Each becomes an action; `action::update`
//! changes the state and returns effects, which the loop hands to workers;
//! `views::render` draws the state and changes nothing. Every effect calls
//! the same library code as the CLI.

pub mod action;
pub mod bench;
pub mod command;
pub mod effect;
pub mod load;
pub mod messages;
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

/// Runs the TUI on `chunk` until the user quits. A directory that is not a
/// chunk opens as a corpus root: the list of the chunks under it.
pub fn run(chunk: &Path, write: bool, memory_limit: usize) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    let _ = execute!(std::io::stdout(), EnableMouseCapture);
    let result = match bench::scroll_frames() {
        Some(n) => bench::scroll(&mut terminal, chunk, n),
        None if bench::keys_requested() => bench::keys(&mut terminal, chunk),
        None => event_loop(&mut terminal, chunk, write, memory_limit),
    };
    let _ = execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    path: &Path,
    write: bool,
    memory_limit: usize,
) -> std::io::Result<()> {
    let mut app =
        if crate::corpus::is_chunk(path) { App::new(path, write) } else { App::for_corpus(path, write) };
    app.set_memory_limit(memory_limit);
    let size = terminal.size()?;
    let mut effects = app.startup();
    effects.extend(action::update(&mut app, Action::Resize { width: size.width, height: size.height }));
    let mut ch = Channel::new(&app);
    worker::spawn_input(ch.input.clone());
    run_effects(&app, effects, &ch.tx);
    terminal.draw(|f| views::render(f, &app))?;
    bench::report_first_frame();
    while !app.quit {
        let action = match ch.rx.recv_timeout(TICK) {
            Ok(msg) => Action::Worker(msg),
            Err(mpsc::RecvTimeoutError::Timeout) => Action::Tick,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let effects = action::update(&mut app, action);
        ch.follow(&app);
        run_effects(&app, effects, &ch.tx);
        drain(&mut app, &mut ch)?;
        terminal.draw(|f| views::render(f, &app))?;
    }
    Ok(())
}

/// The loop's channel, for one chunk at a time: when the corpus view opens
/// another chunk, a new channel replaces it, so what workers of the last
/// chunk still report goes nowhere, and the watcher follows the new chunk.
/// Terminal input goes to whichever channel is current.
struct Channel {
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    input: std::sync::Arc<std::sync::Mutex<Sender<Msg>>>,
    /// The chunk the watcher watches (none before a corpus opens one).
    watching: Option<std::path::PathBuf>,
}

impl Channel {
    fn new(app: &App) -> Channel {
        let (tx, rx) = mpsc::channel();
        let input = std::sync::Arc::new(std::sync::Mutex::new(tx.clone()));
        let mut ch = Channel { tx, rx, input, watching: None };
        ch.follow(app);
        ch
    }

    fn follow(&mut self, app: &App) {
        let chunk = app.has_chunk().then(|| app.chunk.clone());
        if chunk == self.watching {
            return;
        }
        if self.watching.is_some() {
            let (tx, rx) = mpsc::channel();
            (self.tx, self.rx) = (tx, rx);
            if let Ok(mut input) = self.input.lock() {
                *input = self.tx.clone();
            }
        }
        if let Some(c) = &chunk {
            worker::spawn_watcher(c.clone(), self.tx.clone());
        }
        self.watching = chunk;
    }
}

/// Handles whatever else is already waiting, so a burst of input or
/// progress costs one frame, not one each.
fn drain(app: &mut App, ch: &mut Channel) -> std::io::Result<()> {
    while !app.quit {
        let Ok(msg) = ch.rx.try_recv() else { return Ok(()) };
        let effects = action::update(app, Action::Worker(msg));
        ch.follow(app);
        run_effects(app, effects, &ch.tx);
    }
    Ok(())
}

fn run_effects(app: &App, effects: Vec<Effect>, tx: &Sender<Msg>) {
    for effect in effects {
        worker::spawn(worker::Context::of(app), effect, tx);
    }
}
