//! Fuzzes the `s_offsets` decoder: it must never panic, and whatever it accepts
//! must re-encode to exactly the input bytes.
#![no_main]

use cottas_tui::format::s_offsets;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let d = s_offsets::decode(data);
    if let Ok(v) = d.result {
        assert_eq!(s_offsets::encode(&v), data);
    }
    for s in &d.spans {
        assert!(s.range.start <= s.range.end && s.range.end <= data.len() as u64);
    }
});
