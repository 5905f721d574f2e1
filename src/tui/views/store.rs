//! The chunk: its versions, `current`, and the row groups of the selected version.

use humansize::{format_size, BINARY};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Borders, Paragraph, Row, Table};
use ratatui::Frame;

use super::selected;
use ratatui::crossterm::event::KeyEvent;

use crate::tui::action::Action;
use crate::tui::state::{App, RowGroups};

/// The selected version and its row groups (footer figures, from a worker).
#[derive(Debug, Default)]
pub struct StoreView {
    pub sel: usize,
    pub row_groups: RowGroups,
}

/// What the store view asks of the app.
pub enum StoreMove {
    /// Select version `n` (its files load on a worker).
    Select(usize),
    /// Show the files of the selected version.
    OpenFiles,
    Nothing,
}

pub fn bindings() -> Vec<(&'static str, &'static str)> {
    vec![("Enter", "files of version"), ("g/G", "first/last")]
}

pub fn key(_: KeyEvent) -> Option<Action> {
    None
}

impl StoreView {
    /// The store view's part of an action over `versions` versions; `None`
    /// when the action is not its own.
    pub fn update(&self, action: &Action, versions: usize) -> Option<StoreMove> {
        let to = |delta: isize| {
            let next = super::move_sel(self.sel, versions, delta);
            if next == self.sel {
                StoreMove::Nothing
            } else {
                StoreMove::Select(next)
            }
        };
        Some(match action {
            Action::Up(n) => to(-(*n as isize)),
            Action::Down(n) => to(*n as isize),
            Action::Top => to(isize::MIN / 2),
            Action::Bottom => to(isize::MAX / 2),
            Action::Enter => StoreMove::OpenFiles,
            Action::Click { row, .. } => match super::list_index(*row, INFO_ROWS) {
                Some(i) if i < versions => StoreMove::Select(i),
                _ => return None,
            },
            _ => return None,
        })
    }
}

/// The summary above the versions list (clicks on the list count from it).
const INFO_ROWS: u16 = 4;

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let [info, list, chart_area] =
        Layout::vertical([Constraint::Length(INFO_ROWS), Constraint::Min(5), Constraint::Length(9)])
            .areas(area);
    render_info(f, info, app);
    render_versions(f, list, app);
    render_row_groups(f, chart_area, app);
}

/// The chunk, where `current` points, and any debris.
fn render_info(f: &mut Frame, info: Rect, app: &App) {
    let current = match (&app.listing, &app.listing_error) {
        (_, Some(e)) => Line::styled(format!("cannot list versions: {e}"), Style::new().fg(Color::Red)),
        (Some(l), None) => match &l.current {
            Some(c) => {
                let complete = l.versions.iter().any(|v| &v.name == c && v.complete);
                let style =
                    if complete { Style::new().fg(Color::Green) } else { Style::new().fg(Color::Red) };
                Line::styled(
                    format!(
                        "current -> {c}  ({})",
                        if complete { "complete" } else { "NOT a complete version" }
                    ),
                    style,
                )
            }
            None => Line::styled(
                "no `current` link: readers use the highest complete version",
                Style::new().fg(Color::Yellow),
            ),
        },
        (None, None) => Line::from("loading…"),
    };
    let debris = app.listing.as_ref().map_or(0, |l| l.debris.len());
    let mut lines = vec![Line::from(format!("chunk {}", app.chunk.display())), current, log_line(app)];
    if debris > 0 {
        lines.push(Line::styled(
            format!("{debris} leftovers of interrupted operations (see `cottas-tui versions`)"),
            Style::new().fg(Color::Yellow),
        ));
    }
    f.render_widget(Paragraph::new(lines), info);
}

/// The log as the on-call reader needs it first: how much the current
/// version still folds in on every open, and any damage at its end.
fn log_line(app: &App) -> Line<'static> {
    let Some(ix) = &app.log else { return Line::from("log: indexing…") };
    if let Some(e) = &ix.error {
        return Line::styled(format!("log: {e}"), Style::new().fg(Color::Red));
    }
    let current = app.listing.as_ref().and_then(|l| l.current.clone()).unwrap_or_else(|| "the base".into());
    let mut spans = vec![Span::raw(ix.summary(&current, app.current_marker()))];
    if let Some(damage) = ix.damage_summary() {
        spans.push(Span::styled(format!("  {damage}"), Style::new().fg(Color::White).bg(Color::Red)));
    }
    Line::from(spans)
}

fn render_versions(f: &mut Frame, list: Rect, app: &App) {
    let rows: Vec<Row> = app
        .listing
        .iter()
        .flat_map(|l| l.versions.iter())
        .enumerate()
        .map(|(i, v)| {
            let r = Row::new(vec![
                v.name.clone(),
                if v.is_current { "●".into() } else { String::new() },
                v.quads.map_or("?".into(), |q| q.to_string()),
                v.row_groups.map_or("?".into(), |q| q.to_string()),
                v.marker.map_or("none".into(), |m| m.to_string()),
                format_size(v.bytes, BINARY),
                v.created.clone().unwrap_or_default(),
                v.problem.clone().unwrap_or_else(|| "complete".into()),
            ]);
            let r = if v.problem.is_some() { r.style(Style::new().fg(Color::Red)) } else { r };
            if i == app.store.sel {
                r.style(selected())
            } else {
                r
            }
        })
        .collect();
    let widths = [
        Constraint::Length(7),
        Constraint::Length(3),
        Constraint::Length(11),
        Constraint::Length(4),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(20),
        Constraint::Min(8),
    ];
    let header = Row::new(["version", "cur", "quads", "rgs", "marker", "size", "created", "status"])
        .style(Style::new().add_modifier(Modifier::BOLD));
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::default().borders(Borders::ALL).title("Versions")),
        list,
    );
}

fn render_row_groups(f: &mut Frame, chart_area: Rect, app: &App) {
    let rg = &app.store.row_groups;
    let bars: Vec<Bar> = rg
        .rows
        .iter()
        .zip(&rg.bytes)
        .enumerate()
        .map(|(i, (r, b))| {
            Bar::default()
                .value(*r)
                .label(Line::from(format!("rg{i}")))
                .text_value(format!("{r} / {}", format_size(*b, BINARY)))
        })
        .collect();
    let chart = BarChart::default()
        .block(Block::default().borders(Borders::ALL).title("rows (and bytes) per row group"))
        .data(BarGroup::default().bars(&bars))
        .bar_width(9)
        .bar_gap(1);
    f.render_widget(chart, chart_area);
}
