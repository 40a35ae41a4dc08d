//! Sinks: what decoded row values become (mysqlbinlog text, Arrow columns).
//! The Python-values sink lives with the glue (`python/values.rs`): it makes Python objects.

pub mod arrow;
pub mod dump;
pub mod events;
pub mod json;
pub mod text;
pub(crate) mod texts;
