//! Row images as Arrow columns: the `changes` view (docs/spark.md), one row per row change.
//!
//! Strategy: `ChangesBuilder` owns plain growable buffers (offsets, bytes,
//! validity) for every column of the view and turns them into one arrow-rs
//! `RecordBatch` at `finish`. Row images are decoded by `rowimage` straight
//! into the `before`/`after` maps: each value's text is written into the map's
//! value bytes, never into an intermediate object. Event-level columns (file,
//! position, transaction facts...) come in an `EventFields` and are repeated
//! once per decoded row, so the builder can be fed by the Python reader today
//! and by a native event loop later, unchanged.
//!
//! The texts are exactly those of `binlake/spark/exact.py` (the pure-Python
//! path, which the differential tests hold equal): integers in decimal,
//! DECIMAL with the column's scale, DOUBLE as Python's `repr`, FLOAT as the
//! shortest `%g` text that reads back as the same float32, temporals with the
//! column's fsp digits, character data as text when valid in its charset and
//! base64 otherwise, ENUM/SET by member names. Only what has no native
//! formatter here (MySQL binary JSON, charsets other than UTF-8/ASCII/cp1252)
//! goes through a `TextHelper` supplied by the caller.
//!
//! Rule: formatting only. The wire format is read by `rowimage`; this module
//! never looks at row image bytes except through the `ValueSink` calls.

use std::io::Write;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Int32Array, Int64Array, MapArray, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::constants::MYSQL_TYPE_JSON;
use crate::decimal::push_u64;
use crate::layout::{Column, Layout};
use crate::rowimage::{
    civil_from_days, decode_row, DateTimeParts, DecimalValue, Images, Operation, Plan, Role,
    RowSink, RowsData, TimeParts, ValueError, ValueResult, ValueSink,
};
use crate::sink::texts::{
    push_base64, push_datetime, push_fraction, push_int, push_padded, push_time,
};

/// How a character column's bytes become text (else base64, like the Python path's bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextCodec {
    /// Binary collation or no known charset: always base64.
    Binary,
    Utf8,
    Ascii,
    /// MySQL's latin1 (Python's cp1252).
    Cp1252,
    /// Any other charset: decoded by the `TextHelper`.
    Other,
}

impl TextCodec {
    /// The codec of a Python codec name, as `binlake.charsets.codec_for` gives it.
    pub fn of(python_codec: Option<&str>) -> TextCodec {
        match python_codec {
            None => TextCodec::Binary,
            Some("utf-8") => TextCodec::Utf8,
            Some("ascii") => TextCodec::Ascii,
            Some("cp1252") => TextCodec::Cp1252,
            Some(_) => TextCodec::Other,
        }
    }
}

/// What the plain-Rust formatters cannot do; the Python glue implements it.
pub trait TextHelper {
    /// The text of a MySQL binary JSON value.
    fn json(&mut self, col: &Column, raw: &[u8], out: &mut Vec<u8>) -> ValueResult;
    /// The text of a partial JSON update: `before` is the column's value in
    /// the row's before image (`Some(None)`: NULL), `None` when absent from it.
    fn json_diff(
        &mut self,
        col: &Column,
        diff: &[u8],
        before: Option<Option<&str>>,
        out: &mut Vec<u8>,
    ) -> ValueResult;
    /// Decode a `TextCodec::Other` column's bytes; `false`: not valid text in its charset.
    fn decode(&mut self, col: &Column, raw: &[u8], out: &mut Vec<u8>) -> ValueResult<bool>;
}

/// The helper where there is no interpreter (the core's own tests, the
/// fuzz target): JSON is refused, other charsets are not text (base64).
pub struct NoInterpreter;

impl TextHelper for NoInterpreter {
    fn json(&mut self, _: &Column, _: &[u8], _: &mut Vec<u8>) -> ValueResult {
        Err(ValueError::corrupt("JSON text needs the Python helper"))
    }

    fn json_diff(
        &mut self,
        _: &Column,
        _: &[u8],
        _: Option<Option<&str>>,
        _: &mut Vec<u8>,
    ) -> ValueResult {
        Err(ValueError::corrupt("JSON text needs the Python helper"))
    }

    fn decode(&mut self, _: &Column, _: &[u8], _: &mut Vec<u8>) -> ValueResult<bool> {
        Ok(false)
    }
}

/// The columns shared by every row of one rows event.
#[derive(Debug, Clone)]
pub struct EventFields<'a> {
    pub path: &'a str,
    pub file: &'a str,
    pub file_seq: i64,
    pub pos: i64,
    pub sub: i32,
    /// Seconds since the epoch, as in the event header.
    pub timestamp: i64,
    pub commit_timestamp: i64,
    pub commit_pos: i64,
    pub gtid: Option<&'a str>,
    pub xid: Option<i64>,
    pub server_id: i64,
}

/// Rows decoded by one `ChangesBuilder::append_rows` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub rows: usize,
    /// Offset in the rows data where the next row starts.
    pub end: usize,
}

/// A failed `append_rows`: the rows before the bad one are kept (and counted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendError {
    pub rows: usize,
    /// Offset in the rows data of the row that failed.
    pub offset: usize,
    pub error: ValueError,
}

// -- buffers ---------------------------------------------------------------------------

