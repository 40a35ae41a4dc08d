//! The Python-values sink: row images as the dicts of `RowsEvent.rows()`.
//!
//! Strategy: a `Layout` is built once per table map (the Python side caches it
//! with the map's other derived data) and holds, per column, the interned key
//! and everything needed to make its values: the codec, ENUM/SET names, and a
//! small cache of DECIMAL objects (amounts repeat, a Decimal is immutable).
//! Values are made with CPython's C API (ints, floats, str, bytes, datetime);
//! only what has no C constructor goes through Python: `Decimal`,
//! `MysqlTemporal`, MySQL binary JSON and non-UTF-8 codecs.

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{
    PyBytes, PyDate, PyDateTime, PyDelta, PyDict, PyFrozenSet, PyList, PyString, PyTuple, PyTzInfo,
};

use crate::layout::{Column, Layout};
use crate::rowimage::{
    civil_from_days, decode_rows, DateTimeParts, DecimalValue, Operation, Plan, PlanCache, Role,
    RowSink, RowsData, TimeParts, ValueError, ValueResult, ValueSink,
};
use crate::sink::texts::{valid_date, valid_datetime};

create_exception!(_native, RowDecodeError, PyException);

/// How a character column's bytes become `str`.
enum Codec {
    Bytes,
    Utf8,
    Ascii,
    /// Any other Python codec, by name.
    Python(Py<PyString>),
}

struct ColumnExtra {
    key: Py<PyString>,
    codec: Codec,
    enum_names: Option<Vec<Py<PyString>>>,
    set_names: Option<Vec<Py<PyString>>>,
    decimals: DecimalCache,
}

/// Decimal objects by stored bytes. Amounts often repeat (prices, rates) and
/// a Decimal is immutable, so equal bytes share one object; a column whose
/// values rarely repeat stops caching after a trial, since there the cache
/// only costs a copy and a hash per value.
#[derive(Default)]
struct DecimalCache {
    values: HashMap<Vec<u8>, Py<PyAny>>,
    lookups: u32,
    hits: u32,
    off: bool,
}

impl DecimalCache {
    const TRIAL: u32 = 4096;
    const LIMIT: usize = 4096;

    fn get(&mut self, raw: &[u8]) -> Option<&Py<PyAny>> {
        if self.off {
            return None;
        }
        self.lookups += 1;
        let found = self.values.get(raw);
        if found.is_some() {
            self.hits += 1;
        } else if self.lookups >= Self::TRIAL && self.hits < self.lookups / 4 {
            self.off = true;
            self.values = HashMap::new();
            return None;
        }
        self.values.get(raw)
    }

    fn put(&mut self, raw: &[u8], value: &Bound<'_, PyAny>) {
        if self.off {
            return;
        }
        if self.values.len() >= Self::LIMIT {
            self.values.clear();
        }
        self.values.insert(raw.to_vec(), value.clone().unbind());
    }
}

/// Python objects the sink calls, looked up once per layout.
struct Helpers {
    /// `create_decimal` of a context too wide to ever round (`exact_decimal`).
    decimal: Py<PyAny>,
    mysql_temporal: Py<PyAny>,
    binary_to_text: Py<PyAny>,
    parse_diffs: Py<PyAny>,
    apply_partial: Py<PyAny>,
    empty: Py<PyString>,
}

/// One table map's columns, ready to decode row images into Python values.
#[pyclass(module = "binlake._native", unsendable)]
pub struct RowLayout {
    layout: Layout,
    extra: Vec<ColumnExtra>,
    plans: PlanCache,
    helpers: Helpers,
    /// Per plan (its present columns): an image dict with every key, values None.
    templates: HashMap<Vec<usize>, Py<PyDict>>,
}

