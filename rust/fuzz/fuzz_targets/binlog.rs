//! A whole binlog through the native core: the framer (format description
//! state, checksums, payload streams), every event body the core decodes,
//! table maps and the row images of every rows event whose table map came
//! before it, printed by the text sink and appended to the Arrow changes
//! builder (every text codec, batches finished as the reader finishes
//! them). The values sink needs an interpreter: `fuzz/atheris_reader.py
//! --native` covers it. Any input must end in `Ok` or an
//! `Error`, never a panic, a hang or an allocation the input did not pay for.
#![no_main]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use binlake_native::constants::*;
use binlake_native::events::{self, rows::is_pre_ga};
use binlake_native::framing::{Framer, Options};
use binlake_native::layout::Layout;
use binlake_native::rowimage::{PlanCache, RowsData};
use binlake_native::sink::arrow::{ChangesBuilder, EventFields, NoInterpreter, RowKeys, TextCodec};
use binlake_native::sink::text::{write_rows, NoJson, TextColumns, TextRequest};
use binlake_native::source::StreamSource;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let start = thread_cpu_seconds();
    for verify_checksums in [true, false] {
        read(data, verify_checksums);
    }
    clock(data.len(), thread_cpu_seconds() - start);
});

/// The CPU time of this thread: what the input cost, whatever else the machine runs.
fn thread_cpu_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given, nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// The budget: 1 s per MB plus 50 ms (both readings together). An
/// input over it is a finding; each new slowest is printed, so the run's
/// log ends with the slowest input's time.
fn clock(size: usize, seconds: f64) {
    static SLOWEST_NS: AtomicU64 = AtomicU64::new(0);
    let budget = size as f64 / 1e6 + 0.05;
    assert!(
        seconds <= budget,
        "slow: {:.1} ms of CPU for {size} bytes (budget {:.1} ms)",
        seconds * 1e3,
        budget * 1e3
    );
    let ns = (seconds * 1e9) as u64;
    if SLOWEST_NS.fetch_max(ns, Ordering::Relaxed) < ns {
        eprintln!("#slowest {:.3} ms of CPU for {size} bytes", seconds * 1e3);
    }
}

fn read(data: &[u8], verify_checksums: bool) {
    let options = Options {
        verify_checksums,
        force: !verify_checksums,
        large_event_bytes: 1 << 12, // huge-event framing on small inputs too
        ..Options::default()
    };
    let mut framer = Framer::new(StreamSource::new(data), options);
    // each table's layout with its own plans (plans index its columns)
    let mut maps: HashMap<u64, (Layout, PlanCache)> = HashMap::new();
    let mut out = Vec::new();
    let mut arrow = ChangesBuilder::new();
    while let Ok(Some(frame)) = framer.next() {
        let code = frame.type_code;
        let post = framer.format().post_header_len(code);
        let raw = framer.raw();
        let mut cur = frame.body(raw);
        match code {
            GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT => {
                let _ = events::decode_gtid(&mut cur);
            }
            GTID_EVENT => {
                let _ = events::decode_mariadb_gtid(&mut cur);
            }
            XID_EVENT => {
                let _ = events::decode_xid(&mut cur);
            }
            QUERY_EVENT | QUERY_COMPRESSED_EVENT | EXECUTE_LOAD_QUERY_EVENT => {
                let _ = events::decode_query(&mut cur, code, post);
            }
            TRANSACTION_PAYLOAD_EVENT => {
                let _ = events::decode_transaction_payload(&mut cur);
            }
            TABLE_MAP_EVENT => {
                let mariadb = framer.format().is_mariadb();
                if let Ok(map) = events::decode_table_map(&mut cur, post, mariadb) {
                    maps.insert(map.table_id, (map.layout(None), PlanCache::default()));
                }
            }
            c if events::rows::operation(c).is_some() => {
                let large = frame.large_end.is_some();
                let Ok(header) = events::decode_rows_header(&mut cur, c, post, large) else {
                    continue;
                };
                let Some((layout, plans)) = maps.get_mut(&header.table_id) else {
                    continue;
                };
                let pre_ga = is_pre_ga(c);
                let before = plans.get(layout, header.present, pre_ga);
                let after = match header.present_after {
                    Some(bitmap) => plans.get(layout, bitmap, false),
                    None => before.clone(),
                };
                let request = TextRequest {
                    rows: RowsData {
                        operation: header.operation(),
                        partial: c == PARTIAL_UPDATE_ROWS_EVENT,
                        before: &before,
                        after: &after,
                        data: &header.data,
                    },
                    verbose: 2,
                    name: b"`db`.`t`",
                    after_empty: false,
                };
                out.clear();
                let _ = write_rows(
                    layout,
                    &TextColumns::new(layout),
                    &request,
                    &mut NoJson,
                    &mut out,
                );
                append_arrow(&mut arrow, layout, &request.rows);
            }
            _ => {}
        }
    }
}

/// Every text codec in turn, by column: the Python glue picks one per charset.
const CODECS: [TextCodec; 5] = [
    TextCodec::Utf8,
    TextCodec::Binary,
    TextCodec::Cp1252,
    TextCodec::Ascii,
    TextCodec::Other,
];

/// A rows event's rows into the Arrow builder, in blocks as the reader
/// appends them, resuming after a bad row as the reader's window does.
fn append_arrow(builder: &mut ChangesBuilder, layout: &Layout, rows: &RowsData) {
    let codecs: Vec<TextCodec> = (0..layout.columns.len())
        .map(|i| CODECS[i % CODECS.len()].clone())
        .collect();
    let keys = RowKeys::of(layout, rows.before, rows.after);
    let fields = EventFields {
        path: "fuzz",
        file: "fuzz",
        file_seq: 0,
        pos: 4,
        sub: 0,
        timestamp: 0,
        commit_timestamp: 0,
        commit_pos: 0,
        gtid: None,
        xid: None,
        server_id: 0,
    };
    let (mut pos, mut first) = (0, 0);
    while pos < rows.data.len() {
        match builder.append_rows(
            layout,
            rows,
            pos,
            3,
            first,
            &fields,
            &codecs,
            &keys,
            &mut NoInterpreter,
        ) {
            Ok(done) => {
                first += done.rows;
                if done.end <= pos {
                    break;
                }
                pos = done.end;
            }
            Err(_) => break,
        }
    }
    if builder.rows() >= 64 {
        let _ = builder.finish();
    }
}
