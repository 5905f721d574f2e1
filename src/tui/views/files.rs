//! Every file of the selected version (and the chunk's log) with its header
//! checks, and its status from the last verify (the Triage view's findings).

use humansize::{format_size, BINARY};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Row, Table};
use ratatui::Frame;

use super::{check_cell, selected};
use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::state::{App, FileRow};

/// The files of the selected version, as a worker read them, and the
/// selected one.
#[derive(Debug, Default)]
pub struct FilesView {
    pub rows: Vec<FileRow>,
    pub sel: usize,
    /// `/`: which files are shown.
    pub filter: super::ListFilter,
}

pub fn bindings() -> Vec<(&'static str, &'static str)> {
    vec![("Enter", "open in decoder"), ("/", "filter"), ("Esc", "back")]
}

pub fn key(k: KeyEvent) -> Option<Action> {
    match k.code {
        KeyCode::Char('/') => Some(Action::OpenCmdline('/')),
        _ => None,
    }
}

impl FilesView {
    /// The files view's part of an action: moving, and Enter to decode the
    /// selected file (on a worker). `None` when the action is not its own.
    pub fn update(&mut self, action: &Action, status: &mut String) -> Option<Vec<Effect>> {
        let shown = self.shown();
        if let Some(inside) = super::select_in_list(&mut self.sel, shown.len(), action, 0) {
            return inside.then(Vec::new);
        }
        if matches!(action, Action::Back) && self.filter.clear() {
            return Some(Vec::new());
        }
        let Action::Enter = action else { return None };
        let f = self.rows.get(*shown.get(self.sel)?)?;
        *status = format!("opening {}…", f.name);
        Some(vec![Effect::OpenFile { path: f.path.clone(), at: None }])
    }
}

impl FilesView {
    /// The indexes of the files shown (all, or those `/` keeps: by name
    /// and kind).
    pub fn shown(&self) -> Vec<usize> {
        self.filter.shown(&self.rows, |f| format!("{} {}", f.name, f.kind.map_or("other", |k| k.id())))
    }

    /// `/TEXT`: only the files that match; the first of them selected.
    pub fn set_filter(&mut self, text: &str) -> String {
        self.filter.set(text);
        self.sel = 0;
        format!("{} of {} files shown", self.shown().len(), self.rows.len())
    }
}

/// What the last verify found for the file; before verify has run, what
/// the header peek and the log index found, marked as not verified.
fn status_cell(app: &App, file: &FileRow) -> Line<'static> {
    if let Some(status) = app.triage.file_status(&file.name) {
        return Line::from(status.cell());
    }
    Line::from(vec![
        check_cell(app.checksum_check(file)),
        Span::styled(" unverified", Style::new().add_modifier(Modifier::DIM)),
    ])
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let shown = app.files.shown();
    let rows: Vec<Row> = shown
        .iter()
        .map(|&k| &app.files.rows[k])
        .enumerate()
        .map(|(i, file)| {
            let r = Row::new(vec![
                Line::from(file.name.clone()),
                Line::from(format_size(file.size, BINARY)),
                Line::from(file.kind.map_or("other", |k| k.id())),
                Line::from(check_cell(file.magic)),
                Line::from(check_cell(file.version)),
                status_cell(app, file),
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
        Constraint::Length(14),
    ];
    let header = Row::new(["file", "size", "kind", "magic", "version", "status"])
        .style(Style::new().add_modifier(Modifier::BOLD));
    f.render_widget(
        Table::new(rows, widths).header(header).block(Block::default().borders(Borders::ALL).title(format!(
            "Files of {version}{}",
            app.files.filter.title(shown.len(), app.files.rows.len())
        ))),
        area,
    );
}
