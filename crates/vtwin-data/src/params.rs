//! A point value of all mixture parameters in natural (constrained) space, and the per-record
//! log-likelihood of an encoded table under it.
//!
//! The model (paper section 6.1): `p(x) = sum_k pi_k prod_c f_c(x_c | theta_{k,c})` with
//! `f_c = Beta(a_{k,c}, b_{k,c})` on the encoded (0,1) value of a continuous column,
//! `f_c = Categorical(p_{k,c})` on the index of a categorical or binned column, and for an
//! integer column modelled by its W cells ([`ContinuousModel::Cells`]) the piecewise-constant
//! density `f_c(u) = W p_{k,c,j}` on the encoded value u in cell j = floor(u W), so its
//! likelihood is a density of the same encoded value as a Beta's and the two compare.
//! Densities are of the encoded values (see [`crate::codec`]): the Jacobian of the public
//! affine scaling is a constant per column and is not included.

use statrs::function::gamma::ln_gamma;

use crate::codec::unit_cell;
use crate::schema::{ColumnKind, ContinuousModel, Schema};
use crate::table::{Column, Table};

/// Tolerance on `sum = 1` for the weights and for every categorical probability vector.
pub const SIMPLEX_TOL: f64 = 1e-9;

/// The parameters of one column, for all K components.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnParams {
    /// Beta shape parameters per component, all finite and `> 0`.
    Beta {
        /// `a_k`, length K.
        a: Vec<f64>,
        /// `b_k`, length K.
        b: Vec<f64>,
    },
    /// Category (or bin, or cell) probabilities per component: K rows of the column's
    /// cardinality (its cells for [`ContinuousModel::Cells`]), each non-negative and summing
    /// to 1.
    Categorical {
        /// `probs[k][c]`.
        probs: Vec<Vec<f64>>,
    },
}

/// All mixture parameters: K weights and one [`ColumnParams`] per schema column.
#[derive(Debug, Clone, PartialEq)]
pub struct MixtureParams {
    /// Mixture weights `pi_k`, non-negative, summing to 1.
    pub weights: Vec<f64>,
    /// Per schema column, in schema order.
    pub columns: Vec<ColumnParams>,
}

/// The parameters do not fit the schema or are outside their domain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamsError {
    /// No components.
    #[error("mixture has no components")]
    NoComponents,
    /// The weights are not a probability vector.
    #[error("mixture weights are not a probability vector")]
    Weights(#[source] SimplexError),
    /// The weights cannot be sampled from.
    #[error("mixture weights cannot be sampled")]
    WeightSampling(#[source] rand::distr::weighted::Error),
    /// A column's parameters do not fit its schema column.
    #[error("parameters of column \"{column}\"")]
    Column {
        /// The column.
        column: String,
        /// What is wrong.
        #[source]
        problem: ColumnParamsError,
    },
    /// The number of column parameter sets differs from the schema's columns.
    #[error("{found} column parameter sets for a schema of {expected} columns")]
    ColumnCount {
        /// Schema columns.
        expected: usize,
        /// Parameter sets.
        found: usize,
    },
}

/// `ln Beta(u; a, b) = (a-1) ln u + (b-1) ln(1-u) - ln B(a,b)` for `u` in (0,1), `a, b > 0`.
/// Uses statrs' Lanczos `ln_gamma`. Error bound, checked against mpmath (50 digits) over
/// shapes 0.01..1e4 and u in 1e-6..1-1e-6 (`tests/vectors/beta_ln_pdf.json`): at most
/// 4e-15 * (1 + |ln Gamma(a)| + |ln Gamma(b)| + |ln Gamma(a+b)| + |(a-1) ln u| + |(b-1) ln(1-u)|)
/// absolute (measured worst 2.2e-15 times that scale): the cancellation between the terms,
/// not the terms themselves, dominates. Cost O(1).
pub fn beta_ln_pdf(a: f64, b: f64, u: f64) -> f64 {
    (a - 1.0) * u.ln() + (b - 1.0) * (-u).ln_1p() - ln_beta(a, b)
}

/// `ln B(a, b) = ln Gamma(a) + ln Gamma(b) - ln Gamma(a + b)` for `a, b > 0`.
pub fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// `ln sum_i exp(x_i)`, stable; `-inf` for an empty slice or all `-inf`. Cost O(n).
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// Why a vector is not a probability vector.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimplexError {
    /// An entry is negative, infinite or NaN.
    #[error("entry {0} is not a finite non-negative number")]
    Entry(f64),
    /// The entries do not sum to 1 (within [`SIMPLEX_TOL`]).
    #[error("entries sum to {0}, not 1")]
    Sum(f64),
}

