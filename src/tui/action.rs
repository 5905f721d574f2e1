//! Input → actions → `update(&mut App) -> Vec<Effect>`. The update step is
//! pure: it changes the state and says what should be loaded or run, and the
//! event loop runs those effects on workers. Key bindings live here once:
//! the mapping, the keybar and the help overlay all read `bindings`.

use std::path::PathBuf;
use std::time::Instant;

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use super::effect::Effect;
use super::state::{App, Compaction, Pending, RepairKind, Tab, TABS};
use super::worker::{self, Msg};
use crate::sparql::run::OutputFormat;

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
    ClickRow(u16),
    /// The terminal's size: list pages and hex rows follow it.
    Resize {
        width: u16,
        height: u16,
    },
    Worker(Msg),
    Tick,
}

/// The keys that work in the current view, for the keybar and `?`.
pub fn bindings(app: &App) -> Vec<(&'static str, &'static str)> {
    if app.confirm.is_some() {
        return vec![("y", "confirm"), ("n/Esc", "cancel")];
    }
    if app.cmdline.is_some() {
        return vec![("Enter", "run"), ("Esc", "cancel")];
    }
    if app.query.editing {
        return vec![("Esc", "stop editing"), ("Ctrl-R", "run"), ("Ctrl-P/N", "history")];
    }
    let mut b = vec![("Tab", "next view"), ("j/k", "move")];
    match app.tab {
        Tab::Store => b.extend([("Enter", "files of version"), ("g/G", "first/last")]),
        Tab::Files => b.extend([("Enter", "open in decoder"), ("Esc", "back")]),
        Tab::Decoder => b.extend([
            ("h/l", "hex ←/→"),
            ("Space", "tree/hex"),
            ("/", "search"),
            ("n/N", "next/prev"),
            (":goto", "offset"),
            ("Esc", "back"),
        ]),
        Tab::Log => b.extend([("Enter", "expand batch"), ("PgUp/PgDn", "page"), ("g/G", "first/last")]),
        Tab::Query => {
            if app.query.running.is_some() {
                b.push(("Ctrl-C", "cancel"));
            } else {
                b.extend([("i", "edit"), ("Enter", "run"), ("Ctrl-P/N", "history"), (":export F", "save")]);
            }
        }
        Tab::Timeline => {
            if app.write {
                b.push(("c", "compact"));
            }
        }
    }
    b.extend([(":", "command"), ("?", "help"), ("q", "quit")]);
    b
}

pub fn from_event(app: &App, ev: Event) -> Option<Action> {
    match ev {
        Event::Key(k) if k.kind == KeyEventKind::Press => from_key(app, k),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollDown => Some(Action::Down(3)),
            MouseEventKind::ScrollUp => Some(Action::Up(3)),
            MouseEventKind::Down(_) => Some(Action::ClickRow(m.row)),
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
        return Some(if app.query.running.is_some() { Action::CancelQuery } else { Action::Quit });
    }
    if app.query.editing {
        return Some(match (k.code, ctrl) {
            (KeyCode::Esc, _) => Action::EditKey(k),
            (KeyCode::Char('r'), true) => Action::RunQuery,
            (KeyCode::Char('p'), true) => Action::HistoryPrev,
            (KeyCode::Char('n'), true) => Action::HistoryNext,
            _ => Action::EditKey(k),
        });
    }
    Some(match k.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Tab => Action::NextTab,
        KeyCode::BackTab => Action::PrevTab,
        KeyCode::Char('j') | KeyCode::Down => Action::Down(1),
        KeyCode::Char('k') | KeyCode::Up => Action::Up(1),
        KeyCode::PageDown => Action::Down(app.page.max(1)),
        KeyCode::PageUp => Action::Up(app.page.max(1)),
        KeyCode::Char('g') | KeyCode::Home => Action::Top,
        KeyCode::Char('G') | KeyCode::End => Action::Bottom,
        KeyCode::Char('h') | KeyCode::Left => Action::Left,
        KeyCode::Char('l') | KeyCode::Right => Action::Right,
        KeyCode::Enter if app.tab == Tab::Query => Action::RunQuery,
        KeyCode::Enter => Action::Enter,
        KeyCode::Esc => Action::Back,
        KeyCode::Char('?') => Action::ToggleHelp,
        KeyCode::Char(':') => Action::OpenCmdline(':'),
        KeyCode::Char('/') if app.tab == Tab::Decoder => Action::OpenCmdline('/'),
        KeyCode::Char('n') if app.tab == Tab::Decoder => Action::SearchNext(true),
        KeyCode::Char('N') if app.tab == Tab::Decoder => Action::SearchNext(false),
        KeyCode::Char(' ') if app.tab == Tab::Decoder => Action::ToggleFocus,
        KeyCode::Char('i') if app.tab == Tab::Query => Action::StartEdit,
        KeyCode::Char('p') if ctrl && app.tab == Tab::Query => Action::HistoryPrev,
        KeyCode::Char('n') if ctrl && app.tab == Tab::Query => Action::HistoryNext,
        KeyCode::Char('c') if app.tab == Tab::Timeline => Action::AskCompaction,
        _ => return None,
    })
}

