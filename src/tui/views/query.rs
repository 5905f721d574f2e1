//! The query editor and the results table.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use super::list_rows;
use std::time::Instant;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::state::{App, QueryTable};

/// The editor, its history, the running query and the last result.
#[derive(Default)]
pub struct QueryState {
    pub text: String,
    pub editing: bool,
    pub history: Vec<String>,
    pub history_pos: Option<usize>,
    pub running: Option<(Instant, spareval::CancellationToken)>,
    pub result: Option<QueryTable>,
    pub scroll: usize,
}

pub fn bindings(q: &QueryState) -> Vec<(&'static str, &'static str)> {
    if q.editing {
        vec![("Esc", "stop editing"), ("Ctrl-R", "run"), ("Ctrl-P/N", "history")]
    } else if q.running.is_some() {
        vec![("Ctrl-C", "cancel")]
    } else {
        vec![("i", "edit"), ("Enter", "run"), ("Ctrl-P/N", "history"), (":export F", "save")]
    }
}

/// Keys of the query view; while editing, every key but the few below
/// goes into the text.
pub fn key(q: &QueryState, k: KeyEvent) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    Some(match (k.code, ctrl) {
        (KeyCode::Char('r'), true) if q.editing => Action::RunQuery,
        (KeyCode::Char('p'), true) => Action::HistoryPrev,
        (KeyCode::Char('n'), true) => Action::HistoryNext,
        _ if q.editing => Action::EditKey(k),
        (KeyCode::Enter, _) => Action::RunQuery,
        (KeyCode::Char('i'), _) => Action::StartEdit,
        _ => return None,
    })
}

impl QueryState {
    /// The query view's part of an action; `None` when it is not its own.
    pub fn update(&mut self, action: &Action, status: &mut String) -> Option<Vec<Effect>> {
        let n = self.result.as_ref().map_or(0, |r| r.rows.len());
        match action {
            Action::Up(k) => self.scroll = super::move_sel(self.scroll, n, -(*k as isize)),
            Action::Down(k) => self.scroll = super::move_sel(self.scroll, n, *k as isize),
            Action::Top => self.scroll = 0,
            Action::Bottom => self.scroll = n.saturating_sub(1),
            Action::StartEdit => self.editing = true,
            Action::EditKey(k) => self.edit(*k),
            Action::HistoryPrev => self.history(true),
            Action::HistoryNext => self.history(false),
            Action::CancelQuery => {
                if let Some((_, token)) = &self.running {
                    token.cancel();
                    *status = "cancelling…".into();
                }
            }
            Action::RunQuery => return Some(self.run(status)),
            _ => return None,
        }
        Some(Vec::new())
    }

    fn edit(&mut self, k: KeyEvent) {
        match k.code {
            KeyCode::Esc => self.editing = false,
            KeyCode::Enter => self.text.push('\n'),
            KeyCode::Backspace => {
                self.text.pop();
            }
            KeyCode::Tab => self.text.push_str("  "),
            KeyCode::Char(c) => self.text.push(c),
            _ => {}
        }
    }

    fn history(&mut self, prev: bool) {
        let h = &self.history;
        if h.is_empty() {
            return;
        }
        let pos = match (self.history_pos, prev) {
            (None, true) => h.len() - 1,
            (None, false) => return,
            (Some(p), true) => p.saturating_sub(1),
            (Some(p), false) => (p + 1).min(h.len() - 1),
        };
        self.history_pos = Some(pos);
        self.text = h[pos].clone();
    }

    fn run(&mut self, status: &mut String) -> Vec<Effect> {
        let text = self.text.trim().to_string();
        if self.running.is_some() || text.is_empty() {
            return Vec::new();
        }
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.history_pos = None;
        self.editing = false;
        let token = spareval::CancellationToken::new();
        self.running = Some((Instant::now(), token.clone()));
        *status = "running…".into();
        vec![Effect::Query { text, token }]
    }
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let q = &app.query;
    let inner = area.width.saturating_sub(2).max(1) as usize;
    let wrapped: usize = q.text.split('\n').map(|l| l.chars().count().div_ceil(inner).max(1)).sum();
    let editor_h = (wrapped as u16 + 2).clamp(3, 9);
    let [editor, results] = Layout::vertical([Constraint::Length(editor_h), Constraint::Min(3)]).areas(area);
    let title = if q.editing {
        "Query — editing (Esc to stop, Ctrl-R to run)"
    } else {
        "Query — i to edit, Enter to run"
    };
    let style = if q.editing { Style::new().fg(Color::Yellow) } else { Style::new() };
    let text = if q.editing { format!("{}█", q.text) } else { q.text.clone() };
    f.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(title).border_style(style)),
        editor,
    );
    let Some(r) = &q.result else {
        f.render_widget(
            Paragraph::new("").block(Block::default().borders(Borders::ALL).title("Results")),
            results,
        );
        return;
    };
    if let Some(e) = &r.error {
        f.render_widget(
            Paragraph::new(Line::styled(e.clone(), Style::new().fg(Color::Red)))
                .wrap(Wrap { trim: false })
                .block(Block::default().borders(Borders::ALL).title("Error")),
            results,
        );
        return;
    }
    if let Some(b) = r.boolean {
        f.render_widget(
            Paragraph::new(format!("ASK → {b}"))
                .block(Block::default().borders(Borders::ALL).title("Result")),
            results,
        );
        return;
    }
    let n = list_rows(results);
    let rows: Vec<Row> = r.rows.iter().skip(q.scroll).take(n).map(|row| Row::new(row.clone())).collect();
    let widths: Vec<Constraint> =
        r.vars.iter().map(|_| Constraint::Ratio(1, r.vars.len().max(1) as u32)).collect();
    let header =
        Row::new(r.vars.iter().map(|v| format!("?{v}"))).style(Style::new().add_modifier(Modifier::BOLD));
    let title = format!(
        "Results — {} rows in {:.1} ms (row {})",
        r.rows.len(),
        r.elapsed.as_secs_f64() * 1e3,
        q.scroll + 1
    );
    f.render_widget(
        Table::new(rows, widths).header(header).block(Block::default().borders(Borders::ALL).title(title)),
        results,
    );
}
