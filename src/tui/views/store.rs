//! The chunk: its versions, `current`, and the row groups of the selected version.

use humansize::{format_size, BINARY};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Borders, Paragraph, Row, Table};
use ratatui::Frame;

use super::selected;
use crate::tui::state::App;

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let [info, list, chart_area] =
        Layout::vertical([Constraint::Length(3), Constraint::Min(5), Constraint::Length(9)]).areas(area);
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
    let mut lines = vec![Line::from(format!("chunk {}", app.chunk.display())), current];
    if debris > 0 {
        lines.push(Line::styled(
            format!("{debris} leftovers of interrupted operations (see `cottas-tui versions`)"),
            Style::new().fg(Color::Yellow),
        ));
    }
    f.render_widget(Paragraph::new(lines), info);

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
            if i == app.version_sel {
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

    let rg = &app.row_groups;
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
