//! Property tests for every codec.
//!
//! 1. Round trip: decode(encode(x)) == x.
//! 2. Mutation: any single-byte change, truncation, insertion or deletion of a
//!    valid file either fails to decode, or decodes to a value that re-encodes
//!    to exactly the mutated bytes. So a decoder never silently "repairs" or
//!    misreads damage, and never panics.

use proptest::collection::{btree_set, vec};
use proptest::prelude::*;

use cottas_tui::format::deltalog::{self, Batch, Entry, Object, Quad, Subject};
use cottas_tui::format::dict::{self, Dict};
use cottas_tui::format::epoch::{self, EpochMarker};
use cottas_tui::format::p_offsets::{self, POffsets};
use cottas_tui::format::po_presence::{self, PoPresence};
use cottas_tui::format::presence::{self, Presence};
use cottas_tui::format::s_offsets::{self, SOffsets};
use cottas_tui::format::term::{self, Escaping, Literal, Term};
use cottas_tui::format::transport::Transport;

#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    Truncate(usize),
    Insert(usize, u8),
    Delete(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        2 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => any::<usize>().prop_map(Mutation::Delete),
    ]
}

fn apply(bytes: &[u8], m: &Mutation) -> Vec<u8> {
    let mut v = bytes.to_vec();
    if v.is_empty() {
        return v;
    }
    match *m {
        Mutation::Set(i, b) => {
            let i = i % v.len();
            v[i] = if v[i] == b { b.wrapping_add(1) } else { b };
        }
        Mutation::Truncate(i) => v.truncate(i % v.len()),
        Mutation::Insert(i, b) => v.insert(i % (v.len() + 1), b),
        Mutation::Delete(i) => {
            v.remove(i % v.len());
        }
    }
    v
}

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        "<[a-z:/#.é]{0,12}>",
        "\"[ -~\t\n€]{0,10}\"(@[a-z]{2})?",
        "_:[a-z0-9]{1,6}",
        Just("DEFAULT".to_string()),
    ]
}

fn dict_value() -> impl Strategy<Value = Dict> {
    (btree_set(token(), 0..24), any::<u32>(), any::<u64>()).prop_map(|(set, pad, seed)| {
        let sorted: Vec<String> = set.into_iter().collect();
        let n = sorted.len();
        // A seeded permutation: ids[i] = id of sorted position i.
        let mut ids: Vec<u32> = (0..n as u32).collect();
        let mut s = seed;
        for i in (1..n).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ids.swap(i, (s >> 33) as usize % (i + 1));
        }
        let mut by_id = vec![""; n];
        for (pos, &id) in ids.iter().enumerate() {
            by_id[id as usize] = &sorted[pos];
        }
        let mut d = Dict::from_sorted(by_id.iter().map(|t| t.as_bytes()));
        d.ids = ids;
        d.pad = pad;
        d
    })
}

fn presence_value() -> impl Strategy<Value = Presence> {
    (0u32..5, 0u32..23, any::<u64>()).prop_map(|(r, n, seed)| {
        let mut p = Presence::new(r, n);
        for rg in 0..r {
            for t in 0..n {
                if (seed >> ((rg * 7 + t) % 64)) & 1 == 1 {
                    p.set(rg, t);
                }
            }
        }
        p
    })
}

fn p_offsets_value() -> impl Strategy<Value = POffsets> {
    (0u32..4, 0u32..5).prop_flat_map(|(r, p)| {
        vec(btree_set(0u32..200, 0..6), (r * p) as usize).prop_map(move |cells| {
            let cells: Vec<Vec<u32>> = cells.into_iter().map(|c| c.into_iter().collect()).collect();
            POffsets::from_cells(r, p, &cells)
        })
    })
}

fn po_presence_value() -> impl Strategy<Value = PoPresence> {
    (0u32..4, 1u32..6, 1u32..9).prop_flat_map(|(r, np, no)| {
        vec(btree_set((0..np, 0..no), 0..8), r as usize).prop_map(move |groups| {
            let groups: Vec<Vec<u64>> = groups
                .into_iter()
                .map(|g| g.into_iter().map(|(p, o)| po_presence::pair(p, o)).collect())
                .collect();
            PoPresence::from_groups(np, no, &groups)
        })
    })
}

