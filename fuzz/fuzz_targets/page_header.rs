//! Fuzzes our Thrift-compact reading: the page-header decoder never panics,
//! a header is never longer than its input, every span lies inside what it
//! read; and where the footer check and the named walk both accept a
//! struct, they agree on its length.
#![no_main]

use cottas_tui::format::page_header;
use cottas_tui::format::thrift::{self, Fields, Wire::*};
use libfuzzer_sys::fuzz_target;

const INNER: Fields = &[(1, "a", Int), (2, "b", Int)];
const OUTER: Fields =
    &[(1, "n", Int), (2, "list", List(&Struct(INNER))), (3, "one", Struct(INNER)), (4, "s", Binary)];

fuzz_target!(|data: &[u8]| {
    if let Ok((_, len, spans)) = page_header::decode(data, 7, "h") {
        assert!(len <= data.len() as u64);
        for s in &spans {
            assert!(s.range.start >= 7 && s.range.end <= 7 + len, "{s:?}");
        }
    }
    let skim = thrift::check_struct(data, 0, "x", OUTER);
    let (spans, walk) = thrift::walk_struct(data, 0, "x", OUTER);
    // The two count nesting differently near the bound, and only the check
    // holds fields to their types, so one may refuse what the other takes;
    // when both take a struct, it is the same length.
    if let (Ok(a), Ok(b)) = (skim, walk) {
        assert_eq!(a, b);
    }
    for s in &spans {
        assert!(s.range.start <= s.range.end && s.range.end <= data.len() as u64, "{s:?}");
    }
});