/// A string column being built: Arrow's offsets, bytes and validity.
#[derive(Debug)]
pub(crate) struct Strings {
    offsets: Vec<i32>,
    data: Vec<u8>,
    valid: Vec<bool>,
    nulls: usize,
    /// More than 2 GiB of text: `finish` refuses rather than wrap offsets.
    overflow: bool,
}

impl Default for Strings {
    fn default() -> Self {
        Strings {
            offsets: vec![0],
            data: Vec::new(),
            valid: Vec::new(),
            nulls: 0,
            overflow: false,
        }
    }
}

impl Strings {
    /// Close the value written into `data` since the last one.
    #[inline]
    fn end(&mut self) {
        let n = self.data.len();
        self.overflow |= n > i32::MAX as usize;
        self.offsets.push(n as i32);
        self.valid.push(true);
    }

    #[inline]
    pub(crate) fn push(&mut self, s: &[u8]) {
        self.data.extend_from_slice(s);
        self.end();
    }

    #[inline]
    pub(crate) fn push_null(&mut self) {
        let last = self.offsets[self.offsets.len() - 1];
        self.offsets.push(last);
        self.valid.push(false);
        self.nulls += 1;
    }

    /// A value, or a null for None.
    #[inline]
    pub(crate) fn push_opt(&mut self, value: Option<&str>) {
        match value {
            Some(v) => self.push(v.as_bytes()),
            None => self.push_null(),
        }
    }

    fn push_n(&mut self, s: Option<&str>, n: usize) {
        match s {
            Some(s) => {
                let (base, len) = (self.data.len(), s.len());
                self.data.reserve(len * n);
                for _ in 0..n {
                    self.data.extend_from_slice(s.as_bytes());
                }
                self.overflow |= self.data.len() > i32::MAX as usize;
                self.offsets
                    .extend((1..=n).map(|i| (base + i * len) as i32));
                self.valid.extend(std::iter::repeat_n(true, n));
            }
            None => {
                for _ in 0..n {
                    self.push_null();
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.valid.len()
    }

    /// Room for a column like `other`, so that the next batch grows without copying.
    pub(crate) fn reserve_like(&mut self, other: &Strings) {
        self.offsets.reserve(other.offsets.len());
        self.data.reserve(other.data.len());
        self.valid.reserve(other.valid.len());
    }

    fn mark(&self) -> (usize, usize, usize) {
        (self.valid.len(), self.data.len(), self.nulls)
    }

    fn truncate(&mut self, (len, bytes, nulls): (usize, usize, usize)) {
        self.valid.truncate(len);
        self.offsets.truncate(len + 1);
        self.data.truncate(bytes);
        self.nulls = nulls;
    }

    pub(crate) fn finish(&mut self) -> Result<StringArray, ArrowError> {
        let taken = std::mem::take(self);
        if taken.overflow {
            return Err(ArrowError::ComputeError(
                "more than 2 GiB of text in one batch of the changes view".into(),
            ));
        }
        let nulls = (taken.nulls > 0).then(|| NullBuffer::from(taken.valid));
        let offsets = OffsetBuffer::new(ScalarBuffer::from(taken.offsets));
        StringArray::try_new(offsets, Buffer::from_vec(taken.data), nulls)
    }
}

/// A map<string, string> column: one entry list per row, or NULL.
#[derive(Debug)]
struct TextMap {
    offsets: Vec<i32>,
    valid: Vec<bool>,
    nulls: usize,
    keys: Strings,
    values: Strings,
}

impl Default for TextMap {
    fn default() -> Self {
        TextMap {
            offsets: vec![0],
            valid: Vec::new(),
            nulls: 0,
            keys: Strings::default(),
            values: Strings::default(),
        }
    }
}

type MapMark = (usize, usize, (usize, usize, usize), (usize, usize, usize));

impl TextMap {
    #[inline]
    fn end_entries(&mut self, valid: bool) {
        // entry counts stay far below i32::MAX: each holds a key of text, bounded by `keys`
        self.offsets.push(self.keys.len() as i32);
        self.valid.push(valid);
        if !valid {
            self.nulls += 1;
        }
    }

    fn mark(&self) -> MapMark {
        (
            self.valid.len(),
            self.nulls,
            self.keys.mark(),
            self.values.mark(),
        )
    }

    fn truncate(&mut self, (len, nulls, keys, values): MapMark) {
        self.valid.truncate(len);
        self.offsets.truncate(len + 1);
        self.nulls = nulls;
        self.keys.truncate(keys);
        self.values.truncate(values);
    }

    fn reserve_like(&mut self, other: &TextMap) {
        self.offsets.reserve(other.offsets.len());
        self.valid.reserve(other.valid.len());
        self.keys.reserve_like(&other.keys);
        self.values.reserve_like(&other.values);
    }

    fn finish(&mut self) -> Result<MapArray, ArrowError> {
        let mut taken = std::mem::take(self);
        if taken.keys.len() > i32::MAX as usize {
            return Err(ArrowError::ComputeError(
                "too many map entries in one batch".into(),
            ));
        }
        let keys: ArrayRef = Arc::new(taken.keys.finish()?);
        let values: ArrayRef = Arc::new(taken.values.finish()?);
        let entries = StructArray::try_new(entry_fields(), vec![keys, values], None)?;
        let nulls = (taken.nulls > 0).then(|| NullBuffer::from(taken.valid));
        let offsets = OffsetBuffer::new(ScalarBuffer::from(taken.offsets));
        MapArray::try_new(entries_field(), offsets, entries, nulls, false)
    }
}

// -- schema ----------------------------------------------------------------------------

fn entry_fields() -> Fields {
    // pyarrow's names for map<string, string>, so that the schemas compare equal
    Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, true),
    ])
}

