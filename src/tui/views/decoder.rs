//! A file as its structure tree beside its bytes. Selecting a field
//! highlights its bytes; moving in the hex pane selects the field that owns
//! the byte. Bytes are coloured by their field's role, red when it is bad.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, Paragraph};
use ratatui::Frame;

use super::{list_rows, role_style};
use crate::tui::state::{App, Decoder};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
    let Some(d) = &app.decoder else {
        f.render_widget(
            Paragraph::new(
                "No file open. Pick one in Files and press Enter, or type :open v1/data.cottas.s.dict",
            )
            .block(Block::default().borders(Borders::ALL).title("Decoder")),
            area,
        );
        return;
    };
    let [body, problems] =
        Layout::vertical([Constraint::Min(4), Constraint::Length(if d.problems.is_empty() { 0 } else { 3 })])
            .areas(area);
    let tree_w = if area.width >= 124 { 46 } else { 26.min(area.width / 3) };
    let [tree, hex] = Layout::horizontal([Constraint::Length(tree_w), Constraint::Min(20)]).areas(body);
    render_tree(f, tree, d);
    render_hex(f, hex, d);
    if !d.problems.is_empty() {
        let text: Vec<Line> =
            d.problems.iter().map(|p| Line::styled(p.clone(), Style::new().fg(Color::Red))).collect();
        f.render_widget(
            Paragraph::new(text).block(Block::default().borders(Borders::TOP).title("problems")),
            problems,
        );
    }
}

fn render_tree(f: &mut Frame, area: Rect, d: &Decoder) {
    let rows = list_rows(area) + 1;
    let start = d.span_sel.saturating_sub(rows / 2).min(d.spans.len().saturating_sub(rows));
    let items: Vec<ListItem> = d
        .spans
        .iter()
        .enumerate()
        .skip(start)
        .take(rows)
        .map(|(i, s)| {
            let mark = if s.is_ok() { "" } else { " ✗" };
            let text = format!(
                "{:>6} {} {}{mark}",
                s.range.start,
                s.name,
                s.value.as_deref().map(|v| format!("= {v}")).unwrap_or_default()
            );
            let style = role_style(s.role, s.is_ok());
            let style = if i == d.span_sel { style.add_modifier(Modifier::REVERSED) } else { style };
            ListItem::new(Line::styled(text, style))
        })
        .collect();
    let focus = if d.tree_focus { " [keys]" } else { "" };
    let title = format!("{} — {} fields{focus}", d.kind.map_or("raw", |k| k.id()), d.spans.len());
    f.render_widget(List::new(items).block(Block::default().borders(Borders::ALL).title(title)), area);
}

/// Bytes per hex row that fit in a pane `width` wide (16, or 8 when narrow).
pub fn bytes_per_row(width: u16) -> u64 {
    if width >= 80 {
        16
    } else {
        8
    }
}

fn render_hex(f: &mut Frame, area: Rect, d: &Decoder) {
    let rows = list_rows(area) + 1;
    let bpr = bytes_per_row(area.width);
    let sel = d.spans.get(d.span_sel).map(|s| s.range.clone());
    // Owner of each visible byte, found once per row window.
    let mut lines = Vec::with_capacity(rows);
    for r in 0..rows as u64 {
        let row = d.top + r;
        let start = row * bpr;
        if start >= d.bytes.len() as u64 {
            break;
        }
        let mut spans =
            vec![Span::styled(format!("{start:08x}  "), Style::new().add_modifier(Modifier::DIM))];
        let mut ascii = String::new();
        for i in 0..bpr {
            let off = start + i;
            let Some(&b) = d.bytes.get(off as usize) else {
                spans.push(Span::raw("   "));
                continue;
            };
            let owner = d.span_at(off).map(|k| &d.spans[k]);
            let mut style = owner.map_or(Style::new(), |s| role_style(s.role, s.is_ok()));
            if sel.as_ref().is_some_and(|r| r.contains(&off)) {
                style = style.add_modifier(Modifier::REVERSED);
            }
            if off == d.cursor {
                style = style.add_modifier(Modifier::UNDERLINED | Modifier::BOLD);
            }
            spans.push(Span::styled(format!("{b:02x}"), style));
            spans.push(Span::raw(if i == 7 && bpr == 16 { "  " } else { " " }));
            ascii.push(if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' });
        }
        spans.push(Span::styled(format!(" {ascii}"), Style::new().add_modifier(Modifier::DIM)));
        lines.push(Line::from(spans));
    }
    let focus = if d.tree_focus { "" } else { " [keys]" };
    let title = format!(
        "{} — {} bytes, cursor {:#x}{focus}",
        d.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        d.bytes.len(),
        d.cursor
    );
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), area);
}