fn go(app: &mut App, tab: Tab) {
    if app.tab != tab {
        app.back.push(app.tab);
        app.tab = tab;
    }
}

fn move_sel(sel: usize, len: usize, delta: isize) -> usize {
    if len == 0 {
        return 0;
    }
    (sel as isize + delta).clamp(0, len as isize - 1) as usize
}

/// Applies one action; returns what the loop should load or run.
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::Quit => app.quit = true,
        Action::NextTab | Action::PrevTab => switch_tab(app, matches!(action, Action::NextTab)),
        Action::Up(n) => return step(app, -(n as isize)),
        Action::Down(n) => return step(app, n as isize),
        Action::Top => return step(app, isize::MIN / 2),
        Action::Bottom => return step(app, isize::MAX / 2),
        Action::Left => move_cursor(app, -1),
        Action::Right => move_cursor(app, 1),
        Action::Enter => return enter(app),
        Action::Back => back(app),
        Action::ToggleHelp => app.help = !app.help,
        Action::OpenCmdline(c) => app.cmdline = Some(c.to_string()),
        Action::CmdKey(k) => return cmd_key(app, k),
        Action::StartEdit => app.query.editing = true,
        Action::EditKey(k) => edit_key(app, k),
        Action::RunQuery => return run_query(app),
        Action::CancelQuery => cancel_query(app),
        Action::HistoryPrev => history(app, true),
        Action::HistoryNext => history(app, false),
        Action::AskCompaction => return ask_compaction(app),
        Action::ConfirmYes => return confirmed(app),
        Action::ConfirmNo => {
            app.confirm = None;
            app.status = "cancelled: nothing was changed".into();
        }
        Action::ToggleFocus => toggle_focus(app),
        Action::SearchNext(forward) => search(app, forward),
        Action::ClickRow(row) => return click(app, row),
        Action::Resize { width, height } => resize(app, width, height),
        Action::Worker(msg) => return worker_msg(app, msg),
        Action::Tick => app.tick = app.tick.wrapping_add(1),
    }
    Vec::new()
}

fn switch_tab(app: &mut App, forward: bool) {
    let i = TABS.iter().position(|t| *t == app.tab).unwrap_or(0);
    let n = TABS.len();
    app.tab = TABS[if forward { (i + 1) % n } else { (i + n - 1) % n }];
    app.back.clear();
}

fn move_cursor(app: &mut App, delta: i64) {
    if let Some(d) = app.decoder.as_mut() {
        let last = (d.bytes.len() as u64).saturating_sub(1);
        d.cursor = d.cursor.saturating_add_signed(delta).min(last);
        d.tree_focus = false;
        sync_span_to_cursor(app);
    }
}

fn back(app: &mut App) {
    if app.log_expanded.is_some() && app.tab == Tab::Log {
        app.log_expanded = None;
    } else if let Some(t) = app.back.pop() {
        app.tab = t;
    }
}

fn cancel_query(app: &mut App) {
    if let Some((_, token)) = &app.query.running {
        token.cancel();
        app.status = "cancelling…".into();
    }
}

fn history(app: &mut App, prev: bool) {
    let h = &app.query.history;
    if h.is_empty() {
        return;
    }
    let pos = match (app.query.history_pos, prev) {
        (None, true) => h.len() - 1,
        (None, false) => return,
        (Some(p), true) => p.saturating_sub(1),
        (Some(p), false) => (p + 1).min(h.len() - 1),
    };
    app.query.history_pos = Some(pos);
    app.query.text = h[pos].clone();
}