fn entries_field() -> Arc<Field> {
    Arc::new(Field::new(
        "entries",
        DataType::Struct(entry_fields()),
        false,
    ))
}

fn text_map() -> DataType {
    DataType::Map(entries_field(), false)
}

pub(crate) fn utc_micros() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// A `utc_micros()` column.
pub(crate) fn utc_micros_array(micros: Vec<i64>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from(micros).with_timezone("UTC"))
}

/// An Int64 column whose nulls are where `valid` is false (no null buffer
/// when there are none, as pyarrow builds it).
pub(crate) fn optional_int64(values: Vec<i64>, valid: Vec<bool>) -> ArrayRef {
    let nulls = valid.contains(&false).then(|| NullBuffer::from(valid));
    Arc::new(Int64Array::new(ScalarBuffer::from(values), nulls))
}

/// The fields of `commit_key`, the views' sort key: file, event, sub-event
/// and, in the changes view, the row within it.
pub(crate) fn commit_key_fields(with_row: bool) -> Fields {
    let mut fields = vec![
        Field::new("file_seq", DataType::Int64, true),
        Field::new("pos", DataType::Int64, true),
        Field::new("sub", DataType::Int32, true),
    ];
    if with_row {
        fields.push(Field::new("row", DataType::Int32, true));
    }
    Fields::from(fields)
}

/// The schema of the changes view (`CHANGES` in binlake/spark/batches.py).
pub fn changes_schema() -> SchemaRef {
    let field = |name: &str, kind: DataType| Field::new(name, kind, true);
    Arc::new(Schema::new(vec![
        field("path", DataType::Utf8),
        field("file", DataType::Utf8),
        field("pos", DataType::Int64),
        field("row_index", DataType::Int32),
        field("commit_key", DataType::Struct(commit_key_fields(true))),
        field("timestamp", utc_micros()),
        field("commit_timestamp", utc_micros()),
        field("commit_pos", DataType::Int64),
        field("gtid", DataType::Utf8),
        field("xid", DataType::Int64),
        field("server_id", DataType::Int64),
        field("database", DataType::Utf8),
        field("table", DataType::Utf8),
        field("op", DataType::Utf8),
        field("before", text_map()),
        field("after", text_map()),
    ]))
}

// -- the builder -----------------------------------------------------------------------

/// The changes view's columns for a batch of rows.
#[derive(Debug, Default)]
pub struct ChangesBuilder {
    path: Strings,
    file: Strings,
    pos: Vec<i64>,
    row_index: Vec<i32>,
    file_seq: Vec<i64>,
    sub: Vec<i32>,
    timestamp: Vec<i64>,
    commit_timestamp: Vec<i64>,
    commit_pos: Vec<i64>,
    gtid: Strings,
    xid: Vec<i64>,
    xid_valid: Vec<bool>,
    server_id: Vec<i64>,
    database: Strings,
    table: Strings,
    op: Strings,
    before: TextMap,
    after: TextMap,
}