/// `Decimal(text)` is exact but parses its keywords and looks the thread's
/// context up on every call; `create_decimal` of a context whose precision
/// and exponent range hold any DECIMAL never rounds, so it makes the same
/// value with the same exponent, in less than half the time.
fn exact_decimal(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let decimal = py.import("decimal")?;
    let options = PyDict::new(py);
    for (name, limit) in [
        ("prec", "MAX_PREC"),
        ("Emax", "MAX_EMAX"),
        ("Emin", "MIN_EMIN"),
    ] {
        options.set_item(name, decimal.getattr(limit)?)?;
    }
    let context = decimal.getattr("Context")?.call((), Some(&options))?;
    Ok(context.getattr("create_decimal")?.unbind())
}

fn names(py: Python<'_>, values: &Option<Vec<String>>) -> Option<Vec<Py<PyString>>> {
    values
        .as_ref()
        .map(|v| v.iter().map(|s| PyString::intern(py, s).unbind()).collect())
}

/// A row's (before, after) images: None where the row has no such image.
pub(super) type ImagePair<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>);

impl RowLayout {
    /// Decode rows into (before, after) pairs; on failure also the failing
    /// row's offset and its error.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub(super) fn decode<'py>(
        &mut self,
        py: Python<'py>,
        operation: Operation,
        data: &[u8],
        before_bitmap: &[u8],
        after_bitmap: Option<&[u8]>,
        partial: bool,
        pre_ga: bool,
    ) -> PyResult<(Vec<ImagePair<'py>>, Option<(usize, PyErr)>)> {
        let (_, before, after) = self.plans(before_bitmap, after_bitmap, pre_ga);
        let templates = [self.template(py, &before)?, self.template(py, &after)?];
        let rows = RowsData {
            operation,
            partial,
            before: &before,
            after: &after,
            data,
        };
        let mut sink = PySink {
            py,
            extra: &mut self.extra,
            helpers: &self.helpers,
            pairs: Vec::new(),
            templates,
            images_in_row: 0,
            scratch: String::new(),
            image: None,
            before: None,
            error: None,
            partial_in_row: false,
        };
        let failure = match decode_rows(&self.layout, &rows, &mut sink) {
            Ok(_) => None,
            Err((offset, index, e)) => {
                let error = match sink.error.take() {
                    Some(cause) => {
                        // a Python helper failed: keep its exception as the cause
                        let error = RowDecodeError::new_err((offset, index, false, e.detail));
                        error.set_cause(py, Some(cause));
                        error
                    }
                    None => RowDecodeError::new_err((offset, index, e.unsupported, e.detail)),
                };
                Some((offset, error))
            }
        };
        Ok((sink.pairs, failure))
    }

    /// The empty image of a plan: copying it makes a dict already sized and
    /// ordered for the image (the keys in plan order, a repeated key where it
    /// first appears, as inserting them one by one would), so each value
    /// replaces a None instead of growing the dict.
    fn template<'py>(&mut self, py: Python<'py>, plan: &Plan) -> PyResult<Bound<'py, PyDict>> {
        if let Some(template) = self.templates.get(&plan.columns) {
            return Ok(template.bind(py).clone());
        }
        if self.templates.len() > 256 {
            self.templates.clear(); // bounded, as the plans are
        }
        let template = PyDict::new(py);
        for &index in &plan.columns {
            template.set_item(self.extra[index].key.bind(py), py.None())?;
        }
        self.templates
            .insert(plan.columns.clone(), template.clone().unbind());
        Ok(template)
    }

    /// The layout of a table map the native changes loop completed, as
    /// `rows.native_columns` makes it: keys are names, else `@N`.
    pub(super) fn of_layout(
        py: Python<'_>,
        layout: &Layout,
        codecs: &[Option<Py<PyString>>],
    ) -> PyResult<Self> {
        let columns = layout
            .columns
            .iter()
            .zip(codecs)
            .map(|(c, codec)| {
                let codec = match codec {
                    Some(name) => Some(name.bind(py).to_str()?.to_owned()),
                    None => None,
                };
                let key = c
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("@{}", c.index + 1));
                Ok((
                    c.type_code,
                    c.meta,
                    c.nullable,
                    c.unsigned,
                    codec,
                    key,
                    c.enum_values.clone(),
                    c.set_values.clone(),
                ))
            })
            .collect::<PyResult<Vec<_>>>()?;
        Self::new(py, layout.database.clone(), layout.table.clone(), columns)
    }

    /// The core layout (its columns), for the other sinks' glue.
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The core layout and the plans of an event's before and after images
    /// (the after plan is the before one when the event has no after bitmap),
    /// for every sink's glue.
    pub(crate) fn plans(
        &mut self,
        before_bitmap: &[u8],
        after_bitmap: Option<&[u8]>,
        pre_ga: bool,
    ) -> (&Layout, Arc<Plan>, Arc<Plan>) {
        let before = self.plans.get(&self.layout, before_bitmap, pre_ga);
        let after = match after_bitmap {
            Some(bitmap) => self.plans.get(&self.layout, bitmap, false),
            None => before.clone(),
        };
        (&self.layout, before, after)
    }
}

