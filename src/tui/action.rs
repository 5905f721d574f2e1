//! Input → actions → `update(&mut App)`. Key bindings live here once: the
//! mapping, the keybar and the help overlay all read `bindings`.

use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::time::Instant;

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use super::state::{App, Compaction, Confirm, Pending, RepairKind, Tab, TABS};
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
        Event::Resize(..) => Some(Action::Tick),
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

pub fn update(app: &mut App, action: Action, tx: &Sender<Msg>) {
    match action {
        Action::Quit => app.quit = true,
        Action::NextTab | Action::PrevTab => {
            let i = TABS.iter().position(|t| *t == app.tab).unwrap_or(0);
            let n = TABS.len();
            let next = if matches!(action, Action::NextTab) { (i + 1) % n } else { (i + n - 1) % n };
            app.tab = TABS[next];
            app.back.clear();
        }
        Action::Up(n) => step(app, -(n as isize)),
        Action::Down(n) => step(app, n as isize),
        Action::Top => step(app, isize::MIN / 2),
        Action::Bottom => step(app, isize::MAX / 2),
        Action::Left | Action::Right => {
            if let Some(d) = app.decoder.as_mut() {
                let len = d.bytes.len() as u64;
                d.cursor = if matches!(action, Action::Left) {
                    d.cursor.saturating_sub(1)
                } else {
                    (d.cursor + 1).min(len.saturating_sub(1))
                };
                d.tree_focus = false;
                sync_span_to_cursor(app);
            }
        }
        Action::Enter => enter(app),
        Action::Back => {
            if app.log_expanded.is_some() && app.tab == Tab::Log {
                app.log_expanded = None;
            } else if let Some(t) = app.back.pop() {
                app.tab = t;
            }
        }
        Action::ToggleHelp => app.help = !app.help,
        Action::OpenCmdline(c) => app.cmdline = Some(c.to_string()),
        Action::CmdKey(k) => cmd_key(app, k, tx),
        Action::StartEdit => app.query.editing = true,
        Action::EditKey(k) => edit_key(app, k),
        Action::RunQuery => run_query(app, tx),
        Action::CancelQuery => {
            if let Some((_, token)) = &app.query.running {
                token.cancel();
                app.status = "cancelling…".into();
            }
        }
        Action::HistoryPrev | Action::HistoryNext => {
            let h = &app.query.history;
            if h.is_empty() {
                return;
            }
            let pos = match (app.query.history_pos, matches!(action, Action::HistoryPrev)) {
                (None, true) => h.len() - 1,
                (None, false) => return,
                (Some(p), true) => p.saturating_sub(1),
                (Some(p), false) => (p + 1).min(h.len() - 1),
            };
            app.query.history_pos = Some(pos);
            app.query.text = h[pos].clone();
        }
        Action::AskCompaction => ask_compaction(app),
        Action::ConfirmYes => match app.confirm.take().map(|c| c.then) {
            Some(Pending::Compact) => {
                app.compaction = Some(Compaction { started: Instant::now(), last: None });
                app.status = "compacting…".into();
                worker::spawn_compact(app.chunk.clone(), tx.clone());
            }
            Some(Pending::Repair(kind)) => {
                app.status = "repairing…".into();
                worker::spawn_repair(app.chunk.clone(), kind, tx.clone());
            }
            None => {}
        },
        Action::ConfirmNo => {
            app.confirm = None;
            app.status = "compaction not started".into();
        }
        Action::ToggleFocus => {
            if let Some(d) = app.decoder.as_mut() {
                d.tree_focus = !d.tree_focus;
            }
        }
        Action::SearchNext(forward) => search(app, forward),
        Action::ClickRow(row) => click(app, row),
        Action::Worker(msg) => worker_msg(app, msg, tx),
        Action::Tick => {}
    }
}