impl ChangesBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Rows appended since the last `finish`.
    pub fn rows(&self) -> usize {
        self.pos.len()
    }

    /// Bytes of map text appended since the last `finish` (Arrow's offsets are i32).
    pub fn text_bytes(&self) -> usize {
        self.before.keys.data.len()
            + self.before.values.data.len()
            + self.after.keys.data.len()
            + self.after.values.data.len()
    }

    /// Decode up to `max_rows` rows of a rows event, from offset `start` of its
    /// rows data, numbering them from `first_row`. On a bad row, the rows
    /// before it stay appended and the error says where it starts.
    #[allow(clippy::too_many_arguments)]
    pub fn append_rows<H: TextHelper>(
        &mut self,
        layout: &Layout,
        rows: &RowsData,
        start: usize,
        max_rows: usize,
        first_row: usize,
        event: &EventFields,
        codecs: &[TextCodec],
        keys: &RowKeys,
        helper: &mut H,
    ) -> Result<Appended, AppendError> {
        let mut images = Images::new(rows.data);
        images.pos = start;
        let mut sink = ChangeSink {
            before: &mut self.before,
            after: &mut self.after,
            helper,
            codecs,
            role: Role::Before,
            partial: rows.partial,
            before_json: Vec::new(),
            before_plan: rows.before,
            before_keys: &keys.before,
            after_keys: keys.after.as_ref().unwrap_or(&keys.before),
        };
        let mut done = 0;
        let mut failure = None;
        while done < max_rows && !images.at_end() {
            let row_start = images.pos;
            let marks = (sink.before.mark(), sink.after.mark());
            let mut result = decode_row(layout, rows, &mut images, &mut sink);
            if result.is_ok() && images.pos == row_start {
                // Images of no columns take no bytes: the data left cannot be
                // rows of this layout, and appending on would never end
                // (`rowimage::decode_rows` says the same).
                let left = rows.data.len() - row_start;
                result = Err(ValueError::corrupt(format!(
                    "row images of no columns cannot hold the {left} bytes left"
                )));
            }
            if let Err(error) = result {
                // drop the half-written row: every column keeps the same length
                sink.before.truncate(marks.0);
                sink.after.truncate(marks.1);
                failure = Some(AppendError {
                    rows: done,
                    offset: row_start,
                    error,
                });
                break;
            }
            done += 1;
        }
        self.append_event(layout, rows.operation, event, first_row, done);
        match failure {
            Some(e) => Err(e),
            None => Ok(Appended {
                rows: done,
                end: images.pos,
            }),
        }
    }

    /// The event-level columns of `n` decoded rows.
    fn append_event(
        &mut self,
        layout: &Layout,
        operation: Operation,
        event: &EventFields,
        first_row: usize,
        n: usize,
    ) {
        let repeat = |v: &mut Vec<i64>, x: i64| v.extend(std::iter::repeat_n(x, n));
        self.path.push_n(Some(event.path), n);
        self.file.push_n(Some(event.file), n);
        repeat(&mut self.pos, event.pos);
        // row numbers of one event stay far below 2^31 (an event is at most 4 GiB of rows)
        self.row_index
            .extend((first_row..first_row + n).map(|i| i as i32));
        repeat(&mut self.file_seq, event.file_seq);
        self.sub.extend(std::iter::repeat_n(event.sub, n));
        repeat(
            &mut self.timestamp,
            event.timestamp.saturating_mul(1_000_000),
        );
        repeat(
            &mut self.commit_timestamp,
            event.commit_timestamp.saturating_mul(1_000_000),
        );
        repeat(&mut self.commit_pos, event.commit_pos);
        self.gtid.push_n(event.gtid, n);
        repeat(&mut self.xid, event.xid.unwrap_or(0));
        self.xid_valid
            .extend(std::iter::repeat_n(event.xid.is_some(), n));
        repeat(&mut self.server_id, event.server_id);
        self.database.push_n(Some(&layout.database), n);
        self.table.push_n(Some(&layout.table), n);
        let op = match operation {
            Operation::Insert => "c",
            Operation::Update => "u",
            Operation::Delete => "d",
        };
        self.op.push_n(Some(op), n);
    }

    /// The rows appended so far as one record batch; the builder starts over.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let mut b = std::mem::take(self);
        // batches are alike: size the next one's buffers as this one's
        for (next, last) in [
            (&mut self.path, &b.path),
            (&mut self.file, &b.file),
            (&mut self.gtid, &b.gtid),
            (&mut self.database, &b.database),
            (&mut self.table, &b.table),
            (&mut self.op, &b.op),
        ] {
            next.reserve_like(last);
        }
        self.before.reserve_like(&b.before);
        self.after.reserve_like(&b.after);
        let rows = b.pos.len();
        for v in [
            &mut self.pos,
            &mut self.file_seq,
            &mut self.timestamp,
            &mut self.commit_timestamp,
            &mut self.commit_pos,
            &mut self.xid,
            &mut self.server_id,
        ] {
            v.reserve(rows);
        }
        self.row_index.reserve(rows);
        self.sub.reserve(rows);
        self.xid_valid.reserve(rows);
        let int64 = |v: Vec<i64>| -> ArrayRef { Arc::new(Int64Array::from(v)) };
        let row_index: ArrayRef = Arc::new(Int32Array::from(b.row_index));
        let pos = Int64Array::from(b.pos);
        let commit_key = StructArray::try_new(
            commit_key_fields(true),
            vec![
                int64(b.file_seq),
                Arc::new(pos.clone()),
                Arc::new(Int32Array::from(b.sub)),
                row_index.clone(),
            ],
            None,
        )?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(b.path.finish()?),
            Arc::new(b.file.finish()?),
            Arc::new(pos),
            row_index,
            Arc::new(commit_key),
            utc_micros_array(b.timestamp),
            utc_micros_array(b.commit_timestamp),
            int64(b.commit_pos),
            Arc::new(b.gtid.finish()?),
            optional_int64(b.xid, b.xid_valid),
            int64(b.server_id),
            Arc::new(b.database.finish()?),
            Arc::new(b.table.finish()?),
            Arc::new(b.op.finish()?),
            Arc::new(b.before.finish()?),
            Arc::new(b.after.finish()?),
        ];
        RecordBatch::try_new(changes_schema(), columns)
    }
}

// -- the sink --------------------------------------------------------------------------

struct ChangeSink<'a, H> {
    before: &'a mut TextMap,
    after: &'a mut TextMap,
    helper: &'a mut H,
    /// Each column's codec, by index (the `Layout` has collation ids; the caller resolves them).
    codecs: &'a [TextCodec],
    role: Role,
    /// A PARTIAL_UPDATE_ROWS event: JSON diffs apply to the before image's documents.
    partial: bool,
    /// The before image's JSON columns of the current row (partial updates only).
    before_json: Vec<(usize, Option<String>)>,
    /// The keys of each image, written whole when it starts (they are the
    /// same for every row of the event).
    before_plan: &'a Plan,
    before_keys: &'a ImageKeys,
    after_keys: &'a ImageKeys,
}

/// The map keys of a rows event's images (`RowsData`'s before and after
/// plans), the same for every row: built once per plan by the caller.
#[derive(Debug)]
pub struct RowKeys {
    before: ImageKeys,
    /// None when the after image has the before image's plan.
    after: Option<ImageKeys>,
}

impl RowKeys {
    pub fn of(layout: &Layout, before: &Plan, after: &Plan) -> RowKeys {
        RowKeys {
            before: ImageKeys::of(layout, before),
            after: (!std::ptr::eq(before, after)).then(|| ImageKeys::of(layout, after)),
        }
    }
}