#[pymethods]
impl RowLayout {
    /// `columns`: (type, meta, nullable, unsigned, codec or None, key, enum names, set names).
    #[new]
    #[allow(clippy::type_complexity)]
    fn new(
        py: Python<'_>,
        database: String,
        table: String,
        columns: Vec<(
            u8,
            u16,
            bool,
            bool,
            Option<String>,
            String,
            Option<Vec<String>>,
            Option<Vec<String>>,
        )>,
    ) -> PyResult<Self> {
        let mut cols = Vec::with_capacity(columns.len());
        let mut extra = Vec::with_capacity(columns.len());
        for (index, (type_code, meta, nullable, unsigned, codec, key, enums, sets)) in
            columns.into_iter().enumerate()
        {
            let mut col = Column::new(index, type_code, meta, nullable);
            col.unsigned = unsigned;
            col.name = Some(key.clone());
            col.enum_values = enums;
            col.set_values = sets;
            let codec = match codec.as_deref() {
                None => Codec::Bytes,
                Some("utf-8") => Codec::Utf8,
                Some("ascii") => Codec::Ascii,
                Some(other) => Codec::Python(PyString::intern(py, other).unbind()),
            };
            extra.push(ColumnExtra {
                key: PyString::intern(py, &key).unbind(),
                codec,
                enum_names: names(py, &col.enum_values),
                set_names: names(py, &col.set_values),
                decimals: DecimalCache::default(),
            });
            cols.push(col);
        }
        let values = py.import("binlake.read.values")?;
        let json = py.import("binlake.read.mysql_json")?;
        let rows = py.import("binlake.read.rows")?;
        let helpers = Helpers {
            decimal: exact_decimal(py)?,
            mysql_temporal: values.getattr("MysqlTemporal")?.unbind(),
            binary_to_text: json.getattr("binary_to_text")?.unbind(),
            parse_diffs: json.getattr("parse_diffs")?.unbind(),
            apply_partial: rows.getattr("_apply_partial")?.unbind(),
            empty: PyString::intern(py, "").unbind(),
        };
        Ok(RowLayout {
            layout: Layout {
                database,
                table,
                columns: cols,
            },
            extra,
            plans: PlanCache::default(),
            helpers,
            templates: HashMap::new(),
        })
    }

