//! The events view of one byte range as a Python iterator: `EventsReader`,
//! the changes loop (`ChangesReader`, `changes.rs`) with an `EventsView`
//! (`events.rs`) as its consumer.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::PyModule;

use super::arrow::ArrowBatch;
use super::changes::ChangesReader;
use super::events::EventsView;
use crate::framing::LARGE_EVENT_BYTES;

/// The events view of one range (`Split`), as `binlake.spark.read.batches.event_batches`.
#[pyclass(module = "binlake._native", unsendable)]
pub struct EventsReader {
    inner: ChangesReader,
}

#[pymethods]
impl EventsReader {
    /// `check`: as `ChangesReader`'s, keeping in `check.last` (database,
    /// table, query, info) of the event it decoded last (its UnknownEvent
    /// when it returns None). `still_written()`: the file's IN_USE flag now.
    /// `batch_rows`: a batch ends after the transaction that brings it there.
    #[new]
    #[pyo3(signature = (path, file, file_seq, start, end, stream, verify_checksums, force,
                        check, still_written, batch_rows, large_event_bytes=LARGE_EVENT_BYTES))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: String,
        file: String,
        file_seq: i64,
        start: u64,
        end: Option<u64>,
        stream: Option<Py<PyAny>>,
        verify_checksums: bool,
        force: bool,
        check: Py<PyAny>,
        still_written: Py<PyAny>,
        batch_rows: usize,
        large_event_bytes: u64,
    ) -> PyResult<Self> {
        let inner = ChangesReader::new(
            py,
            path,
            file.clone(),
            file_seq,
            start,
            end,
            stream,
            verify_checksums,
            force,
            check,
            None,
            false, // the events view shows table maps as the binlog wrote them
            HashMap::new(),
            still_written,
            large_event_bytes,
            1, // the lazy rows window: no row is read for this view
            1, // job bytes: no job is made for this view
        )?;
        Ok(EventsReader {
            inner: inner.into_events_view(EventsView::new(file, file_seq, batch_rows)),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch (`pyarrow.record_batch(it)`), None at the end.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<ArrowBatch>> {
        self.inner.__next__(py)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EventsReader>()?;
    Ok(())
}
