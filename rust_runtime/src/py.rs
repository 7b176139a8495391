//! pyo3 + rust-numpy glue shared by the generated extension modules (feature `python`).

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadwriteArrayDyn};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::env::{ArrayMut, ArrayRef, ArraySpec};

/// A numpy array holding a copy of `a`, shaped `shape`.
pub fn to_numpy<'py>(
    py: Python<'py>,
    a: &ArrayRef<'_>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    fn shaped<'py, T: numpy::Element + Copy>(
        py: Python<'py>,
        v: &[T],
        shape: &[usize],
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyArray1::from_slice(py, v).reshape(shape)?.into_any())
    }
    match a {
        ArrayRef::Bool(v) => shaped(py, v, shape),
        ArrayRef::I8(v) => shaped(py, v, shape),
        ArrayRef::I16(v) => shaped(py, v, shape),
        ArrayRef::I32(v) => shaped(py, v, shape),
        ArrayRef::U32(v) => shaped(py, v, shape),
        ArrayRef::F32(v) => shaped(py, v, shape),
        ArrayRef::F64(v) => shaped(py, v, shape),
    }
}

/// `{spec.name: numpy array}` for parallel lists of specs and arrays.
pub fn to_dict<'py>(
    py: Python<'py>,
    specs: &[ArraySpec],
    arrays: &[ArrayRef<'_>],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (s, a) in specs.iter().zip(arrays) {
        d.set_item(s.name, to_numpy(py, a, s.shape)?)?;
    }
    Ok(d)
}

/// An observation: the single part's array, or a dict of parts.
pub fn observation<'py>(
    py: Python<'py>,
    specs: &[ArraySpec],
    parts: &[ArrayRef<'_>],
) -> PyResult<Bound<'py, PyAny>> {
    if specs.len() == 1 {
        to_numpy(py, &parts[0], specs[0].shape)
    } else {
        Ok(to_dict(py, specs, parts)?.into_any())
    }
}

/// Copy the 1-d numpy array `src` (already of the field's dtype and size) into `dst`.
pub fn copy_into(name: &str, dst: ArrayMut<'_>, src: &Bound<'_, PyAny>) -> PyResult<()> {
    fn fill<T: numpy::Element + Copy>(
        name: &str,
        dst: &mut [T],
        src: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let arr: PyReadonlyArray1<'_, T> = src.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "field '{name}': expected a 1-d {} array",
                std::any::type_name::<T>()
            ))
        })?;
        let v = arr
            .as_slice()
            .map_err(|e| PyValueError::new_err(format!("field '{name}': {e}")))?;
        if v.len() != dst.len() {
            return Err(PyValueError::new_err(format!(
                "field '{name}' has {} elements, expected {}",
                v.len(),
                dst.len()
            )));
        }
        dst.copy_from_slice(v);
        Ok(())
    }
    match dst {
        ArrayMut::Bool(d) => fill(name, d, src),
        ArrayMut::I8(d) => fill(name, d, src),
        ArrayMut::I16(d) => fill(name, d, src),
        ArrayMut::I32(d) => fill(name, d, src),
        ArrayMut::U32(d) => fill(name, d, src),
        ArrayMut::F32(d) => fill(name, d, src),
        ArrayMut::F64(d) => fill(name, d, src),
    }
}

/// Fill every field from `arrays` (a list in `specs` order, each a 1-d array of the field's dtype).
pub fn fields_from(
    specs: &[ArraySpec],
    dst: Vec<ArrayMut<'_>>,
    arrays: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let n = arrays.len()?;
    if n != specs.len() {
        return Err(PyKeyError::new_err(format!(
            "expected {} field arrays, got {n}",
            specs.len()
        )));
    }
    for (i, (s, d)) in specs.iter().zip(dst).enumerate() {
        copy_into(s.name, d, &arrays.get_item(i)?)?;
    }
    Ok(())
}

