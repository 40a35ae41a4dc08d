//! The `events` view (docs/spark.md): one Arrow row per event, with the
//! `info` JSON of the common events written here.
//!
//! Strategy: the event loop (python/changes.rs) decodes each event with the
//! `events/` decoders and hands the decoded value to one of the `*_info`
//! writers below, which write `binlake.text.jsonable.event_json(event,
//! header=False, rows=False)` byte for byte: the checksum, then the Python
//! event's `fields()` in their order, as `json.dumps(..., ensure_ascii=False)`
//! writes them (", " and ": " separators, the same escapes, bytes as
//! `{"base64": ...}`). Events without a writer here get their `info` from
//! the Python reference. `EventsBuilder` then turns the rows into one
//! `RecordBatch` of `EVENTS` (binlake/spark/batches.py).
//!
//! Rule: formatting only; the wire format is read by `events/`.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StructArray};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

use crate::constants::column_type_name;
use crate::events::status_vars::{status_var_name, StatusValue};
use crate::events::{event_type_name, text, MariadbGtid, MysqlGtid, Query, RowsHeader, TableMap};
use crate::rowimage::Operation;

use super::arrow::{commit_key_fields, optional_int64, utc_micros, utc_micros_array, Strings};
use super::texts::push_base64;
use crate::decimal::push_i64;

// -- JSON as Python's json module writes it ----------------------------------------------

/// A string in JSON quotes, escaped as `json.dumps(..., ensure_ascii=False)`
/// does (`py_encode_basestring`): `"`, `\` and the C0 controls only.
pub fn json_string(out: &mut Vec<u8>, s: &str) {
    json_text(out, s.as_bytes());
}

/// `json_string` of text already known to be UTF-8 (escaping is byte-wise:
/// every byte it escapes is ASCII). The runs between escapes are found a
/// block at a time and copied whole.
pub fn json_text(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let mut start = 0;
    while let Some(found) = next_special(&bytes[start..]) {
        let at = start + found;
        out.extend_from_slice(&bytes[start..at]);
        let b = bytes[at];
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
            }
        }
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Where the first byte JSON escapes is: `"`, `\\` or a C0 control. Tested
/// 16 bytes at a time (a loop the compiler vectorizes), then within the
/// block that has one.
#[inline]
fn next_special(bytes: &[u8]) -> Option<usize> {
    let special = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    let mut blocks = bytes.chunks_exact(16);
    let mut base = 0;
    for block in &mut blocks {
        if block.iter().fold(false, |seen, &b| seen | special(b)) {
            return block.iter().position(|&b| special(b)).map(|i| base + i);
        }
        base += 16;
    }
    blocks
        .remainder()
        .iter()
        .position(|&b| special(b))
        .map(|i| base + i)
}

/// A header's checksum as `event_json` writes it: `"0x%08x"`.
pub fn push_checksum(out: &mut Vec<u8>, checksum: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = *b"\"0x00000000\"";
    for (i, slot) in text[3..11].iter_mut().enumerate() {
        *slot = HEX[(checksum >> (28 - 4 * i) & 0xf) as usize];
    }
    out.extend_from_slice(&text);
}

/// `to_jsonable(bytes)`: `{"base64": "..."}`.
pub fn json_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(b"{\"base64\": \"");
    push_base64(out, b);
    out.extend_from_slice(b"\"}");
}

