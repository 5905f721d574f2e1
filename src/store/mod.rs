//! The store on disk: layout and versions, the base (reader, page decoder,
//! writer), the sidecars (codecs' files, building them, `index`), the delta
//! log (reading, the one writer, the sparse index), durable file steps, the
//! base read path and the external sort every version writer shares. Nothing
//! here merges the base with the log: that is [`crate::view`].

pub mod sidecars;

#[cfg(feature = "full")]
pub mod base;
#[cfg(feature = "full")]
pub mod base_writer;
#[cfg(feature = "full")]
pub mod chunk;
#[cfg(feature = "full")]
pub mod digests;
#[cfg(feature = "full")]
pub mod error;
#[cfg(feature = "full")]
pub mod fsutil;
#[cfg(feature = "full")]
pub mod index;
#[cfg(feature = "full")]
pub mod layout;
#[cfg(feature = "full")]
pub mod log;
#[cfg(feature = "full")]
pub mod open;
#[cfg(feature = "full")]
pub mod read;
#[cfg(feature = "full")]
pub mod sort;
#[cfg(feature = "full")]
pub mod version_sink;
#[cfg(feature = "full")]
pub mod versions;

#[cfg(feature = "full")]
pub use error::StoreError;