fn s_offsets_value() -> impl Strategy<Value = SOffsets> {
    vec(0u64..4, 0..12).prop_map(|lens| {
        // Contiguous runs in subject order, some subjects absent (length 0).
        let mut at = 0;
        let ranges = lens
            .iter()
            .map(|&l| {
                let r = if l == 0 { (0, 0) } else { (at, at + l) };
                at += l;
                r
            })
            .collect();
        SOffsets { num_rows_total: at as u32 + 1, ranges }
    })
}

fn iri() -> impl Strategy<Value = String> {
    "[a-z]{1,4}:[a-zA-Z0-9/#é€ ]{0,10}"
}

fn quad() -> impl Strategy<Value = Quad> {
    let subject = prop_oneof![iri().prop_map(Subject::Iri), "[a-z0-9]{0,5}".prop_map(Subject::Blank)];
    let object = prop_oneof![
        iri().prop_map(Object::Iri),
        "[a-z0-9]{1,5}".prop_map(Object::Blank),
        ("[^\"]{0,8}", iri()).prop_map(|(lexical, datatype)| {
            let datatype = if datatype.contains("langString") { "x:y".into() } else { datatype };
            Object::Literal { lexical, datatype, language: None }
        }),
        ("\\PC{0,8}", "[a-z]{1,3}(-[A-Z]{2})?").prop_map(|(lexical, tag)| Object::Literal {
            lexical,
            datatype: term::RDF_LANG_STRING.into(),
            language: Some(tag),
        }),
    ];
    (subject, iri(), object, proptest::option::of(iri()))
        .prop_map(|(subject, predicate, object, graph)| Quad { subject, predicate, object, graph })
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        4 => quad().prop_map(Entry::add),
        3 => quad().prop_map(Entry::remove),
        1 => proptest::option::of(iri()).prop_map(Entry::clear),
        1 => "[ -~]{0,8}".prop_map(Entry::drop_graph),
        1 => "[ -~]{0,8}".prop_map(Entry::create),
    ]
}

fn batches() -> impl Strategy<Value = Vec<Batch>> {
    vec(
        (any::<u64>(), prop_oneof![0u64..300, any::<u64>()], vec(entry(), 0..4))
            .prop_map(|(seq, epoch, entries)| Batch { seq, epoch, entries }),
        0..4,
    )
}

fn transport() -> impl Strategy<Value = Transport> {
    prop_oneof![Just(Transport::Raw), Just(Transport::LegacyCodePoints)]
}

fn lit_term() -> impl Strategy<Value = Term> {
    prop_oneof![
        "[^<>\"{}|^`\\\\ \u{0}-\u{20}]{0,12}".prop_map(Term::Iri),
        "[a-zA-Z0-9_]{1,8}".prop_map(Term::Blank),
        "\\PC{0,12}|[\u{0}-\u{1f}\u{7f}\"\\\\]{0,6}".prop_map(|l| Term::Literal(Literal::simple(l))),
        ("\\PC{0,8}", "[a-z]{1,8}(-[a-z0-9]{1,8})?").prop_map(|(l, t)| Term::Literal(Literal::lang(l, &t))),
        ("\\PC{0,8}", "[a-z]{1,4}:[a-z]{0,6}").prop_map(|(l, d)| Term::Literal(Literal::typed(l, d))),
        Just(Term::DefaultGraph),
    ]
}

macro_rules! codec_props {
    ($round:ident, $mutate:ident, $strategy:expr, $module:ident) => {
        proptest! {
            #[test]
            fn $round(v in $strategy) {
                let bytes = $module::encode(&v);
                let back = $module::decode(&bytes).result;
                prop_assert_eq!(back, Ok(v));
            }

            #[test]
            fn $mutate(v in $strategy, m in mutation()) {
                let bytes = apply(&$module::encode(&v), &m);
                if let Ok(w) = $module::decode(&bytes).result {
                    prop_assert_eq!($module::encode(&w), bytes);
                }
            }
        }
    };
}