/// One JSON object being written: keys in the order they are given.
pub struct JsonObject<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> JsonObject<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        JsonObject { out, empty: true }
    }

    /// An object that starts with the header's checksum, as `info` does.
    pub fn info(out: &'a mut Vec<u8>, checksum: Option<u32>) -> Self {
        let mut o = JsonObject::new(out);
        if let Some(c) = checksum {
            o.key("checksum");
            push_checksum(o.out, c);
        }
        o
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.extend_from_slice(b", ");
        }
        self.empty = false;
        json_string(self.out, key);
        self.out.extend_from_slice(b": ");
    }

    pub fn int(&mut self, key: &str, value: impl Into<i128>) {
        self.key(key);
        let value = value.into();
        match i64::try_from(value) {
            Ok(v) => push_i64(self.out, v),
            Err(_) => self.out.extend_from_slice(value.to_string().as_bytes()),
        }
    }

    pub fn opt_int<T: Into<i128>>(&mut self, key: &str, value: Option<T>) {
        match value {
            Some(v) => self.int(key, v),
            None => self.null(key),
        }
    }

    pub fn null(&mut self, key: &str) {
        self.key(key);
        self.out.extend_from_slice(b"null");
    }

    pub fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    pub fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        json_string(self.out, value);
    }

    pub fn opt_str(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(v) => self.str(key, v),
            None => self.null(key),
        }
    }

    pub fn opt_bytes(&mut self, key: &str, value: Option<&[u8]>) {
        match value {
            Some(v) => {
                self.key(key);
                json_bytes(self.out, v);
            }
            None => self.null(key),
        }
    }

    /// A value already in JSON.
    pub fn raw(&mut self, key: &str, json: &[u8]) {
        self.key(key);
        self.out.extend_from_slice(json);
    }

    /// JSON already written with its keys (a fragment `"k": v, ...`).
    pub fn fragment(&mut self, json: &[u8]) {
        if json.is_empty() {
            return;
        }
        if !self.empty {
            self.out.extend_from_slice(b", ");
        }
        self.empty = false;
        self.out.extend_from_slice(json);
    }

    pub fn end(self) {
        self.out.push(b'}');
    }
}

/// A JSON list of strings.
pub fn json_strings(out: &mut Vec<u8>, values: &[impl AsRef<str>]) {
    out.push(b'[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        json_string(out, v.as_ref());
    }
    out.push(b']');
}

// -- info of each event type (the Python events' `fields()`) -----------------------------

/// events/gtid.py `GtidEvent` (GTID_LOG and ANONYMOUS_GTID: no tag).
pub fn mysql_gtid_info(out: &mut Vec<u8>, checksum: Option<u32>, g: &MysqlGtid) {
    let mut o = JsonObject::info(out, checksum);
    o.int("flags", g.flags);
    o.str("sid", &g.sid_text());
    o.int("gno", g.gno);
    o.null("tag");
    o.opt_int("last_committed", g.last_committed);
    o.opt_int("sequence_number", g.sequence_number);
    o.opt_int("immediate_commit_timestamp", g.immediate_commit_timestamp);
    o.opt_int("original_commit_timestamp", g.original_commit_timestamp);
    o.opt_int("transaction_length", g.transaction_length);
    o.opt_int("immediate_server_version", g.immediate_server_version);
    o.opt_int("original_server_version", g.original_server_version);
    o.opt_int("commit_group_ticket", g.commit_group_ticket);
    o.end();
}

/// events/gtid.py `MariadbGtidEvent`.
pub fn mariadb_gtid_info(out: &mut Vec<u8>, checksum: Option<u32>, g: &MariadbGtid) {
    let mut o = JsonObject::info(out, checksum);
    o.int("seq_no", g.seq_no);
    o.int("domain_id", g.domain_id);
    o.int("flags2", g.flags2);
    o.opt_int("commit_id", g.commit_id);
    o.opt_int("xa_format_id", g.xa_format_id);
    o.opt_bytes("xa_gtrid", g.xa_gtrid);
    o.opt_bytes("xa_bqual", g.xa_bqual);
    o.int("flags_extra", g.flags_extra);
    o.opt_int("extra_engines", g.extra_engines);
    o.opt_int("sa_seq_no", g.sa_seq_no);
    o.opt_int("thread_id", g.thread_id);
    o.end();
}

/// events/control.py `XidEvent`.
pub fn xid_info(out: &mut Vec<u8>, checksum: Option<u32>, xid: u64) {
    let mut o = JsonObject::info(out, checksum);
    o.int("xid", xid);
    o.end();
}

/// events/query.py `RowsQueryEvent` (ANNOTATE_ROWS, ROWS_QUERY).
pub fn rows_query_info(out: &mut Vec<u8>, checksum: Option<u32>, query: &str) {
    let mut o = JsonObject::info(out, checksum);
    o.str("query", query);
    o.end();
}

