//! Every file of the selected version (and the chunk's log) with its header checks.

use humansize::{format_size, BINARY};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Row, Table};
use ratatui::Frame;

use super::{check_cell, selected};
use ratatui::crossterm::event::KeyEvent;

use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::state::{App, FileRow};

/// The files of the selected version, as a worker read them, and the
/// selected one.
#[derive(Debug, Default)]
pub struct FilesView {
    pub rows: Vec<FileRow>,
    pub sel: usize,
}

pub fn bindings() -> Vec<(&'static str, &'static str)> {
    vec![("Enter", "open in decoder"), ("Esc", "back")]
}

pub fn key(_: KeyEvent) -> Option<Action> {
    None
}

impl FilesView {
    /// The files view's part of an action: moving, and Enter to decode the
    /// selected file (on a worker). `None` when the action is not its own.
    pub fn update(&mut self, action: &Action, status: &mut String) -> Option<Vec<Effect>> {
        let n = self.rows.len();
        match action {
            Action::Up(k) => self.sel = super::move_sel(self.sel, n, -(*k as isize)),
            Action::Down(k) => self.sel = super::move_sel(self.sel, n, *k as isize),
            Action::Top => self.sel = 0,
            Action::Bottom => self.sel = n.saturating_sub(1),
            Action::ClickRow(row) => match super::list_index(*row, 0) {
                Some(i) if i < n => self.sel = i,
                _ => return None,
            },
            Action::Enter => {
                let f = self.rows.get(self.sel)?;
                *status = format!("opening {}…", f.name);
                return Some(vec![Effect::OpenFile(f.path.clone())]);
            }
            _ => return None,
        }
        Some(Vec::new())
    }
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let rows: Vec<Row> = app
        .files
        .rows
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let r = Row::new(vec![
                Line::from(file.name.clone()),
                Line::from(format_size(file.size, BINARY)),
                Line::from(file.kind.map_or("other", |k| k.id())),
                Line::from(check_cell(file.magic)),
                Line::from(check_cell(file.version)),
                Line::from(check_cell(app.checksum_check(file))),
            ]);
            if i == app.files.sel {
                r.style(selected())
            } else {
                r
            }
        })
        .collect();
    let version = app
        .listing
        .as_ref()
        .and_then(|l| l.versions.get(app.store.sel))
        .map_or(String::new(), |v| v.name.clone());
    let widths = [
        Constraint::Min(24),
        Constraint::Length(10),
        Constraint::Length(16),
        Constraint::Length(5),
        Constraint::Length(7),
        Constraint::Length(8),
    ];
    let header = Row::new(["file", "size", "kind", "magic", "version", "checksum"])
        .style(Style::new().add_modifier(Modifier::BOLD));
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::default().borders(Borders::ALL).title(format!("Files of {version}"))),
        area,
    );
}
