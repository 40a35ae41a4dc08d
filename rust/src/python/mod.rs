//! The CPython glue: thin wrappers over the plain-Rust core, one submodule per area.
//!
//! Rule: this is the only place that knows about Python, and `errors::raise`
//! is the only place a core `Error` becomes a `binlake.errors` exception.

use pyo3::prelude::*;
use pyo3::types::PyModule;

mod arrow;
mod change_values;
mod changes;
mod dump;
mod errors;
mod events;
mod events_reader;
mod reader;
mod replica;
mod slots;
mod text;
mod values;

#[pymodule]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    values::register(m)?;
    text::register(m)?;
    dump::register(m)?;
    arrow::register(m)?;
    changes::register(m)?;
    changes::json_lines::register(m)?;
    changes::listing::register(m)?;
    change_values::register(m)?;
    events_reader::register(m)?;
    reader::register(m)?;
    replica::register(m)?;
    Ok(())
}
