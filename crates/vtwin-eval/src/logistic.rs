//! L2-regularised logistic regression fitted by Newton's method (IRLS) with a backtracking
//! line search: deterministic, no learning rate, converges to the unique minimiser.
//!
//! Objective, for features `x_i` (rows of a [`FeatureMatrix`]), labels `y_i` in {0, 1},
//! weights `w` and an unpenalised intercept `b`, `z_i = w.x_i + b`:
//! `f(w, b) = (1/n) sum_i [log(1 + exp(z_i)) - y_i z_i] + (lambda/2) |w|^2`.
//! With `lambda > 0`, `f` is strictly convex in `w`; the intercept direction has curvature
//! `(1/n) sum p_i (1 - p_i) > 0` while the fitted probabilities stay inside (0,1), so the
//! Newton system is positive definite (a tiny `1e-10` ridge on every coordinate guards the
//! round-off of near-separable data). The iteration stops when the gradient's largest
//! component is below [`GRAD_TOL`] or after [`MAX_NEWTON`] steps (the result says which).

use nalgebra::{Cholesky, DMatrix, DVector};
use serde::Serialize;

use crate::features::FeatureMatrix;

/// Default L2 strength `lambda` (per-record objective; scikit-learn's `C = 1` on 30,000
/// records is `lambda = 3.3e-5`). Small enough not to bias the fit on Adult, large enough to
/// keep one-hot blocks (collinear with the intercept) and separable synthetic data finite.
pub const DEFAULT_LAMBDA: f64 = 1e-4;
/// Convergence threshold on the largest gradient component.
pub const GRAD_TOL: f64 = 1e-9;
/// Maximum Newton steps (convergence is quadratic: Adult takes fewer than 15).
pub const MAX_NEWTON: usize = 100;

/// A fitted model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogisticModel {
    /// One weight per feature.
    pub weights: Vec<f64>,
    /// The intercept.
    pub intercept: f64,
    /// The L2 strength used.
    pub lambda: f64,
    /// Newton steps taken.
    pub iterations: usize,
    /// Whether the gradient test passed (else [`MAX_NEWTON`] was reached).
    pub converged: bool,
}

/// Fitting failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LogisticError {
    /// No records, or labels of a different length from the matrix.
    #[error("logistic regression: {rows} feature rows and {labels} labels (need equal and > 0)")]
    Shape {
        /// Feature rows.
        rows: usize,
        /// Labels.
        labels: usize,
    },
    /// `lambda` is not a positive finite number.
    #[error("logistic regression: lambda {0} must be positive and finite")]
    Lambda(f64),
    /// The Newton system was not positive definite (non-finite features).
    #[error(
        "logistic regression: the Newton system is not positive definite (non-finite features?)"
    )]
    Singular,
}

