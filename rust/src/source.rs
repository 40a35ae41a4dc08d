//! Where the framer's bytes come from: a regular file read through a window,
//! or a forward-only stream (a pipe, a gzip-compressed file, a transaction
//! payload being decompressed).
//!
//! Strategy: both answer `read_at(pos, n)` with at most `n` bytes, fewer only
//! where the input ends, exactly like `_FileSource` / `_StreamSource` in
//! reader.py. A file is read with positioned reads into a window, not mapped:
//! mapped pages count as resident memory until unmapped, so a 1 GB binlog
//! would look held in full. Memory grows only with bytes actually read, never
//! with a length taken from the input, so a corrupt 4 GB length allocates
//! nothing beyond what the input really has.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

use crate::error::{Error, ErrorKind, Result};

/// Bytes read from a file per refill (and the unit of the window).
pub const WINDOW: usize = 4 << 20;

pub trait Source {
    /// Up to `n` bytes at `pos`; fewer only where the input ends.
    fn read_at(&mut self, pos: u64, n: usize) -> Result<&[u8]>;
    /// The size of a regular file, whose huge rows events can stay in it; None for streams.
    fn file_size(&self) -> Option<u64>;
    /// Where the event the reader looks for at `pos` starts: `pos`, except in
    /// a sparse stream (a live server's binlog, sent from a requested position
    /// on), whose next event may start further on.
    fn next_event_at(&mut self, pos: u64) -> Result<u64> {
        Ok(pos)
    }
    /// The offset up to which bytes are held already: a read beyond it asks
    /// the underlying stream, which may wait (a live server's binlog).
    fn held_end(&self) -> u64 {
        u64::MAX
    }
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn read_at(&mut self, pos: u64, n: usize) -> Result<&[u8]> {
        (**self).read_at(pos, n)
    }
    fn file_size(&self) -> Option<u64> {
        (**self).file_size()
    }
    fn next_event_at(&mut self, pos: u64) -> Result<u64> {
        (**self).next_event_at(pos)
    }
    fn held_end(&self) -> u64 {
        (**self).held_end()
    }
}

fn io_error(pos: u64, e: io::Error) -> Error {
    Error::new(ErrorKind::Io, pos, e.to_string())
}

/// A regular file through a window of `WINDOW` bytes (or one event, if bigger).
pub struct FileSource {
    file: File,
    /// Size when opened: only for the huge-event decision, as reader.py does.
    size: u64,
    buf: Vec<u8>,
    start: u64,
}

impl FileSource {
    pub fn open(path: &str) -> io::Result<Self> {
        let file = File::open(path)?;
        let size = file.metadata()?.len();
        Ok(FileSource {
            file,
            size,
            buf: Vec::new(),
            start: 0,
        })
    }

    /// Refill the window from `pos` with up to `want` bytes, growing the
    /// buffer a chunk at a time so a bogus `want` costs only what exists.
    fn fill(&mut self, pos: u64, want: usize) -> Result<()> {
        self.buf.clear();
        self.start = pos;
        while self.buf.len() < want {
            let old = self.buf.len();
            let chunk = (want - old).min(WINDOW);
            self.buf.resize(old + chunk, 0);
            let got = loop {
                match self.file.read_at(&mut self.buf[old..], pos + old as u64) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.buf.truncate(old);
                        return Err(io_error(pos, e));
                    }
                }
            };
            self.buf.truncate(old + got);
            if got == 0 {
                break;
            }
        }
        Ok(())
    }
}

impl Source for FileSource {
    fn read_at(&mut self, pos: u64, n: usize) -> Result<&[u8]> {
        let fits = pos >= self.start
            && (pos - self.start).saturating_add(n as u64) <= self.buf.len() as u64;
        if !fits {
            self.fill(pos, n.max(WINDOW))?;
        }
        let lo = (pos - self.start) as usize;
        let hi = lo.saturating_add(n).min(self.buf.len());
        Ok(&self.buf[lo.min(hi)..hi])
    }

    fn file_size(&self) -> Option<u64> {
        Some(self.size)
    }
}

/// Asked, once what was read is used up, where the stream's next byte lies.
pub type Locate = Box<dyn FnMut(u64) -> io::Result<u64> + Send>;

/// A forward-only window over a `Read`: what the reader moved past is dropped.
pub struct StreamSource<R> {
    reader: R,
    buf: Vec<u8>,
    /// Offset of `buf[0]` in the stream.
    start: u64,
    /// For a sparse stream: the offset of the next byte `reader` gives.
    locate: Option<Locate>,
}

