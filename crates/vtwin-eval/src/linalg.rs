//! Small dense symmetric linear algebra for the metrics: the Cholesky solve of the logistic
//! regression's Newton step and the symmetric eigendecomposition of the Fréchet distance.
//! Matrices are row-major `n x n` slices; `n` is the feature dimension (about 150 on Adult),
//! so O(n^3) methods are cheap and simple, exact algorithms beat a dependency.

/// The Cholesky factor `L` (lower triangular, row-major) with `A = L L^T`, or `None` if `A`
/// is not numerically positive definite (a pivot `<= 0` or not finite). Only the lower
/// triangle of `a` is read. Cost n^3/6 multiply-adds.
pub fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    assert_eq!(a.len(), n * n, "cholesky: {n}x{n} matrix expected");
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let dot: f64 = (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum();
            let v = a[i * n + j] - dot;
            if i == j {
                if !(v > 0.0 && v.is_finite()) {
                    return None;
                }
                l[i * n + i] = v.sqrt();
            } else {
                l[i * n + j] = v / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Solves `L L^T x = b` given the Cholesky factor `l` of [`cholesky`]. Cost n^2.
pub fn cholesky_solve(l: &[f64], n: usize, b: &[f64]) -> Vec<f64> {
    let mut y = b.to_vec();
    for i in 0..n {
        let s: f64 = (0..i).map(|k| l[i * n + k] * y[k]).sum();
        y[i] = (y[i] - s) / l[i * n + i];
    }
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k * n + i] * y[k]).sum();
        y[i] = (y[i] - s) / l[i * n + i];
    }
    y
}

/// Eigendecomposition of a symmetric matrix: eigenvalues (ascending) and the matching unit
/// eigenvectors as the columns of a row-major matrix `V`, with `A = V diag(values) V^T`.
#[derive(Debug, Clone, PartialEq)]
pub struct SymmetricEigen {
    /// Eigenvalues, ascending.
    pub values: Vec<f64>,
    /// Row-major `n x n`; column `j` is the eigenvector of `values[j]`.
    pub vectors: Vec<f64>,
}

/// Maximum number of cyclic Jacobi sweeps; convergence is quadratic, so real inputs stop
/// after about 6 to 12.
const MAX_SWEEPS: usize = 100;

/// Symmetric eigendecomposition by the cyclic Jacobi method (Golub and Van Loan, Matrix
/// Computations, 4th ed., 8.5): rotations annihilate off-diagonal entries until their
/// Frobenius norm is below `1e-15` times the matrix's. Jacobi is backward stable with high
/// relative accuracy for the small eigenvalues that matter to a matrix square root. Only
/// the symmetric part `(A + A^T) / 2` is used. Cost about 6 n^3 flops per sweep.
pub fn symmetric_eigen(a: &[f64], n: usize) -> SymmetricEigen {
    assert_eq!(a.len(), n * n, "symmetric_eigen: {n}x{n} matrix expected");
    let mut m: Vec<f64> = (0..n * n)
        .map(|k| {
            let (i, j) = (k / n, k % n);
            0.5 * (a[i * n + j] + a[j * n + i])
        })
        .collect();
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let total: f64 = m.iter().map(|x| x * x).sum::<f64>().sqrt();
    for _ in 0..MAX_SWEEPS {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| m[i * n + j] * m[i * n + j])
            .sum::<f64>()
            .sqrt();
        if off <= 1e-15 * total || off == 0.0 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                // The rotation (c, s) that zeroes m[p][q] (Golub and Van Loan, Algorithm 8.5.1).
                let theta = (m[q * n + q] - m[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                // M <- J^T M J on rows and columns p, q.
                for k in 0..n {
                    let (mkp, mkq) = (m[k * n + p], m[k * n + q]);
                    m[k * n + p] = c * mkp - s * mkq;
                    m[k * n + q] = s * mkp + c * mkq;
                }
                for k in 0..n {
                    let (mpk, mqk) = (m[p * n + k], m[q * n + k]);
                    m[p * n + k] = c * mpk - s * mqk;
                    m[q * n + k] = s * mpk + c * mqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| m[i * n + i].total_cmp(&m[j * n + j]));
    let values = order.iter().map(|&i| m[i * n + i]).collect();
    let mut vectors = vec![0.0; n * n];
    for (new, &old) in order.iter().enumerate() {
        for k in 0..n {
            vectors[k * n + new] = v[k * n + old];
        }
    }
    SymmetricEigen { values, vectors }
}

/// The symmetric positive semi-definite square root `V diag(sqrt(max(l, 0))) V^T` of a
/// symmetric matrix (negative eigenvalues, round-off of a PSD input, are clamped to 0).
/// Cost: one [`symmetric_eigen`] plus n^3.
pub fn psd_sqrt(a: &[f64], n: usize) -> Vec<f64> {
    let e = symmetric_eigen(a, n);
    let roots: Vec<f64> = e.values.iter().map(|l| l.max(0.0).sqrt()).collect();
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..n)
                .map(|k| e.vectors[i * n + k] * roots[k] * e.vectors[j * n + k])
                .sum();
            out[i * n + j] = s;
            out[j * n + i] = s;
        }
    }
    out
}