/// `log(1 + exp(z))` without overflow.
fn softplus(z: f64) -> f64 {
    if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// The Newton step `H^-1 g` by Cholesky, reading the lower triangle of the row-major
/// `dim x dim` Hessian `h`; `None` if `H` is not numerically positive definite. nalgebra
/// accepts a zero pivot (and then divides by it), so the factor's diagonal is checked too.
fn newton_step(h: &[f64], g: &[f64], dim: usize) -> Option<Vec<f64>> {
    let chol = Cholesky::new(DMatrix::from_row_slice(dim, dim, h))?;
    if !chol
        .l_dirty()
        .diagonal()
        .iter()
        .all(|p| *p > 0.0 && p.is_finite())
    {
        return None;
    }
    let step = chol.solve(&DVector::from_column_slice(g));
    Some(step.as_slice().to_vec())
}

fn margins(x: &FeatureMatrix, w: &[f64], b: f64) -> Vec<f64> {
    x.iter_rows()
        .map(|row| row.iter().zip(w).map(|(a, c)| a * c).sum::<f64>() + b)
        .collect()
}

fn objective(z: &[f64], y: &[bool], w: &[f64], lambda: f64) -> f64 {
    let n = z.len() as f64;
    let loss: f64 = z
        .iter()
        .zip(y)
        .map(|(&zi, &yi)| softplus(zi) - if yi { zi } else { 0.0 })
        .sum();
    loss / n + 0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>()
}

impl LogisticModel {
    /// Fits the model (module documentation) to features `x` and labels `y`. Cost per Newton
    /// step O(n d^2 / 2 + d^3 / 6) for n records of d features; deterministic.
    pub fn fit(x: &FeatureMatrix, y: &[bool], lambda: f64) -> Result<LogisticModel, LogisticError> {
        if x.rows == 0 || x.rows != y.len() {
            return Err(LogisticError::Shape {
                rows: x.rows,
                labels: y.len(),
            });
        }
        if !(lambda > 0.0 && lambda.is_finite()) {
            return Err(LogisticError::Lambda(lambda));
        }
        let (n, d) = (x.rows, x.cols);
        let dim = d + 1; // the intercept is the last coordinate
        let nf = n as f64;
        let mut w = vec![0.0; d];
        let mut b = 0.0;
        let mut z = margins(x, &w, b);
        let mut f = objective(&z, y, &w, lambda);
        for it in 0..MAX_NEWTON {
            // Gradient and Hessian (lower triangle) of f.
            let mut g = vec![0.0; dim];
            let mut h = vec![0.0; dim * dim];
            for (r, row) in x.iter_rows().enumerate() {
                let p = sigmoid(z[r]);
                let resid = p - if y[r] { 1.0 } else { 0.0 };
                let s = p * (1.0 - p);
                for i in 0..d {
                    let xi = row[i];
                    if xi == 0.0 {
                        continue; // one-hot features are mostly zero
                    }
                    g[i] += resid * xi;
                    let sxi = s * xi;
                    let hrow = &mut h[i * dim..i * dim + i + 1];
                    for (hj, &xj) in hrow.iter_mut().zip(row) {
                        *hj += sxi * xj;
                    }
                    h[d * dim + i] += sxi;
                }
                g[d] += resid;
                h[d * dim + d] += s;
            }
            for i in 0..dim {
                g[i] /= nf;
                for j in 0..=i {
                    h[i * dim + j] /= nf;
                }
                if i < d {
                    g[i] += lambda * w[i];
                    h[i * dim + i] += lambda;
                }
                h[i * dim + i] += 1e-10;
            }
            // h holds the lower triangle except row d, filled above as h[d][i]: both are the
            // lower triangle, which is all nalgebra's Cholesky reads.
            let gmax = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            if gmax < GRAD_TOL {
                return Ok(LogisticModel {
                    weights: w,
                    intercept: b,
                    lambda,
                    iterations: it,
                    converged: true,
                });
            }
            let step = newton_step(&h, &g, dim).ok_or(LogisticError::Singular)?;
            // Backtracking (Armijo) on the Newton direction -step.
            let slope: f64 = -g.iter().zip(&step).map(|(a, c)| a * c).sum::<f64>();
            let mut t = 1.0;
            loop {
                let w_new: Vec<f64> = w.iter().zip(&step).map(|(a, c)| a - t * c).collect();
                let b_new = b - t * step[d];
                let z_new = margins(x, &w_new, b_new);
                let f_new = objective(&z_new, y, &w_new, lambda);
                if f_new <= f + 1e-4 * t * slope || t < 1e-10 {
                    let stalled = f_new >= f;
                    w = w_new;
                    b = b_new;
                    z = z_new;
                    f = f_new.min(f);
                    if stalled {
                        // No decrease even for a tiny step: round-off level, at the optimum.
                        return Ok(LogisticModel {
                            weights: w,
                            intercept: b,
                            lambda,
                            iterations: it + 1,
                            converged: gmax < 1e-6,
                        });
                    }
                    break;
                }
                t *= 0.5;
            }
        }
        Ok(LogisticModel {
            weights: w,
            intercept: b,
            lambda,
            iterations: MAX_NEWTON,
            converged: false,
        })
    }

    /// The probability of the positive class for every row of `x`. Panics if the feature
    /// count differs from the fitted one. Cost O(rows * d).
    pub fn predict_proba(&self, x: &FeatureMatrix) -> Vec<f64> {
        assert_eq!(
            x.cols,
            self.weights.len(),
            "feature count differs from the fit"
        );
        margins(x, &self.weights, self.intercept)
            .into_iter()
            .map(sigmoid)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newton_step_solves_and_rejects_indefinite() {
        // Only the lower triangle is filled, as fit fills it.
        let h = [4.0, 0.0, 0.0, 2.0, 5.0, 0.0, 0.6, 1.0, 3.0];
        let full = [4.0, 2.0, 0.6, 2.0, 5.0, 1.0, 0.6, 1.0, 3.0];
        let g = [1.0, -2.0, 0.5];
        let x = newton_step(&h, &g, 3).unwrap();
        for i in 0..3 {
            let hx: f64 = (0..3).map(|j| full[i * 3 + j] * x[j]).sum();
            assert!((hx - g[i]).abs() < 1e-13);
        }
        assert!(
            newton_step(&[1.0, 0.0, 2.0, 1.0], &[1.0, 1.0], 2).is_none(),
            "indefinite"
        );
        assert!(
            newton_step(&[1.0, 0.0, 1.0, 1.0], &[1.0, 1.0], 2).is_none(),
            "singular"
        );
        assert!(newton_step(&[f64::NAN], &[1.0], 1).is_none(), "not finite");
    }

    fn matrix(rows: &[&[f64]]) -> FeatureMatrix {
        FeatureMatrix::from_rows(rows)
    }

    #[test]
    fn one_binary_feature_matches_the_closed_form() {
        // With one 0/1 feature and a tiny lambda, the maximum-likelihood fit reproduces the
        // group frequencies: P(y | x=0) = 1/4, P(y | x=1) = 2/3.
        let x = matrix(&[&[0.0], &[0.0], &[0.0], &[0.0], &[1.0], &[1.0], &[1.0]]);
        let y = [true, false, false, false, true, true, false];
        let m = LogisticModel::fit(&x, &y, 1e-12).unwrap();
        assert!(m.converged);
        let p = m.predict_proba(&x);
        assert!((p[0] - 0.25).abs() < 1e-6, "{p:?}");
        assert!((p[4] - 2.0 / 3.0).abs() < 1e-6, "{p:?}");
        // Intercept logit(1/4), weight logit(2/3) - logit(1/4).
        assert!((m.intercept - (1.0f64 / 3.0).ln()).abs() < 1e-5);
        assert!((m.weights[0] - (2.0f64.ln() - (1.0f64 / 3.0).ln())).abs() < 1e-5);
    }

    #[test]
    fn separable_data_stays_finite_and_gradient_vanishes() {
        let x = matrix(&[&[0.0, 1.0], &[0.1, 1.0], &[0.9, 0.0], &[1.0, 0.0]]);
        let y = [false, false, true, true];
        let lambda = 1e-3;
        let m = LogisticModel::fit(&x, &y, lambda).unwrap();
        assert!(m.converged && m.weights.iter().all(|w| w.is_finite()));
        // Stationarity, checked independently: (1/n) X^T (p - y) + lambda w = 0.
        let p = m.predict_proba(&x);
        for j in 0..2 {
            let g: f64 = (0..4)
                .map(|r| (p[r] - f64::from(u8::from(y[r]))) * x.row(r)[j])
                .sum::<f64>()
                / 4.0
                + lambda * m.weights[j];
            assert!(g.abs() < 1e-8, "{g}");
        }
        assert!(p[0] < 0.5 && p[3] > 0.5);
    }

    #[test]
    fn refuses_bad_input() {
        let x = matrix(&[&[0.0]]);
        assert!(matches!(
            LogisticModel::fit(&x, &[true, false], 1e-3),
            Err(LogisticError::Shape { .. })
        ));
        assert!(matches!(
            LogisticModel::fit(&x, &[true], 0.0),
            Err(LogisticError::Lambda(_))
        ));
    }
}