    /// [(before, after)] of a rows event's images. On bad data raises
    /// RowDecodeError(offset of the failing row in `data`, row index, unsupported, reason).
    #[pyo3(signature = (operation, data, before_bitmap, after_bitmap=None, partial=false, pre_ga=false))]
    #[allow(clippy::too_many_arguments)]
    fn decode_rows<'py>(
        &mut self,
        py: Python<'py>,
        operation: &str,
        data: &[u8],
        before_bitmap: &[u8],
        after_bitmap: Option<&[u8]>,
        partial: bool,
        pre_ga: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let operation = operation_named(operation)?;
        let (rows, failure) = self.decode(
            py,
            operation,
            data,
            before_bitmap,
            after_bitmap,
            partial,
            pre_ga,
        )?;
        match failure {
            None => pair_list(py, rows),
            Some((_, error)) => Err(error),
        }
    }

    /// The rows of a window into a huge event's row data: (rows, offset where
    /// decoding stopped, error or None). A row cut by the window's end shows as
    /// an error at its start; the caller refills from there, or raises the
    /// error when the window already reached the end of the event.
    #[pyo3(signature = (operation, data, before_bitmap, after_bitmap=None, partial=false))]
    fn decode_window<'py>(
        &mut self,
        py: Python<'py>,
        operation: &str,
        data: &[u8],
        before_bitmap: &[u8],
        after_bitmap: Option<&[u8]>,
        partial: bool,
    ) -> PyResult<(Bound<'py, PyList>, usize, Option<PyErr>)> {
        let operation = operation_named(operation)?;
        let (rows, failure) = self.decode(
            py,
            operation,
            data,
            before_bitmap,
            after_bitmap,
            partial,
            false,
        )?;
        let rows = pair_list(py, rows)?;
        Ok(match failure {
            None => (rows, data.len(), None),
            Some((offset, error)) => (rows, offset, Some(error)),
        })
    }

    #[getter]
    fn column_count(&self) -> usize {
        self.layout.columns.len()
    }
}

fn operation_named(name: &str) -> PyResult<Operation> {
    Operation::from_name(name)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("unknown operation {name}")))
}

/// Rows as the reference gives them: a list of (before, after) tuples.
fn pair_list<'py>(py: Python<'py>, pairs: Vec<ImagePair<'py>>) -> PyResult<Bound<'py, PyList>> {
    let tuples = pairs
        .into_iter()
        .map(|(before, after)| PyTuple::new(py, [before, after]))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, tuples)
}

struct PySink<'a, 'py> {
    py: Python<'py>,
    extra: &'a mut [ColumnExtra],
    helpers: &'a Helpers,
    /// The rows made: (before, after).
    pairs: Vec<ImagePair<'py>>,
    /// The empty dicts of the row's first and second image (`RowLayout::template`).
    templates: [Bound<'py, PyDict>; 2],
    images_in_row: usize,
    /// A DECIMAL's text, reused.
    scratch: String,
    image: Option<Bound<'py, PyDict>>,
    before: Option<Bound<'py, PyDict>>,
    /// The Python exception behind a failed value, kept for the chained error.
    error: Option<PyErr>,
    /// The after image being built holds JSON diffs to apply to the before image.
    partial_in_row: bool,
}

impl<'py> PySink<'_, 'py> {
    #[inline]
    fn put(&mut self, col: &Column, value: Bound<'py, PyAny>) -> ValueResult {
        let key = self.extra[col.index].key.bind(self.py);
        match &self.image {
            Some(image) => image
                .set_item(key, value)
                .map_err(|e| self.python_failure(e)),
            None => Err(ValueError::corrupt("value outside an image")),
        }
    }

    fn python_failure(&mut self, err: PyErr) -> ValueError {
        let detail = err.to_string();
        self.error = Some(err);
        ValueError::corrupt(detail)
    }

