//! binlake's native core: binlog framing, row images and the sinks they feed.
//!
//! The format lives in plain Rust modules (testable with `cargo test`, no
//! Python needed); `python/`, compiled with the `python` feature, is the
//! only glue to CPython and the only place errors become Python exceptions.

pub mod constants;
pub mod cursor;
pub mod decimal;
pub mod error;
pub mod events;
pub mod framing;
pub mod layout;
pub mod replica;
pub mod rowimage;
pub mod sink;
pub mod source;
pub mod transaction;

#[cfg(feature = "python")]
mod python;
