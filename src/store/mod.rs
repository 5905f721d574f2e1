//! The store on disk: layout, base and sidecar writing, durable file steps,
//! the demo store, and (in later milestones) the read path, writer,
//! compaction and verify.

pub mod sidecars;

#[cfg(feature = "full")]
pub mod base_writer;
#[cfg(feature = "full")]
pub mod demo;
#[cfg(feature = "full")]
pub mod fsutil;
