//! The delta log as a virtualized list: only the visible batches are decoded.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::list_rows;
use crate::store::log::writer::count_ops;
use crate::store::log::BatchState;
use crate::text::plural;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::tui::action::Action;
use crate::tui::state::App;

/// Where the log view is: the selected batch, the first one shown, the one
/// expanded to its entries.
#[derive(Debug, Default)]
pub struct LogView {
    /// Rows of the list: batch numbers, or places in `matches` while a
    /// filter is on.
    pub sel: usize,
    pub top: usize,
    pub expanded: Option<usize>,
    /// `/`: the text, and the numbers of the batches that hold it (found on
    /// a worker; `None` until they arrive).
    pub filter: super::ListFilter,
    pub matches: Option<Vec<usize>>,
}

pub fn bindings() -> Vec<(&'static str, &'static str)> {
    vec![("Enter", "expand batch"), ("PgUp/PgDn", "page"), ("g/G", "first/last"), ("/", "filter")]
}

pub fn key(k: KeyEvent) -> Option<Action> {
    match k.code {
        KeyCode::Char('/') => Some(Action::OpenCmdline('/')),
        _ => None,
    }
}

impl LogView {
    /// The log view's part of an action, over a log of `count` batches with
    /// `page` rows on screen. Returns whether it used the action.
    pub fn update(&mut self, action: &Action, count: usize, page: usize) -> bool {
        let count = self.matches.as_ref().map_or(count, Vec::len);
        match action {
            Action::Back if self.filter.clear() => {
                self.matches = None;
                (self.sel, self.top, self.expanded) = (0, 0, None);
            }
            Action::Up(n) => self.step(-(*n as isize), count, page),
            Action::Down(n) => self.step(*n as isize, count, page),
            Action::Top => self.step(isize::MIN / 2, count, page),
            Action::Bottom => self.step(isize::MAX / 2, count, page),
            Action::Enter => {
                self.expanded = if self.expanded == Some(self.sel) { None } else { Some(self.sel) }
            }
            Action::Back if self.expanded.is_some() => self.expanded = None,
            Action::Click { row, .. } => {
                if let Some(idx) = super::list_index(*row, 0).filter(|i| self.top + i < count) {
                    self.sel = self.top + idx;
                }
            }
            _ => return false,
        }
        true
    }

    fn step(&mut self, delta: isize, count: usize, page: usize) {
        self.sel = super::move_sel(self.sel, count, delta);
        let page = page.max(1);
        if self.sel < self.top {
            self.top = self.sel;
        } else if self.sel >= self.top + page {
            self.top = self.sel + 1 - page;
        }
    }

    /// A new index of `count` batches: the selection stays inside it.
    pub fn reindexed(&mut self, count: usize) {
        let count = self.matches.as_ref().map_or(count, Vec::len);
        self.sel = self.sel.min(count.saturating_sub(1));
        self.top = self.top.min(self.sel);
    }

    /// `/TEXT`: the batches that match are looked for on a worker; an
    /// empty text shows every batch again. Whether to look.
    pub fn set_filter(&mut self, text: &str) -> bool {
        self.filter.set(text);
        self.matches = None;
        (self.sel, self.top, self.expanded) = (0, 0, None);
        self.filter.is_on()
    }

    /// The batches that match, from the worker (for the filter still on).
    pub fn filtered(&mut self, matches: Vec<usize>) {
        self.matches = Some(matches);
        (self.sel, self.top, self.expanded) = (0, 0, None);
    }
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let Some(ix) = &app.log else {
        f.render_widget(
            Paragraph::new("indexing the log…")
                .block(Block::default().borders(Borders::ALL).title("Delta log")),
            area,
        );
        return;
    };
    let rows = list_rows(area) + 1;
    let seen = app.current_visibility();
    let mut lines = vec![Line::styled(
        format!(
            "{:>10}  {:<7} {:<6} {:<24} {:>8}  {:<8} {}",
            "offset", "seq", "epoch", "ops", "bytes", "checksum", "state"
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    let view = &app.log_view;
    let window: Vec<(usize, Result<crate::format::deltalog::BatchFrame, String>)> = match &view.matches {
        // A filter's batches are one here, one there: decoded one by one.
        Some(m) => m
            .iter()
            .skip(view.top)
            .take(rows)
            .filter_map(|&b| ix.window(b, 1).into_iter().next().map(|f| (b, f)))
            .collect(),
        None => ix.window(view.top, rows).into_iter().enumerate().map(|(k, f)| (view.top + k, f)).collect(),
    };
    let shown_count = view.matches.as_ref().map_or(ix.count, Vec::len);
    for (k, (i, frame)) in window.iter().enumerate() {
        if lines.len() > rows {
            break;
        }
        let (row, i) = (view.top + k, *i);
        let style =
            if row == view.sel { Style::new().add_modifier(Modifier::REVERSED) } else { Style::new() };
        match frame {
            Ok(fr) => {
                let (a, r, g) = count_ops(&fr.batch.entries);
                let state = seen.of(fr);
                let shadowed = state == BatchState::Shadowed;
                let state = state.label();
                let style = if shadowed { style.add_modifier(Modifier::DIM) } else { style };
                let ops = format!("+{a} \u{2212}{r} {}", plural(g, "graph op", "graph ops"));
                lines.push(Line::styled(
                    format!(
                        "{:>10}  {:<7} {:<6} {:<24} {:>8}  {:<8} {state}",
                        fr.offset, fr.batch.seq, fr.batch.epoch, ops, fr.len, "ok"
                    ),
                    style,
                ));
                if view.expanded == Some(row) {
                    for e in &fr.batch.entries {
                        lines.push(Line::from(format!("            {}", e.describe())));
                    }
                }
            }
            Err(e) => lines.push(Line::styled(format!("  batch {i}: {e}"), style.fg(Color::Red))),
        }
    }
    let at_end = view.matches.is_none() && view.top + window.len() >= ix.count;
    if let (true, Some((off, len, why))) = (at_end, ix.leftover()) {
        let what = match ix.tail.hidden() {
            [] => "TORN TAIL / LEFTOVER".to_string(),
            h => format!(
                "DAMAGE hiding {}, the first at {}",
                plural(h.len(), "committed batch", "committed batches"),
                h[0]
            ),
        };
        let effect = if ix.tail.hidden().is_empty() {
            "not committed, readers ignore it"
        } else {
            "readers refuse to answer until `repair truncate-torn-tail`"
        };
        lines.push(Line::styled(
            format!("{off:>10}  {what}: {} ({why}) — {effect}", plural(len, "byte", "bytes")),
            Style::new().fg(Color::White).bg(Color::Red).add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(e) = &ix.error {
        lines.push(Line::styled(e.clone(), Style::new().fg(Color::Red)));
    }
    let title = match (&view.matches, view.filter.is_on()) {
        (_, true) if view.matches.is_none() => "Delta log: filtering…".to_string(),
        (Some(_), true) => format!("Delta log{}", view.filter.title(shown_count, ix.count)),
        _ => format!(
            "Delta log — {}, {}, marker {}",
            plural(ix.count, "batch", "batches"),
            plural(ix.len, "byte", "bytes"),
            seen.marker().map_or("none".into(), |m| m.to_string())
        ),
    };
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), area);
}