/// events/query.py `QueryEvent`: `status_vars` as `_status_var` shapes them.
pub fn query_info(
    out: &mut Vec<u8>,
    checksum: Option<u32>,
    q: &Query,
    status_vars: &[(u8, StatusValue)],
    unknown_status_vars: &[u8],
) {
    let mut o = JsonObject::info(out, checksum);
    o.int("thread_id", q.thread_id);
    o.int("exec_time", q.exec_time);
    o.str("database", &text(q.database));
    o.int("error_code", q.error_code);
    o.key("status_vars");
    {
        let mut vars = JsonObject::new(o.out);
        for (code, value) in status_vars {
            let name = status_var_name(*code);
            match value {
                StatusValue::Int(v) => vars.int(name, *v),
                StatusValue::Text(t) => vars.str(name, &text(t)),
                StatusValue::AutoIncrement(increment, offset) => {
                    vars.key(name);
                    let mut v = JsonObject::new(vars.out);
                    v.int("increment", *increment);
                    v.int("offset", *offset);
                    v.end();
                }
                StatusValue::Charset(client, connection, server) => {
                    vars.key(name);
                    let mut v = JsonObject::new(vars.out);
                    v.int("character_set_client", *client);
                    v.int("collation_connection", *connection);
                    v.int("collation_server", *server);
                    v.end();
                }
                StatusValue::Invoker(user, host) => {
                    vars.key(name);
                    let mut v = JsonObject::new(vars.out);
                    v.str("user", &text(user));
                    v.str("host", &text(host));
                    v.end();
                }
                StatusValue::Databases(None) => vars.null(name),
                StatusValue::Databases(Some(names)) => {
                    vars.key(name);
                    let names: Vec<String> = names.iter().map(|n| text(n).into_owned()).collect();
                    json_strings(vars.out, &names);
                }
                StatusValue::Collations(pairs) => {
                    vars.key(name);
                    vars.out.push(b'[');
                    for (i, (a, b)) in pairs.iter().enumerate() {
                        if i > 0 {
                            vars.out.extend_from_slice(b", ");
                        }
                        vars.out.extend_from_slice(format!("[{a}, {b}]").as_bytes());
                    }
                    vars.out.push(b']');
                }
            }
        }
        vars.end();
    }
    o.str("query", &text(&q.query));
    o.opt_bytes("unknown_status_vars", Some(unknown_status_vars));
    let load = q.execute_load;
    o.opt_int("file_id", load.map(|l| l.file_id));
    o.opt_int("fn_pos_start", load.map(|l| l.fn_pos_start));
    o.opt_int("fn_pos_end", load.map(|l| l.fn_pos_end));
    o.opt_int("dup_handling", load.map(|l| l.dup_handling));
    o.end();
}

/// The info of an event whose fields are all integers (INTVAR, RAND) or none (STOP).
pub fn ints_info(out: &mut Vec<u8>, checksum: Option<u32>, fields: &[(&str, u64)]) {
    let mut o = JsonObject::info(out, checksum);
    for (name, value) in fields {
        o.int(name, *value);
    }
    o.end();
}

/// events/control.py `RotateEvent`.
pub fn rotate_info(out: &mut Vec<u8>, checksum: Option<u32>, position: u64, next_file: &str) {
    let mut o = JsonObject::info(out, checksum);
    o.int("position", position);
    o.str("next_file", next_file);
    o.end();
}

/// events/gtid.py `BinlogCheckpointEvent`.
pub fn binlog_checkpoint_info(out: &mut Vec<u8>, checksum: Option<u32>, file: &str) {
    let mut o = JsonObject::info(out, checksum);
    o.str("binlog_file", file);
    o.end();
}

/// events/table_map.py `TableMapEvent.fields()` after table_id and flags: the
/// part equal table maps share (written once per distinct map).
pub fn table_map_fields(map: &TableMap) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"\"database\": ");
    json_string(&mut out, &text(map.database));
    out.extend_from_slice(b", \"table\": ");
    json_string(&mut out, &text(map.table));
    out.extend_from_slice(b", \"primary_key\": [");
    for (i, (index, prefix)) in map.primary_key.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(format!("[{index}, {prefix}]").as_bytes());
    }
    out.extend_from_slice(b"], \"default_charset\": ");
    match map.default_charset {
        Some(c) => out.extend_from_slice(c.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b", \"columns\": [");
    for (i, c) in map.columns.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        // `_column_dict`: the optional facts only when truthy
        let mut o = JsonObject::new(&mut out);
        o.int("index", c.index as u64);
        o.opt_str("name", c.name.as_deref());
        let real = c.real_type();
        match column_type_name(real) {
            Some(name) => o.str("type", name),
            None => o.int("type", real),
        }
        o.int("meta", c.meta);
        o.bool("nullable", c.nullable);
        if c.unsigned {
            o.bool("unsigned", true);
        }
        if let Some(charset) = c.charset.filter(|&cs| cs != 0) {
            o.int("charset", charset);
        }
        if let Some(values) = c.enum_values.as_ref().filter(|v| !v.is_empty()) {
            o.key("enum_values");
            json_strings(o.out, values);
        }
        if let Some(values) = c.set_values.as_ref().filter(|v| !v.is_empty()) {
            o.key("set_values");
            json_strings(o.out, values);
        }
        if let Some(g) = c.geometry_type.filter(|&g| g != 0) {
            o.int("geometry_type", g);
        }
        if let Some(d) = c.vector_dimensions.filter(|&d| d != 0) {
            o.int("vector_dimensions", d);
        }
        if c.primary_key {
            o.bool("primary_key", true);
        }
        if !c.visible {
            o.bool("visible", false);
        }
        o.end();
    }
    out.push(b']');
    out
}

