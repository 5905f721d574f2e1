//! Input → actions → `update(&mut App) -> Vec<Effect>`. The update step is
//! pure: it changes the state and says what should be loaded or run, and the
//! event loop runs those effects on workers. Key bindings live here once:
//! the mapping, the keybar and the help overlay all read `bindings`.

use std::time::Instant;

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use super::command::cmd_key;
use super::effect::Effect;
use super::messages::worker_msg;
use super::state::{App, Compaction, Confirm, Pending, Repair, Tab};
use super::views::{self, corpus::CorpusMove, store::StoreMove, triage::TriageMove};
use super::worker::{CompactEnd, Msg};
use crate::text::plural;

pub enum Action {
    Quit,
    NextTab,
    PrevTab,
    Up(usize),
    Down(usize),
    Top,
    Bottom,
    Left,
    Right,
    Enter,
    Back,
    ToggleHelp,
    OpenCmdline(char),
    CmdKey(KeyEvent),
    EditKey(KeyEvent),
    StartEdit,
    RunQuery,
    CancelQuery,
    HistoryPrev,
    HistoryNext,
    AskCompaction,
    ConfirmYes,
    ConfirmNo,
    ToggleFocus,
    SearchNext(bool),
    /// Decoder: a screen of bytes on (`true`) or back.
    PageBytes(bool),
    /// Decoder: the next (`true`) or previous structure.
    NextStructure(bool),
    /// Decoder: the next damaged byte after the cursor.
    NextDamage,
    /// Run verify from the Triage view.
    Verify {
        deep: bool,
    },
    /// Plan the selected finding's repair.
    RepairSelected,
    /// Read the corpus's chunks again.
    Refresh,
    /// Stop the running compaction (before it publishes).
    CancelCompaction,
    /// Results: IRIs under prefixes, or whole.
    ToggleIris,
    /// Decoder: open (`true`) or close every group of the structure tree.
    FoldAll(bool),
    /// A mouse click at (column, row) of the screen.
    Click {
        col: u16,
        row: u16,
    },
    /// The terminal's size: list pages and hex rows follow it.
    Resize {
        width: u16,
        height: u16,
    },
    Worker(Msg),
    Tick,
}

/// The keys that work in the current view, for the keybar and `?`: the
/// view's own, then the common ones.
pub fn bindings(app: &App) -> Vec<(&'static str, &'static str)> {
    if app.confirm.is_some() {
        return vec![("y", "confirm"), ("n/Esc", "cancel")];
    }
    if app.cmdline.is_some() {
        return vec![("Enter", "run"), ("Tab", "complete"), ("Esc", "cancel")];
    }
    if app.tab == Tab::Query && (app.query.editing || app.query.running.is_some()) {
        return views::query::bindings(&app.query);
    }
    let mut b = vec![("Tab", "next view"), ("j/k", "move")];
    b.extend(match app.tab {
        Tab::Corpus => views::corpus::bindings(),
        Tab::Store => views::store::bindings(),
        Tab::Triage => views::triage::bindings(app.write),
        Tab::Files => views::files::bindings(),
        Tab::Decoder => views::decoder::bindings(),
        Tab::Log => views::log::bindings(),
        Tab::Query => views::query::bindings(&app.query),
        Tab::Timeline => views::timeline::bindings(app.write, app.compaction.is_some()),
    });
    b.extend([(":", "command"), ("?", "help"), ("q", "quit")]);
    b
}

pub fn from_event(app: &App, ev: Event) -> Option<Action> {
    match ev {
        Event::Key(k) if k.kind == KeyEventKind::Press => from_key(app, k),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollDown => Some(Action::Down(3)),
            MouseEventKind::ScrollUp => Some(Action::Up(3)),
            MouseEventKind::Down(_) => Some(Action::Click { col: m.column, row: m.row }),
            _ => None,
        },
        Event::Resize(width, height) => Some(Action::Resize { width, height }),
        _ => None,
    }
}

fn from_key(app: &App, k: KeyEvent) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    if app.confirm.is_some() {
        return match k.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => Some(Action::ConfirmYes),
            _ => Some(Action::ConfirmNo),
        };
    }
    if app.help {
        return Some(Action::ToggleHelp);
    }
    if app.cmdline.is_some() {
        return Some(Action::CmdKey(k));
    }
    if ctrl && k.code == KeyCode::Char('c') {
        // A query stops at once; quitting during a compaction or a repair
        // asks first.
        return Some(if app.query.running.is_some() { Action::CancelQuery } else { Action::Quit });
    }
    view_key(app, k).or_else(|| common_key(app, k))
}

