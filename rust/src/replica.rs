//! The replica protocol's packets (binlake/live/protocol.py): the run of ordinary
//! events at the front of what a binlog dump connection received.
//!
//! Strategy: a dump sends one event per packet (3-byte length, sequence
//! byte, `00`, the event). Nearly all of them are ordinary: real events of
//! the file, each starting where the previous one ended. Those are copied
//! out back to back, packet headers dropped, in one call, so Python sees a
//! run of the file's bytes instead of one packet at a time. Every other
//! packet (an artificial event, a rotate, a stop, a format description, a
//! heartbeat, the positioning events at a file's start, an event that is
//! not where the file goes on, EOF, an error, a packet of 16 MB or more, a
//! packet not yet whole) ends the run and is left to Python, which decides
//! what it means. Same rules as `_ordinary_run` in replica.py.

use crate::constants::*;

/// A packet this long continues in the next one.
const MAX_PACKET_LEN: usize = 0xFF_FFFF;
const HEADER: usize = LOG_EVENT_MINIMAL_HEADER_LEN;

/// The event types that never join a run.
const SPECIAL: [u8; 10] = [
    ROTATE_EVENT,
    STOP_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    HEARTBEAT_LOG_EVENT,
    HEARTBEAT_LOG_EVENT_V2,
    GTID_LIST_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    PREVIOUS_GTIDS_LOG_EVENT,
    START_EVENT_V3,
    INCIDENT_EVENT,
];

/// The ordinary events at the front of `buf[at..]`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// Where the packets after the run start in `buf`.
    pub next_at: usize,
    /// Where each event is in `buf` (its packet header left out).
    pub spans: Vec<(usize, usize)>,
    /// Their bytes together.
    pub len: usize,
    pub events: usize,
    pub last_type: u8,
    pub last_timestamp: u32,
}

impl Run {
    /// The events, back to back, as in the file from `expected` on, into
    /// `out` (`len` bytes: Python's bytes object, made once at its size).
    pub fn copy_into(&self, buf: &[u8], out: &mut [u8]) {
        let mut at = 0;
        for &(start, end) in &self.spans {
            out[at..at + end - start].copy_from_slice(&buf[start..end]);
            at += end - start;
        }
    }

    /// `copy_into` a new vector.
    pub fn bytes(&self, buf: &[u8]) -> Vec<u8> {
        let mut out = vec![0; self.len];
        self.copy_into(buf, &mut out);
        out
    }
}

fn le(buf: &[u8], at: usize, n: usize) -> u64 {
    buf[at..at + n]
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// The run of ordinary events starting at `buf[at]` whose first event is at
/// file offset `expected`, at most about `limit` bytes.
pub fn ordinary_run(buf: &[u8], mut at: usize, mut expected: u64, limit: usize) -> Run {
    let mut run = Run {
        next_at: at,
        ..Run::default()
    };
    while at + 4 <= buf.len() && run.len < limit {
        let length = le(buf, at, 3) as usize;
        let end = at + 4 + length;
        if end > buf.len() || !(1 + HEADER..MAX_PACKET_LEN).contains(&length) || buf[at + 4] != 0 {
            break;
        }
        let event = &buf[at + 5..end];
        let event_type = event[EVENT_TYPE_OFFSET];
        let event_len = le(event, EVENT_LEN_OFFSET, 4);
        let log_pos = le(event, LOG_POS_OFFSET, 4);
        let flags = le(event, FLAGS_OFFSET, 2) as u16;
        let ordinary = event_len == event.len() as u64
            && flags & LOG_EVENT_ARTIFICIAL_F == 0
            && !SPECIAL.contains(&event_type)
            // log_pos is the 32-bit end of the event: offsets past 4 GiB
            // are counted from event lengths, and log_pos compared modulo 2^32.
            && log_pos == (expected + event_len) & 0xFFFF_FFFF;
        if !ordinary {
            break;
        }
        run.spans.push((at + 5, end));
        run.len += event.len();
        run.events += 1;
        run.last_type = event_type;
        run.last_timestamp = le(event, 0, 4) as u32;
        expected += event_len;
        at = end;
        run.next_at = at;
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(event_type: u8, log_pos: u32, flags: u16, body: &[u8]) -> Vec<u8> {
        let len = (HEADER + body.len()) as u32;
        let mut event = Vec::new();
        event.extend_from_slice(&7u32.to_le_bytes());
        event.push(event_type);
        event.extend_from_slice(&1u32.to_le_bytes());
        event.extend_from_slice(&len.to_le_bytes());
        event.extend_from_slice(&log_pos.to_le_bytes());
        event.extend_from_slice(&flags.to_le_bytes());
        event.extend_from_slice(body);
        let mut out = ((event.len() + 1) as u32).to_le_bytes()[..3].to_vec();
        out.push(0);
        out.push(0);
        out.extend(event);
        out
    }

    #[test]
    fn a_run_ends_at_the_first_packet_python_must_see() {
        let mut buf = packet(XID_EVENT, 100 + 27, 0, &[1; 8]);
        buf.extend(packet(GTID_EVENT, 127 + 20, 0, &[2; 1]));
        buf.extend(packet(ROTATE_EVENT, 200, 0, &[3; 4]));
        let run = ordinary_run(&buf, 0, 100, 1 << 20);
        assert_eq!(run.events, 2);
        assert_eq!(run.bytes(&buf).len(), 27 + 20);
        assert_eq!(run.last_type, GTID_EVENT);
        assert_eq!(&buf[run.next_at + 9], &ROTATE_EVENT);
    }

    #[test]
    fn gaps_artificial_events_and_cut_packets_are_not_ordinary() {
        let gap = packet(XID_EVENT, 500, 0, &[1; 8]);
        assert_eq!(ordinary_run(&gap, 0, 100, 1 << 20).events, 0);
        let artificial = packet(XID_EVENT, 127, LOG_EVENT_ARTIFICIAL_F, &[1; 8]);
        assert_eq!(ordinary_run(&artificial, 0, 100, 1 << 20).events, 0);
        let whole = packet(XID_EVENT, 127, 0, &[1; 8]);
        assert_eq!(
            ordinary_run(&whole[..whole.len() - 1], 0, 100, 1 << 20).events,
            0
        );
        let mut error = whole.clone();
        error[4] = 0xFF;
        assert_eq!(ordinary_run(&error, 0, 100, 1 << 20).events, 0);
    }
}