/// The keys of an image's columns: their bytes back to back and where each ends.
#[derive(Debug)]
struct ImageKeys {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl ImageKeys {
    fn of(layout: &Layout, plan: &Plan) -> ImageKeys {
        let mut data = Vec::new();
        let mut ends = Vec::with_capacity(plan.columns.len());
        for &index in &plan.columns {
            match layout.columns.get(index).and_then(|c| c.name.as_ref()) {
                Some(name) => data.extend_from_slice(name.as_bytes()),
                None => {
                    let _ = write!(data, "@{}", index + 1);
                }
            }
            ends.push(data.len());
        }
        ImageKeys { data, ends }
    }
}

impl Strings {
    /// Values that are all present, given as their bytes and where each ends.
    fn push_all(&mut self, keys: &ImageKeys) {
        let base = self.data.len();
        self.data.extend_from_slice(&keys.data);
        self.overflow |= self.data.len() > i32::MAX as usize;
        self.offsets
            .extend(keys.ends.iter().map(|&end| (base + end) as i32));
        self.valid
            .extend(std::iter::repeat_n(true, keys.ends.len()));
    }
}

impl<H: TextHelper> ChangeSink<'_, H> {
    #[inline]
    fn map(&mut self) -> &mut TextMap {
        match self.role {
            Role::Before => self.before,
            Role::After => self.after,
        }
    }

    /// Start a value (its key is in since the image started): its text is
    /// written into the returned bytes.
    #[inline]
    fn key(&mut self, _col: &Column) -> &mut Vec<u8> {
        &mut self.map().values.data
    }

    #[inline]
    fn done(&mut self) -> ValueResult {
        self.map().values.end();
        Ok(())
    }

    /// Character data: as is when valid in the column's charset, else base64.
    fn text(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        let codec = self.codecs.get(col.index).unwrap_or(&TextCodec::Binary);
        self.key(col);
        let out = values(self.before, self.after, self.role);
        let at = out.len();
        let as_text = match codec {
            TextCodec::Binary => false,
            // the same verdict as std (and Python's strict utf-8), with SIMD: text is most of the bytes
            TextCodec::Utf8 => simdutf8::basic::from_utf8(bytes).is_ok(),
            TextCodec::Ascii => bytes.is_ascii(),
            TextCodec::Cp1252 => push_cp1252(out, bytes),
            TextCodec::Other => self.helper.decode(col, bytes, out)?,
        };
        match codec {
            TextCodec::Utf8 | TextCodec::Ascii if as_text => out.extend_from_slice(bytes),
            _ if as_text => {}
            _ => {
                out.truncate(at);
                push_base64(out, bytes);
            }
        }
        self.done()
    }

    /// Bytes that are not text: base64 (the key is already in).
    fn base64(&mut self, bytes: &[u8]) -> ValueResult {
        push_base64(values(self.before, self.after, self.role), bytes);
        self.done()
    }
}

