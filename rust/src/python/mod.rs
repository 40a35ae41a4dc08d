//! The CPython glue: thin wrappers over the plain-Rust core, one submodule per area.
//!
//! Rule: this is the only place that knows about Python, and `raise` below is
//! the only place a core `Error` becomes a `binlake.errors` exception.

use pyo3::prelude::*;
use pyo3::types::PyModule;

use crate::error::Error;

mod arrow;
mod change_values;
mod changes;
mod dump;
mod events;
mod reader;
mod replica;
mod slots;
mod text;
mod values;

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

#[pymodule]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    values::register(m)?;
    text::register(m)?;
    dump::register(m)?;
    arrow::register(m)?;
    changes::register(m)?;
    change_values::register(m)?;
    events::register(m)?;
    reader::register(m)?;
    replica::register(m)?;
    Ok(())
}
