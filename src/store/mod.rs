//! The store on disk: layout, sidecar building, and (in later milestones) the
//! read path, writer, compaction and verify.

pub mod sidecars;