impl<H: TextHelper> ValueSink for ChangeSink<'_, H> {
    fn null(&mut self, col: &Column) -> ValueResult {
        if self.partial && self.role == Role::Before && col.type_code == MYSQL_TYPE_JSON {
            self.before_json.push((col.index, None));
        }
        self.key(col);
        self.map().values.push_null();
        Ok(())
    }

    fn int(&mut self, col: &Column, value: i64, bytes: u8) -> ValueResult {
        push_int(self.key(col), col.unsigned, value, bytes);
        self.done()
    }

    fn float(&mut self, col: &Column, value: f32) -> ValueResult {
        push_float32(self.key(col), value);
        self.done()
    }

    fn double(&mut self, col: &Column, value: f64) -> ValueResult {
        push_repr(self.key(col), value);
        self.done()
    }

    fn decimal(&mut self, col: &Column, value: &DecimalValue, _raw: &[u8]) -> ValueResult {
        value.write_text(self.key(col));
        self.done()
    }

    fn year(&mut self, col: &Column, year: u32) -> ValueResult {
        push_u64(self.key(col), year as u64);
        self.done()
    }

    fn date(&mut self, col: &Column, year: u32, month: u32, day: u32) -> ValueResult {
        // valid or not (zero dates), Python prints both as %04d-%02d-%02d
        let out = self.key(col);
        push_padded(out, year as u64, 4);
        out.push(b'-');
        push_padded(out, month as u64, 2);
        out.push(b'-');
        push_padded(out, day as u64, 2);
        self.done()
    }

    fn datetime(&mut self, col: &Column, t: DateTimeParts, _raw: &[u8]) -> ValueResult {
        // a valid datetime's isoformat and MysqlTemporal's text of an invalid one agree
        let out = self.key(col);
        push_datetime(out, t.year, t.month, t.day, t.hour, t.minute, t.second);
        push_fraction(out, t.micro as i64, t.fsp);
        self.done()
    }

    fn datetime_negative(&mut self, col: &Column, packed: i64, _raw: &[u8]) -> ValueResult {
        let _ = write!(self.key(col), "-{}", -(packed as i128));
        self.done()
    }

    fn timestamp(&mut self, col: &Column, seconds: u32, micro: u32, fsp: u8) -> ValueResult {
        if micro >= 1_000_000 {
            // Python's datetime refuses it, so the reference fails the row too
            return Err(ValueError::corrupt("microsecond must be in 0..999999"));
        }
        let out = self.key(col);
        if seconds == 0 && micro == 0 {
            out.extend_from_slice(b"0000-00-00 00:00:00");
        } else {
            let secs = seconds as i64;
            let (year, month, day) = civil_from_days(secs.div_euclid(86400));
            let rem = secs.rem_euclid(86400) as u32;
            push_datetime(
                out,
                year as u32,
                month,
                day,
                rem / 3600,
                rem / 60 % 60,
                rem % 60,
            );
        }
        push_fraction(out, micro as i64, fsp);
        self.done()
    }

    fn time(&mut self, col: &Column, t: TimeParts, _raw: &[u8]) -> ValueResult {
        let out = self.key(col);
        let frac = push_time(out, &t);
        push_fraction(out, frac as i64, t.fsp);
        self.done()
    }

    fn bit(&mut self, col: &Column, value: u64, _raw: &[u8]) -> ValueResult {
        push_u64(self.key(col), value);
        self.done()
    }

    fn string(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        self.blob(col, bytes)
    }

    fn blob(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        self.text(col, bytes)
    }

    fn geometry(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        self.key(col);
        self.base64(bytes)
    }

    fn json(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        self.key(col);
        let at = self.map().values.data.len();
        self.helper
            .json(col, bytes, values(self.before, self.after, self.role))?;
        if self.partial && self.role == Role::Before {
            let text = String::from_utf8_lossy(&self.map().values.data[at..]).into_owned();
            self.before_json.push((col.index, Some(text)));
        }
        self.done()
    }

    fn json_diff(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        self.key(col);
        let before = self
            .before_json
            .iter()
            .find(|(index, _)| *index == col.index)
            .map(|(_, text)| text.as_deref());
        let out = values(self.before, self.after, self.role);
        self.helper.json_diff(col, bytes, before, out)?;
        self.done()
    }

    fn vector(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        // json.dumps of the list of floats
        let out = self.key(col);
        push_json_vector(out, bytes);
        self.done()
    }

    fn enum_index(&mut self, col: &Column, index: u16, _raw: &[u8]) -> ValueResult {
        let out = self.key(col);
        match &col.enum_values {
            None => push_u64(out, index as u64),
            Some(names) => {
                if let Some(name) = (index as usize).checked_sub(1).and_then(|i| names.get(i)) {
                    out.extend_from_slice(name.as_bytes());
                }
            }
        }
        self.done()
    }

    fn set_mask(&mut self, col: &Column, mask: u64, _raw: &[u8]) -> ValueResult {
        let out = self.key(col);
        match &col.set_values {
            None => push_u64(out, mask),
            Some(names) => {
                // members in definition order, as exact.py sorts them
                let mut first = true;
                for (i, name) in names.iter().enumerate().take(64) {
                    if mask >> i & 1 == 1 {
                        if !first {
                            out.push(b',');
                        }
                        out.extend_from_slice(name.as_bytes());
                        first = false;
                    }
                }
            }
        }
        self.done()
    }
}

impl<H: TextHelper> RowSink for ChangeSink<'_, H> {
    fn start_row(&mut self, _operation: Operation) -> ValueResult {
        self.before_json.clear();
        Ok(())
    }

    fn start_image(&mut self, role: Role, plan: &Plan) -> ValueResult {
        self.role = role;
        let keys = if std::ptr::eq(plan, self.before_plan) {
            self.before_keys
        } else {
            self.after_keys
        };
        self.map().keys.push_all(keys);
        Ok(())
    }

    fn end_image(&mut self, role: Role) -> ValueResult {
        match role {
            Role::Before => self.before.end_entries(true),
            Role::After => self.after.end_entries(true),
        }
        Ok(())
    }

    fn end_row(&mut self) -> ValueResult {
        // NULL maps for the image an operation has not: before of an insert, after of a delete
        let (before, after) = (self.before.valid.len(), self.after.valid.len());
        if before < after {
            self.before.end_entries(false);
        } else if after < before {
            self.after.end_entries(false);
        }
        Ok(())
    }
}

/// The value bytes of the image being written (a free function: the helper is borrowed beside it).
#[inline]
fn values<'m>(before: &'m mut TextMap, after: &'m mut TextMap, role: Role) -> &'m mut Vec<u8> {
    match role {
        Role::Before => &mut before.values.data,
        Role::After => &mut after.values.data,
    }
}

// -- text formatters -------------------------------------------------------------------

/// Python's cp1252 decoding (MySQL latin1) as UTF-8; false (nothing kept) if
/// a byte has no character in it, as Python's codec then fails.
pub(crate) fn push_cp1252(out: &mut Vec<u8>, bytes: &[u8]) -> bool {
    const HIGH: [u16; 32] = [
        0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
        0x0152, 0, 0x017D, 0, 0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC,
        0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
    ];
    if bytes.is_ascii() {
        out.extend_from_slice(bytes);
        return true;
    }
    let at = out.len();
    let mut utf8 = [0u8; 4];
    for &b in bytes {
        let code = match b {
            0x80..=0x9F => HIGH[(b - 0x80) as usize] as u32,
            _ => b as u32,
        };
        match char::from_u32(code) {
            Some(c) if code != 0 || b == 0 => {
                out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes())
            }
            _ => {
                out.truncate(at);
                return false;
            }
        }
    }
    true
}

