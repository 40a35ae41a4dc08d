//! Core errors as Python exceptions: `raise` is the only place a core `Error`
//! becomes a `binlake.errors` exception.

use pyo3::prelude::*;

use crate::error::Error;

/// A core error as the `binlake.errors` class of its kind, naming file and offset.
#[allow(dead_code)] // used by the reader glue
pub fn raise(py: Python<'_>, file: &str, error: Error) -> PyErr {
    let class_name = error.kind.class_name();
    let errors = match py.import("binlake.errors") {
        Ok(m) => m,
        Err(e) => return e,
    };
    match errors.getattr(class_name) {
        Ok(class) => match class.call1((file, error.offset, error.detail)) {
            Ok(instance) => PyErr::from_value(instance),
            Err(e) => e,
        },
        Err(_) => pyo3::exceptions::PyOSError::new_err(format!("{file}: {error}")),
    }
}
