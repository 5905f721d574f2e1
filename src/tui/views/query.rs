//! The query editor and the results table.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Text};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Wrap};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use super::list_rows;
use std::time::Instant;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::prefixes::Prefixes;
use crate::text::plural;
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::state::{App, QueryTable};

/// The editor, its history, the running query and the last result.
#[derive(Default)]
pub struct QueryState {
    pub text: String,
    /// Where the editor's cursor is in `text` (a byte offset on a character
    /// boundary); `None` at the end, where text set from outside starts.
    pub cursor: Option<usize>,
    pub editing: bool,
    pub history: Vec<String>,
    pub history_pos: Option<usize>,
    pub running: Option<(Instant, spareval::CancellationToken)>,
    pub result: Option<QueryTable>,
    /// The selected result row.
    pub scroll: usize,
    /// The first result column shown (h/l scroll sideways).
    pub col: usize,
    /// The selected row's cells shown whole.
    pub detail: bool,
    /// IRIs shown whole instead of under prefixes.
    pub full_iris: bool,
    pub prefixes: Prefixes,
    /// The current version's most frequent namespaces (from its
    /// dictionaries, read once per version on a worker): (version, list).
    pub store_namespaces: Option<(String, Vec<(String, usize)>)>,
}

pub fn bindings(q: &QueryState) -> Vec<(&'static str, &'static str)> {
    if q.editing {
        vec![
            ("Esc", "stop"),
            ("Ctrl-R", "run"),
            ("Ctrl-P/N", "history"),
            ("←→↑↓", "move"),
            ("Ctrl-U/W/K", "kill"),
        ]
    } else if q.running.is_some() {
        vec![("Ctrl-C", "cancel")]
    } else if q.result.is_some() {
        vec![
            ("Enter", "row"),
            ("h/l", "columns"),
            ("a", "prefixes"),
            ("Ctrl-R", "run"),
            ("i", "edit"),
            (":export F", "save"),
        ]
    } else {
        vec![("i", "edit"), ("Enter", "run"), ("Ctrl-P/N", "history"), (":export F", "save")]
    }
}

/// Keys of the query view; while editing, every key but the few below
/// goes into the text.
pub fn key(q: &QueryState, k: KeyEvent) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    Some(match (k.code, ctrl) {
        (KeyCode::Char('r'), true) => Action::RunQuery,
        (KeyCode::Char('p'), true) => Action::HistoryPrev,
        (KeyCode::Char('n'), true) => Action::HistoryNext,
        _ if q.editing => Action::EditKey(k),
        // With a result on screen Enter shows the selected row whole.
        (KeyCode::Enter, _) if q.result.is_none() => Action::RunQuery,
        (KeyCode::Char('i'), _) => Action::StartEdit,
        (KeyCode::Char('a'), _) if q.result.is_some() => Action::ToggleIris,
        _ => return None,
    })
}