/// The current view's own keys come first.
fn view_key(app: &App, k: KeyEvent) -> Option<Action> {
    match app.tab {
        Tab::Corpus => views::corpus::key(k),
        Tab::Store => views::store::key(k),
        Tab::Triage => views::triage::key(k),
        Tab::Files => views::files::key(k),
        Tab::Decoder => views::decoder::key(k),
        Tab::Log => views::log::key(k),
        Tab::Query => views::query::key(&app.query, k),
        Tab::Timeline => views::timeline::key(k),
    }
}

/// Keys that mean the same in every view.
fn common_key(app: &App, k: KeyEvent) -> Option<Action> {
    Some(match k.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Tab => Action::NextTab,
        KeyCode::BackTab => Action::PrevTab,
        KeyCode::Char('j') | KeyCode::Down => Action::Down(1),
        KeyCode::Char('k') | KeyCode::Up => Action::Up(1),
        // The decoder pages by a screen of bytes, whatever has the keys: a
        // page of tree rows is a few dozen bytes of a large file.
        KeyCode::PageDown if app.tab == Tab::Decoder => Action::PageBytes(true),
        KeyCode::PageUp if app.tab == Tab::Decoder => Action::PageBytes(false),
        KeyCode::PageDown => Action::Down(app.screen.page.max(1)),
        KeyCode::PageUp => Action::Up(app.screen.page.max(1)),
        KeyCode::Char('g') | KeyCode::Home => Action::Top,
        KeyCode::Char('G') | KeyCode::End => Action::Bottom,
        KeyCode::Char('h') | KeyCode::Left => Action::Left,
        KeyCode::Char('l') | KeyCode::Right => Action::Right,
        KeyCode::Enter => Action::Enter,
        KeyCode::Esc => Action::Back,
        KeyCode::Char('?') => Action::ToggleHelp,
        KeyCode::Char(':') => Action::OpenCmdline(':'),
        _ => return None,
    })
}

pub(super) fn go(app: &mut App, tab: Tab) {
    if app.tab != tab {
        app.back.push(app.tab);
        app.tab = tab;
    }
}

/// Applies one action; returns what the loop should load or run. Actions
/// of the whole app are handled here; the rest go to the current view.
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::Quit => ask_quit(app),
        Action::NextTab | Action::PrevTab => return switch_tab(app, matches!(action, Action::NextTab)),
        Action::ToggleHelp => app.help = !app.help,
        Action::OpenCmdline(c) => {
            app.cmdline = Some(c.to_string());
            app.status.clear();
        }
        Action::CmdKey(k) => return cmd_key(app, k),
        Action::AskCompaction => return ask_compaction(app),
        Action::ConfirmYes => return confirmed(app),
        Action::ConfirmNo => {
            app.confirm = None;
            app.status = "cancelled: nothing was changed".into();
        }
        Action::Resize { width, height } => resize(app, width, height),
        Action::Worker(msg) => return worker_msg(app, msg),
        Action::Tick => {
            app.tick = app.tick.wrapping_add(1);
            // The corpus list on screen is made again now and then.
            if let Some(c) = app.corpus.as_mut().filter(|c| c.stale() && app.tab == Tab::Corpus) {
                return list_corpus(c);
            }
        }
        Action::CancelQuery => {
            app.query.update(&action, &mut app.status, app.screen.width);
        }
        Action::CancelCompaction => cancel_compaction(app),
        other => return in_view(app, other),
    }
    Vec::new()
}