    /// `helper(arg)`, a Python helper of the reference; its exception kept
    /// (`python_failure`) to be raised as is.
    fn call_helper(
        &mut self,
        helper: &Py<PyAny>,
        arg: Bound<'py, PyAny>,
    ) -> ValueResult<Bound<'py, PyAny>> {
        helper
            .bind(self.py)
            .call1((arg,))
            .map_err(|e| self.python_failure(e))
    }

    fn temporal_text(&mut self, text: String) -> ValueResult<Bound<'py, PyAny>> {
        let helpers = self.helpers;
        let text = PyString::new(self.py, &text).into_any();
        self.call_helper(&helpers.mysql_temporal, text)
    }

    fn text(&mut self, col: &Column, bytes: &[u8]) -> ValueResult<Bound<'py, PyAny>> {
        let py = self.py;
        let raw = || PyBytes::new(py, bytes).into_any();
        Ok(match &self.extra[col.index].codec {
            Codec::Bytes => raw(),
            Codec::Utf8 => match decode_utf8(py, bytes) {
                Some(s) => s,
                None => raw(),
            },
            Codec::Ascii if bytes.is_ascii() => {
                // ASCII is valid UTF-8
                PyString::new(py, std::str::from_utf8(bytes).unwrap_or_default()).into_any()
            }
            Codec::Ascii => raw(),
            Codec::Python(codec) => {
                let decoded = raw().call_method1("decode", (codec.bind(py),));
                match decoded {
                    Ok(s) => s,
                    Err(e) if e.is_instance_of::<pyo3::exceptions::PyUnicodeDecodeError>(py) => {
                        raw()
                    }
                    Err(e) => return Err(self.python_failure(e)),
                }
            }
        })
    }
}

/// Valid UTF-8 as `str`, else None: CPython validates and builds the string
/// in one pass (going through `&str` would validate twice).
fn decode_utf8<'py>(py: Python<'py>, bytes: &[u8]) -> Option<Bound<'py, PyAny>> {
    let len = pyo3::ffi::Py_ssize_t::try_from(bytes.len()).ok()?;
    // SAFETY: the pointer and length describe `bytes`, alive for the call;
    // CPython copies them and returns a new reference or NULL with an error set.
    let result = unsafe {
        let ptr = pyo3::ffi::PyUnicode_DecodeUTF8(bytes.as_ptr().cast(), len, c"strict".as_ptr());
        Bound::from_owned_ptr_or_err(py, ptr)
    };
    result.ok() // the UnicodeDecodeError is dropped: invalid text stays bytes
}

fn frac_text(micro: i32, fsp: u8) -> String {
    if fsp == 0 {
        return String::new();
    }
    let digits = format!("{micro:06}");
    format!(".{}", &digits[..(fsp as usize).min(digits.len())])
}