impl QueryState {
    /// The query view's part of an action; `None` when it is not its own.
    /// `screen_width` is the terminal's: Up and Down move by the editor's rows.
    pub fn update(&mut self, action: &Action, status: &mut String, screen_width: u16) -> Option<Vec<Effect>> {
        let n = self.result.as_ref().map_or(0, |r| r.rows.len());
        match action {
            Action::Up(_) | Action::Down(_) | Action::Top | Action::Bottom => {
                self.scroll = super::list_move(self.scroll, n, action).unwrap_or(self.scroll)
            }
            Action::Left => self.col = self.col.saturating_sub(1),
            Action::Right => self.col = (self.col + 1).min(self.columns().saturating_sub(1)),
            Action::Enter if self.result.is_some() => self.detail = !self.detail,
            Action::Back if self.detail => self.detail = false,
            Action::ToggleIris => self.full_iris = !self.full_iris,
            Action::StartEdit => self.editing = true,
            Action::EditKey(k) => self.edit(*k, editor_width(screen_width)),
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

    fn columns(&self) -> usize {
        self.result.as_ref().map_or(0, |r| r.vars.len())
    }

    /// The prefixes for these rows of the current query.
    pub fn prefixes_for(&self, rows: &[Vec<String>]) -> Prefixes {
        let store = self.store_namespaces.as_ref().map_or(&[][..], |(_, v)| v.as_slice());
        super::prefixes::for_result(&self.text, rows, store)
    }

    /// The store's namespaces arrive: the result on screen is named again.
    pub fn namespaces_read(&mut self, version: String, list: Vec<(String, usize)>) {
        self.store_namespaces = Some((version, list));
        if let Some(r) = &self.result {
            self.prefixes = self.prefixes_for(&r.rows);
        }
    }

    /// A cell as the table shows it: a number bare, IRIs under prefixes
    /// (or whole, with `a`).
    pub fn shown(&self, cell: &str) -> String {
        let cell = crate::sparql::display::for_people(cell);
        if self.full_iris {
            cell.into_owned()
        } else {
            super::prefixes::abbreviate(&cell, &self.prefixes)
        }
    }

    /// The cursor's byte offset in the text.
    pub fn cursor(&self) -> usize {
        let end = self.text.len();
        self.cursor.filter(|&at| at < end && self.text.is_char_boundary(at)).unwrap_or(end)
    }

    fn place_cursor(&mut self, at: usize) {
        self.cursor = (at < self.text.len()).then_some(at);
    }

    fn insert(&mut self, at: usize, s: &str) {
        self.text.insert_str(at, s);
        self.place_cursor(at + s.len());
    }

    fn edit(&mut self, k: KeyEvent, width: usize) {
        use super::editor;
        let at = self.cursor();
        if let Some(to) = super::kill(&mut self.text, 0, at, &k) {
            return self.place_cursor(to);
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let t = self.text.as_str();
        let to = match k.code {
            KeyCode::Esc => {
                self.editing = false;
                return;
            }
            KeyCode::Enter => return self.insert(at, "\n"),
            KeyCode::Tab => return self.insert(at, "  "),
            KeyCode::Char(c) if super::types_char(&k) => return self.insert(at, c.encode_utf8(&mut [0; 4])),
            KeyCode::Backspace => {
                let from = editor::left(t, at);
                self.text.replace_range(from..at, "");
                from
            }
            KeyCode::Delete => {
                let to = editor::right(t, at);
                self.text.replace_range(at..to, "");
                at
            }
            KeyCode::Char('k') if ctrl => {
                self.text.replace_range(editor::kill_to_line_end(t, at), "");
                at
            }
            KeyCode::Left => editor::left(t, at),
            KeyCode::Right => editor::right(t, at),
            KeyCode::Up => editor::vertical(t, at, true, width),
            KeyCode::Down => editor::vertical(t, at, false, width),
            KeyCode::Home => editor::row_home(t, at, width),
            KeyCode::Char('a') if ctrl => editor::line_start(t, at),
            KeyCode::End => editor::row_end(t, at, width),
            KeyCode::Char('e') if ctrl => editor::line_end(t, at),
            _ => return,
        };
        self.place_cursor(to);
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
        self.cursor = None;
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
        // Rows of this run replace the last result as they arrive.
        self.result = None;
        self.detail = false;
        *status = "running…".into();
        vec![Effect::Query { text, token }]
    }
}

/// Characters per row inside the editor's borders (the view spans the
/// screen's width).
fn editor_width(width: u16) -> usize {
    width.saturating_sub(2).max(1) as usize
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let q = &app.query;
    let inner = editor_width(area.width);
    let cursor = q.editing.then(|| q.cursor());
    let (rows, cursor_row) = super::editor::rows(&q.text, cursor, inner);
    let editor_h = (rows.len() as u16 + 2).clamp(3, 9);
    let [editor, results] = Layout::vertical([Constraint::Length(editor_h), Constraint::Min(3)]).areas(area);
    // On a corpus root with no chunk open, a query reads every chunk.
    let over = if app.has_chunk() { "Query" } else { "Query over every chunk of the corpus" };
    let title = if q.editing {
        format!("{over} — editing (Esc to stop, Ctrl-R to run)")
    } else {
        format!("{over} — i to edit, Enter to run")
    };
    let style = if q.editing { Style::new().fg(Color::Yellow) } else { Style::new() };
    // Scrolled so that the cursor's row is inside the box.
    let scroll = (cursor_row + 1).saturating_sub(editor_h.saturating_sub(2) as usize);
    f.render_widget(
        Paragraph::new(Text::from(rows))
            .scroll((scroll as u16, 0))
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
    // A query stopped or failed part way shows the rows it produced.
    if let Some(e) = r.error.as_ref().filter(|_| r.rows.is_empty()) {
        f.render_widget(
            Paragraph::new(Line::styled(e.clone(), Style::new().fg(Color::Red)))
                .wrap(Wrap { trim: false })
                .block(Block::default().borders(Borders::ALL).title("Error")),
            results,
        );
        return;
    }
    let results = match &r.note {
        Some(note) => render_note(f, results, note),
        None => results,
    };
    if let Some(b) = r.boolean {
        f.render_widget(
            Paragraph::new(format!("ASK → {b}"))
                .block(Block::default().borders(Borders::ALL).title("Result")),
            results,
        );
        return;
    }
    render_table(f, results, q, r);
    if q.detail {
        render_detail(f, results, q, r);
    }
}

/// `note` in the bottom lines of `area`, wrapped; the rest of `area` is
/// returned for the results.
fn render_note(f: &mut Frame, area: Rect, note: &str) -> Rect {
    let text = format!("note: {note}");
    let lines = (text.width() as u16).div_ceil(area.width.max(1)).clamp(1, 4);
    let [rest, bottom] = Layout::vertical([Constraint::Min(3), Constraint::Length(lines)]).areas(area);
    f.render_widget(
        Paragraph::new(Line::styled(text, Style::new().fg(Color::Yellow))).wrap(Wrap { trim: true }),
        bottom,
    );
    rest
}

/// Column widths for the columns from `first` on: each as wide as its
/// widest shown cell in terminal columns (up to a cap), the last taking
/// what is left.
fn column_widths(cells: &[Vec<String>], vars: &[String], first: usize, width: u16) -> Vec<u16> {
    const CAP: usize = 60;
    let widest: Vec<usize> = (first..vars.len())
        .map(|c| cells.iter().map(|row| row[c].width()).chain([vars[c].len() + 1]).max().unwrap_or(4))
        .collect();
    let mut widths: Vec<u16> = Vec::new();
    let mut used = 0u16;
    for &wide in &widest {
        let w = wide.clamp(4, CAP) as u16;
        if used + w > width && !widths.is_empty() {
            break;
        }
        widths.push(w.min(width.saturating_sub(used)));
        used = used.saturating_add(w + 1);
    }
    // What the columns leave of the width goes to those the cap cut, left
    // to right: a wide terminal shows a long IRI whole.
    let mut spare = width.saturating_sub(used.saturating_sub(1));
    for (w, &wide) in widths.iter_mut().zip(&widest) {
        let grow = (wide.min(u16::MAX as usize) as u16).saturating_sub(*w).min(spare);
        *w += grow;
        spare -= grow;
    }
    widths
}

fn render_table(f: &mut Frame, area: Rect, q: &QueryState, r: &QueryTable) {
    let [legend, table] = Layout::vertical([Constraint::Length(1), Constraint::Min(2)]).areas(area);
    let n = list_rows(table).max(1);
    let top = q.scroll.saturating_sub(n - 1);
    let shown: Vec<Vec<String>> =
        r.rows.iter().skip(top).take(n).map(|row| row.iter().map(|c| q.shown(c)).collect()).collect();
    let first = q.col.min(r.vars.len().saturating_sub(1));
    let widths = column_widths(&shown, &r.vars, first, table.width.saturating_sub(2));
    let last = first + widths.len();
    let rows: Vec<Row> = shown
        .iter()
        .enumerate()
        .map(|(i, row)| {
            // A cell wider than its column is cut with `…`, never silently.
            let cells = row[first..last].iter().zip(&widths);
            let row = Row::new(cells.map(|(c, &w)| crate::sparql::display::fit(c, w as usize).into_owned()));
            if top + i == q.scroll {
                row.style(super::selected())
            } else {
                row
            }
        })
        .collect();
    let header = Row::new(r.vars[first..last].iter().map(|v| format!("?{v}")))
        .style(Style::new().add_modifier(Modifier::BOLD));
    let more = match (first > 0, last < r.vars.len()) {
        (false, false) => String::new(),
        (l, m) => format!(
            " {}columns {}-{} of {}{}",
            if l { "← " } else { "" },
            first + 1,
            last,
            r.vars.len(),
            if m { " →" } else { "" }
        ),
    };
    let count = plural(r.rows.len(), "row", "rows");
    let title = match (&q.running, &r.error) {
        (Some(_), _) => format!("Results — {count} so far (row {}){more}", q.scroll + 1),
        (None, Some(e)) if e == "cancelled" => {
            format!("Results — stopped after {count} (row {}){more}", q.scroll + 1)
        }
        (None, Some(_)) => format!("Results — {count}, then an error (row {}){more}", q.scroll + 1),
        (None, None) => format!(
            "Results — {count} in {:.1} ms (row {}){more}",
            r.elapsed.as_secs_f64() * 1e3,
            q.scroll + 1
        ),
    };
    let constraints: Vec<Constraint> = widths.iter().map(|w| Constraint::Length(*w)).collect();
    f.render_widget(
        Table::new(rows, constraints)
            .header(header)
            .block(Block::default().borders(Borders::ALL).title(title)),
        table,
    );
    f.render_widget(Paragraph::new(legend_line(q)), legend);
}

/// The prefixes named here (the query's own are in its text), so a short
/// name is never a mystery.
fn legend_line(q: &QueryState) -> Line<'static> {
    let dim = Style::new().add_modifier(Modifier::DIM);
    if q.full_iris {
        return Line::styled("IRIs whole (a: prefixes)", dim);
    }
    if q.prefixes.auto.is_empty() {
        return Line::styled("a: IRIs whole", dim);
    }
    let names: Vec<String> = q.prefixes.auto.iter().map(|(p, ns)| format!("{p}: <{ns}>")).collect();
    Line::styled(names.join("  "), dim)
}

/// The selected row, every cell whole and wrapped, over the table.
fn render_detail(f: &mut Frame, area: Rect, q: &QueryState, r: &QueryTable) {
    let Some(row) = r.rows.get(q.scroll) else { return };
    let mut lines = Vec::new();
    for (var, cell) in r.vars.iter().zip(row) {
        lines.push(Line::styled(format!("?{var}"), Style::new().add_modifier(Modifier::BOLD)));
        lines.push(Line::from(format!("  {cell}")));
    }
    let area = area.inner(ratatui::layout::Margin { horizontal: 2, vertical: 1 });
    f.render_widget(ratatui::widgets::Clear, area);
    f.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default().borders(Borders::ALL).title(format!(
                "Row {} of {} (Enter or Esc closes)",
                q.scroll + 1,
                r.rows.len()
            )),
        ),
        area,
    );
}