fn toggle_focus(app: &mut App) {
    if let Some(d) = app.decoder.as_mut() {
        d.tree_focus = !d.tree_focus;
    }
}

/// The layout the next frame will have: how many rows a page holds and how
/// many bytes a hex row shows.
fn resize(app: &mut App, width: u16, height: u16) {
    let frame = ratatui::layout::Rect::new(0, 0, width, height);
    app.page = super::views::list_rows(frame).saturating_sub(4).max(1);
    app.hex_cols = super::views::hex_cols_for(width);
}

/// `y` in a confirmation dialog: starts what it described.
fn confirmed(app: &mut App) -> Vec<Effect> {
    match app.confirm.take().map(|c| c.then) {
        Some(Pending::Compact) => {
            app.compaction = Some(Compaction { started: Instant::now(), last: None });
            app.status = "compacting…".into();
            vec![Effect::Compact]
        }
        Some(Pending::Repair(kind)) => {
            app.status = "repairing…".into();
            vec![Effect::Repair(kind)]
        }
        None => Vec::new(),
    }
}

/// Selecting another version loads its files (on a worker).
fn select_version(app: &mut App, index: usize) -> Vec<Effect> {
    app.version_sel = index;
    app.row_groups = Default::default();
    app.files.clear();
    app.selected_version_dir().map(Effect::LoadVersion).into_iter().collect()
}

fn step(app: &mut App, delta: isize) -> Vec<Effect> {
    match app.tab {
        Tab::Store => {
            let n = app.listing.as_ref().map_or(0, |l| l.versions.len());
            let next = move_sel(app.version_sel, n, delta);
            if next != app.version_sel {
                return select_version(app, next);
            }
        }
        Tab::Files => app.file_sel = move_sel(app.file_sel, app.files.len(), delta),
        Tab::Decoder => {
            let Some(d) = app.decoder.as_mut() else { return Vec::new() };
            if d.tree_focus {
                d.span_sel = move_sel(d.span_sel, d.spans.len(), delta);
                if let Some(s) = d.spans.get(d.span_sel) {
                    d.cursor = s.range.start;
                }
            } else {
                let len = d.bytes.len() as i128;
                d.cursor = (d.cursor as i128 + app.hex_cols as i128 * delta as i128)
                    .clamp(0, (len - 1).max(0)) as u64;
                sync_span_to_cursor(app);
            }
            keep_cursor_visible(app);
        }
        Tab::Log => {
            let n = app.log.as_ref().map_or(0, |l| l.count);
            app.log_sel = move_sel(app.log_sel, n, delta);
            let page = app.page.max(1);
            if app.log_sel < app.log_top {
                app.log_top = app.log_sel;
            } else if app.log_sel >= app.log_top + page {
                app.log_top = app.log_sel + 1 - page;
            }
        }
        Tab::Query => {
            let n = app.query.result.as_ref().map_or(0, |r| r.rows.len());
            app.query.scroll = move_sel(app.query.scroll, n, delta);
        }
        Tab::Timeline => {}
    }
    Vec::new()
}

fn sync_span_to_cursor(app: &mut App) {
    if let Some(d) = app.decoder.as_mut() {
        if let Some(i) = d.span_at(d.cursor) {
            d.span_sel = i;
        }
    }
}

fn keep_cursor_visible(app: &mut App) {
    let page = app.page.max(1) as u64;
    let cols = app.hex_cols.max(1);
    if let Some(d) = app.decoder.as_mut() {
        let row = d.cursor / cols;
        if row < d.top {
            d.top = row;
        } else if row >= d.top + page {
            d.top = row + 1 - page;
        }
    }
}

fn enter(app: &mut App) -> Vec<Effect> {
    match app.tab {
        Tab::Store => go(app, Tab::Files),
        Tab::Files => {
            if let Some(f) = app.files.get(app.file_sel) {
                app.status = format!("opening {}…", f.name);
                return vec![Effect::OpenFile(f.path.clone())];
            }
        }
        Tab::Log => {
            app.log_expanded = if app.log_expanded == Some(app.log_sel) { None } else { Some(app.log_sel) }
        }
        Tab::Decoder => {
            if let Some(d) = app.decoder.as_mut() {
                d.tree_focus = !d.tree_focus;
            }
        }
        _ => {}
    }
    Vec::new()
}