codec_props!(dict_round_trip, dict_mutations, dict_value(), dict);
codec_props!(presence_round_trip, presence_mutations, presence_value(), presence);
codec_props!(p_offsets_round_trip, p_offsets_mutations, p_offsets_value(), p_offsets);
codec_props!(po_presence_round_trip, po_presence_mutations, po_presence_value(), po_presence);
codec_props!(s_offsets_round_trip, s_offsets_mutations, s_offsets_value(), s_offsets);

proptest! {
    #[test]
    fn epoch_round_trip(e in any::<u64>(), t in transport()) {
        let m = EpochMarker { epoch: e, transport: t };
        let back = epoch::decode(&epoch::encode(&m)).result.unwrap();
        prop_assert_eq!(back.epoch, e);
        // Below 128 every byte is ASCII and the two transports are the same bytes.
        if t == Transport::Raw || e.to_le_bytes().iter().any(|&b| b >= 0x80) {
            prop_assert_eq!(back.transport, t);
        }
    }

    #[test]
    fn epoch_mutations(e in any::<u64>(), t in transport(), m in mutation()) {
        let bytes = apply(&epoch::encode(&EpochMarker { epoch: e, transport: t }), &m);
        if let Ok(w) = epoch::decode(&bytes).result {
            prop_assert_eq!(epoch::encode(&w), bytes);
        }
    }

    #[test]
    fn deltalog_round_trip(bs in batches(), t in transport()) {
        let bytes = deltalog::encode_batches(&bs, t);
        let log = deltalog::decode(&bytes).result.unwrap();
        let got: Vec<Batch> = log.batches.iter().map(|f| f.batch.clone()).collect();
        prop_assert_eq!(got, bs);
        prop_assert_eq!(log.leftover.reason, deltalog::StopReason::CleanEnd);
        prop_assert_eq!(deltalog::encode(&log), bytes);
    }

    #[test]
    fn deltalog_mutations(bs in batches(), t in transport(), m in mutation()) {
        let bytes = apply(&deltalog::encode_batches(&bs, t), &m);
        let d = deltalog::decode(&bytes);
        if let Ok(log) = d.result {
            prop_assert_eq!(deltalog::encode(&log), bytes.clone());
            // The committed prefix is whole batches of the original, in order.
            for (f, b) in log.batches.iter().zip(&bs) {
                prop_assert_eq!(&f.batch, b);
            }
        }
    }

    #[test]
    fn deltalog_prefix_truncation_keeps_whole_batches(bs in batches(), cut in any::<usize>()) {
        let bytes = deltalog::encode_batches(&bs, Transport::Raw);
        let cut = 8 + cut % (bytes.len() - 7);
        let log = deltalog::decode(&bytes[..cut]).result.unwrap();
        let whole = log.batches.len();
        prop_assert!(whole <= bs.len());
        let end = log.committed_len() as usize;
        prop_assert_eq!(end, deltalog::encode_batches(&bs[..whole], Transport::Raw).len());
        prop_assert_eq!(log.leftover.len as usize, cut - end);
    }

    #[test]
    fn term_tokens_round_trip(t in lit_term()) {
        for esc in Escaping::ALL {
            let tok = term::render(&t, esc);
            prop_assert_eq!(term::parse_token(&tok), Ok(t.clone()), "{:?}", tok);
        }
    }

    /// IRIs of plain characters (ASCII, multi-byte, four-byte) and what
    /// each producer escapes come back whole, however the runs fall.
    #[test]
    fn iri_tokens_round_trip(s in "[a-z:/#.%~=é€\u{10000}-\u{10004}\u{7f}]{0,24}") {
        let t = term::Term::Iri(s);
        for esc in Escaping::ALL {
            let tok = term::render(&t, esc);
            prop_assert_eq!(term::parse_token(&tok), Ok(t.clone()), "{:?}", tok);
        }
    }

    #[test]
    fn term_parser_never_panics(s in "\\PC{0,16}|[<>\"\\\\_:@^a-z]{0,12}") {
        let _ = term::parse_token(&s);
    }
}
