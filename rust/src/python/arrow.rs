//! Python glue of the changes view's Arrow batches (`sink::arrow`): the
//! batches as pyarrow takes them, and the Python helpers the builder calls.
//!
//! Strategy: a finished batch leaves as an `ArrowBatch`, which pyarrow
//! imports through the Arrow C data interface (`__arrow_c_array__`,
//! PyCapsules), so no Python object is made per value. Python is called
//! back only for MySQL binary JSON and charsets without a native decoder
//! (`binlake.spark.read.exact`), through `PyHelper`. The loop that feeds the
//! builder is `changes.rs`.

use std::ffi::CStr;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, RecordBatch, StructArray};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyModule, PyString, PyTuple};

use crate::layout::Column;
use crate::rowimage::{ValueError, ValueResult};
use crate::sink::arrow::{changes_schema, TextHelper};

/// Python functions of `binlake.spark.read.exact` for what has no native text.
pub(super) struct Helpers {
    json_text: Py<PyAny>,
    partial_json_text: Py<PyAny>,
    codec_text: Py<PyAny>,
}

impl Helpers {
    pub(super) fn load(py: Python<'_>) -> PyResult<Self> {
        let exact = py.import("binlake.spark.read.exact")?;
        Ok(Helpers {
            json_text: exact.getattr("json_value_text")?.unbind(),
            partial_json_text: exact.getattr("partial_json_text")?.unbind(),
            codec_text: exact.getattr("codec_text")?.unbind(),
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
    m.add_class::<ArrowBatch>()?;
    Ok(())
}
