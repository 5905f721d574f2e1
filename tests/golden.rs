//! The worked examples of reference §15, byte for byte.
//!
//! Each expected file is assembled here from the reference's numbers with a
//! tiny independent little-endian writer (or transcribed from its hex dump),
//! then compared with our encoder's output, decoded back, and compared with
//! the committed fixture under fixtures/golden/ that `dump` tests use.

mod common;
use common::{check_fixture, hex, sample_rows, Le};

use cottas_tui::format::deltalog::{self, Batch, Entry, Object, Quad, StopReason, Subject};
use cottas_tui::format::epoch::{self, EpochMarker};
use cottas_tui::format::transport::Transport;
use cottas_tui::format::{dict, p_offsets, po_presence, presence, s_offsets};
use cottas_tui::store::sidecars;

const ONE_ADD_BATCH: &str = "
0000  44 4c 42 31 01 00 00 00 96 00 00 00 00 00 00 00
0010  00 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00
0020  44 4c 45 31 01 00 00 00 72 00 00 00 00 00 19 00
0030  00 00 68 74 74 70 73 3a 2f 2f 65 78 61 6d 70 6c
0040  65 2e 6f 72 67 2f 63 61 72 6f 6c 18 00 00 00 68
0050  74 74 70 73 3a 2f 2f 65 78 61 6d 70 6c 65 2e 6f
0060  72 67 2f 6e 61 6d 65 02 05 00 00 00 43 61 72 6f
0070  6c 27 00 00 00 68 74 74 70 3a 2f 2f 77 77 77 2e
0080  77 33 2e 6f 72 67 2f 32 30 30 31 2f 58 4d 4c 53
0090  63 68 65 6d 61 23 73 74 72 69 6e 67 00 00 e2 21
00a0  00 00 5f 24 00 00
";

fn carol_batch() -> Batch {
    Batch {
        seq: 0,
        epoch: 0,
        entries: vec![Entry::add(Quad {
            subject: Subject::Iri("https://example.org/carol".into()),
            predicate: "https://example.org/name".into(),
            object: Object::Literal {
                lexical: "Carol".into(),
                datatype: "http://www.w3.org/2001/XMLSchema#string".into(),
                language: None,
            },
            graph: None,
        })],
    }
}

#[test]
fn empty_log_is_eight_bytes() {
    let expected = hex("44 4c 4f 47 01 00 00 00");
    assert_eq!(deltalog::encode_header(), expected);
    assert_eq!(deltalog::encode_batches(&[], Transport::Raw), expected);
    let d = deltalog::decode(&expected);
    let log = d.result.unwrap();
    assert!(log.batches.is_empty());
    assert_eq!(log.leftover.reason, StopReason::CleanEnd);
    assert_eq!(log.committed_len(), 8);
    check_fixture("golden/empty.deltalog", &expected);
}

#[test]
fn one_add_batch_is_166_bytes() {
    let frame = hex(ONE_ADD_BATCH);
    assert_eq!(frame.len(), 166);
    assert_eq!(deltalog::encode_batch(&carol_batch(), Transport::Raw), frame);

    let mut file = deltalog::encode_header();
    file.extend_from_slice(&frame);
    assert_eq!(deltalog::encode_batches(&[carol_batch()], Transport::Raw), file);
    let log = deltalog::decode(&file).result.unwrap();
    assert_eq!(log.transport, Transport::Raw);
    assert_eq!(log.batches.len(), 1);
    assert_eq!(log.batches[0].offset, 8);
    assert_eq!(log.batches[0].len, 166);
    assert_eq!(log.batches[0].batch, carol_batch());
    assert_eq!(log.leftover.reason, StopReason::CleanEnd);
    check_fixture("golden/one-add.deltalog", &file);
}

