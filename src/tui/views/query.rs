//! The query editor and the results table.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use super::list_rows;
use crate::tui::state::App;

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
