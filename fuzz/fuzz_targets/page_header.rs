//! Fuzzes our Thrift-compact page-header decoder: never a panic, a header
//! never longer than its input, every span inside what it read.
#![no_main]

use cottas_tui::format::page_header;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((_, len, spans)) = page_header::decode(data, 7, "h") {
        assert!(len <= data.len() as u64);
        for s in &spans {
            assert!(s.range.start >= 7 && s.range.end <= 7 + len, "{s:?}");
        }
    }
});
