//! The store on disk: layout, base and sidecar reading and writing, durable
//! file steps, the read path, and the demo store.

pub mod sidecars;

#[cfg(feature = "full")]
pub mod base;
#[cfg(feature = "full")]
pub mod base_writer;
#[cfg(feature = "full")]
pub mod chunk;
#[cfg(feature = "full")]
pub mod compact;
#[cfg(feature = "full")]
pub mod delta;
#[cfg(feature = "full")]
pub mod demo;
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
pub mod repair;
#[cfg(feature = "full")]
pub mod verify;
#[cfg(feature = "full")]
pub mod version_sink;
#[cfg(feature = "full")]
pub mod versions;

#[cfg(feature = "full")]
pub use error::StoreError;
