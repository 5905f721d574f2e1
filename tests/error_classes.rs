//! Decoders tell problems apart and name the byte, and hostile length fields
//! are errors, never allocations.

mod common;
use common::Le;

use cottas_tui::format::deltalog::{self, StopReason};
use cottas_tui::format::error::ErrorKind;
use cottas_tui::format::{dict, epoch, p_offsets, po_presence, presence, s_offsets};

fn golden(rel: &str) -> Vec<u8> {
    std::fs::read(common::repo().join("fixtures/golden").join(rel)).unwrap()
}

#[test]
fn unknown_and_legacy_magic_are_different_errors() {
    let mut b = golden("sample/data.cottas.s.dict");
    b[..4].copy_from_slice(b"XXXX");
    let e = dict::decode(&b).result.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::UnknownMagic { .. }), "{e}");
    assert_eq!(e.offset, 0);
    b[..4].copy_from_slice(b"COKD");
    let e = dict::decode(&b).result.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::LegacyMagic { .. }), "{e}");
    assert!(e.to_string().contains("rebuild"), "{e}");
}

#[test]
fn too_old_and_too_new_versions_are_different_errors() {
    for (rel, decode) in [
        ("sample/data.cottas.s.dict", (|b: &[u8]| dict::decode(b).result.map(|_| ())) as fn(&[u8]) -> _),
        ("sample/data.cottas.g.presence", |b| presence::decode(b).result.map(|_| ())),
        ("sample/data.cottas.p.offsets", |b| p_offsets::decode(b).result.map(|_| ())),
        ("sample/data.cottas.po.presence", |b| po_presence::decode(b).result.map(|_| ())),
        ("sample/data.cottas.s.offsets", |b| s_offsets::decode(b).result.map(|_| ())),
        ("epoch-1.compacted-epoch", |b| epoch::decode(b).result.map(|_| ())),
        ("one-add.deltalog", |b| deltalog::decode(b).result.map(|_| ())),
    ] {
        let mut b = golden(rel);
        b[4] = 0;
        let e = decode(&b).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::VersionTooOld { found: 0, supported: 1 }), "{rel}: {e}");
        assert_eq!(e.offset, 4);
        b[4] = 2;
        let e = decode(&b).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::VersionTooNew { found: 2, supported: 1 }), "{rel}: {e}");
        assert!(e.to_string().contains("upgrade"), "{e}");
    }
}

#[test]
fn truncation_says_what_was_expected_where_and_how_long_the_file_is() {
    let b = golden("sample/data.cottas.s.offsets");
    let e = s_offsets::decode(&b[..40]).result.unwrap_err();
    assert_eq!(e.offset, 16);
    let msg = e.to_string();
    assert!(msg.contains("expected 64 bytes of `ranges[]` at offset 16, the file has 40 bytes"), "{msg}");
}

#[test]
fn checksum_mismatch_gives_stored_computed_and_offset() {
    let mut b = golden("epoch-1.compacted-epoch");
    b[12] = 2; // epoch 2 with the checksum of epoch 1
    let e = epoch::decode(&b).result.unwrap_err();
    assert_eq!(e.offset, 20);
    assert_eq!(e.kind, ErrorKind::Checksum { field: "checksum".into(), stored: 1, computed: 2 });
}

#[test]
fn structural_violations_name_the_field() {
    // Unsorted dictionary: swap the first two tokens' bytes (same length is not
    // needed: rebuild with the tokens out of order).
    let toks = ["<b>", "<a>"];
    let mut le = Le::default().b(b"COTD").u32(1).u32(2).u32(0).u64(32).u64(40).u32(0).u32(1);
    let base = 32 + 8 + 24;
    le = le.u64(base).u64(base + 3).u64(base + 6);
    let b = le.b(toks[0].as_bytes()).b(toks[1].as_bytes()).0;
    let e = dict::decode(&b).result.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Structure { .. }), "{e}");
    assert!(e.to_string().contains("sorted"), "{e}");

    // Overlapping subject ranges.
    let b = Le::default().b(b"COTS").u32(1).u32(2).u32(5).u64(0).u64(3).u64(2).u64(5).0;
    let e = s_offsets::decode(&b).result.unwrap_err();
    assert_eq!(e.offset, 32);
    assert!(e.to_string().contains("overlaps"), "{e}");

    // Non-monotonic COTO index.
    let b = Le::default().b(b"COTO").u32(1).u32(1).u32(2).u64(40).u64(36).u64(40).0;
    let e = p_offsets::decode(&b).result.unwrap_err();
    assert_eq!(e.offset, 24);
}

