//! Inspection of the fixed-layout companion files: the five sidecar kinds and
//! the compacted-epoch marker.

use serde_json::json;

use super::{ends, show, Inspection};
use crate::format::kind::FileKind;
use crate::format::{dict, epoch, p_offsets, po_presence, presence, s_offsets, Decoded};

pub(super) fn inspect(ins: &mut Inspection, bytes: &[u8]) {
    match ins.kind {
        FileKind::Dict => finish(ins, dict::decode(bytes), describe_dict),
        FileKind::Presence => finish(ins, presence::decode(bytes), describe_presence),
        FileKind::POffsets => finish(ins, p_offsets::decode(bytes), describe_p_offsets),
        FileKind::PoPresence => finish(ins, po_presence::decode(bytes), describe_po),
        FileKind::SOffsets => finish(ins, s_offsets::decode(bytes), describe_s_offsets),
        FileKind::EpochMarker => finish(ins, epoch::decode(bytes), describe_epoch),
        FileKind::DeltaLog | FileKind::Parquet => unreachable!("inspected elsewhere"),
    }
}

fn finish<T>(ins: &mut Inspection, d: Decoded<T>, describe: fn(&mut Inspection, &T)) {
    ins.spans = d.spans;
    match &d.result {
        Ok(v) => describe(ins, v),
        Err(e) => ins.problem(e),
    }
}

fn describe_dict(ins: &mut Inspection, d: &dict::Dict) {
    let identity = d.ids.iter().enumerate().all(|(i, &id)| i as u32 == id);
    ins.field("num_tokens", d.len());
    ins.field("ids", if identity { "identity (id = rank)" } else { "permuted" });
    ins.field("token bytes", d.data.len());
    let shown: Vec<_> = ends(d.len(), 3)
        .into_iter()
        .map(|i| json!({"position": i, "id": d.ids[i], "token": show(d.sorted(i))}))
        .collect();
    for i in ends(d.len(), 3) {
        ins.items.push(format!("[{i}] id {} {}", d.ids[i], show(d.sorted(i))));
    }
    ins.value = json!({
        "num_tokens": d.len(), "pad": d.pad, "identity_ids": identity,
        "token_bytes": d.data.len(), "tokens": shown,
    });
}

fn describe_presence(ins: &mut Inspection, p: &presence::Presence) {
    ins.field("num_rgs", p.num_rgs);
    ins.field("num_tokens", p.num_tokens);
    let set: u32 = p.bits.iter().map(|b| b.count_ones()).sum();
    ins.field("bits set", set);
    let per_rg: Vec<u32> =
        (0..p.num_rgs).map(|rg| (0..p.num_tokens).filter(|&t| p.get(rg, t)).count() as u32).collect();
    for rg in ends(per_rg.len(), 3) {
        ins.items.push(format!("row group {rg}: {} of {} tokens present", per_rg[rg], p.num_tokens));
    }
    ins.value = json!({
        "num_rgs": p.num_rgs, "num_tokens": p.num_tokens, "bits_set": set,
        "tokens_per_row_group": per_rg,
    });
}

fn describe_p_offsets(ins: &mut Inspection, p: &p_offsets::POffsets) {
    ins.field("num_rgs", p.num_rgs);
    ins.field("num_preds", p.num_preds);
    ins.field("row positions", p.rows.len());
    let cells: Vec<(u32, u32, usize)> = (0..p.num_rgs)
        .flat_map(|rg| (0..p.num_preds).map(move |pr| (rg, pr)))
        .map(|(rg, pr)| (rg, pr, p.rows_of(rg, pr).len()))
        .filter(|c| c.2 > 0)
        .collect();
    ins.field("non-empty cells", cells.len());
    for i in ends(cells.len(), 3) {
        let (rg, pr, n) = cells[i];
        ins.items.push(format!("rg {rg} predicate {pr}: {n} rows {:?}", first(p.rows_of(rg, pr))));
    }
    ins.value = json!({
        "num_rgs": p.num_rgs, "num_preds": p.num_preds, "row_positions": p.rows.len(),
        "non_empty_cells": cells.len(),
    });
}

fn first(rows: &[u32]) -> Vec<u32> {
    rows.iter().take(8).copied().collect()
}

fn describe_po(ins: &mut Inspection, p: &po_presence::PoPresence) {
    ins.field("num_rgs", p.num_rgs);
    ins.field("pred_dict_size", p.pred_dict_size);
    ins.field("obj_dict_size", p.obj_dict_size);
    ins.field("pairs", p.pairs.len());
    let per_rg: Vec<usize> = p.starts.windows(2).map(|w| w[1] - w[0]).collect();
    for rg in ends(per_rg.len(), 3) {
        let pairs: Vec<String> = p.pairs[p.starts[rg]..p.starts[rg + 1]]
            .iter()
            .take(6)
            .map(|&x| format!("({},{})", x >> 32, x as u32))
            .collect();
        ins.items.push(format!("row group {rg}: {} pairs {}", per_rg[rg], pairs.join(" ")));
    }
    ins.value = json!({
        "num_rgs": p.num_rgs, "pred_dict_size": p.pred_dict_size,
        "obj_dict_size": p.obj_dict_size, "pairs": p.pairs.len(), "pairs_per_row_group": per_rg,
    });
}

fn describe_s_offsets(ins: &mut Inspection, s: &s_offsets::SOffsets) {
    ins.field("num_subjects", s.ranges.len());
    ins.field("num_rows_total", s.num_rows_total);
    let absent = s.ranges.iter().filter(|r| r.0 == r.1).count();
    ins.field("subjects without rows", absent);
    for i in ends(s.ranges.len(), 3) {
        ins.items.push(format!("subject {i}: rows [{}, {})", s.ranges[i].0, s.ranges[i].1));
    }
    ins.value = json!({
        "num_subjects": s.ranges.len(), "num_rows_total": s.num_rows_total,
        "subjects_without_rows": absent,
    });
}

fn describe_epoch(ins: &mut Inspection, m: &epoch::EpochMarker) {
    ins.field("epoch", m.epoch);
    ins.field("transport", m.transport.as_str());
    ins.items.push(format!("batches with db_epoch <= {} are folded into this base", m.epoch));
    ins.value = json!({"epoch": m.epoch, "transport": m.transport.as_str()});
}