fn step(app: &mut App, delta: isize) {
    match app.tab {
        Tab::Store => {
            let n = app.listing.as_ref().map_or(0, |l| l.versions.len());
            let before = app.version_sel;
            app.version_sel = move_sel(app.version_sel, n, delta);
            if before != app.version_sel {
                app.load_version_details();
            }
        }
        Tab::Files => app.file_sel = move_sel(app.file_sel, app.files.len(), delta),
        Tab::Decoder => {
            let Some(d) = app.decoder.as_mut() else { return };
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

fn enter(app: &mut App) {
    match app.tab {
        Tab::Store => go(app, Tab::Files),
        Tab::Files => {
            if let Some(f) = app.files.get(app.file_sel) {
                let p = f.path.clone();
                app.open_decoder(&p);
                go(app, Tab::Decoder);
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
}

fn click(app: &mut App, row: u16) {
    // Rows start under the tab bar (1) and the list's border and header (2).
    let idx = (row as usize).saturating_sub(3);
    match app.tab {
        Tab::Store => {
            let n = app.listing.as_ref().map_or(0, |l| l.versions.len());
            if idx < n {
                app.version_sel = idx;
                app.load_version_details();
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

fn run_query(app: &mut App, tx: &Sender<Msg>) {
    if app.query.running.is_some() {
        return;
    }
    let text = app.query.text.trim().to_string();
    if text.is_empty() {
        return;
    }
    if app.query.history.last() != Some(&text) {
        app.query.history.push(text.clone());
    }
    app.query.history_pos = None;
    app.query.editing = false;
    let token = spareval::CancellationToken::new();
    app.query.running = Some((Instant::now(), token.clone()));
    app.status = "running…".into();
    worker::spawn_query(app.chunk.clone(), text, token, tx.clone());
}

fn ask_compaction(app: &mut App) {
    if !app.write {
        app.status = "read-only: start with --write to compact".into();
        return;
    }
    if app.compaction.is_some() {
        return;
    }
    match crate::compact::plan(&app.chunk) {
        Ok(p) if p.nothing_to_fold() => app.status = "nothing to fold: the log has no visible batch".into(),
        Ok(p) => {
            app.confirm = Some(Confirm {
                title: "Compact?".into(),
                text: format!("{p}\n\nPress y to compact, n to cancel."),
                then: Pending::Compact,
            })
        }
        Err(e) => app.status = e.to_string(),
    }
}

/// `:repair truncate-torn-tail | reset-current | rebuild-sidecars vN`: the
/// plan in a dialog, applied only on `y`.
fn ask_repair(app: &mut App, arg: &str) {
    use crate::triage::repair;
    if !app.write {
        app.status = "read-only: start with --write to repair".into();
        return;
    }
    let mut words = arg.split_whitespace();
    let (kind, plan) = match (words.next(), words.next()) {
        (Some("truncate-torn-tail"), _) => {
            (RepairKind::TruncateTornTail, repair::plan_truncate_tail(&app.chunk))
        }
        (Some("reset-current"), _) => {
            (RepairKind::ResetCurrent, repair::plan_reset_current(&app.chunk).map(|p| p.0))
        }
        (Some("rebuild-sidecars"), Some(v)) => {
            (RepairKind::RebuildSidecars(v.to_string()), repair::plan_rebuild_sidecars(&app.chunk, v))
        }
        _ => {
            app.status = "usage: :repair truncate-torn-tail | reset-current | rebuild-sidecars vN".into();
            return;
        }
    };
    match plan {
        Ok(p) if p.noop => app.status = p.lines.join("; "),
        Ok(p) => {
            app.confirm = Some(Confirm {
                title: "Repair?".into(),
                text: format!("{}\n\nEvery byte removed or replaced is copied to cottas-tui-backups/ first.\nPress y to apply, n to cancel.", p.lines.join("\n")),
                then: Pending::Repair(kind),
            })
        }
        Err(e) => app.status = e.to_string(),
    }
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
fn cmd_key(app: &mut App, k: KeyEvent, tx: &Sender<Msg>) {
    let Some(line) = app.cmdline.as_mut() else { return };
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
            run_command(app, &line, tx);
        }
        _ => {}
    }
}

fn parse_offset(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

pub fn run_command(app: &mut App, line: &str, tx: &Sender<Msg>) {
    if let Some(needle) = line.strip_prefix('/') {
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
        return;
    }
    let body = line.trim_start_matches(':').trim();
    let (cmd, arg) = body.split_once(' ').map_or((body, ""), |(c, a)| (c, a.trim()));
    match cmd {
        "q" | "quit" => app.quit = true,
        "open" => {
            if let Some(i) = super::state::version_index(app, arg) {
                app.version_sel = i;
                app.load_version_details();
                go(app, Tab::Files);
            } else {
                let p = PathBuf::from(arg);
                let p = if p.is_absolute() { p } else { app.chunk.join(p) };
                if p.is_file() {
                    app.open_decoder(&p);
                    go(app, Tab::Decoder);
                } else {
                    app.status = format!("no version or file named {arg:?}");
                }
            }
        }
        "goto" => match (parse_offset(arg), app.decoder.as_mut()) {
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
        },
        "query" => {
            go(app, Tab::Query);
            if !arg.is_empty() {
                app.query.text = arg.to_string();
            }
        }
        "export" => {
            let mut parts = arg.split_whitespace();
            let Some(file) = parts.next() else {
                app.status = "usage: :export FILE [json|xml|csv|tsv|table|ntriples|nquads|turtle]".into();
                return;
            };
            let format = match parts.next().map(|f| <OutputFormat as clap::ValueEnum>::from_str(f, true)) {
                Some(Ok(f)) => f,
                Some(Err(e)) => {
                    app.status = format!("format: {e}");
                    return;
                }
                None => match file.rsplit('.').next() {
                    Some("json") => OutputFormat::Json,
                    Some("xml") => OutputFormat::Xml,
                    Some("csv") => OutputFormat::Csv,
                    Some("nt") => OutputFormat::NTriples,
                    Some("nq") => OutputFormat::NQuads,
                    Some("ttl") => OutputFormat::Turtle,
                    _ => OutputFormat::Tsv,
                },
            };
            app.status = format!("exporting to {file}…");
            worker::spawn_export(
                app.chunk.clone(),
                app.query.text.clone(),
                PathBuf::from(file),
                format,
                tx.clone(),
            );
        }
        "compact" => {
            go(app, Tab::Timeline);
            ask_compaction(app);
        }
        "update" => {
            if !app.write {
                app.status = "read-only: start with --write to update".into();
            } else if arg.is_empty() {
                app.status = "usage: :update INSERT DATA { … }".into();
            } else {
                app.status = "updating…".into();
                worker::spawn_update(app.chunk.clone(), arg.to_string(), tx.clone());
            }
        }
        "repair" => ask_repair(app, arg),
        "" => {}
        other => {
            app.status = format!(
            "unknown command :{other} (try :open, :goto, :query, :export, :compact, :update, :repair, :q)"
        )
        }
    }
}

fn worker_msg(app: &mut App, msg: Msg, tx: &Sender<Msg>) {
    match msg {
        Msg::LogIndexed(ix) => {
            let n = ix.count;
            app.log = Some(*ix);
            app.log_sel = app.log_sel.min(n.saturating_sub(1));
            app.log_top = app.log_top.min(app.log_sel);
        }
        Msg::QueryDone(t) => {
            let took = app.query.running.take().map(|(s, _)| s.elapsed()).unwrap_or(t.elapsed);
            app.status = match (&t.error, t.boolean) {
                (Some(e), _) => format!("error: {e}"),
                (None, Some(b)) => format!("ASK: {b} in {:.1} ms", took.as_secs_f64() * 1e3),
                _ => format!(
                    "{} rows{} in {:.1} ms",
                    t.rows.len(),
                    if t.rows.len() >= worker::MAX_ROWS { "+ (display limit)" } else { "" },
                    took.as_secs_f64() * 1e3
                ),
            };
            app.query.scroll = 0;
            app.query.result = Some(t);
        }
        Msg::CompactProgress(p) => {
            if let Some(c) = app.compaction.as_mut() {
                c.last = Some(p);
            }
        }
        Msg::CompactDone(r) => {
            app.compaction = None;
            app.status = match r {
                Ok(s) => s,
                Err(e) => format!("compaction failed: {e}"),
            };
            refresh(app, tx);
        }
        Msg::Exported(r) => app.status = r.unwrap_or_else(|e| format!("export failed: {e}")),
        Msg::Wrote(r) => {
            app.status = r.unwrap_or_else(|e| format!("failed: {e}"));
            refresh(app, tx);
        }
    }
}

/// Re-reads versions and re-indexes the log (after a change on disk).
pub fn refresh(app: &mut App, tx: &Sender<Msg>) {
    app.reload_versions();
    worker::spawn_log_index(app.log_path(), tx.clone());
    app.watched = app.observe();
}

/// Called about twice a second: notices appends and compactions by other
/// processes.
pub fn watch(app: &mut App, tx: &Sender<Msg>) {
    let now = app.observe();
    if now != app.watched {
        let what = if now.2 != app.watched.2 {
            format!(
                "`current` now points at {}",
                now.2.as_ref().map(|p| p.display().to_string()).unwrap_or("nothing".into())
            )
        } else {
            format!("the log changed ({} → {} bytes)", app.watched.0, now.0)
        };
        refresh(app, tx);
        if app.compaction.is_none() {
            app.status = what;
        }
    }
}