/// The current view's part of an action; Esc goes back when the view has
/// no use for it.
fn in_view(app: &mut App, action: Action) -> Vec<Effect> {
    let used = match app.tab {
        Tab::Corpus => corpus_action(app, &action),
        Tab::Store => store_action(app, &action),
        Tab::Triage => triage_action(app, &action),
        Tab::Files => app.files.update(&action, &mut app.status),
        Tab::Decoder if matches!(action, Action::Back) => None,
        Tab::Decoder => app.decoder.as_mut().map(|d| {
            if let Action::Click { col, row } = action {
                // The frame's main area: under the tab bar, above the status
                // line and the keybar.
                let s = app.screen;
                d.click(col, row, ratatui::layout::Rect::new(0, 1, s.width, s.height.saturating_sub(3)));
            }
            if let Some(status) = views::decoder::update(d, &action, app.screen) {
                app.status = status;
            }
            Vec::new()
        }),
        Tab::Log => {
            let count = app.log.as_ref().map_or(0, |l| l.count);
            app.log_view.update(&action, count, app.screen.page).then(Vec::new)
        }
        Tab::Query => app.query.update(&action, &mut app.status, app.screen.width).map(|mut effects| {
            // A query run on a version whose namespaces are not read yet
            // reads them beside it.
            let current = app.listing.as_ref().and_then(|l| l.current.clone());
            let known = app.query.store_namespaces.as_ref().map(|(v, _)| v.clone());
            if effects.iter().any(|e| matches!(e, Effect::Query { .. }))
                && current.is_some()
                && known != current
            {
                effects.push(Effect::Namespaces);
            }
            effects
        }),
        Tab::Timeline => match action {
            Action::Up(n) => {
                app.timeline.scroll_by(n as isize);
                Some(Vec::new())
            }
            Action::Down(n) => {
                app.timeline.scroll_by(-(n as isize));
                Some(Vec::new())
            }
            _ => None,
        },
    };
    if used.is_none() && matches!(action, Action::Back) {
        // Esc at the top of a chunk's views returns to its corpus.
        let top = if app.corpus.is_some() { Some(Tab::Corpus) } else { None };
        if let Some(t) = app.back.pop().or(top) {
            app.tab = t;
            return entered(app);
        }
    }
    used.unwrap_or_default()
}

/// The store view's moves, applied to the app: selecting a version loads
/// its files; Enter shows them.
fn store_action(app: &mut App, action: &Action) -> Option<Vec<Effect>> {
    let shown = app.store.shown(app.listing.as_ref());
    // The view's height as drawn: the screen less the tab, status and key bars.
    let above = views::store::info_rows(app, app.screen.width, app.screen.height.saturating_sub(3));
    let first_repair = views::store::alarms(app).into_iter().find_map(|a| a.repair);
    Some(match app.store.update(action, &shown, above, first_repair)? {
        StoreMove::Repair(r) => plan_repair(app, r),
        StoreMove::Select(i) => select_version(app, i),
        StoreMove::OpenFiles => {
            go(app, Tab::Files);
            Vec::new()
        }
        StoreMove::Nothing => Vec::new(),
    })
}

fn switch_tab(app: &mut App, forward: bool) -> Vec<Effect> {
    let tabs = app.tabs();
    let i = tabs.iter().position(|t| *t == app.tab).unwrap_or(0);
    let n = tabs.len();
    app.tab = tabs[if forward { (i + 1) % n } else { (i + n - 1) % n }];
    app.back.clear();
    entered(app)
}

/// What showing the current view starts: the Triage view verifies the
/// chunk the first time it is shown.
fn entered(app: &mut App) -> Vec<Effect> {
    let unverified = app.triage.report().is_none() && app.triage.error.is_none();
    match (app.tab, app.corpus.as_mut()) {
        (Tab::Triage, _) if unverified => start_verify(app, false),
        (Tab::Corpus, Some(c)) => list_corpus(c),
        _ => Vec::new(),
    }
}

/// The corpus's chunks listed again, unless a listing is on its way.
fn list_corpus(c: &mut views::corpus::CorpusView) -> Vec<Effect> {
    if c.ask_listing() {
        vec![Effect::ListCorpus(c.root.clone())]
    } else {
        Vec::new()
    }
}

/// The corpus view's moves: Enter opens a chunk in the chunk views (not
/// while work on the open one would be lost), `v` verifies every chunk.
fn corpus_action(app: &mut App, action: &Action) -> Option<Vec<Effect>> {
    let (width, height) = (app.screen.width, app.screen.height.saturating_sub(3));
    let corpus = app.corpus.as_mut()?;
    let above = views::corpus::alarm_rows(corpus, width, height);
    Some(match corpus.update(action, above)? {
        CorpusMove::Open(chunk) => {
            if let Some(busy) = busy(app) {
                app.status = format!("{busy}: wait for it before opening another chunk");
                return Some(Vec::new());
            }
            app.status = format!("opened {}", chunk.display());
            app.open_chunk(&chunk)
        }
        CorpusMove::Refresh => list_corpus(corpus),
        CorpusMove::VerifyAll => verify_corpus(app),
        CorpusMove::Nothing => Vec::new(),
    })
}