#[test]
fn legacy_transport_is_176_bytes_and_detected() {
    // Reference: 0x96 (batch length) becomes c2 96, 0xe2 (entry checksum) c3 a2.
    let mut expected = deltalog::encode_header();
    let frame = hex(ONE_ADD_BATCH);
    for (i, &b) in frame.iter().enumerate() {
        match (i, b) {
            (8, 0x96) => expected.extend_from_slice(&[0xc2, 0x96]),
            (0x9e, 0xe2) => expected.extend_from_slice(&[0xc3, 0xa2]),
            _ => expected.push(b),
        }
    }
    assert_eq!(expected.len(), 176);
    let legacy = deltalog::encode_batches(&[carol_batch()], Transport::LegacyCodePoints);
    assert_eq!(legacy, expected);

    let d = deltalog::decode(&expected);
    let log = d.result.unwrap();
    assert_eq!(log.transport, Transport::LegacyCodePoints);
    assert_eq!(log.batches.len(), 1);
    assert_eq!(log.batches[0].batch, carol_batch());
    assert_eq!(log.leftover.reason, StopReason::CleanEnd);
    assert_eq!(log.batches[0].len, 168, "frame length in file bytes");
    assert_eq!(deltalog::encode(&log), expected);
    check_fixture("golden/one-add.legacy.deltalog", &expected);
}

fn cep1(epoch: u64) -> Vec<u8> {
    let sum: u32 = epoch.to_le_bytes().iter().map(|&b| u32::from(b)).sum();
    Le::default().b(b"CEP1").u32(1).u32(8).u64(epoch).u32(sum).0
}

#[test]
fn epoch_markers() {
    assert_eq!(cep1(0), hex("43 45 50 31 01 00 00 00 08 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"));
    assert_eq!(cep1(1), hex("43 45 50 31 01 00 00 00 08 00 00 00 01 00 00 00 00 00 00 00 01 00 00 00"));
    assert_eq!(cep1(200), hex("43 45 50 31 01 00 00 00 08 00 00 00 c8 00 00 00 00 00 00 00 c8 00 00 00"));
    for e in [0u64, 1, 200] {
        let bytes = epoch::encode(&EpochMarker::new(e));
        assert_eq!(bytes, cep1(e), "epoch {e}");
        assert_eq!(epoch::decode(&bytes).result.unwrap(), EpochMarker::new(e));
        check_fixture(&format!("golden/epoch-{e}.compacted-epoch"), &bytes);
    }
    let legacy = hex("43 45 50 31 01 00 00 00 08 00 00 00 c3 88 00 00 00 00 00 00 00 c3 88 00 00 00");
    assert_eq!(legacy.len(), 26);
    let m = EpochMarker { epoch: 200, transport: Transport::LegacyCodePoints };
    assert_eq!(epoch::encode(&m), legacy);
    assert_eq!(epoch::decode(&legacy).result.unwrap(), m);
    check_fixture("golden/epoch-200.legacy.compacted-epoch", &legacy);
}

const EX: &str = "https://example.org";

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn dict_bytes(tokens: &[&str]) -> Vec<u8> {
    let n = tokens.len() as u64;
    let mut le = Le::default().b(b"COTD").u32(1).u32(n as u32).u32(0).u64(32).u64(32 + 4 * n);
    for i in 0..n as u32 {
        le = le.u32(i);
    }
    let mut off = 32 + 4 * n + 8 * (n + 1);
    le = le.u64(off);
    for t in tokens {
        off += t.len() as u64;
        le = le.u64(off);
    }
    for t in tokens {
        le = le.b(t.as_bytes());
    }
    le.0
}