/// `A B` for row-major `n x n` matrices. Cost n^3.
pub fn matmul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k];
            if aik == 0.0 {
                continue;
            }
            for j in 0..n {
                out[i * n + j] += aik * b[k * n + j];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + b.abs())
    }

    #[test]
    fn two_by_two_closed_form() {
        // [[a, b], [b, c]]: eigenvalues (a+c)/2 -+ sqrt(((a-c)/2)^2 + b^2).
        for &(a, b, c) in &[
            (2.0, 1.0, 2.0),
            (4.0, -1.5, 1.0),
            (1e-6, 0.0, 3.0),
            (5.0, 2.0, 5.0),
        ] {
            let e = symmetric_eigen(&[a, b, b, c], 2);
            let h = (((a - c) / 2.0f64).powi(2) + b * b).sqrt();
            assert!(close(e.values[0], (a + c) / 2.0 - h, 1e-14), "{e:?}");
            assert!(close(e.values[1], (a + c) / 2.0 + h, 1e-14), "{e:?}");
            // A v = l v for each pair, unit vectors.
            for j in 0..2 {
                let (v0, v1) = (e.vectors[j], e.vectors[2 + j]);
                assert!(close(v0 * v0 + v1 * v1, 1.0, 1e-14));
                assert!((a * v0 + b * v1 - e.values[j] * v0).abs() < 1e-13);
                assert!((b * v0 + c * v1 - e.values[j] * v1).abs() < 1e-13);
            }
        }
    }

    #[test]
    fn reconstructs_a_random_symmetric_matrix() {
        // A deterministic 12x12 symmetric matrix from a linear congruential sequence.
        let n = 12;
        let mut x = 12345u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                let r = next();
                a[i * n + j] = r;
                a[j * n + i] = r;
            }
        }
        let e = symmetric_eigen(&a, n);
        assert!(e.values.windows(2).all(|w| w[0] <= w[1]));
        for i in 0..n {
            for j in 0..n {
                let r: f64 = (0..n)
                    .map(|k| e.vectors[i * n + k] * e.values[k] * e.vectors[j * n + k])
                    .sum();
                assert!(
                    (r - a[i * n + j]).abs() < 1e-13,
                    "({i},{j}) {r} vs {}",
                    a[i * n + j]
                );
                let o: f64 = (0..n)
                    .map(|k| e.vectors[k * n + i] * e.vectors[k * n + j])
                    .sum();
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((o - want).abs() < 1e-13);
            }
        }
        // Trace equals the sum of eigenvalues.
        let tr: f64 = (0..n).map(|i| a[i * n + i]).sum();
        assert!((tr - e.values.iter().sum::<f64>()).abs() < 1e-13);
    }

    #[test]
    fn sqrt_squares_back_and_cholesky_solves() {
        let a = [4.0, 2.0, 0.6, 2.0, 5.0, 1.0, 0.6, 1.0, 3.0];
        let r = psd_sqrt(&a, 3);
        let rr = matmul(&r, &r, 3);
        for (x, y) in rr.iter().zip(&a) {
            assert!((x - y).abs() < 1e-13, "{rr:?}");
        }
        // diag(4, 9) has the square root diag(2, 3) exactly.
        assert_eq!(psd_sqrt(&[4.0, 0.0, 0.0, 9.0], 2), [2.0, 0.0, 0.0, 3.0]);

        let l = cholesky(&a, 3).unwrap();
        let b = [1.0, -2.0, 0.5];
        let x = cholesky_solve(&l, 3, &b);
        for i in 0..3 {
            let ax: f64 = (0..3).map(|j| a[i * 3 + j] * x[j]).sum();
            assert!((ax - b[i]).abs() < 1e-13);
        }
        assert!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2).is_none(), "indefinite");
    }
}
