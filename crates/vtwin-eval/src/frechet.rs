//! The Fréchet distance between Gaussians fitted to two sets of feature vectors (the FID of
//! image generation, applied to the [`crate::features`] encoding of tables):
//!
//! `FD = |mu1 - mu2|^2 + Tr(S1 + S2 - 2 (S1^(1/2) S2 S1^(1/2))^(1/2))`,
//!
//! the squared 2-Wasserstein distance between `N(mu1, S1)` and `N(mu2, S2)` (Dowson and
//! Landau, J. Multivariate Anal. 1982). Means and unbiased (`n - 1`) covariances are taken
//! from the feature matrices; the matrix square roots come from nalgebra's symmetric
//! eigendecomposition, with round-off negative eigenvalues of these positive semi-definite
//! matrices clamped to 0 (`S2` rank-deficient, as one-hot blocks make it, is fine). The result
//! is clamped at 0 against round-off. Cost O(n d^2 + d^3).

use nalgebra::{DMatrix, SymmetricEigen};

use crate::features::FeatureMatrix;

/// The inputs cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrechetError {
    /// The two matrices have different feature counts.
    #[error("Fréchet distance: {0} features against {1}")]
    Dimension(usize, usize),
    /// A matrix has fewer than 2 rows (no covariance).
    #[error("Fréchet distance: {0} rows, need at least 2")]
    TooFewRows(usize),
}

/// Mean vector and unbiased covariance (row-major `d x d`) of the rows of `x` (at least 2).
/// Cost O(n d^2 / 2).
pub fn mean_and_covariance(x: &FeatureMatrix) -> (Vec<f64>, Vec<f64>) {
    let (n, d) = (x.rows, x.cols);
    let mut mu = vec![0.0; d];
    for row in x.iter_rows() {
        for (m, v) in mu.iter_mut().zip(row) {
            *m += v;
        }
    }
    for m in &mut mu {
        *m /= n as f64;
    }
    let mut cov = vec![0.0; d * d];
    let mut centred = vec![0.0; d];
    for row in x.iter_rows() {
        for ((c, v), m) in centred.iter_mut().zip(row).zip(&mu) {
            *c = v - m;
        }
        for i in 0..d {
            let ci = centred[i];
            if ci == 0.0 {
                continue;
            }
            for j in 0..=i {
                cov[i * d + j] += ci * centred[j];
            }
        }
    }
    let denom = (n - 1) as f64;
    for i in 0..d {
        for j in 0..=i {
            let v = cov[i * d + j] / denom;
            cov[i * d + j] = v;
            cov[j * d + i] = v;
        }
    }
    (mu, cov)
}

/// The symmetric part `(A + A^T) / 2` of `a`: nalgebra's eigensolver reads only the lower
/// triangle, and products such as `R S2 R` are symmetric only up to round-off.
fn symmetric_part(a: &DMatrix<f64>) -> DMatrix<f64> {
    (a + a.transpose()) * 0.5
}

/// The row-major `d x d` slice `a` as a matrix.
fn from_row_major(a: &[f64], d: usize) -> DMatrix<f64> {
    assert_eq!(a.len(), d * d, "{d}x{d} matrix expected");
    DMatrix::from_row_slice(d, d, a)
}

/// The symmetric PSD square root `V diag(sqrt(max(l, 0))) V^T` of the symmetric part of `a`;
/// eigenvalues below 0 (round-off of a PSD input) are clamped to 0.
fn psd_sqrt_matrix(a: &DMatrix<f64>) -> DMatrix<f64> {
    let e = SymmetricEigen::new(symmetric_part(a));
    let roots = e.eigenvalues.map(|l| l.max(0.0).sqrt());
    symmetric_part(&(&e.eigenvectors * DMatrix::from_diagonal(&roots) * e.eigenvectors.transpose()))
}

/// The symmetric PSD square root of the symmetric row-major `d x d` matrix `a` (round-off
/// negative eigenvalues clamped to 0), row-major. Cost O(d^3).
pub fn psd_sqrt(a: &[f64], d: usize) -> Vec<f64> {
    // Exactly symmetric, so the column-major storage is also the row-major matrix.
    psd_sqrt_matrix(&from_row_major(a, d)).as_slice().to_vec()
}

/// The Fréchet distance between `N(mu1, s1)` and `N(mu2, s2)` in dimension `d` (module
/// documentation); `s1`, `s2` row-major `d x d`. Cost O(d^3).
pub fn frechet_from_moments(mu1: &[f64], s1: &[f64], mu2: &[f64], s2: &[f64], d: usize) -> f64 {
    let mean_term: f64 = mu1.iter().zip(mu2).map(|(a, b)| (a - b) * (a - b)).sum();
    let r = psd_sqrt_matrix(&from_row_major(s1, d));
    let m = &r * symmetric_part(&from_row_major(s2, d)) * &r;
    // Tr sqrt(M) is the sum of the square roots of M's (clamped) eigenvalues.
    let cross: f64 = SymmetricEigen::new(symmetric_part(&m))
        .eigenvalues
        .iter()
        .map(|l| l.max(0.0).sqrt())
        .sum();
    let tr: f64 = (0..d).map(|i| s1[i * d + i] + s2[i * d + i]).sum();
    (mean_term + tr - 2.0 * cross).max(0.0)
}

/// The Fréchet distance between the rows of `a` and of `b`.
pub fn frechet_distance(a: &FeatureMatrix, b: &FeatureMatrix) -> Result<f64, FrechetError> {
    if a.cols != b.cols {
        return Err(FrechetError::Dimension(a.cols, b.cols));
    }
    for x in [a, b] {
        if x.rows < 2 {
            return Err(FrechetError::TooFewRows(x.rows));
        }
    }
    let (mu1, s1) = mean_and_covariance(a);
    let (mu2, s2) = mean_and_covariance(b);
    Ok(frechet_from_moments(&mu1, &s1, &mu2, &s2, a.cols))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqrt_squares_back() {
        let a = [4.0, 2.0, 0.6, 2.0, 5.0, 1.0, 0.6, 1.0, 3.0];
        let r = DMatrix::from_row_slice(3, 3, &psd_sqrt(&a, 3));
        let rr = &r * &r;
        for i in 0..3 {
            for j in 0..3 {
                assert!((rr[(i, j)] - a[i * 3 + j]).abs() < 1e-13, "{rr}");
            }
        }
        // diag(4, 9) has the square root diag(2, 3).
        let s = psd_sqrt(&[4.0, 0.0, 0.0, 9.0], 2);
        for (x, y) in s.iter().zip([2.0, 0.0, 0.0, 3.0]) {
            assert!((x - y).abs() < 1e-15, "{s:?}");
        }
        // A round-off negative eigenvalue is clamped: [[1, 1], [1, 1 - 1e-17]] -> (1/sqrt 2) J.
        let s = psd_sqrt(&[1.0, 1.0, 1.0, 1.0 - 1e-17], 2);
        assert!(s.iter().all(|x| (x - 0.5f64.sqrt()).abs() < 1e-8), "{s:?}");
    }

    #[test]
    fn sqrt_of_a_random_psd_matrix() {
        // A = B B^T for a deterministic 12x12 B from a linear congruential sequence.
        let n = 12;
        let mut x = 12345u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let b = DMatrix::from_fn(n, n, |_, _| next());
        let a = &b * b.transpose();
        let r = DMatrix::from_row_slice(n, n, &psd_sqrt(a.as_slice(), n));
        assert_eq!(r, r.transpose());
        let rr = &r * &r;
        assert!((rr - &a).abs().max() < 1e-13 * a.abs().max());
    }
}
