//! Vectorised helpers over slices (for the model's `fixed` backend and the benches).
//! Each applies the scalar function element-wise with one shared truncation rule, in index
//! order (so masks are consumed element by element).

use crate::domain::{DomainError, SliceError};
use crate::trunc::Truncator;
use crate::value::Fx;

/// `out[i] = a[i] * b[i]`. Panics if lengths differ.
pub fn mul_slice<T: Truncator + ?Sized>(a: &[Fx], b: &[Fx], t: &mut T) -> Vec<Fx> {
    assert_eq!(a.len(), b.len(), "mul_slice: length mismatch");
    a.iter()
        .zip(b)
        .map(|(&x, &y)| crate::mul(x, y, t))
        .collect()
}

/// Applies a checked scalar function element-wise; the error names the first bad index.
pub fn try_map<T: Truncator + ?Sized>(
    xs: &[Fx],
    t: &mut T,
    f: impl Fn(Fx, &mut T) -> Result<Fx, DomainError>,
) -> Result<Vec<Fx>, SliceError> {
    xs.iter()
        .enumerate()
        .map(|(i, &x)| f(x, t).map_err(|source| SliceError { index: i, source }))
        .collect()
}

/// `1/x` element-wise ([`crate::reciprocal()`]).
pub fn reciprocal_slice<T: Truncator + ?Sized>(
    xs: &[Fx],
    t: &mut T,
) -> Result<Vec<Fx>, SliceError> {
    try_map(xs, t, |x, t| crate::reciprocal(x, t))
}

/// `a/b` element-wise ([`crate::divide`]). Panics if lengths differ.
pub fn divide_slice<T: Truncator + ?Sized>(
    a: &[Fx],
    b: &[Fx],
    t: &mut T,
) -> Result<Vec<Fx>, SliceError> {
    assert_eq!(a.len(), b.len(), "divide_slice: length mismatch");
    a.iter()
        .zip(b)
        .enumerate()
        .map(|(i, (&x, &y))| {
            crate::divide(x, y, t).map_err(|source| SliceError { index: i, source })
        })
        .collect()
}

/// `1/sqrt(x)` element-wise ([`crate::inv_sqrt()`]).
pub fn inv_sqrt_slice<T: Truncator + ?Sized>(xs: &[Fx], t: &mut T) -> Result<Vec<Fx>, SliceError> {
    try_map(xs, t, |x, t| crate::inv_sqrt(x, t))
}

/// `min(1, c/sqrt(x))` element-wise ([`crate::clip_factor`]).
pub fn clip_factor_slice<T: Truncator + ?Sized>(
    xs: &[Fx],
    c: Fx,
    t: &mut T,
) -> Result<Vec<Fx>, SliceError> {
    try_map(xs, t, |x, t| crate::clip_factor(x, c, t))
}

/// `exp(x)` element-wise ([`crate::exp()`]).
pub fn exp_slice<T: Truncator + ?Sized>(xs: &[Fx], t: &mut T) -> Result<Vec<Fx>, SliceError> {
    try_map(xs, t, |x, t| crate::exp(x, t))
}