/// Why a column's parameters do not fit its schema column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ColumnParamsError {
    /// Not one Beta parameter pair per component.
    #[error("{a} and {b} Beta parameters for {components} components")]
    BetaCount {
        /// Parameters a.
        a: usize,
        /// Parameters b.
        b: usize,
        /// Components K.
        components: usize,
    },
    /// A Beta parameter that is not finite and positive.
    #[error("Beta parameter {0} is not finite and > 0")]
    BetaParameter(f64),
    /// Not one probability row per component.
    #[error("{rows} rows for {components} components")]
    RowCount {
        /// Rows given.
        rows: usize,
        /// Components K.
        components: usize,
    },
    /// A row with another number of probabilities than the column has categories.
    #[error("component {component}: {found} probabilities for {categories} categories")]
    RowLength {
        /// The component.
        component: usize,
        /// Probabilities given.
        found: usize,
        /// The column's categories.
        categories: usize,
    },
    /// A row that is not a probability vector.
    #[error("component {component}")]
    Row {
        /// The component.
        component: usize,
        /// What is wrong.
        #[source]
        source: SimplexError,
    },
    /// The parameter kind does not match the column kind.
    #[error("parameter kind does not match the column kind")]
    Kind,
    /// A Beta law that cannot be built.
    #[error("component {component}: Beta law")]
    Beta {
        /// The component.
        component: usize,
        /// rand_distr's refusal.
        #[source]
        source: rand_distr::BetaError,
    },
    /// A probability row that cannot be sampled.
    #[error("component {component}: probabilities cannot be sampled")]
    Sampling {
        /// The component.
        component: usize,
        /// rand's refusal.
        #[source]
        source: rand::distr::weighted::Error,
    },
}

fn check_simplex(p: &[f64]) -> Result<(), SimplexError> {
    if let Some(x) = p.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
        return Err(SimplexError::Entry(*x));
    }
    let s: f64 = p.iter().sum();
    if (s - 1.0).abs() > SIMPLEX_TOL {
        return Err(SimplexError::Sum(s));
    }
    Ok(())
}

impl MixtureParams {
    /// The number of mixture components K.
    pub fn components(&self) -> usize {
        self.weights.len()
    }

    /// Checks shapes against `schema` and domains: weights and every probability row are
    /// probability vectors (within [`SIMPLEX_TOL`]), Beta parameters finite and `> 0`.
    /// Cost O(parameters).
    pub fn check(&self, schema: &Schema) -> Result<(), ParamsError> {
        let k = self.components();
        if k == 0 {
            return Err(ParamsError::NoComponents);
        }
        check_simplex(&self.weights).map_err(ParamsError::Weights)?;
        if self.columns.len() != schema.columns.len() {
            return Err(ParamsError::ColumnCount {
                expected: schema.columns.len(),
                found: self.columns.len(),
            });
        }
        for (spec, cp) in schema.columns.iter().zip(&self.columns) {
            let bad = |problem: ColumnParamsError| ParamsError::Column {
                column: spec.name.clone(),
                problem,
            };
            match (&spec.kind, spec.kind.levels(), cp) {
                (
                    ColumnKind::Continuous {
                        model: ContinuousModel::Beta,
                        ..
                    },
                    _,
                    ColumnParams::Beta { a, b },
                ) => {
                    if a.len() != k || b.len() != k {
                        return Err(bad(ColumnParamsError::BetaCount {
                            a: a.len(),
                            b: b.len(),
                            components: k,
                        }));
                    }
                    if let Some(x) = a.iter().chain(b).find(|x| !(x.is_finite() && **x > 0.0)) {
                        return Err(bad(ColumnParamsError::BetaParameter(*x)));
                    }
                }
                (_, Some(card), ColumnParams::Categorical { probs }) => {
                    if probs.len() != k {
                        return Err(bad(ColumnParamsError::RowCount {
                            rows: probs.len(),
                            components: k,
                        }));
                    }
                    for (j, row) in probs.iter().enumerate() {
                        if row.len() != card {
                            return Err(bad(ColumnParamsError::RowLength {
                                component: j,
                                found: row.len(),
                                categories: card,
                            }));
                        }
                        check_simplex(row).map_err(|source| {
                            bad(ColumnParamsError::Row {
                                component: j,
                                source,
                            })
                        })?;
                    }
                }
                _ => return Err(bad(ColumnParamsError::Kind)),
            }
        }
        Ok(())
    }

