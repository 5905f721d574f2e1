//! A hex view in hexyl's layout whose colours come from decoder spans.
//!
//! hexyl colours bytes by class (NUL, ASCII, other); on-call triage needs the
//! *field* a byte belongs to instead — magic, version and checksum green when
//! good and red when bad, a torn tail in red — so we draw the same frame
//! ourselves from [`Span`]s. Without colour, bad bytes carry a `!` and every
//! line lists the fields that start on it, so piped output stays readable.

use std::fmt::Write;

use crate::format::{Role, Span};

pub struct HexOptions {
    pub color: bool,
    pub from: u64,
    pub len: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Paint {
    None,
    Span(usize),
}

fn style(span: Option<&Span>) -> &'static str {
    let Some(s) = span else { return "\x1b[90m" };
    if s.role == Role::Tail {
        return "\x1b[97;41m";
    }
    if !s.is_ok() {
        return "\x1b[1;31m";
    }
    match s.role {
        Role::Magic | Role::Version | Role::Checksum => "\x1b[32m",
        Role::Length | Role::Count => "\x1b[33m",
        Role::Offset => "\x1b[36m",
        Role::Value => "\x1b[35m",
        Role::Padding => "\x1b[2m",
        Role::Payload | Role::Tail => "",
    }
}

const RESET: &str = "\x1b[0m";

fn text_char(b: u8) -> char {
    match b {
        0 => '⋄',
        b' ' => ' ',
        b if b.is_ascii_graphic() => b as char,
        b if b.is_ascii_whitespace() => '_',
        b if b.is_ascii() => '•',
        _ => '×',
    }
}

/// Renders `bytes[from..from+len]`, 16 bytes per line.
pub fn render(bytes: &[u8], spans: &[Span], opts: &HexOptions) -> String {
    let start = opts.from.min(bytes.len() as u64) as usize;
    let end = opts.len.map_or(bytes.len(), |l| (start as u64 + l).min(bytes.len() as u64) as usize);
    // Paint each byte with its innermost span: paint long spans first, short ones over them.
    let mut paint = vec![Paint::None; end - start];
    // A torn tail is painted last: its bytes are never applied, whatever
    // fields the failed read found inside them, so red must win there.
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| (spans[i].role == Role::Tail, std::cmp::Reverse(spans[i].len())));
    for i in order {
        let r = &spans[i].range;
        let (a, b) = (r.start.max(start as u64) as usize, r.end.min(end as u64) as usize);
        for p in paint.iter_mut().take(b.saturating_sub(start)).skip(a.saturating_sub(start)) {
            *p = Paint::Span(i);
        }
    }
    let owner = |off: usize| match paint[off - start] {
        Paint::Span(i) => Some(&spans[i]),
        Paint::None => None,
    };

    let mut out = String::new();
    out.push_str("┌────────┬─────────────────────────┬─────────────────────────┬────────┬────────┐\n");
    let first_line = start / 16 * 16;
    for line in (first_line..end).step_by(16) {
        let _ = write!(out, "│{line:08x}│");
        for col in 0..16 {
            let off = line + col;
            if col == 8 {
                out.push_str(" ┊");
            }
            if off < start || off >= end {
                out.push_str("   ");
                continue;
            }
            let span = owner(off);
            let mark = if !opts.color && span.is_some_and(|s| !s.is_ok()) { '!' } else { ' ' };
            if opts.color {
                let _ = write!(out, " {}{:02x}{RESET}", style(span), bytes[off]);
            } else {
                let _ = write!(out, "{mark}{:02x}", bytes[off]);
            }
        }
        out.push_str(" │");
        for col in 0..16 {
            let off = line + col;
            if col == 8 {
                out.push('┊');
            }
            if off < start || off >= end {
                out.push(' ');
            } else if opts.color {
                let _ = write!(out, "{}{}{RESET}", style(owner(off)), text_char(bytes[off]));
            } else {
                out.push(text_char(bytes[off]));
            }
        }
        out.push('│');
        // Fields that start on this line.
        let names: Vec<String> = spans
            .iter()
            .filter(|s| s.range.start >= line as u64 && s.range.start < (line + 16) as u64)
            .filter(|s| s.range.start >= start as u64 && s.range.start < end as u64)
            .map(|s| {
                // The last two path segments keep context (`entry[0].checksum`).
                let short = match s.name.rmatch_indices('.').nth(1) {
                    Some((i, _)) => &s.name[i + 1..],
                    None => &s.name,
                };
                let label = if s.is_ok() { short.to_string() } else { format!("✗{short}") };
                if opts.color {
                    format!("{}{label}{RESET}", style(Some(s)))
                } else {
                    label
                }
            })
            .collect();
        if !names.is_empty() {
            out.push(' ');
            out.push_str(&names.join(" "));
        }
        out.push('\n');
    }
    out.push_str("└────────┴─────────────────────────┴─────────────────────────┴────────┴────────┘\n");
    if !opts.color && spans.iter().any(|s| !s.is_ok()) {
        out.push_str("! marks a byte of a field found bad; ✗ marks where such a field starts\n");
    }
    out
}
