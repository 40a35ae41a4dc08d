//! Framing: magic, version detection, event headers, checksums, stream state.
