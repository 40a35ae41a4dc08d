//! Python glue for the text area: `RowText`, one per table map, prints a rows
//! event's `###` lines with `sink::text`.
//!
//! Strategy: the Python side (`binlake/rowtext.py::format_rows`) caches a
//! `RowText` next to the map's `RowLayout` and asks it for the whole event's
//! text as one `str`. Whatever the native sink will not print the way the
//! reference does (a corrupt image, a type mysqlbinlog cannot show, MySQL
//! JSON) comes back as `None`, and the caller runs the reference formatter
//! for that event: it alone owns the error texts and the corrupt-value
//! lines, so both paths fail alike without a second copy of them here.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::values::RowLayout;
use crate::rowimage::{Operation, RowsData};
use crate::sink::text::{write_rows, TextColumns, TextRequest};

/// The text printer of one table map's rows events.
#[pyclass(module = "binlake._native", unsendable)]
pub struct RowText {
    layout: Py<RowLayout>,
    columns: TextColumns,
    /// Reused across events: most are small, and a fresh buffer per event would grow each time.
    buf: Vec<u8>,
}

#[pymethods]
impl RowText {
    #[new]
    fn new(layout: Bound<'_, RowLayout>) -> Self {
        let columns = {
            let mut guard = layout.borrow_mut();
            let (core, _) = guard.core();
            TextColumns::new(core)
        };
        RowText {
            layout: layout.unbind(),
            columns,
            buf: Vec::new(),
        }
    }

    /// (text, row count) of one rows event, `name` being the quoted
    /// `` `db`.`table` `` to show; None where the reference formatter must print it.
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
        name: &str,
    ) -> PyResult<Option<(Bound<'py, PyString>, usize)>> {
        let operation = match operation {
            "insert" => Operation::Insert,
            "update" => Operation::Update,
            "delete" => Operation::Delete,
            _ => return Ok(None),
        };
        // The reference prints "no columns" for an update without an after
        // bitmap and reads nothing; only pre-GA updates lack one, and those
        // are never printed as rows.
        let after_empty = match after_bitmap {
            Some(bits) => bits.iter().all(|&b| b == 0),
            None if operation == Operation::Update => return Ok(None),
            None => false,
        };
        let mut layout = self.layout.bind(py).borrow_mut();
        let (core, plans) = layout.core();
        let before = plans.get(core, before_bitmap, false);
        let after = match after_bitmap {
            Some(bits) => plans.get(core, bits, false),
            None => before.clone(),
        };
        let request = TextRequest {
            rows: RowsData {
                operation,
                partial,
                before: &before,
                after: &after,
                data,
            },
            verbose,
            name: name.as_bytes(),
            after_empty,
        };
        self.buf.clear();
        let count = match write_rows(core, &self.columns, &request, &mut self.buf) {
            Ok(count) => count,
            Err(_) => return Ok(None),
        };
        if self.buf.capacity() > 1 << 24 {
            // one huge event must not pin its buffer for the rest of the file
            let text = text_of(py, &self.buf)?;
            self.buf = Vec::new();
            return Ok(Some((text, count)));
        }
        Ok(Some((text_of(py, &self.buf)?, count)))
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
