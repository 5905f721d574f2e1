//! Fuzzes the delta-log reader: never a panic; the committed prefix plus the
//! leftover re-encode to exactly the input; every batch frame lies inside it.
#![no_main]

use cottas_tui::format::deltalog;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let d = deltalog::decode(data);
    if let Ok(log) = d.result {
        assert_eq!(deltalog::encode(&log), data);
        for f in &log.batches {
            assert!(f.offset + f.len <= log.committed_len());
        }
        assert_eq!(log.committed_len() + log.leftover.len, data.len() as u64);
    }
    // The paging reader used by views must not panic at any offset either.
    if data.len() > 8 {
        let _ = deltalog::decode_batch_at(data, 8 + data[0] as usize % (data.len() - 8));
    }
});
