//! Every file of the selected version (and the chunk's log) with its header checks.

use humansize::{format_size, BINARY};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Row, Table};
use ratatui::Frame;

use super::{check_cell, selected};
use crate::tui::state::App;

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let rows: Vec<Row> = app
        .files
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
            if i == app.file_sel {
                r.style(selected())
            } else {
                r
            }
        })
        .collect();
    let version = app
        .listing
        .as_ref()
        .and_then(|l| l.versions.get(app.version_sel))
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