fn click(app: &mut App, row: u16) -> Vec<Effect> {
    // Rows start under the tab bar (1) and the list's border and header (2).
    let idx = (row as usize).saturating_sub(3);
    match app.tab {
        Tab::Store => {
            let n = app.listing.as_ref().map_or(0, |l| l.versions.len());
            if idx < n {
                return select_version(app, idx);
            }
        }
        Tab::Files if idx < app.files.len() => app.file_sel = idx,
        Tab::Log => {
            let n = app.log.as_ref().map_or(0, |l| l.count);
            if app.log_top + idx < n {
                app.log_sel = app.log_top + idx;
            }
        }
        _ => {}
    }
    Vec::new()
}

fn edit_key(app: &mut App, k: KeyEvent) {
    let q = &mut app.query;
    match k.code {
        KeyCode::Esc => q.editing = false,
        KeyCode::Enter => q.text.push('\n'),
        KeyCode::Backspace => {
            q.text.pop();
        }
        KeyCode::Tab => q.text.push_str("  "),
        KeyCode::Char(c) => q.text.push(c),
        _ => {}
    }
}

fn run_query(app: &mut App) -> Vec<Effect> {
    let text = app.query.text.trim().to_string();
    if app.query.running.is_some() || text.is_empty() {
        return Vec::new();
    }
    if app.query.history.last() != Some(&text) {
        app.query.history.push(text.clone());
    }
    app.query.history_pos = None;
    app.query.editing = false;
    let token = spareval::CancellationToken::new();
    app.query.running = Some((Instant::now(), token.clone()));
    app.status = "running…".into();
    vec![Effect::Query { text, token }]
}

