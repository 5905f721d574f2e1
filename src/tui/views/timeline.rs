//! Epochs over time: batches per epoch, where each version's marker falls,
//! the live compacted-epoch line, and a running compaction's progress.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Gauge, Paragraph};
use ratatui::Frame;

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::tui::action::Action;
use crate::tui::state::App;

pub fn bindings(write: bool, compacting: bool) -> Vec<(&'static str, &'static str)> {
    match (write, compacting) {
        (_, true) => vec![("x", "cancel compaction")],
        (true, false) => vec![("c", "compact")],
        (false, false) => Vec::new(),
    }
}

pub fn key(k: KeyEvent) -> Option<Action> {
    match k.code {
        KeyCode::Char('c') => Some(Action::AskCompaction),
        KeyCode::Char('x') => Some(Action::CancelCompaction),
        _ => None,
    }
}

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let [gauge, body] = Layout::vertical([
        Constraint::Length(if app.compaction.is_some() { 3 } else { 0 }),
        Constraint::Min(3),
    ])
    .areas(area);
    if let Some(c) = &app.compaction {
        render_progress(f, gauge, c);
    }
    render_epochs(f, body, app);
}

/// A running compaction's gauge.
fn render_progress(f: &mut Frame, gauge: Rect, c: &crate::tui::state::Compaction) {
    let (ratio, label) = match &c.last {
        Some(p) => {
            let r = if p.rows_total > 0 { p.rows_done as f64 / p.rows_total as f64 } else { 0.0 };
            (
                r.clamp(0.0, 1.0),
                format!(
                    "{} {}/{} rows, epochs {}→{}",
                    p.phase.as_str(),
                    p.rows_done,
                    p.rows_total,
                    p.epochs.0.map_or("none".into(), |e| e.to_string()),
                    p.epochs.1
                ),
            )
        }
        None => (0.0, "starting".into()),
    };
    f.render_widget(
        Gauge::default()
            .block(Block::default().borders(Borders::ALL).title("Compacting"))
            .gauge_style(Style::new().fg(Color::Green))
            .ratio(ratio)
            .label(label),
        gauge,
    );
}

/// Batches per epoch, and each version's marker among them.
fn render_epochs(f: &mut Frame, body: Rect, app: &App) {
    let marker = app.current_marker();
    let mut markers: Vec<(u64, String, bool)> = app
        .listing
        .iter()
        .flat_map(|l| l.versions.iter())
        .filter_map(|v| v.marker.map(|m| (m, v.name.clone(), v.is_current)))
        .collect();
    markers.sort();
    let epochs: Vec<(u64, usize)> =
        app.log.as_ref().map(|l| l.epochs.iter().map(|(e, n)| (*e, *n)).collect()).unwrap_or_default();
    let max = epochs.iter().map(|(_, n)| *n).max().unwrap_or(1).max(1);
    let width = body.width.saturating_sub(30).max(10) as usize;
    let mut all: Vec<u64> = epochs.iter().map(|(e, _)| *e).chain(markers.iter().map(|m| m.0)).collect();
    all.sort();
    all.dedup();
    let mut lines = Vec::new();
    for e in all {
        if let Some((_, n)) = epochs.iter().find(|(x, _)| *x == e) {
            let bar = "█".repeat((n * width).div_ceil(max));
            let shadowed = marker.is_some_and(|m| e <= m);
            let style = if shadowed {
                Style::new().add_modifier(Modifier::DIM)
            } else {
                Style::new().fg(Color::Cyan)
            };
            lines.push(Line::styled(
                format!("epoch {e:>4} │{bar} {n} batches{}", if shadowed { " (folded)" } else { "" }),
                style,
            ));
        }
        for (_, name, current) in markers.iter().filter(|m| m.0 == e) {
            let text = format!(
                "──────────── {name}: compacted-epoch {e}{} ────────────",
                if *current { " (current)" } else { "" }
            );
            let style = if *current {
                Style::new().fg(Color::Green).add_modifier(Modifier::BOLD)
            } else {
                Style::new().fg(Color::Yellow)
            };
            lines.push(Line::styled(text, style));
        }
    }
    if lines.is_empty() {
        lines.push(Line::from("no batches and no markers yet"));
    }
    let hint = if app.write { "c: compact" } else { "read-only (--write enables c: compact)" };
    f.render_widget(
        Paragraph::new(lines)
            .block(Block::default().borders(Borders::ALL).title(format!("Epoch timeline — {hint}"))),
        body,
    );
}