impl<'py> ValueSink for PySink<'_, 'py> {
    fn null(&mut self, col: &Column) -> ValueResult {
        self.put(col, self.py.None().into_bound(self.py))
    }

    fn int(&mut self, col: &Column, value: i64, bytes: u8) -> ValueResult {
        let py = self.py;
        let obj = if col.unsigned && value < 0 {
            let mask = if bytes >= 8 {
                u64::MAX
            } else {
                (1u64 << (8 * bytes)) - 1
            };
            ((value as u64) & mask)
                .into_pyobject(py)
                .unwrap_or_else(|never| match never {})
        } else {
            value
                .into_pyobject(py)
                .unwrap_or_else(|never| match never {})
        };
        self.put(col, obj.into_any())
    }

    fn float(&mut self, col: &Column, value: f32) -> ValueResult {
        let v = (value as f64)
            .into_pyobject(self.py)
            .unwrap_or_else(|never| match never {});
        self.put(col, v.into_any())
    }

    fn double(&mut self, col: &Column, value: f64) -> ValueResult {
        let v = value
            .into_pyobject(self.py)
            .unwrap_or_else(|never| match never {});
        self.put(col, v.into_any())
    }

    fn decimal_known(&mut self, col: &Column, raw: &[u8]) -> ValueResult<bool> {
        match self.extra[col.index].decimals.get(raw) {
            Some(cached) => {
                let v = cached.bind(self.py).clone();
                self.put(col, v).map(|_| true)
            }
            None => Ok(false),
        }
    }

    fn decimal(&mut self, col: &Column, value: &DecimalValue, raw: &[u8]) -> ValueResult {
        let py = self.py;
        // "<sign><unscaled digits>e-<scale>": the text Decimal reads exactly,
        // written into a buffer kept between values
        let text = &mut self.scratch;
        text.clear();
        if value.negative {
            text.push('-');
        }
        // the digits are ASCII (`decimal_digits`): pushed as chars, nothing to validate
        text.extend(value.digits.iter().map(|&digit| char::from(digit)));
        text.push_str("e-");
        let scale = value.scale;
        if scale >= 100 {
            text.push(char::from(b'0' + scale / 100));
        }
        if scale >= 10 {
            text.push(char::from(b'0' + scale / 10 % 10));
        }
        text.push(char::from(b'0' + scale % 10));
        let text = PyString::new(py, text).into_any();
        let helpers = self.helpers;
        let obj = self.call_helper(&helpers.decimal, text)?;
        self.extra[col.index].decimals.put(raw, &obj);
        self.put(col, obj)
    }

    fn year(&mut self, col: &Column, year: u32) -> ValueResult {
        let v = year
            .into_pyobject(self.py)
            .unwrap_or_else(|never| match never {});
        self.put(col, v.into_any())
    }

    fn date(&mut self, col: &Column, year: u32, month: u32, day: u32) -> ValueResult {
        let v = if valid_date(year, month, day) {
            PyDate::new(self.py, year as i32, month as u8, day as u8)
                .map(|d| d.into_any())
                .map_err(|e| self.python_failure(e))?
        } else {
            self.temporal_text(format!("{year:04}-{month:02}-{day:02}"))?
        };
        self.put(col, v)
    }

    fn datetime(&mut self, col: &Column, t: DateTimeParts, _raw: &[u8]) -> ValueResult {
        let valid = valid_datetime(&t);
        let v = if valid {
            PyDateTime::new(
                self.py,
                t.year as i32,
                t.month as u8,
                t.day as u8,
                t.hour as u8,
                t.minute as u8,
                t.second as u8,
                t.micro as u32,
                None,
            )
            .map(|d| d.into_any())
            .map_err(|e| self.python_failure(e))?
        } else {
            self.temporal_text(format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}{}",
                t.year,
                t.month,
                t.day,
                t.hour,
                t.minute,
                t.second,
                frac_text(t.micro, t.fsp)
            ))?
        };
        self.put(col, v)
    }

    fn datetime_negative(&mut self, col: &Column, packed: i64, _raw: &[u8]) -> ValueResult {
        let v = self.temporal_text(format!("-{}", -(packed as i128)))?;
        self.put(col, v)
    }

    fn timestamp(&mut self, col: &Column, seconds: u32, micro: u32, fsp: u8) -> ValueResult {
        if seconds == 0 && micro == 0 {
            let v = self.temporal_text(format!("0000-00-00 00:00:00{}", frac_text(0, fsp)))?;
            return self.put(col, v);
        }
        let py = self.py;
        let secs = seconds as i64;
        let (year, month, day) = civil_from_days(secs.div_euclid(86400));
        let (year, month, day) = (year as i32, month as u8, day as u8);
        let rem = secs.rem_euclid(86400);
        let utc = PyTzInfo::utc(py).map_err(|e| self.python_failure(e))?;
        let v = PyDateTime::new(
            py,
            year,
            month,
            day,
            (rem / 3600) as u8,
            (rem / 60 % 60) as u8,
            (rem % 60) as u8,
            micro,
            Some(&utc),
        )
        .map_err(|e| self.python_failure(e))?;
        self.put(col, v.into_any())
    }

    fn time(&mut self, col: &Column, t: TimeParts, _raw: &[u8]) -> ValueResult {
        let mut total = ((t.hours as i64 * 60 + t.minutes as i64) * 60 + t.seconds as i64)
            * 1_000_000
            + t.micro as i64;
        if t.negative {
            total = -total;
        }
        let days = total.div_euclid(86_400_000_000);
        let rem = total.rem_euclid(86_400_000_000);
        let v = PyDelta::new(
            self.py,
            days as i32,
            (rem / 1_000_000) as i32,
            (rem % 1_000_000) as i32,
            false,
        )
        .map_err(|e| self.python_failure(e))?;
        self.put(col, v.into_any())
    }

    fn bit(&mut self, col: &Column, value: u64, _raw: &[u8]) -> ValueResult {
        let v = value
            .into_pyobject(self.py)
            .unwrap_or_else(|never| match never {});
        self.put(col, v.into_any())
    }

    fn string(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        let v = self.text(col, bytes)?;
        self.put(col, v)
    }

    fn blob(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        let v = self.text(col, bytes)?;
        self.put(col, v)
    }

    fn geometry(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        let v = PyBytes::new(self.py, bytes).into_any();
        self.put(col, v)
    }

    fn json(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        let raw = PyBytes::new(self.py, bytes).into_any();
        let helpers = self.helpers;
        let v = self.call_helper(&helpers.binary_to_text, raw)?;
        self.put(col, v)
    }

    fn json_diff(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        let raw = PyBytes::new(self.py, bytes).into_any();
        let helpers = self.helpers;
        let v = self.call_helper(&helpers.parse_diffs, raw)?;
        self.partial_in_row = true;
        self.put(col, v)
    }

    fn vector(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        let floats: Vec<f64> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect();
        let v = PyList::new(self.py, floats).map_err(|e| self.python_failure(e))?;
        self.put(col, v.into_any())
    }

    fn enum_index(&mut self, col: &Column, index: u16, _raw: &[u8]) -> ValueResult {
        let py = self.py;
        let v = match &self.extra[col.index].enum_names {
            None => index
                .into_pyobject(py)
                .unwrap_or_else(|never| match never {})
                .into_any(),
            Some(names) => match names.get((index as usize).wrapping_sub(1)) {
                Some(name) if index > 0 => name.bind(py).clone().into_any(),
                _ => self.helpers.empty.bind(py).clone().into_any(),
            },
        };
        self.put(col, v)
    }

    fn set_mask(&mut self, col: &Column, mask: u64, _raw: &[u8]) -> ValueResult {
        let py = self.py;
        let v = match &self.extra[col.index].set_names {
            None => mask
                .into_pyobject(py)
                .unwrap_or_else(|never| match never {})
                .into_any(),
            Some(names) => {
                let members: Vec<Bound<'py, PyString>> = names
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i < 64 && mask >> i & 1 == 1)
                    .map(|(_, n)| n.bind(py).clone())
                    .collect();
                PyFrozenSet::new(py, &members)
                    .map_err(|e| self.python_failure(e))?
                    .into_any()
            }
        };
        self.put(col, v)
    }
}