#[test]
fn huge_counts_in_small_files_are_errors_not_allocations() {
    let max = u32::MAX;
    let d = Le::default().b(b"COTD").u32(1).u32(max).u32(0).u64(32).u64(32 + 4 * max as u64).0;
    let mut d = d;
    d.resize(100, 0);
    let e = dict::decode(&d).result.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{e}");

    let mut p = Le::default().b(b"COTP").u32(1).u32(max).u32(max).0;
    p.resize(100, 0);
    assert!(matches!(presence::decode(&p).result.unwrap_err().kind, ErrorKind::Truncated { .. }));

    let mut o = Le::default().b(b"COTO").u32(1).u32(max).u32(max).0;
    o.resize(100, 0);
    assert!(matches!(p_offsets::decode(&o).result.unwrap_err().kind, ErrorKind::Truncated { .. }));

    let mut c = Le::default().b(b"COPO").u32(1).u32(max).u32(1).u32(1).0;
    c.resize(100, 0);
    assert!(matches!(po_presence::decode(&c).result.unwrap_err().kind, ErrorKind::Truncated { .. }));

    let mut s = Le::default().b(b"COTS").u32(1).u32(max).u32(0).0;
    s.resize(100, 0);
    assert!(matches!(s_offsets::decode(&s).result.unwrap_err().kind, ErrorKind::Truncated { .. }));

    // A batch claiming 4 GiB of body, and one claiming 2^32-1 entries.
    let log = Le::default().b(b"DLOG").u32(1).b(b"DLB1").u32(1).u32(max).u64(0).0;
    let l = deltalog::decode(&log).result.unwrap();
    assert_eq!(l.leftover.reason, StopReason::TornFrame);
    assert_eq!(l.leftover.offset, 8);

    let body = Le::default().u64(0).u64(0).u32(max).0;
    let sum: u32 = body.iter().map(|&b| u32::from(b)).sum();
    let log = Le::default().b(b"DLOG").u32(1).b(b"DLB1").u32(1).u32(body.len() as u32).b(&body).u32(sum).0;
    let l = deltalog::decode(&log).result.unwrap();
    assert_eq!(l.leftover.reason, StopReason::InvalidEntry);
}

#[test]
fn log_leftover_classes() {
    let good = golden("one-add.deltalog");
    // bad frame: garbage after a good batch
    let mut b = good.clone();
    b.extend_from_slice(b"garbage!garbage!garbage!");
    let l = deltalog::decode(&b).result.unwrap();
    assert_eq!(
        (l.batches.len(), l.leftover.reason, l.leftover.offset, l.leftover.len),
        (1, StopReason::BadFrame, 174, 24)
    );
    // bad checksum
    let mut b = good.clone();
    b[100] ^= 1;
    assert_eq!(deltalog::decode(&b).result.unwrap().leftover.reason, StopReason::BadChecksum);
    // invalid entry: an IRI without ':' with both checksums fixed up
    let mut b = good.clone();
    let colon = 8 + 0x32 + 5; // the ':' of the subject "https://…"
    assert_eq!(b[colon], b':');
    b[colon] = b'_';
    let fix = |b: &mut Vec<u8>, range: std::ops::Range<usize>, at: usize| {
        let s: u32 = b[range].iter().map(|&x| u32::from(x)).sum();
        b[at..at + 4].copy_from_slice(&s.to_le_bytes());
    };
    fix(&mut b, 8 + 44..8 + 44 + 0x72, 8 + 44 + 0x72);
    fix(&mut b, 8 + 12..8 + 12 + 0x96, 8 + 12 + 0x96);
    let l = deltalog::decode(&b).result.unwrap();
    assert_eq!(l.leftover.reason, StopReason::InvalidEntry, "{:?}", l.leftover.error);
    assert!(l.leftover.error.unwrap().to_string().contains("contain ':'"));
}

#[test]
fn a_missing_store_is_reported_once_with_its_path() {
    let missing = tempfile::tempdir().unwrap().path().join("no-such-store");
    for args in [vec!["query", "-e", "ASK {}"], vec!["serve", "--bind", "127.0.0.1:0"]] {
        let (verb, rest) = args.split_first().unwrap();
        let out = common::bin().arg(verb).arg(&missing).args(rest).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{verb}: {err}");
        assert!(err.contains(&missing.display().to_string()), "{verb}: {err}");
        // The io error's text once, not once from the message and again from its source.
        assert_eq!(err.matches("No such file or directory").count(), 1, "{verb}: {err}");
    }
}