    /// `ln pi_k + ln p(x_n | theta_k)` for every record n and component k, row-major
    /// (`out[n * K + k]`). Checks the parameters against the table's schema first.
    /// Cost O(N * K * columns) plus O(K * columns) ln-gamma evaluations.
    pub fn joint_log_densities(&self, table: &Table) -> Result<Vec<f64>, ParamsError> {
        self.check(&table.schema)?;
        let k = self.components();
        let n = table.n_rows();
        let mut out = vec![0.0; n * k];
        let ln_w: Vec<f64> = self.weights.iter().map(|w| w.ln()).collect();
        for row in out.chunks_exact_mut(k) {
            row.copy_from_slice(&ln_w);
        }
        for ((cp, col), spec) in self
            .columns
            .iter()
            .zip(&table.columns)
            .zip(&table.schema.columns)
        {
            match (cp, col) {
                (ColumnParams::Beta { a, b }, Column::Unit(u)) => {
                    let ln_b: Vec<f64> = (0..k).map(|j| ln_beta(a[j], b[j])).collect();
                    for (row, &x) in out.chunks_exact_mut(k).zip(u) {
                        let (lx, l1x) = (x.ln(), (-x).ln_1p());
                        for j in 0..k {
                            row[j] += (a[j] - 1.0) * lx + (b[j] - 1.0) * l1x - ln_b[j];
                        }
                    }
                }
                (ColumnParams::Categorical { probs }, col) => {
                    // A column's cells: the density W p_j of the encoded value (module docs).
                    let (level, ln_w): (Vec<usize>, f64) = match (col, spec.kind.cells()) {
                        (Column::Index(idx), _) => (idx.iter().map(|&c| c as usize).collect(), 0.0),
                        (Column::Unit(u), Some(w)) => (
                            u.iter().map(|&x| unit_cell(x, w)).collect(),
                            (w as f64).ln(),
                        ),
                        _ => unreachable!("check() matched cells to Unit columns"),
                    };
                    let ln_p: Vec<Vec<f64>> = probs
                        .iter()
                        .map(|r| r.iter().map(|p| p.ln() + ln_w).collect())
                        .collect();
                    for (row, &c) in out.chunks_exact_mut(k).zip(&level) {
                        for j in 0..k {
                            row[j] += ln_p[j][c];
                        }
                    }
                }
                _ => unreachable!("check() matched parameter kinds to column kinds"),
            }
        }
        Ok(out)
    }

    /// Per-record log-likelihood `ln p(x_n) = logsumexp_k (ln pi_k + ln p(x_n | theta_k))`
    /// (encoded-value densities, see the module documentation). Cost as
    /// [`MixtureParams::joint_log_densities`].
    pub fn log_likelihood(&self, table: &Table) -> Result<Vec<f64>, ParamsError> {
        let k = self.components();
        let joint = self.joint_log_densities(table)?;
        Ok(joint.chunks_exact(k).map(log_sum_exp).collect())
    }

    /// Mean negative log-likelihood per record (`nll_test` of INTERFACE.md when `table` is
    /// the test set).
    pub fn mean_nll(&self, table: &Table) -> Result<f64, ParamsError> {
        let ll = self.log_likelihood(table)?;
        Ok(-ll.iter().sum::<f64>() / ll.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beta_ln_pdf_known_values() {
        // Beta(2,3) at 0.3: 12 * 0.3 * 0.7^2 = 1.764.
        assert!((beta_ln_pdf(2.0, 3.0, 0.3) - 1.764f64.ln()).abs() < 1e-13);
        // Beta(1,1) is uniform.
        assert!(beta_ln_pdf(1.0, 1.0, 0.123).abs() < 1e-14);
        // Beta(1/2,1/2) at 1/2: 1 / (pi * sqrt(1/4)) = 2 / pi.
        let v = beta_ln_pdf(0.5, 0.5, 0.5);
        assert!((v - (2.0 / std::f64::consts::PI).ln()).abs() < 1e-13, "{v}");
        // ln B(0.5, 0.5) = ln pi; ln Gamma(0.5) = ln sqrt(pi).
        assert!((ln_beta(0.5, 0.5) - std::f64::consts::PI.ln()).abs() < 1e-13);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
        // ln Gamma(n) = ln (n-1)! : ln 9! = ln 362880.
        assert!((ln_gamma(10.0) - 362880f64.ln()).abs() < 1e-12);
        // Large shapes: ln B(200, 300) against the Stirling-free reference sum
        // ln B(a,b) = sum ln of integers: B(200,300) = 199! 299! / 499!.
        let lf = |n: u32| (1..=n).map(|i| (i as f64).ln()).sum::<f64>();
        let exact = lf(199) + lf(299) - lf(499);
        assert!(
            (ln_beta(200.0, 300.0) - exact).abs() < 1e-9,
            "{}",
            ln_beta(200.0, 300.0) - exact
        );
    }

    #[test]
    fn log_sum_exp_is_stable() {
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert_eq!(
            log_sum_exp(&[f64::NEG_INFINITY, f64::NEG_INFINITY]),
            f64::NEG_INFINITY
        );
        assert!((log_sum_exp(&[-1000.0, -1000.0]) - (-1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((log_sum_exp(&[1.0, f64::NEG_INFINITY]) - 1.0).abs() < 1e-15);
        assert!((log_sum_exp(&[0.0, 2f64.ln()]) - 3f64.ln()).abs() < 1e-15);
    }
}
