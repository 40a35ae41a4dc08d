//! Python glue of the changes view's Arrow batches (`sink::arrow`).
//!
//! Strategy: the Python reader still walks the events; for each rows event it
//! hands `ChangeBatch.add_rows` the rows data and the few event-level facts,
//! and the builder decodes every row natively into Arrow buffers. File and
//! transaction facts are set once (`set_file`, `set_transaction`), not per
//! event. A finished batch leaves as an `ArrowBatch`, which pyarrow imports
//! through the Arrow C data interface (`__arrow_c_array__`, PyCapsules), so no
//! Python object is made per value. Python is called back only for MySQL
//! binary JSON and charsets without a native decoder (`binlake.spark.exact`).

use std::ffi::CStr;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, RecordBatch, StructArray};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyModule, PyString, PyTuple};

use super::values::RowLayout;
use crate::layout::Column;
use crate::rowimage::{Operation, RowsData, ValueError, ValueResult};
use crate::sink::arrow::{changes_schema, ChangesBuilder, EventFields, TextCodec, TextHelper};

/// A table map's layout for the changes view: the shared `RowLayout` (its
/// plans are reused) and each column's text codec.
#[pyclass(module = "binlake._native", unsendable)]
pub struct ChangeLayout {
    rows: Py<RowLayout>,
    codecs: Vec<TextCodec>,
    /// Python codec names of the `TextCodec::Other` columns, for the helper.
    codec_names: Vec<Option<Py<PyString>>>,
}

#[pymethods]
impl ChangeLayout {
    /// `codecs`: each column's Python codec (`binlake.charsets.codec_for`), None for bytes.
    #[new]
    fn new(py: Python<'_>, rows: Py<RowLayout>, codecs: Vec<Option<String>>) -> Self {
        let codec_names = codecs
            .iter()
            .map(|c| c.as_deref().map(|name| PyString::intern(py, name).unbind()))
            .collect();
        let codecs = codecs.iter().map(|c| TextCodec::of(c.as_deref())).collect();
        ChangeLayout {
            rows,
            codecs,
            codec_names,
        }
    }
}

/// Python functions of `binlake.spark.exact` for what has no native text.
pub(super) struct Helpers {
    json_text: Py<PyAny>,
    partial_json_text: Py<PyAny>,
    codec_text: Py<PyAny>,
    row_error: Py<PyAny>,
}

impl Helpers {
    pub(super) fn load(py: Python<'_>) -> PyResult<Self> {
        let exact = py.import("binlake.spark.exact")?;
        let native = py.import("binlake._native")?;
        Ok(Helpers {
            json_text: exact.getattr("json_value_text")?.unbind(),
            partial_json_text: exact.getattr("partial_json_text")?.unbind(),
            codec_text: exact.getattr("codec_text")?.unbind(),
            row_error: native.getattr("RowDecodeError")?.unbind(),
        })
    }
}

pub(super) struct PyHelper<'a, 'py> {
    pub(super) py: Python<'py>,
    pub(super) helpers: &'a Helpers,
    pub(super) codec_names: &'a [Option<Py<PyString>>],
    /// The Python exception behind a failed value, kept as the error's cause.
    pub(super) error: Option<PyErr>,
}

impl PyHelper<'_, '_> {
    fn failure(&mut self, err: PyErr) -> ValueError {
        let detail = err.to_string();
        self.error = Some(err);
        ValueError::corrupt(detail)
    }

    fn put(&mut self, result: PyResult<Bound<'_, PyAny>>, out: &mut Vec<u8>) -> ValueResult<bool> {
        let value = result.map_err(|e| self.failure(e))?;
        if value.is_none() {
            return Ok(false);
        }
        let text: String = value.extract().map_err(|e| self.failure(e))?;
        out.extend_from_slice(text.as_bytes());
        Ok(true)
    }
}

impl TextHelper for PyHelper<'_, '_> {
    fn json(&mut self, _col: &Column, raw: &[u8], out: &mut Vec<u8>) -> ValueResult {
        let result = self
            .helpers
            .json_text
            .bind(self.py)
            .call1((PyBytes::new(self.py, raw),));
        self.put(result, out).map(|_| ())
    }

    fn json_diff(
        &mut self,
        _col: &Column,
        diff: &[u8],
        before: Option<Option<&str>>,
        out: &mut Vec<u8>,
    ) -> ValueResult {
        let args = (
            PyBytes::new(self.py, diff),
            before.is_some(),
            before.flatten(),
        );
        let result = self.helpers.partial_json_text.bind(self.py).call1(args);
        self.put(result, out).map(|_| ())
    }

    fn decode(&mut self, col: &Column, raw: &[u8], out: &mut Vec<u8>) -> ValueResult<bool> {
        let Some(Some(codec)) = self.codec_names.get(col.index) else {
            return Ok(false);
        };
        let codec = codec.bind(self.py).clone();
        let result = self
            .helpers
            .codec_text
            .bind(self.py)
            .call1((PyBytes::new(self.py, raw), codec));
        self.put(result, out)
    }
}

/// The changes view's rows being gathered into one Arrow batch.
#[pyclass(module = "binlake._native", unsendable)]
pub struct ChangeBatch {
    builder: ChangesBuilder,
    path: String,
    file: String,
    file_seq: i64,
    commit_timestamp: i64,
    commit_pos: i64,
    gtid: Option<String>,
    xid: Option<i64>,
    helpers: Helpers,
}