#[test]
fn sample_sidecars_match_reference_15_3() {
    let rows = sample_rows();
    assert_eq!(rows.len(), 5);
    let sc = sidecars::build(&rows, &[rows.len()]);
    let files: std::collections::HashMap<&str, Vec<u8>> = sc.files().into_iter().collect();
    assert_eq!(files.len(), 11);

    let iri = |x: &str| format!("<{EX}/{x}>");
    let s_toks = ["alice", "bob", "default-subject", "doc"].map(iri);
    let p_toks = ["knows", "name", "status", "title"].map(iri);
    let o_toks =
        ["\"Alice\"".to_string(), "\"Bob\"".into(), "\"Specimen\"".into(), "\"default\"".into(), iri("bob")];
    let g_toks = [iri("graph/docs"), iri("graph/people"), "DEFAULT".into()];

    let s_dict = dict_bytes(&refs(&s_toks));
    assert_eq!(s_dict.len(), 202);
    assert_eq!(&s_dict[..16], &hex("43 4f 54 44 01 00 00 00 04 00 00 00 00 00 00 00")[..]);
    let bounds: Vec<u64> =
        (0..5).map(|k| u64::from_le_bytes(s_dict[48 + 8 * k..56 + 8 * k].try_into().unwrap())).collect();
    assert_eq!(bounds, [0x58, 0x73, 0x8c, 0xb1, 0xca]);
    let expected = [
        (".s.dict", s_dict),
        (".p.dict", dict_bytes(&refs(&p_toks))),
        (".o.dict", dict_bytes(&refs(&o_toks))),
        (".g.dict", dict_bytes(&refs(&g_toks))),
        (".s.presence", hex("43 4f 54 50 01 00 00 00 01 00 00 00 04 00 00 00 0f")),
        (".p.presence", hex("43 4f 54 50 01 00 00 00 01 00 00 00 04 00 00 00 0f")),
        (".o.presence", hex("43 4f 54 50 01 00 00 00 01 00 00 00 05 00 00 00 1f")),
        (".g.presence", hex("43 4f 54 50 01 00 00 00 01 00 00 00 03 00 00 00 07")),
        (
            ".p.offsets",
            Le::default()
                .b(b"COTO")
                .u32(1)
                .u32(1)
                .u32(4)
                .u64(0x38)
                .u64(0x3c)
                .u64(0x44)
                .u64(0x48)
                .u64(0x4c)
                .u32(0)
                .u32(1)
                .u32(2)
                .u32(3)
                .u32(4)
                .0,
        ),
        (
            ".po.presence",
            Le::default()
                .b(b"COPO")
                .u32(1)
                .u32(1)
                .u32(4)
                .u32(5)
                .u64(0x24)
                .u64(0x4c)
                .u32(4)
                .u32(0)
                .u32(0)
                .u32(1)
                .u32(1)
                .u32(1)
                .u32(3)
                .u32(2)
                .u32(2)
                .u32(3)
                .0,
        ),
        (
            ".s.offsets",
            Le::default()
                .b(b"COTS")
                .u32(1)
                .u32(4)
                .u32(5)
                .u64(0)
                .u64(2)
                .u64(2)
                .u64(3)
                .u64(3)
                .u64(4)
                .u64(4)
                .u64(5)
                .0,
        ),
    ];
    for (suffix, want) in &expected {
        assert_eq!(&files[suffix], want, "{suffix} differs from reference §15.3");
        check_fixture(&format!("golden/sample/data.cottas{suffix}"), want);
    }
    assert_eq!(files[".p.offsets"].len(), 76);
    assert_eq!(files[".po.presence"].len(), 76);
    assert_eq!(files[".s.offsets"].len(), 80);
    assert_eq!(&files[".po.presence"][36..44], &hex("04 00 00 00 00 00 00 00")[..]);

    // And each decodes back to what was built.
    assert_eq!(dict::decode(&files[".s.dict"]).result.unwrap(), sc.dicts[0]);
    assert_eq!(dict::decode(&files[".o.dict"]).result.unwrap().find(b"\"Bob\""), Some(1));
    assert_eq!(presence::decode(&files[".g.presence"]).result.unwrap(), sc.presence[3]);
    let po = p_offsets::decode(&files[".p.offsets"]).result.unwrap();
    assert_eq!(po.rows_of(0, 1), &[1, 2]);
    let pp = po_presence::decode(&files[".po.presence"]).result.unwrap();
    assert!(pp.contains(0, 2, 3) && !pp.contains(0, 2, 2));
    let so = s_offsets::decode(&files[".s.offsets"]).result.unwrap();
    assert_eq!(so.ranges, vec![(0, 2), (2, 3), (3, 4), (4, 5)]);
}

#[test]
fn an_empty_base_writes_only_dicts_and_presence() {
    let rows: Vec<[&str; 4]> = vec![];
    let sc = sidecars::build(&rows, &[]);
    let files = sc.files();
    assert_eq!(files.len(), 8);
    assert_eq!(files[0].1.len(), 40, "an empty dictionary is 40 bytes");
}
