//! Fuzzes the whole path from a base's bytes to its rows: the framing and
//! footer checks, our page walker, the fast id decoder and the parquet
//! crate's reader behind them. Whatever the bytes, opening and reading every
//! column of every row group returns rows or an error, never a panic; an
//! error names a byte inside the file. Needs the library's `full` feature
//! (`cargo fuzz run --features full base_rows`).
#![no_main]

use std::io::Write;

use cottas_tui::store::base::Base;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Base reads a file (it maps it); one scratch file per fuzzing process.
    let path = std::env::temp_dir().join(format!("cottas-fuzz-base-{}.cottas", std::process::id()));
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(data).unwrap();
    drop(f);
    let Ok(base) = Base::open(&path) else { return };
    for rg in 0..base.num_row_groups() {
        for col in 0..base.num_columns().max(4) {
            let mut next = 0u32;
            let mut lookup = |_: &[u8]| {
                next += 1;
                Some(next)
            };
            if let Ok(Some(ids)) = base.read_ids(rg, col, &mut lookup) {
                assert_eq!(ids.len(), base.rg_rows(rg));
            }
            match base.read_column(rg, col) {
                Ok(values) => assert_eq!(values.len(), base.rg_rows(rg)),
                Err(e) => assert!(e.offset().is_none_or(|o| o <= data.len() as u64), "{e}"),
            }
        }
    }
});
