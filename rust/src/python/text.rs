//! Python glue for the text area: `RowText`, one per table map, prints a rows
//! event's `###` lines with `sink::text`.
//!
//! Strategy: the Python side (`binlake/text/rowtext.py::format_rows`) caches a
//! `RowText` next to the map's `RowLayout` and asks it for the whole event's
//! text as one `str`. MySQL JSON values are printed by the reference's own
//! helpers (`rowtext.json_text`, `rowtext.json_diff_text`), called from here.
//! Whatever the native sink will not print the way the reference does (a
//! corrupt image, a type mysqlbinlog cannot show, a failing JSON helper)
//! comes back as `None`, and the caller runs the reference formatter for
//! that event: it alone owns the error texts and the corrupt-value lines,
//! so both paths fail alike without a second copy of them here.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::values::RowLayout;
use crate::rowimage::{Operation, RowsData, ValueError, ValueResult};
use crate::sink::text::{write_rows_window, JsonText, TextColumns, TextRequest, WindowFailure};

/// The text printer of one table map's rows events.
#[pyclass(module = "binlake._native", unsendable)]
pub struct RowText {
    layout: Py<RowLayout>,
    columns: TextColumns,
    /// Reused across events: most are small, and a fresh buffer per event would grow each time.
    buf: Vec<u8>,
    json_text: Py<PyAny>,
    json_diff_text: Py<PyAny>,
}

/// MySQL JSON printed by the reference's helpers, so both paths share them.
pub(crate) struct PyJson<'a, 'py> {
    pub(crate) py: Python<'py>,
    pub(crate) document: &'a Py<PyAny>,
    pub(crate) diff: &'a Py<PyAny>,
}

fn helper_failed(err: PyErr) -> ValueError {
    ValueError::corrupt(format!("JSON text: {err}"))
}

pub(crate) fn append_bytes(result: PyResult<Bound<'_, PyAny>>, out: &mut Vec<u8>) -> ValueResult {
    let text = result.map_err(helper_failed)?;
    let bytes = text
        .cast::<PyBytes>()
        .map_err(|e| helper_failed(e.into()))?;
    out.extend_from_slice(bytes.as_bytes());
    Ok(())
}

impl JsonText for PyJson<'_, '_> {
    fn document(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> ValueResult {
        let raw = PyBytes::new(self.py, bytes);
        append_bytes(self.document.bind(self.py).call1((raw,)), out)
    }

    fn diff(&mut self, index: usize, bytes: &[u8], out: &mut Vec<u8>) -> ValueResult {
        let raw = PyBytes::new(self.py, bytes);
        append_bytes(self.diff.bind(self.py).call1((raw, index)), out)
    }
}

#[pymethods]
impl RowText {
    #[new]
    fn new(py: Python<'_>, layout: Bound<'_, RowLayout>) -> PyResult<Self> {
        let columns = TextColumns::new(layout.try_borrow()?.layout());
        let rowtext = py.import("binlake.text.rowtext")?;
        Ok(RowText {
            layout: layout.unbind(),
            columns,
            buf: Vec::new(),
            json_text: rowtext.getattr("json_text")?.unbind(),
            json_diff_text: rowtext.getattr("json_diff_text")?.unbind(),
        })
    }

    /// (text, row count) of one rows event, `name` being the quoted
    /// `` `db`.`table` `` to show (UTF-8, surrogate escapes as their bytes);
    /// None where the reference formatter must print it.
    #[pyo3(signature = (operation, data, before_bitmap, after_bitmap, partial, verbose, name))]
    #[allow(clippy::too_many_arguments)]
    fn format<'py>(
        &mut self,
        py: Python<'py>,
        operation: &str,
        data: &[u8],
        before_bitmap: &[u8],
        after_bitmap: Option<&[u8]>,
        partial: bool,
        verbose: u8,
        name: &[u8],
    ) -> PyResult<Option<(Bound<'py, PyString>, usize)>> {
        let request = (
            operation,
            data,
            before_bitmap,
            after_bitmap,
            partial,
            verbose,
            name,
        );
        let count = match self.write(py, request)? {
            Some(Ok(count)) => count,
            _ => return Ok(None),
        };
        let text = text_of(py, &self.buf)?;
        self.release_huge_buffer();
        Ok(Some((text, count)))
    }

