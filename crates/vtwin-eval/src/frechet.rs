//! The Fréchet distance between Gaussians fitted to two sets of feature vectors (the FID of
//! image generation, applied to the [`crate::features`] encoding of tables):
//!
//! `FD = |mu1 - mu2|^2 + Tr(S1 + S2 - 2 (S1^(1/2) S2 S1^(1/2))^(1/2))`,
//!
//! the squared 2-Wasserstein distance between `N(mu1, S1)` and `N(mu2, S2)` (Dowson and
//! Landau, J. Multivariate Anal. 1982). Means and unbiased (`n - 1`) covariances are taken
//! from the feature matrices; the matrix square roots come from the symmetric
//! eigendecomposition of [`crate::linalg`], which clamps round-off negative eigenvalues of
//! these positive semi-definite matrices to 0 (`S2` rank-deficient, as one-hot blocks make it,
//! is fine). The result is clamped at 0 against round-off. Cost O(n d^2 + d^3).

use crate::features::FeatureMatrix;
use crate::linalg::{matmul, psd_sqrt, symmetric_eigen};

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

/// The Fréchet distance between `N(mu1, s1)` and `N(mu2, s2)` in dimension `d` (module
/// documentation). Cost O(d^3).
pub fn frechet_from_moments(mu1: &[f64], s1: &[f64], mu2: &[f64], s2: &[f64], d: usize) -> f64 {
    let mean_term: f64 = mu1.iter().zip(mu2).map(|(a, b)| (a - b) * (a - b)).sum();
    let r = psd_sqrt(s1, d);
    let m = matmul(&matmul(&r, s2, d), &r, d);
    let cross: f64 = symmetric_eigen(&m, d)
        .values
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