#[pymethods]
impl ChangeBatch {
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        Ok(ChangeBatch {
            builder: ChangesBuilder::new(),
            path: String::new(),
            file: String::new(),
            file_seq: 0,
            commit_timestamp: 0,
            commit_pos: 0,
            gtid: None,
            xid: None,
            helpers: Helpers::load(py)?,
        })
    }

    /// The file the next rows come from.
    fn set_file(&mut self, path: String, file: String, file_seq: i64) {
        (self.path, self.file, self.file_seq) = (path, file, file_seq);
    }

    /// The transaction of the next rows: commit time (seconds), where the next
    /// one starts, its GTID and XID (unsigned: stored as its two's complement).
    fn set_transaction(
        &mut self,
        commit_timestamp: i64,
        commit_pos: i64,
        gtid: Option<String>,
        xid: Option<u64>,
    ) {
        self.commit_timestamp = commit_timestamp;
        self.commit_pos = commit_pos;
        self.gtid = gtid;
        self.xid = xid.map(|x| x as i64);
    }

    /// Decode up to `max_rows` rows of `data` from offset `start`, numbered
    /// from `first_row`: (rows added, offset of the next row). On bad data
    /// raises RowDecodeError(offset of the bad row, its index, unsupported,
    /// reason); the rows before it are kept.
    #[pyo3(signature = (layout, operation, data, start, first_row, max_rows, before_bitmap,
                        after_bitmap, partial, pre_ga, pos, sub, timestamp, server_id))]
    #[allow(clippy::too_many_arguments)]
    fn add_rows(
        &mut self,
        py: Python<'_>,
        layout: &ChangeLayout,
        operation: &str,
        data: &[u8],
        start: usize,
        first_row: usize,
        max_rows: usize,
        before_bitmap: &[u8],
        after_bitmap: Option<&[u8]>,
        partial: bool,
        pre_ga: bool,
        pos: i64,
        sub: i32,
        timestamp: i64,
        server_id: i64,
    ) -> PyResult<(usize, usize)> {
        let operation = Operation::from_name(operation)
            .ok_or_else(|| PyValueError::new_err(format!("unknown operation {operation}")))?;
        let mut rows_layout = layout.rows.borrow_mut(py);
        let (core, before, after) = rows_layout.plans(before_bitmap, after_bitmap, pre_ga);
        let rows = RowsData {
            operation,
            partial,
            before: &before,
            after: &after,
            data,
        };
        let event = EventFields {
            path: &self.path,
            file: &self.file,
            file_seq: self.file_seq,
            pos,
            sub,
            timestamp,
            commit_timestamp: self.commit_timestamp,
            commit_pos: self.commit_pos,
            gtid: self.gtid.as_deref(),
            xid: self.xid,
            server_id,
        };
        let mut helper = PyHelper {
            py,
            helpers: &self.helpers,
            codec_names: &layout.codec_names,
            error: None,
        };
        let appended = self.builder.append_rows(
            core,
            &rows,
            start,
            max_rows,
            first_row,
            &event,
            &layout.codecs,
            &mut helper,
        );
        match appended {
            Ok(done) => Ok((done.rows, done.end)),
            Err(failed) => {
                let index = first_row + failed.rows;
                let unsupported = failed.error.unsupported && helper.error.is_none();
                let args = (failed.offset, index, unsupported, failed.error.detail);
                let error = match self.helpers.row_error.bind(py).call1(args) {
                    Ok(instance) => PyErr::from_value(instance),
                    Err(e) => e,
                };
                if let Some(cause) = helper.error.take() {
                    error.set_cause(py, Some(cause));
                }
                Err(error)
            }
        }
    }

    /// Rows gathered since the last `finish`.
    #[getter]
    fn rows(&self) -> usize {
        self.builder.rows()
    }

    /// The rows gathered so far as one batch (`pyarrow.record_batch(it)`); starts over.
    fn finish(&mut self) -> PyResult<ArrowBatch> {
        let batch = self
            .builder
            .finish()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(ArrowBatch { batch: Some(batch) })
    }
}

/// A record batch for pyarrow, through the Arrow PyCapsule interface.
#[pyclass(module = "binlake._native")]
pub struct ArrowBatch {
    batch: Option<RecordBatch>,
}

impl ArrowBatch {
    pub(super) fn new(batch: RecordBatch) -> Self {
        ArrowBatch { batch: Some(batch) }
    }
}

const SCHEMA_CAPSULE: &CStr = c"arrow_schema";
const ARRAY_CAPSULE: &CStr = c"arrow_array";

fn schema_capsule<'py>(
    py: Python<'py>,
    schema: &arrow_schema::Schema,
) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi =
        FFI_ArrowSchema::try_from(schema).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    // The capsule owns the struct: dropping it runs `release` unless the
    // consumer moved the schema out (it then nulls `release`), as the
    // PyCapsule interface requires.
    PyCapsule::new_with_value(py, ffi, SCHEMA_CAPSULE)
}

#[pymethods]
impl ArrowBatch {
    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.as_ref().map_or(0, |b| b.num_rows())
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        match &self.batch {
            Some(batch) => schema_capsule(py, batch.schema().as_ref()),
            None => schema_capsule(py, changes_schema().as_ref()),
        }
    }

    /// (schema capsule, array capsule) of the batch as a struct array; the
    /// batch is handed over once (the capsules own it from then on).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &mut self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema; // the view has one schema: callers cast if they want another
        let batch = self
            .batch
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("batch already exported"))?;
        let schema = schema_capsule(py, batch.schema().as_ref())?;
        let data = StructArray::from(batch).into_data();
        // Same ownership rule as the schema: `FFI_ArrowArray`'s drop releases it if unclaimed.
        let array = PyCapsule::new_with_value(py, FFI_ArrowArray::new(&data), ARRAY_CAPSULE)?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChangeLayout>()?;
    m.add_class::<ChangeBatch>()?;
    m.add_class::<ArrowBatch>()?;
    Ok(())
}