impl<'py> RowSink for PySink<'_, 'py> {
    fn start_row(&mut self, _operation: Operation) -> ValueResult {
        self.before = None;
        self.partial_in_row = false;
        self.images_in_row = 0;
        Ok(())
    }

    fn start_image(&mut self, _role: Role, _plan: &Plan) -> ValueResult {
        // decode_row's images: the first on the event's first plan, an update's second on its after plan
        let template = &self.templates[self.images_in_row.min(1)];
        self.images_in_row += 1;
        let image = template.copy().map_err(|e| self.python_failure(e))?;
        self.image = Some(image);
        Ok(())
    }

    fn end_image(&mut self, role: Role) -> ValueResult {
        if role == Role::Before {
            self.before = self.image.take();
        }
        Ok(())
    }

    fn end_row(&mut self) -> ValueResult {
        let py = self.py;
        let none = || py.None().into_bound(py);
        let after = self.image.take();
        if let (Some(before), Some(after)) = (&self.before, &after) {
            if self.partial_in_row {
                self.helpers
                    .apply_partial
                    .bind(py)
                    .call1((before, after))
                    .map_err(|e| self.python_failure(e))?;
            }
        }
        let before = self
            .before
            .take()
            .map(|d| d.into_any())
            .unwrap_or_else(none);
        let after = after.map(|d| d.into_any()).unwrap_or_else(none);
        self.pairs.push((before, after));
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RowLayout>()?;
    m.add("RowDecodeError", m.py().get_type::<RowDecodeError>())?;
    Ok(())
}
