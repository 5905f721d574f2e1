//! Messages on stderr that cannot panic.
//!
//! `eprintln!` panics when stderr cannot be written (its reader gone: a
//! closed pipe, `2>&1 | head`, a supervisor that stopped reading). A note
//! printed after an update committed then turned a success into exit 101,
//! and on the endpoint it took the request's thread before it answered.
//! [`eprint_line!`] and [`eprint_text!`] format the whole message first,
//! write it in one call (stderr is unbuffered: `eprintln!` writes each
//! formatted piece separately, so concurrent lines could interleave), and
//! drop it when it cannot be written. Nothing here depends on any other
//! module of ours: every layer may use it.

use std::io::Write;

/// Writes `text` to stderr in one call; a failure is ignored.
pub fn write(text: std::fmt::Arguments<'_>) {
    let text = text.to_string();
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `eprintln!` that never panics (see the module).
#[macro_export]
macro_rules! eprint_line {
    ($($arg:tt)*) => {
        $crate::stderr::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that never panics (see the module).
#[macro_export]
macro_rules! eprint_text {
    ($($arg:tt)*) => {
        $crate::stderr::write(format_args!($($arg)*))
    };
}
