//! The delta log as a virtualized list: only the visible batches are decoded.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::list_rows;
use crate::store::log::is_visible;
use crate::store::log::writer::count_ops;
use crate::tui::state::App;

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
    let marker = app.current_marker();
    let mut lines = vec![Line::styled(
        format!(
            "{:>10}  {:<7} {:<6} {:<24} {:>8}  {:<8} {}",
            "offset", "seq", "epoch", "ops", "bytes", "checksum", "state"
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    let window = ix.window(app.log_top, rows);
    for (k, frame) in window.iter().enumerate() {
        if lines.len() > rows {
            break;
        }
        let i = app.log_top + k;
        let style =
            if i == app.log_sel { Style::new().add_modifier(Modifier::REVERSED) } else { Style::new() };
        match frame {
            Ok(fr) => {
                let (a, r, g) = count_ops(&fr.batch.entries);
                let shadowed = !is_visible(fr.batch.epoch, marker);
                let state = if shadowed { "shadowed" } else { "visible" };
                let style = if shadowed { style.add_modifier(Modifier::DIM) } else { style };
                let ops = format!("+{a} \u{2212}{r} {g} graph ops");
                lines.push(Line::styled(
                    format!(
                        "{:>10}  {:<7} {:<6} {:<24} {:>8}  {:<8} {state}",
                        fr.offset, fr.batch.seq, fr.batch.epoch, ops, fr.len, "ok"
                    ),
                    style,
                ));
                if app.log_expanded == Some(i) {
                    for e in &fr.batch.entries {
                        lines.push(Line::from(format!("            {}", e.describe())));
                    }
                }
            }
            Err(e) => lines.push(Line::styled(format!("  batch {i}: {e}"), style.fg(Color::Red))),
        }
    }
    let at_end = app.log_top + window.len() >= ix.count;
    if let (true, Some((off, len, why))) = (at_end, ix.leftover()) {
        let what = match ix.tail.hidden() {
            [] => "TORN TAIL / LEFTOVER".to_string(),
            h => format!("DAMAGE hiding {} committed batches, the first at {}", h.len(), h[0]),
        };
        let effect = if ix.tail.hidden().is_empty() {
            "not committed, readers ignore it"
        } else {
            "readers refuse to answer until `repair truncate-torn-tail`"
        };
        lines.push(Line::styled(
            format!("{off:>10}  {what}: {len} bytes ({why}) — {effect}"),
            Style::new().fg(Color::White).bg(Color::Red).add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(e) = &ix.error {
        lines.push(Line::styled(e.clone(), Style::new().fg(Color::Red)));
    }
    let title = format!(
        "Delta log — {} batches, {} bytes, marker {}",
        ix.count,
        ix.len,
        marker.map_or("none".into(), |m| m.to_string())
    );
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), area);
}
