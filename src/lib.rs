pub mod format;
pub mod store;