/// A table map's info from its table id, flags and shared fields.
pub fn table_map_info(
    out: &mut Vec<u8>,
    checksum: Option<u32>,
    table_id: u64,
    flags: u16,
    fields: &[u8],
) {
    let mut o = JsonObject::info(out, checksum);
    o.int("table_id", table_id);
    o.int("flags", flags);
    o.fragment(fields);
    o.end();
}

/// events/rows.py `RowsEvent.fields()`; `table`: (database, table) of the
/// table map in force.
pub fn rows_info(
    out: &mut Vec<u8>,
    checksum: Option<u32>,
    header: &RowsHeader,
    table: Option<(&str, &str)>,
) {
    let mut o = JsonObject::info(out, checksum);
    o.int("table_id", header.table_id);
    o.int("flags", header.flags);
    o.opt_str("database", table.map(|t| t.0));
    o.opt_str("table", table.map(|t| t.1));
    o.key("extra_info");
    {
        let extra = &header.extra;
        let mut e = JsonObject::new(o.out);
        if let Some((format, data)) = extra.ndb {
            e.int("ndb_format", format);
            e.opt_bytes("ndb_data", Some(data));
        }
        if let Some(id) = extra.partition_id {
            e.int("partition_id", id);
        }
        if let Some(id) = extra.source_partition_id {
            e.int("source_partition_id", id);
        }
        e.end();
    }
    o.int("width", header.width);
    o.str(
        "operation",
        match header.operation() {
            Operation::Insert => "insert",
            Operation::Update => "update",
            Operation::Delete => "delete",
        },
    );
    o.end();
}

// -- the builder -----------------------------------------------------------------------

/// One event of the view (the transaction's gtid and xid come at its end).
#[derive(Debug, Clone, Default)]
pub struct EventRow {
    pub pos: u64,
    pub sub: i32,
    pub timestamp: u32,
    pub type_code: u8,
    pub server_id: u32,
    pub length: u32,
    pub log_pos: u32,
    pub flags: u16,
    pub database: Option<String>,
    pub table: Option<String>,
    pub query: Option<String>,
    pub info: String,
}

/// The schema of the events view (`EVENTS` in binlake/spark/batches.py).
pub fn events_schema() -> SchemaRef {
    let field = |name: &str, kind: DataType| Field::new(name, kind, true);
    Arc::new(Schema::new(vec![
        field("path", DataType::Utf8),
        field("file", DataType::Utf8),
        field("pos", DataType::Int64),
        field("next_pos", DataType::Int64),
        field("commit_key", DataType::Struct(commit_key_fields(false))),
        field("timestamp", utc_micros()),
        field("type", DataType::Utf8),
        field("type_code", DataType::Int32),
        field("server_id", DataType::Int64),
        field("length", DataType::Int64),
        field("log_pos", DataType::Int64),
        field("flags", DataType::Int32),
        field("gtid", DataType::Utf8),
        field("xid", DataType::Int64),
        field("database", DataType::Utf8),
        field("table", DataType::Utf8),
        field("query", DataType::Utf8),
        field("info", DataType::Utf8),
    ]))
}