/// Bytes kept behind the read position before they are dropped (reader.py's rule).
const KEEP_BEHIND: u64 = 1 << 20;
const STREAM_CHUNK: usize = 1 << 16;

impl<R: Read> StreamSource<R> {
    pub fn new(reader: R) -> Self {
        StreamSource {
            reader,
            buf: Vec::new(),
            start: 0,
            locate: None,
        }
    }

    /// A sparse stream: its bytes continue at the offset `locate` says, which
    /// may be past the end of what it gave before (never before it).
    pub fn sparse(reader: R, locate: Locate) -> Self {
        StreamSource {
            locate: Some(locate),
            ..StreamSource::new(reader)
        }
    }

    pub fn into_inner(self) -> R {
        self.reader
    }
}

impl<R: Read> Source for StreamSource<R> {
    fn read_at(&mut self, pos: u64, n: usize) -> Result<&[u8]> {
        if pos > self.start + KEEP_BEHIND {
            // As reader.py: the window restarts at `pos` even past what was read.
            let drop = (pos - self.start).min(self.buf.len() as u64) as usize;
            self.buf.drain(..drop);
            self.start = pos;
        }
        let end = pos.saturating_add(n as u64);
        while self.start + (self.buf.len() as u64) < end {
            // read straight into the buffer's tail (most calls need no read at all)
            let old = self.buf.len();
            self.buf.resize(old + STREAM_CHUNK, 0);
            let read = self.reader.read(&mut self.buf[old..]);
            self.buf.truncate(old + *read.as_ref().unwrap_or(&0));
            match read {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(pos, e)),
            }
        }
        let lo = (pos.saturating_sub(self.start) as usize).min(self.buf.len());
        let hi = lo.saturating_add(n).min(self.buf.len());
        Ok(&self.buf[lo..hi])
    }

    fn file_size(&self) -> Option<u64> {
        None
    }

    fn held_end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    fn next_event_at(&mut self, pos: u64) -> Result<u64> {
        let end = self.start + self.buf.len() as u64;
        let Some(locate) = self.locate.as_mut() else {
            return Ok(pos);
        };
        if pos < end {
            return Ok(pos);
        }
        let next = locate(pos).map_err(|e| io_error(pos, e))?;
        if next > pos {
            self.buf.clear();
            self.start = next;
            return Ok(next);
        }
        Ok(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_reads_are_bounded_by_the_data() {
        let data: Vec<u8> = (0..200u8).collect();
        let mut s = StreamSource::new(&data[..]);
        assert_eq!(s.read_at(10, 5).unwrap(), &[10, 11, 12, 13, 14]);
        // A huge request allocates only what the stream has.
        assert_eq!(s.read_at(190, usize::MAX / 2).unwrap().len(), 10);
        assert!(s.read_at(300, 4).unwrap().is_empty());
    }

    /// Gives its chunks one read at a time, as a live file gives its bytes
    /// up to a gap and the rest only after it.
    struct Chunks(Vec<Vec<u8>>);

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let chunk = self.0.remove(0);
            buf[..chunk.len()].copy_from_slice(&chunk);
            Ok(chunk.len())
        }
    }

    #[test]
    fn sparse_stream_jumps_to_where_its_bytes_continue() {
        // bytes 0..10 at offsets 0..10, then bytes 10..20 at offsets 100..110
        let chunks = Chunks(vec![(0..10u8).collect(), (10..20u8).collect()]);
        let mut s = StreamSource::sparse(
            chunks,
            Box::new(|pos| Ok(if pos >= 10 { 100 } else { pos })),
        );
        assert_eq!(s.next_event_at(0).unwrap(), 0);
        assert_eq!(s.read_at(0, 10).unwrap().len(), 10);
        assert_eq!(s.next_event_at(4).unwrap(), 4);
        assert_eq!(s.next_event_at(10).unwrap(), 100);
        assert_eq!(s.read_at(100, 3).unwrap(), &[10, 11, 12]);
        assert_eq!(s.next_event_at(103).unwrap(), 103);
    }

    #[test]
    fn file_window_refills() {
        let dir = std::env::temp_dir().join(format!("binlake-src-{}", std::process::id()));
        std::fs::write(&dir, (0..=255u8).cycle().take(10_000).collect::<Vec<_>>()).unwrap();
        let mut f = FileSource::open(dir.to_str().unwrap()).unwrap();
        assert_eq!(f.read_at(256, 3).unwrap(), &[0, 1, 2]);
        assert_eq!(f.read_at(9_998, 4_000_000_000).unwrap(), &[14, 15]);
        assert!(f.read_at(20_000, 4).unwrap().is_empty());
        std::fs::remove_file(&dir).unwrap();
    }
}
