//! Instances of binlake's frozen, slotted event dataclasses made from Rust.
//!
//! Strategy: the reader makes a header and, for the commonest small events,
//! the event itself per binlog event, a million times for a small-transaction
//! file. Calling the class runs its Python `__init__`; here the instance is
//! allocated as `object.__new__` would (`tp_alloc`) and each field is stored
//! straight into its slot through the slot's member definition (what the
//! class's member descriptor does after looking itself up): a few dozen
//! instructions per field instead of a Python call. The result is the same
//! object the class makes: the same type, fields and slots, so repr, eq,
//! hash, `dataclasses.replace` and FrozenInstanceError are the class's.
//!
//! Rule: the field names are given here in order and checked once against
//! the class's `dataclasses.fields`, so a field added on the Python side
//! fails loudly at the first read instead of leaving a slot empty.

use std::os::raw::c_char;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// A slotted dataclass whose instances are made field by field.
pub struct SlotClass {
    class: Py<PyType>,
    /// The member definitions of the fields' slots, in field order; they live
    /// in the class's own memory, kept alive by `class`.
    members: Vec<*mut ffi::PyMemberDef>,
}

impl SlotClass {
    pub fn new(class: &Bound<'_, PyType>, names: &[&str]) -> PyResult<Self> {
        let py = class.py();
        let fields: Vec<String> = py
            .import("dataclasses")?
            .call_method1("fields", (class,))?
            .try_iter()?
            .map(|f| f?.getattr("name")?.extract::<String>())
            .collect::<PyResult<_>>()?;
        if fields != names {
            return Err(PyTypeError::new_err(format!(
                "{}: fields {fields:?}, the native reader makes {names:?}",
                class.name()?
            )));
        }
        let member_type = py.import("types")?.getattr("MemberDescriptorType")?;
        let mut members = Vec::with_capacity(names.len());
        for name in names {
            let descriptor = class.getattr(*name)?;
            if !descriptor.get_type().is(&member_type) {
                return Err(PyTypeError::new_err(format!(
                    "{}.{name} is not a slot",
                    class.name()?
                )));
            }
            // SAFETY: `descriptor` is a member_descriptor (checked just above),
            // whose C layout is PyMemberDescrObject; its d_member points into
            // the class's slot table, which lives as long as the class, held
            // by `self.class`.
            let member =
                unsafe { (*descriptor.as_ptr().cast::<ffi::PyMemberDescrObject>()).d_member };
            members.push(member);
        }
        Ok(SlotClass {
            class: class.clone().unbind(),
            members,
        })
    }

    /// An instance with `values` in its fields, in field order.
    pub fn make<'py, const N: usize>(
        &self,
        py: Python<'py>,
        values: [Bound<'py, PyAny>; N],
    ) -> PyResult<Bound<'py, PyAny>> {
        if N != self.members.len() {
            return Err(PyTypeError::new_err("wrong number of fields"));
        }
        let class = self.class.bind(py);
        let tp = class.as_ptr().cast::<ffi::PyTypeObject>();
        // SAFETY: `tp` is the class (a heap type, alive: bound above); its
        // tp_alloc is what object.__new__ calls for it, returning a new
        // reference to a zeroed, GC-tracked instance, or NULL with an error set.
        let instance = unsafe {
            let alloc = (*tp).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
            Bound::from_owned_ptr_or_err(py, alloc(tp, 0))?
        };
        for (member, value) in self.members.iter().zip(values.iter()) {
            // SAFETY: `member` describes a slot of this class (see `new`) and
            // `instance` is an instance of exactly this class, so the slot's
            // offset lies inside it; PyMember_SetOne takes its own reference
            // to `value`, releases the (empty) old one, and returns -1 with
            // an error set on failure.
            let status = unsafe {
                ffi::PyMember_SetOne(instance.as_ptr().cast::<c_char>(), *member, value.as_ptr())
            };
            if status < 0 {
                return Err(PyErr::fetch(py));
            }
        }
        Ok(instance)
    }
}
