//! On-call triage: `verify` (read-only checks of every file, each finding
//! with its file, offset and next command) and `repair` (copy-first fixes
//! under the writer lock). Above the store and the view: triage reads files
//! the way readers do, then says what readers would stumble on.

mod against_rows;
pub mod repair;
pub mod verify;