/// The events view's columns for a batch of events.
#[derive(Debug, Default)]
pub struct EventsBuilder {
    path: Strings,
    file: Strings,
    pos: Vec<i64>,
    next_pos: Vec<i64>,
    file_seq: Vec<i64>,
    sub: Vec<i32>,
    timestamp: Vec<i64>,
    type_name: Strings,
    type_code: Vec<i32>,
    server_id: Vec<i64>,
    length: Vec<i64>,
    log_pos: Vec<i64>,
    flags: Vec<i32>,
    gtid: Strings,
    xid: Vec<i64>,
    xid_valid: Vec<bool>,
    database: Strings,
    table: Strings,
    query: Strings,
    info: Strings,
}

impl EventsBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Rows appended since the last `finish`.
    pub fn rows(&self) -> usize {
        self.pos.len()
    }

    /// One event of a transaction whose `gtid` and `xid` (two's complement
    /// above 2^63, as `_signed64`) are known.
    pub fn append(
        &mut self,
        (path, file, file_seq): (&str, &str, i64),
        event: &EventRow,
        gtid: Option<&str>,
        xid: Option<i64>,
    ) {
        self.path.push(path.as_bytes());
        self.file.push(file.as_bytes());
        self.pos.push(event.pos as i64);
        self.next_pos
            .push((event.pos + u64::from(event.length)) as i64);
        self.file_seq.push(file_seq);
        self.sub.push(event.sub);
        self.timestamp.push(i64::from(event.timestamp) * 1_000_000);
        self.type_name
            .push(event_type_name(event.type_code).as_bytes());
        self.type_code.push(i32::from(event.type_code));
        self.server_id.push(i64::from(event.server_id));
        self.length.push(i64::from(event.length));
        self.log_pos.push(i64::from(event.log_pos));
        self.flags.push(i32::from(event.flags));
        self.gtid.push_opt(gtid);
        self.xid.push(xid.unwrap_or(0));
        self.xid_valid.push(xid.is_some());
        self.database.push_opt(event.database.as_deref());
        self.table.push_opt(event.table.as_deref());
        self.query.push_opt(event.query.as_deref());
        self.info.push(event.info.as_bytes());
    }

    /// The rows so far as one batch; the builder starts the next one empty.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let mut b = std::mem::take(self);
        for (next, last) in [
            (&mut self.path, &b.path),
            (&mut self.file, &b.file),
            (&mut self.type_name, &b.type_name),
            (&mut self.info, &b.info),
        ] {
            next.reserve_like(last);
        }
        let int64 = |v: Vec<i64>| -> ArrayRef { Arc::new(Int64Array::from(v)) };
        let int32 = |v: Vec<i32>| -> ArrayRef { Arc::new(Int32Array::from(v)) };
        let pos: ArrayRef = int64(b.pos);
        let commit_key = StructArray::try_new(
            commit_key_fields(false),
            vec![int64(b.file_seq), pos.clone(), int32(b.sub)],
            None,
        )?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(b.path.finish()?),
            Arc::new(b.file.finish()?),
            pos,
            int64(b.next_pos),
            Arc::new(commit_key),
            utc_micros_array(b.timestamp),
            Arc::new(b.type_name.finish()?),
            int32(b.type_code),
            int64(b.server_id),
            int64(b.length),
            int64(b.log_pos),
            int32(b.flags),
            Arc::new(b.gtid.finish()?),
            optional_int64(b.xid, b.xid_valid),
            Arc::new(b.database.finish()?),
            Arc::new(b.table.finish()?),
            Arc::new(b.query.finish()?),
            Arc::new(b.info.finish()?),
        ];
        RecordBatch::try_new(events_schema(), columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(s: &str) -> String {
        let mut out = Vec::new();
        json_string(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_escape_as_python_json() {
        // json.dumps('a"b\\c\n\x01é\x7f', ensure_ascii=False)
        assert_eq!(
            escaped("a\"b\\c\n\u{1}é\u{7f}"),
            "\"a\\\"b\\\\c\\n\\u0001é\u{7f}\""
        );
        assert_eq!(escaped("\u{8}\u{c}\r\t"), "\"\\b\\f\\r\\t\"");
    }

    #[test]
    fn objects_and_bytes() {
        let mut out = Vec::new();
        let mut o = JsonObject::info(&mut out, Some(0xab));
        o.int("xid", u64::MAX);
        o.opt_bytes("b", Some(b"\x00\xff"));
        o.opt_int::<u8>("n", None);
        o.end();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"checksum\": \"0x000000ab\", \"xid\": 18446744073709551615, \
             \"b\": {\"base64\": \"AP8=\"}, \"n\": null}"
        );
    }
}