/// `v` in the corpus view, or `:verify` before a chunk is open: every
/// chunk verified, two at a time, the list showing what each found.
pub(super) fn verify_corpus(app: &mut App) -> Vec<Effect> {
    let Some(corpus) = app.corpus.as_mut() else { return Vec::new() };
    if corpus.verifying {
        app.status = "verify is already running".into();
        return Vec::new();
    }
    corpus.verifying = true;
    let root = corpus.root.clone();
    app.status = "verifying every chunk…".into();
    go(app, Tab::Corpus);
    vec![Effect::VerifyCorpus(root)]
}

/// Work whose result opening another chunk would drop.
fn busy(app: &App) -> Option<&'static str> {
    if app.compaction.is_some() {
        Some("a compaction is running")
    } else if app.query.running.is_some() {
        Some("a query is running")
    } else if app.corpus.as_ref().is_some_and(|c| c.verifying) {
        Some("every chunk is being verified")
    } else {
        None
    }
}

pub(super) fn start_verify(app: &mut App, deep: bool) -> Vec<Effect> {
    if !app.triage.start(deep) {
        app.status = "verify is already running".into();
        return Vec::new();
    }
    app.status = if deep { "verifying (deep)…" } else { "verifying…" }.into();
    vec![Effect::Verify { deep }]
}

/// The triage view's moves, applied to the app: Enter shows a finding's
/// bytes in the Decoder; `r` plans its repair.
fn triage_action(app: &mut App, action: &Action) -> Option<Vec<Effect>> {
    Some(match app.triage.update(action)? {
        TriageMove::Verify(deep) => start_verify(app, deep),
        TriageMove::Open(file, at) => open_finding(app, &file, at),
        TriageMove::Repair(repair) => plan_repair(app, repair),
        TriageMove::NoRepair(why) => {
            app.status = why;
            Vec::new()
        }
        TriageMove::Nothing => Vec::new(),
    })
}

/// A finding's file in the Decoder, at its offset. `current` and debris
/// are not files to decode: the Store view shows them.
fn open_finding(app: &mut App, file: &str, at: Option<u64>) -> Vec<Effect> {
    let path = app.chunk.join(file);
    if !path.is_file() {
        go(app, Tab::Store);
        app.status = format!("{file} is not a file to decode: the Store view shows the versions");
        return Vec::new();
    }
    app.status = format!("opening {file}…");
    vec![Effect::OpenFile { path, at }]
}

fn plan_repair(app: &mut App, repair: Repair) -> Vec<Effect> {
    if !app.write {
        app.status = "read-only: start with --write to repair".into();
        return Vec::new();
    }
    app.status = "planning the repair…".into();
    vec![Effect::PlanRepair(repair)]
}

/// The layout the next frame will have: how many rows a page holds and how
/// many bytes a hex row shows.
fn resize(app: &mut App, width: u16, height: u16) {
    let frame = ratatui::layout::Rect::new(0, 0, width, height);
    app.screen.page = views::list_rows(frame).saturating_sub(4).max(1);
    app.screen.width = width;
    app.screen.height = height;
}

/// `y` in a confirmation dialog: starts what it described.
fn confirmed(app: &mut App) -> Vec<Effect> {
    match app.confirm.take().map(|c| c.then) {
        Some(Pending::Compact) => {
            let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            app.compaction = Some(Compaction { started: Instant::now(), last: None, cancel: cancel.clone() });
            let from = app.listing.as_ref().and_then(|l| l.current.clone()).unwrap_or_default();
            app.timeline.event(format!("compaction of {from} started"));
            app.status = "compacting… (x cancels)".into();
            vec![Effect::Compact { cancel }]
        }
        Some(Pending::Repair(kind)) => {
            app.status = "repairing…".into();
            app.repairing = true;
            vec![Effect::Repair(kind)]
        }
        Some(Pending::QuitWhenIdle) => {
            quit_when_idle(app);
            Vec::new()
        }
        None => Vec::new(),
    }
}

/// Selecting another version loads its files (on a worker).
pub(super) fn select_version(app: &mut App, index: usize) -> Vec<Effect> {
    app.store.sel = index;
    app.store.row_groups = Default::default();
    app.files.rows.clear();
    app.selected_version_dir().map(Effect::LoadVersion).into_iter().collect()
}

