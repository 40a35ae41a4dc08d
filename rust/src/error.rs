//! The one error type of the core: a kind, the byte offset in the file, and the reason.
//!
//! Rule: every failure reachable from input is one of these, never a panic. The
//! Python glue maps each kind to its `binlake.errors` class in one place
//! (`python.rs`), so the two cores raise the same class at the same offset.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    NotABinlog,
    EncryptedBinlog,
    TruncatedEvent,
    PartialEvent,
    ChecksumMismatch,
    CorruptEvent,
    UnsupportedFeature,
    /// The operating system failed us (a read error), not the input.
    Io,
}

impl ErrorKind {
    /// The Python class name in `binlake.errors`.
    pub fn class_name(self) -> &'static str {
        match self {
            ErrorKind::NotABinlog => "NotABinlog",
            ErrorKind::EncryptedBinlog => "EncryptedBinlog",
            ErrorKind::TruncatedEvent => "TruncatedEvent",
            ErrorKind::PartialEvent => "PartialEvent",
            ErrorKind::ChecksumMismatch => "ChecksumMismatch",
            ErrorKind::CorruptEvent => "CorruptEvent",
            ErrorKind::UnsupportedFeature => "UnsupportedFeature",
            ErrorKind::Io => "OSError",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// Byte offset in the file (of the event, or of the bad byte inside it).
    pub offset: u64,
    pub detail: String,
}

impl Error {
    pub fn new(kind: ErrorKind, offset: u64, detail: impl Into<String>) -> Self {
        Error {
            kind,
            offset,
            detail: detail.into(),
        }
    }

    pub fn corrupt(offset: u64, detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::CorruptEvent, offset, detail)
    }

    /// The same error with a prefix on its reason (e.g. the event that failed).
    pub fn context(mut self, prefix: impl fmt::Display) -> Self {
        self.detail = format!("{prefix}: {}", self.detail);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}: {}", self.offset, self.detail)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
