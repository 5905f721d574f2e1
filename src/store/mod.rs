//! The store on disk, one folder per part:
//!
//! - `versions/`: where things are in a chunk (`layout`), opening a version
//!   (`open`), listing, gc and rollback, writing a new version (`sink`);
//! - `base/`: the `data.cottas` reader, its column decoder to ids
//!   (`column_ids`), its writer, its digests;
//! - `sidecars/`: the 11 sidecar files, the id collector, rebuilding them;
//! - `log/`: the delta log (reading, the one writer, the sparse index);
//! - beside them: errors, durable file steps (`fsutil`), the base read path
//!   (`read`) and the external sort every version writer shares (`sort`).
//!
//! Nothing here merges the base with the log: that is [`crate::view`].

pub mod sidecars;

#[cfg(feature = "full")]
pub mod base;
#[cfg(feature = "full")]
pub mod error;
#[cfg(feature = "full")]
pub mod fsutil;
#[cfg(feature = "full")]
pub mod log;
#[cfg(feature = "full")]
pub mod read;
#[cfg(feature = "full")]
pub mod sort;
#[cfg(feature = "full")]
pub mod versions;

#[cfg(feature = "full")]
pub use error::StoreError;