/// Sign, significant digits and decimal exponent of Rust's `{:e}` text.
fn split_exponent(text: &str) -> (bool, Vec<u8>, i32) {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
    let digits = mantissa.bytes().filter(|b| b.is_ascii_digit()).collect();
    (negative, digits, exp.parse().unwrap_or(0))
}

fn push_exponent(out: &mut Vec<u8>, exp: i32) {
    let _ = write!(
        out,
        "e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.unsigned_abs()
    );
}

/// Digits `d0 d1 ...` times 10^exp written positionally (no exponent).
fn push_positional(out: &mut Vec<u8>, digits: &[u8], exp: i32, always_fraction: bool) {
    if exp < 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-exp - 1) as usize, b'0');
        out.extend_from_slice(digits);
        return;
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        out.extend_from_slice(digits);
        out.resize(out.len() + int_len - digits.len(), b'0');
        if always_fraction {
            out.extend_from_slice(b".0");
        }
    } else {
        out.extend_from_slice(&digits[..int_len]);
        out.push(b'.');
        out.extend_from_slice(&digits[int_len..]);
    }
}

/// A Python float as `json.dumps` writes it (`NaN`, `Infinity`, else `repr`).
pub fn push_json_float(out: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
    } else {
        push_repr(out, v);
    }
}

/// A VECTOR's float32s as `json.dumps` writes the list of Python floats.
pub fn push_json_vector(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'[');
    for (i, c) in bytes.chunks_exact(4).enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        push_json_float(out, f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64);
    }
    out.push(b']');
}

/// Python's `repr(float)`: the shortest text that reads back, positional
/// for exponents -4..15, else `d.ddde+XX`.
pub fn push_repr(out: &mut Vec<u8>, v: f64) {
    if !v.is_finite() {
        out.extend_from_slice(match (v.is_nan(), v > 0.0) {
            (true, _) => b"nan".as_slice(),
            (false, true) => b"inf",
            (false, false) => b"-inf",
        });
        return;
    }
    let (negative, digits, exp) = split_exponent(&format!("{v:e}"));
    if negative {
        out.push(b'-');
    }
    if !(-4..16).contains(&exp) {
        push_mantissa(out, &digits);
        push_exponent(out, exp);
    } else {
        push_positional(out, &digits, exp, true);
    }
}

fn push_mantissa(out: &mut Vec<u8>, digits: &[u8]) {
    out.push(digits.first().copied().unwrap_or(b'0'));
    if digits.len() > 1 {
        out.push(b'.');
        out.extend_from_slice(&digits[1..]);
    }
}

/// Python's `format(v, f".{precision}g")` of a finite float.
fn push_general(out: &mut Vec<u8>, v: f64, precision: usize) {
    let (negative, mut digits, exp) = split_exponent(&format!("{:.*e}", precision - 1, v));
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop(); // insignificant trailing zeros go
    }
    if negative {
        out.push(b'-');
    }
    if (-4..precision as i32).contains(&exp) {
        push_positional(out, &digits, exp, false);
    } else {
        push_mantissa(out, &digits);
        push_exponent(out, exp);
    }
}