fn ask_compaction(app: &mut App) -> Vec<Effect> {
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

/// `:repair truncate-torn-tail | reset-current | rebuild-sidecars vN`: the
/// plan in a dialog (made on a worker), applied only on `y`.
fn ask_repair(app: &mut App, arg: &str) -> Vec<Effect> {
    if !app.write {
        app.status = "read-only: start with --write to repair".into();
        return Vec::new();
    }
    let mut words = arg.split_whitespace();
    let kind = match (words.next(), words.next()) {
        (Some("truncate-torn-tail"), _) => RepairKind::TruncateTornTail,
        (Some("reset-current"), _) => RepairKind::ResetCurrent,
        (Some("rebuild-sidecars"), Some(v)) => RepairKind::RebuildSidecars(v.to_string()),
        _ => {
            app.status = "usage: :repair truncate-torn-tail | reset-current | rebuild-sidecars vN".into();
            return Vec::new();
        }
    };
    app.status = "planning the repair…".into();
    vec![Effect::PlanRepair(kind)]
}

fn search(app: &mut App, forward: bool) {
    let Some(d) = app.decoder.as_mut() else { return };
    let Some(needle) = d.search.clone().filter(|n| !n.is_empty()) else { return };
    let hay = &d.bytes;
    let found = if forward {
        let from = (d.cursor + 1) as usize;
        hay.get(from..)
            .and_then(|h| h.windows(needle.len()).position(|w| w == needle.as_slice()))
            .map(|i| from + i)
    } else {
        let upto = (d.cursor as usize).min(hay.len());
        hay[..upto].windows(needle.len()).rposition(|w| w == needle.as_slice())
    };
    match found {
        Some(at) => {
            d.cursor = at as u64;
            d.tree_focus = false;
            app.status = format!("match at {at:#x}");
            sync_span_to_cursor(app);
            keep_cursor_visible(app);
        }
        None => app.status = "no more matches".into(),
    }
}

/// `:open v2`, `:open FILE`, `:goto 0x1f0`, `:query`, `:export FILE [FORMAT]`,
/// `:compact`, `:q`; and `/text` or `/x:1f8b` searches in the decoder.
fn cmd_key(app: &mut App, k: KeyEvent) -> Vec<Effect> {
    let Some(line) = app.cmdline.as_mut() else { return Vec::new() };
    match k.code {
        KeyCode::Esc => app.cmdline = None,
        KeyCode::Backspace => {
            line.pop();
            if line.is_empty() {
                app.cmdline = None;
            }
        }
        KeyCode::Char(c) => line.push(c),
        KeyCode::Enter => {
            let line = app.cmdline.take().unwrap_or_default();
            return run_command(app, &line);
        }
        _ => {}
    }
    Vec::new()
}

fn parse_offset(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// `:open v2`, `:open FILE`, `:goto 0x1f0`, `:query`, `:export FILE [FORMAT]`,
/// `:compact`, `:update …`, `:repair …`, `:q`; and `/text` or `/x:1f8b`
/// searches in the decoder.
pub fn run_command(app: &mut App, line: &str) -> Vec<Effect> {
    if let Some(needle) = line.strip_prefix('/') {
        start_search(app, needle);
        return Vec::new();
    }
    let body = line.trim_start_matches(':').trim();
    let (cmd, arg) = body.split_once(' ').map_or((body, ""), |(c, a)| (c, a.trim()));
    match cmd {
        "q" | "quit" => app.quit = true,
        "open" => return open(app, arg),
        "goto" => goto(app, arg),
        "query" => {
            go(app, Tab::Query);
            if !arg.is_empty() {
                app.query.text = arg.to_string();
            }
        }
        "export" => return export(app, arg),
        "compact" => {
            go(app, Tab::Timeline);
            return ask_compaction(app);
        }
        "update" => return update_command(app, arg),
        "repair" => return ask_repair(app, arg),
        "" => {}
        other => {
            app.status = format!(
                "unknown command :{other} (try :open, :goto, :query, :export, :compact, :update, :repair, :q)"
            )
        }
    }
    Vec::new()
}

/// `/text` or `/x:1f8b`: the needle, then the first match after the cursor.
fn start_search(app: &mut App, needle: &str) {
    let bytes = match needle.strip_prefix("x:") {
        Some(hex) => (0..hex.len() / 2)
            .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
            .collect(),
        None => needle.as_bytes().to_vec(),
    };
    if let Some(d) = app.decoder.as_mut() {
        d.search = Some(bytes);
    }
    search(app, true);
}

/// `:open v2` selects a version; anything else is a file to decode
/// (relative to the chunk).
fn open(app: &mut App, arg: &str) -> Vec<Effect> {
    if let Some(i) = super::state::version_index(app, arg) {
        go(app, Tab::Files);
        return select_version(app, i);
    }
    let p = PathBuf::from(arg);
    let p = if p.is_absolute() { p } else { app.chunk.join(p) };
    app.status = format!("opening {arg}…");
    vec![Effect::OpenFile(p)]
}

fn goto(app: &mut App, arg: &str) {
    match (parse_offset(arg), app.decoder.as_mut()) {
        (Some(off), Some(d)) if off < d.bytes.len() as u64 => {
            d.cursor = off;
            d.tree_focus = false;
            go(app, Tab::Decoder);
            sync_span_to_cursor(app);
            keep_cursor_visible(app);
        }
        (Some(_), Some(_)) => app.status = "offset beyond the end of the file".into(),
        (None, _) => app.status = format!("not an offset: {arg:?} (decimal or 0x hex)"),
        (_, None) => app.status = "open a file in the decoder first".into(),
    }
}

fn export(app: &mut App, arg: &str) -> Vec<Effect> {
    let mut parts = arg.split_whitespace();
    let Some(file) = parts.next() else {
        app.status = "usage: :export FILE [json|xml|csv|tsv|table|ntriples|nquads|turtle]".into();
        return Vec::new();
    };
    let format = match parts.next().map(|f| <OutputFormat as clap::ValueEnum>::from_str(f, true)) {
        Some(Ok(f)) => f,
        Some(Err(e)) => {
            app.status = format!("format: {e}");
            return Vec::new();
        }
        None => format_for_extension(file),
    };
    app.status = format!("exporting to {file}…");
    vec![Effect::Export { text: app.query.text.clone(), out: PathBuf::from(file), format }]
}

fn format_for_extension(file: &str) -> OutputFormat {
    match file.rsplit('.').next() {
        Some("json") => OutputFormat::Json,
        Some("xml") => OutputFormat::Xml,
        Some("csv") => OutputFormat::Csv,
        Some("nt") => OutputFormat::NTriples,
        Some("nq") => OutputFormat::NQuads,
        Some("ttl") => OutputFormat::Turtle,
        _ => OutputFormat::Tsv,
    }
}

fn update_command(app: &mut App, arg: &str) -> Vec<Effect> {
    if !app.write {
        app.status = "read-only: start with --write to update".into();
        return Vec::new();
    }
    if arg.is_empty() {
        app.status = "usage: :update INSERT DATA { … }".into();
        return Vec::new();
    }
    app.status = "updating…".into();
    vec![Effect::Update(arg.to_string())]
}

/// A worker's report: the state takes what it brought.
fn worker_msg(app: &mut App, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Input(ev) => return from_event(app, ev).map(|a| update(app, a)).unwrap_or_default(),
        Msg::Observed(now) => return observed(app, now),
        Msg::Listed(listing, observed) => {
            app.apply_listing(listing, observed);
            return app.selected_version_dir().map(Effect::LoadVersion).into_iter().collect();
        }
        Msg::VersionLoaded(details) => app.apply_version(*details),
        Msg::LogIndexed(ix) => {
            let n = ix.count;
            app.log = Some(*ix);
            app.log_sel = app.log_sel.min(n.saturating_sub(1));
            app.log_top = app.log_top.min(app.log_sel);
        }
        Msg::Opened(Ok(d)) => {
            app.status = format!("{}", d.path.display());
            app.decoder = Some(*d);
            go(app, Tab::Decoder);
        }
        Msg::Opened(Err(e)) => app.status = e,
        Msg::Planned(Ok(confirm)) => app.confirm = Some(confirm),
        Msg::Planned(Err(why)) => app.status = why,
        Msg::QueryDone(t) => query_done(app, t),
        Msg::CompactProgress(p) => {
            if let Some(c) = app.compaction.as_mut() {
                c.last = Some(p);
            }
        }
        Msg::CompactDone(r) => {
            app.compaction = None;
            app.status = r.unwrap_or_else(|e| format!("compaction failed: {e}"));
            return refresh(app);
        }
        Msg::Exported(r) => app.status = r.unwrap_or_else(|e| format!("export failed: {e}")),
        Msg::Failed(why) => {
            app.query.running = None;
            app.compaction = None;
            app.status = why;
        }
        Msg::Wrote(r) => {
            app.status = r.unwrap_or_else(|e| format!("failed: {e}"));
            return refresh(app);
        }
    }
    Vec::new()
}

fn query_done(app: &mut App, t: super::state::QueryTable) {
    let took = app.query.running.take().map(|(s, _)| s.elapsed()).unwrap_or(t.elapsed);
    let ms = took.as_secs_f64() * 1e3;
    app.status = match (&t.error, t.boolean) {
        (Some(e), _) => format!("error: {e}"),
        (None, Some(b)) => format!("ASK: {b} in {ms:.1} ms"),
        _ => {
            let more = if t.rows.len() >= worker::MAX_ROWS { "+ (display limit)" } else { "" };
            format!("{} rows{more} in {ms:.1} ms", t.rows.len())
        }
    };
    app.query.scroll = 0;
    app.query.result = Some(t);
}

/// Re-lists versions and re-indexes the log (after a change on disk).
fn refresh(app: &mut App) -> Vec<Effect> {
    app.refreshing = true;
    vec![Effect::ListVersions, Effect::IndexLog]
}

/// The watcher's report: appends and compactions by other processes show
/// up within a second. Reports that arrive while a listing is on its way
/// wait for it (the listing brings its own observation).
fn observed(app: &mut App, now: super::state::Observed) -> Vec<Effect> {
    if app.refreshing || now == app.watched {
        return Vec::new();
    }
    let what = if now.current != app.watched.current {
        let target = now.current.as_ref().map_or("nothing".into(), |p| p.display().to_string());
        format!("`current` now points at {target}")
    } else {
        format!("the log changed ({} → {} bytes)", app.watched.log_len, now.log_len)
    };
    if app.compaction.is_none() {
        app.status = what;
    }
    app.watched = now;
    refresh(app)
}
