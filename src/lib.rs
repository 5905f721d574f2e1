pub mod format;
pub mod store;
#[cfg(feature = "full")]
pub mod inspect;
#[cfg(feature = "full")]
pub mod cli;