/// The end of a compaction as an event on the timeline and the status.
pub(super) fn compaction_done(app: &mut App, r: CompactEnd) {
    let published = matches!(r, CompactEnd::Done { .. });
    let (event, status) = match r {
        CompactEnd::Done { text, from, to, carried } => {
            let carried = plural(carried, "batch", "batches");
            (format!("`current` flipped {from} → {to}; {carried} carried into the new log"), text)
        }
        CompactEnd::NothingFolded(text) => (text.clone(), text),
        CompactEnd::Cancelled => (
            "compaction cancelled: nothing was changed".to_string(),
            "compaction cancelled: nothing was changed (its temp dir is removed)".to_string(),
        ),
        CompactEnd::Failed(e) => (format!("compaction failed: {e}"), format!("compaction failed: {e}")),
    };
    app.timeline.finished(event, published);
    app.status = status;
    if app.quit_when_idle {
        app.quit = true;
    }
}

/// `q` (or Ctrl-C): at once, unless a compaction or a repair runs; then a
/// question first, since quitting would kill it halfway and leave its temp
/// files behind.
pub(super) fn ask_quit(app: &mut App) {
    let what = if let Some(c) = &app.compaction {
        let phase = c.last.as_ref().map_or("starting", |p| p.phase.as_str());
        Some(format!(
            "A compaction is running ({phase}, {} s). Quitting now would stop it halfway and leave its temp dir behind.\n\ny: cancel it, wait while it removes its temp dir, then quit\nn: keep it running",
            c.started.elapsed().as_secs()
        ))
    } else if app.repairing {
        Some("A repair is running. Quitting now would stop it halfway (the store stays as it was or as repaired, never between, but its temp files stay).\n\ny: quit as soon as it ends\nn: stay".to_string())
    } else {
        None
    };
    match what {
        Some(text) => {
            app.confirm = Some(Confirm { title: "Quit?".into(), text, then: Pending::QuitWhenIdle });
        }
        None => app.quit = true,
    }
}

/// Quits now if nothing runs any more, else cancels the compaction (which
/// removes its temp dir) and quits when it reports.
fn quit_when_idle(app: &mut App) {
    if app.compaction.is_none() && !app.repairing {
        app.quit = true;
        return;
    }
    app.quit_when_idle = true;
    if app.compaction.is_some() {
        cancel_compaction(app);
        app.status = format!("{}; quitting when it has stopped", app.status);
    } else {
        app.status = "quitting when the repair ends…".into();
    }
}

/// Asks the running compaction to stop; it says whether it could (it
/// cannot once the new version is published).
fn cancel_compaction(app: &mut App) {
    let Some(c) = &app.compaction else {
        app.status = "no compaction is running".into();
        return;
    };
    c.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let late = c.last.as_ref().is_some_and(|p| {
        matches!(p.phase, crate::compact::CompactPhase::Swapping | crate::compact::CompactPhase::Done)
    });
    app.status = if late {
        "too late to cancel: the new version is published and `current` is being flipped".into()
    } else {
        "cancelling the compaction…".into()
    };
}

pub(super) fn ask_compaction(app: &mut App) -> Vec<Effect> {
    if !app.write {
        app.status = "read-only: start with --write to compact".into();
        return Vec::new();
    }
    if app.compaction.is_some() {
        return Vec::new();
    }
    app.status = "planning compaction…".into();
    vec![Effect::PlanCompaction]
}

/// `:repair truncate-torn-tail | reset-current | rebuild-sidecars vN |
/// restore-footer vN | clean-leftovers`: the
/// plan in a dialog (made on a worker), applied only on `y`.
pub(super) fn ask_repair(app: &mut App, arg: &str) -> Vec<Effect> {
    if !app.write {
        app.status = "read-only: start with --write to repair".into();
        return Vec::new();
    }
    let mut words = arg.split_whitespace();
    let kind = match (words.next(), words.next()) {
        (Some("truncate-torn-tail"), _) => Repair::TruncateTornTail,
        (Some("reset-current"), _) => Repair::ResetCurrent,
        (Some("rebuild-sidecars"), Some(v)) => Repair::RebuildSidecars(v.to_string()),
        (Some("restore-footer"), Some(v)) => Repair::RestoreFooter(v.to_string()),
        (Some("clean-leftovers"), _) => Repair::CleanLeftovers,
        _ => {
            app.status = "usage: :repair truncate-torn-tail | reset-current | rebuild-sidecars vN | restore-footer vN | clean-leftovers".into();
            return Vec::new();
        }
    };
    plan_repair(app, kind)
}