/// A writable, contiguous numpy buffer as a flat slice.
pub fn buffer<'a, T: numpy::Element>(
    name: &str,
    a: &'a mut PyReadwriteArrayDyn<'_, T>,
    len: usize,
) -> PyResult<&'a mut [T]> {
    let s = a
        .as_slice_mut()
        .map_err(|e| PyValueError::new_err(format!("buffer '{name}': {e}")))?;
    if s.len() != len {
        return Err(PyValueError::new_err(format!(
            "buffer '{name}' has {} elements, expected {len}",
            s.len()
        )));
    }
    Ok(s)
}

mod rngfns {
    use pyo3::prelude::*;

    use crate::rng;

    type PyKey = (u32, u32);

    fn k(key: PyKey) -> rng::Key {
        [key.0, key.1]
    }

    /// `jax.random.PRNGKey(seed)` as two words.
    #[pyfunction]
    pub fn key_from_seed(seed: i64) -> PyKey {
        let k = rng::key_from_seed(seed);
        (k[0], k[1])
    }

    /// `jax.random.fold_in(key, data)`.
    #[pyfunction]
    pub fn fold_in(key: PyKey, data: u32) -> PyKey {
        let k = rng::fold_in(k(key), data);
        (k[0], k[1])
    }

    /// `jax.random.split(key, num)`.
    #[pyfunction]
    #[pyo3(signature = (key, num=2))]
    pub fn split(key: PyKey, num: usize) -> Vec<PyKey> {
        let mut out = vec![[0u32; 2]; num];
        rng::split(k(key), &mut out);
        out.into_iter().map(|w| (w[0], w[1])).collect()
    }

    /// `jax.random.bits(key, (n,), uint32)`.
    #[pyfunction]
    pub fn bits(key: PyKey, n: usize) -> Vec<u32> {
        let mut out = vec![0u32; n];
        rng::bits(k(key), &mut out);
        out
    }

    /// The spec's `uniform(lo, hi)` with site key `key` (`envc.rng.uniform_scalar`).
    #[pyfunction]
    pub fn uniform(key: PyKey, lo: f32, hi: f32) -> f32 {
        rng::uniform(k(key), lo, hi)
    }

    /// The spec's `randint(lo, hi)` with site key `key` (`envc.rng.randint_scalar`).
    #[pyfunction]
    pub fn randint(key: PyKey, lo: i64, hi: i64) -> i32 {
        rng::randint(k(key), lo, hi)
    }

    /// The spec's `bernoulli(p)` with site key `key` (`envc.rng.bernoulli_scalar`).
    #[pyfunction]
    pub fn bernoulli(key: PyKey, p: f32) -> bool {
        rng::bernoulli(k(key), p)
    }

    /// envc's `choice` over a mask.
    #[pyfunction]
    pub fn choice_mask(key: PyKey, mask: Vec<bool>) -> usize {
        rng::choice_mask(k(key), mask.iter().copied())
    }

    /// envc's shuffle permutation.
    #[pyfunction]
    pub fn shuffle_order(key: PyKey, capacity: usize, count: usize) -> Vec<usize> {
        let mut out = Vec::new();
        rng::shuffle_order(k(key), capacity, count, &mut out);
        out
    }
}

/// Add the runtime's generator (`key_from_seed`, `fold_in`, `split`, `bits`, `uniform`, `randint`, `bernoulli`,
/// `choice_mask`, `shuffle_order`) to a module.
pub fn register_rng(m: &Bound<'_, PyModule>) -> PyResult<()> {
    use rngfns::*;
    m.add_function(wrap_pyfunction!(key_from_seed, m)?)?;
    m.add_function(wrap_pyfunction!(fold_in, m)?)?;
    m.add_function(wrap_pyfunction!(split, m)?)?;
    m.add_function(wrap_pyfunction!(bits, m)?)?;
    m.add_function(wrap_pyfunction!(uniform, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(bernoulli, m)?)?;
    m.add_function(wrap_pyfunction!(choice_mask, m)?)?;
    m.add_function(wrap_pyfunction!(shuffle_order, m)?)?;
    Ok(())
}