    /// The lines of the whole rows of a window into a huge event's row data:
    /// (text as bytes, rows, offset where printing stopped, whether a row
    /// failed there). A row cut by the window's end fails; the caller reads
    /// on from the offset, and gives the event to `format` (whole) when the
    /// window already reached the event's end. None: not printable natively.
    #[pyo3(signature = (operation, data, before_bitmap, after_bitmap, partial, verbose, name))]
    #[allow(clippy::too_many_arguments)]
    fn format_window<'py>(
        &mut self,
        py: Python<'py>,
        operation: &str,
        data: &[u8],
        before_bitmap: &[u8],
        after_bitmap: Option<&[u8]>,
        partial: bool,
        verbose: u8,
        name: &[u8],
    ) -> PyResult<Option<WindowText<'py>>> {
        let request = (
            operation,
            data,
            before_bitmap,
            after_bitmap,
            partial,
            verbose,
            name,
        );
        let (count, stop, failed) = match self.write(py, request)? {
            None => return Ok(None),
            Some(Ok(count)) => (count, data.len(), false),
            Some(Err(failure)) => (failure.index, failure.offset, true),
        };
        let text = PyBytes::new(py, &self.buf);
        self.release_huge_buffer();
        Ok(Some((text, count, stop, failed)))
    }
}

/// A window's (text, rows printed, offset where printing stopped, whether a row failed there).
type WindowText<'py> = (Bound<'py, PyBytes>, usize, usize, bool);

/// What `format` and `format_window` take: (operation, data, before bitmap,
/// after bitmap, partial, verbose, name).
type Request<'a> = (
    &'a str,
    &'a [u8],
    &'a [u8],
    Option<&'a [u8]>,
    bool,
    u8,
    &'a [u8],
);

impl RowText {
    /// The rows' lines into `self.buf`: None where the request cannot be
    /// printed natively at all, else the count or where a row failed.
    fn write(
        &mut self,
        py: Python<'_>,
        request: Request<'_>,
    ) -> PyResult<Option<Result<usize, WindowFailure>>> {
        let (operation, data, before_bitmap, after_bitmap, partial, verbose, name) = request;
        let Some(operation) = Operation::from_name(operation) else {
            return Ok(None);
        };
        // The reference prints "no columns" for an update without an after
        // bitmap and reads nothing; only pre-GA updates lack one, and those
        // are never printed as rows.
        let after_empty = match after_bitmap {
            Some(bits) => bits.iter().all(|&b| b == 0),
            None if operation == Operation::Update => return Ok(None),
            None => false,
        };
        let Ok(mut layout) = self.layout.bind(py).try_borrow_mut() else {
            return Ok(None); // in use by a decode further up the stack
        };
        let (core, before, after) = layout.plans(before_bitmap, after_bitmap, false);
        let request = TextRequest {
            rows: RowsData {
                operation,
                partial,
                before: &before,
                after: &after,
                data,
            },
            verbose,
            name,
            after_empty,
        };
        let mut json = PyJson {
            py,
            document: &self.json_text,
            diff: &self.json_diff_text,
        };
        self.buf.clear();
        Ok(Some(write_rows_window(
            core,
            &self.columns,
            &request,
            &mut json,
            &mut self.buf,
        )))
    }

    fn release_huge_buffer(&mut self) {
        if self.buf.capacity() > 1 << 24 {
            self.buf = Vec::new(); // one huge event must not pin its buffer for the rest of the file
        }
    }
}

/// The bytes as a `str`, non-UTF-8 bytes kept as surrogate escapes (as
/// `rowtext.raw_text` keeps them), so writing it back gives the same bytes.
fn text_of<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(PyString::new(py, s)),
        Err(_) => Ok(PyBytes::new(py, bytes)
            .call_method1("decode", ("utf-8", "surrogateescape"))?
            .cast_into::<PyString>()?),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RowText>()?;
    Ok(())
}
