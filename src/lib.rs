#[cfg(feature = "full")]
pub mod cli;
pub mod format;
#[cfg(feature = "full")]
pub mod import;
#[cfg(feature = "full")]
pub mod inspect;
pub mod store;
