//! Python glue for the replica protocol's packets (`crate::replica`).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::replica;

/// (next_at, events' bytes, count, last type, last timestamp)
type RunFound<'py> = (usize, Bound<'py, PyBytes>, usize, u8, u32);

/// `ordinary_run(buf, at, expected, limit)`: `(next_at, events' bytes,
/// count, last type, last timestamp)` of the ordinary events at `buf[at]`,
/// or None when the first packet there is not one (replica.py `_ordinary_run`).
#[pyfunction]
fn ordinary_run<'py>(
    py: Python<'py>,
    buf: &[u8],
    at: usize,
    expected: u64,
    limit: usize,
) -> PyResult<Option<RunFound<'py>>> {
    if at > buf.len() {
        return Ok(None);
    }
    let run = replica::ordinary_run(buf, at, expected, limit);
    (run.events > 0)
        .then(|| {
            // made at its size and filled in place: no vector in between
            let bytes = PyBytes::new_with(py, run.len, |out| {
                run.copy_into(buf, out);
                Ok(())
            });
            bytes.map(|bytes| {
                (
                    run.next_at,
                    bytes,
                    run.events,
                    run.last_type,
                    run.last_timestamp,
                )
            })
        })
        .transpose()
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ordinary_run, m)?)
}