/// exact.py's `float32_text`: the shortest `%.Ng` (N = 6..9) that reads back
/// as the same float32, else `repr`.
pub fn push_float32(out: &mut Vec<u8>, value: f32) {
    if value.is_finite() {
        let wide = value as f64;
        let at = out.len();
        for precision in 6..=9 {
            push_general(out, wide, precision);
            let back = std::str::from_utf8(&out[at..])
                .ok()
                .and_then(|t| t.parse::<f64>().ok());
            if let Some(back) = back {
                let narrow = back as f32;
                // struct.pack('<f') refuses what overflows a float32
                if !(narrow.is_infinite() && back.is_finite()) && narrow == value {
                    return;
                }
            }
            out.truncate(at);
        }
    }
    push_repr(out, value as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(v: f64) -> String {
        let mut out = Vec::new();
        push_repr(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    fn f32_text(v: f32) -> String {
        let mut out = Vec::new();
        push_float32(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn repr_is_pythons() {
        // expected texts from CPython's repr()
        let cases: [(f64, &str); 16] = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-300, "1.5e-300"),
            (-2.5, "-2.5"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (12345.678, "12345.678"),
        ];
        for (v, text) in cases {
            assert_eq!(repr(v), text, "{v:e}");
        }
    }

    #[test]
    fn float32_is_exact_py() {
        // expected texts from binlake.spark.read.exact.float32_text
        let cases: [(f32, &str); 12] = [
            (0.1, "0.1"),
            (1.0, "1"),
            (-0.0, "-0"),
            (3.4028235e38, "3.4028235e+38"),
            (1e-45, "1.4013e-45"),
            (16777216.0, "16777216"),
            (123456.79, "123456.79"),
            (0.3333333, "0.3333333"),
            (1e-5, "1e-05"),
            (100000.5, "100000.5"),
            (f32::INFINITY, "inf"),
            (f32::NAN, "nan"),
        ];
        for (v, text) in cases {
            assert_eq!(f32_text(v), text, "{v:e}");
        }
    }

    #[test]
    fn cp1252_fails_on_undefined_bytes() {
        let mut out = Vec::new();
        assert!(push_cp1252(&mut out, b"caf\xe9 \x80"));
        assert_eq!(out, "café €".as_bytes());
        assert!(!push_cp1252(&mut out, b"\x81"));
        assert_eq!(out, "café €".as_bytes());
    }

    /// One insert event's rows (`data`, every column present) appended to a
    /// new builder: the append's result and the batch.
    fn append_inserts(
        layout: &Layout,
        data: &[u8],
        codecs: &[TextCodec],
        xid: Option<i64>,
    ) -> (Result<Appended, AppendError>, RecordBatch) {
        let plan = Plan::new(layout, &[(1u8 << layout.columns.len()) - 1], false);
        let rows = RowsData {
            operation: Operation::Insert,
            partial: false,
            before: &plan,
            after: &plan,
            data,
        };
        let event = EventFields {
            path: "/x/bin.000001",
            file: "bin.000001",
            file_seq: 1,
            pos: 100,
            sub: 0,
            timestamp: 2,
            commit_timestamp: 3,
            commit_pos: 200,
            gtid: None,
            xid,
            server_id: 7,
        };
        let mut b = ChangesBuilder::new();
        let keys = RowKeys::of(layout, &plan, &plan);
        let appended = b.append_rows(
            layout,
            &rows,
            0,
            10,
            0,
            &event,
            codecs,
            &keys,
            &mut NoInterpreter,
        );
        (appended, b.finish().unwrap())
    }

    /// The values of row `row`'s `after` map.
    fn after_values(batch: &RecordBatch, row: usize) -> StringArray {
        let after = batch
            .column(15)
            .as_any()
            .downcast_ref::<MapArray>()
            .unwrap();
        let entries = after.value(row);
        entries
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .clone()
    }

    #[test]
    fn rows_become_maps_and_a_bad_row_is_dropped_whole() {
        use crate::constants::{MYSQL_TYPE_LONG, MYSQL_TYPE_VARCHAR};
        use arrow_array::Array;
        let mut id = Column::new(0, MYSQL_TYPE_LONG, 0, true);
        id.name = Some("id".into());
        let mut s = Column::new(1, MYSQL_TYPE_VARCHAR, 40, true);
        s.name = Some("s".into());
        let layout = Layout {
            database: "db".into(),
            table: "t".into(),
            columns: vec![id, s],
        };
        // (1, 'hé'), (-2, NULL), then a row cut short
        let data = [
            &[0x00, 1, 0, 0, 0, 3][..],
            "hé".as_bytes(),
            &[0x02, 0xFE, 0xFF, 0xFF, 0xFF],
            &[0x00, 7, 0],
        ]
        .concat();
        let codecs = [TextCodec::Binary, TextCodec::Utf8];
        let (failed, batch) = append_inserts(&layout, &data, &codecs, Some(-1));
        let failed = failed.unwrap_err();
        assert_eq!((failed.rows, failed.offset), (2, 14));
        assert_eq!(batch.num_rows(), 2);
        let values = after_values(&batch, 1);
        assert_eq!(values.value(0), "-2");
        assert!(values.is_null(1));
        assert_eq!(after_values(&batch, 0).value(1), "hé");
        assert!(batch.column(14).is_null(0));
    }

    #[test]
    fn mariadb_hires_temporals_have_their_fsp_digits() {
        use crate::constants::{MYSQL_TYPE_DATETIME, MYSQL_TYPE_TIME, MYSQL_TYPE_TIMESTAMP};
        use arrow_array::Array;
        let columns = [
            (MYSQL_TYPE_TIMESTAMP, 3, "ts"),
            (MYSQL_TYPE_DATETIME, 6, "dt"),
            (MYSQL_TYPE_TIME, 2, "t"),
        ]
        .iter()
        .enumerate()
        .map(|(i, &(type_code, meta, name))| {
            let mut col = Column::new(i, type_code, meta, true);
            col.name = Some(name.into());
            col
        })
        .collect();
        let layout = Layout {
            database: "db".into(),
            table: "t".into(),
            columns,
        };
        // 2022-05-16 14:53:10.123 UTC; 9999-12-31 23:59:59.999999 as
        // pack_time() in microseconds; -00:00:00.01 below TIME(2)'s zero point
        let days = (9999 * 13 + 12) * 32 + 31u64;
        let micros = (days * 86400 + 23 * 3600 + 59 * 60 + 59) * 1_000_000 + 999_999;
        let time = (838 * 3600 + 59 * 60 + 59 + 1) * 100 - 1u64;
        let data = [
            &[0x00, 0x62, 0x82, 0x65, 0x56, 0x00, 0x7B][..],
            &micros.to_be_bytes(),
            &time.to_be_bytes()[4..],
        ]
        .concat();
        let codecs = [TextCodec::Binary, TextCodec::Binary, TextCodec::Binary];
        let (appended, batch) = append_inserts(&layout, &data, &codecs, None);
        assert!(appended.is_ok());
        let values = after_values(&batch, 0);
        let texts: Vec<&str> = (0..values.len()).map(|i| values.value(i)).collect();
        assert_eq!(
            texts,
            [
                "2022-05-16 14:53:10.123",
                "9999-12-31 23:59:59.999999",
                "-00:00:00.01"
            ]
        );
    }

    #[test]
    fn schema_has_the_view_columns() {
        let schema = changes_schema();
        assert_eq!(schema.fields().len(), 16);
        let mut b = ChangesBuilder::new();
        let batch = b.finish().unwrap();
        assert_eq!(batch.num_rows(), 0);
    }
}
