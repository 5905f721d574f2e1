//! Inspection of `data.deltalog`: one line per batch, and the leftover.

use serde_json::json;

use super::{Inspection, Problem};
use crate::format::deltalog::{self, BatchFrame, Entry, StopReason};

/// Counts of entries by constructor, in tag order.
pub fn op_counts(b: &BatchFrame) -> [usize; 5] {
    let mut n = [0usize; 5];
    for e in &b.batch.entries {
        n[e.tag() as usize] += 1;
    }
    n
}

pub fn op_summary(n: &[usize; 5]) -> String {
    let parts: Vec<String> = n
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(t, c)| format!("{}×{c}", deltalog::tag_name(t as u8)))
        .collect();
    if parts.is_empty() {
        "no ops".into()
    } else {
        parts.join(" ")
    }
}

pub(super) fn inspect(ins: &mut Inspection, bytes: &[u8]) {
    let d = deltalog::decode(bytes);
    ins.spans = d.spans;
    let log = match d.result {
        Ok(log) => log,
        Err(e) => return ins.problem(&e),
    };
    ins.field("transport", log.transport.as_str());
    ins.field("batches", log.batches.len());
    ins.field("entries", log.batches.iter().map(|b| b.batch.entries.len()).sum::<usize>());
    ins.field("committed bytes", log.committed_len());
    ins.field(
        "leftover",
        format!(
            "{} at offset {} ({})",
            crate::text::plural(log.leftover.len, "byte", "bytes"),
            log.leftover.offset,
            log.leftover.reason.as_str()
        ),
    );
    let mut batches = Vec::with_capacity(log.batches.len());
    for (i, b) in log.batches.iter().enumerate() {
        let n = op_counts(b);
        ins.items.push(format!(
            "batch {i:>5} @{:<8} seq {:<6} epoch {:<4} {:>6} B  {}",
            b.offset,
            b.batch.seq,
            b.batch.epoch,
            b.len,
            op_summary(&n)
        ));
        batches.push(json!({
            "offset": b.offset, "len": b.len, "seq": b.batch.seq, "epoch": b.batch.epoch,
            "ops": {"add": n[0], "remove": n[1], "clear": n[2], "drop": n[3], "create": n[4]},
            "entries": b.batch.entries.iter().map(entry_json).collect::<Vec<_>>(),
        }));
    }
    if log.leftover.reason != StopReason::CleanEnd {
        let e = log.leftover.error.as_ref();
        ins.items.push(format!(
            "LEFTOVER @{} {}: {}",
            log.leftover.offset,
            crate::text::plural(log.leftover.len, "byte", "bytes"),
            log.leftover.reason.as_str()
        ));
        ins.problems.push(Problem {
            offset: log.leftover.offset,
            class: log.leftover.reason.as_str().to_string(),
            message: format!(
                "{} after the last committed batch {} not a whole valid batch ({}){}",
                crate::text::plural(log.leftover.len, "byte", "bytes"),
                crate::text::noun(log.leftover.len, "is", "are"),
                log.leftover.reason.as_str(),
                e.map(|e| format!(": {e}")).unwrap_or_default()
            ),
        });
    }
    if log.transport != crate::format::transport::Transport::Raw {
        ins.notes.push("this log uses the legacy code-point transport of pre-#445 factoidal builds (docs/format.md §9.1); it reads correctly, but raw batches must not be appended to it".into());
    }
    ins.value = json!({
        "transport": log.transport.as_str(),
        "committed_len": log.committed_len(),
        "batches": batches,
        "leftover": {
            "offset": log.leftover.offset, "len": log.leftover.len,
            "reason": log.leftover.reason.as_str(),
            "error": log.leftover.error.as_ref().map(|e| e.to_string()),
        },
    });
}

fn entry_json(e: &Entry) -> serde_json::Value {
    match e {
        Entry::Add(q) | Entry::Remove(q) => json!({"op": e.kind_name(), "quad": q.to_nquads()}),
        Entry::Clear(g) => json!({"op": "CLEAR", "graph": g}),
        Entry::Drop(g) | Entry::Create(g) => json!({"op": e.kind_name(), "graph": g}),
    }
}
