//! `model.json`: the public result of training (INTERFACE.md), read by `synthesize` and `eval`.
//!
//! It holds the schema, K, the parameter layout and the mean-field Gaussian posterior
//! q(theta) = N(mu, diag(exp(log_sigma))^2) over the unconstrained parameters
//! ([`crate::layout`]). [`ModelFile::mean_params`] maps mu to natural parameters;
//! [`ModelFile::sample_params`] maps a draw theta ~ q.

use std::path::{Path, PathBuf};

use rand::Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use crate::backend::softmax;
use crate::layout::{ColumnModel, Layout};
use vtwin_data::params::{ColumnParams, MixtureParams};
use vtwin_data::schema::Schema;
use vtwin_host::atomic::{self, Mode};

/// The format tag written in every model file.
pub const FORMAT: &str = "vtwin-model/1";

/// A trained model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelFile {
    /// [`FORMAT`].
    pub format: String,
    /// The public schema.
    pub schema: Schema,
    /// K.
    pub components: usize,
    /// The layout of mu and log_sigma (derived from schema and K; stored for readers).
    pub layout: Layout,
    /// Posterior means, length d.
    pub mu: Vec<f64>,
    /// Posterior log standard deviations, length d.
    pub log_sigma: Vec<f64>,
}

/// Model file errors, naming the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelFileError {
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not valid model JSON.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// Well-formed but inconsistent.
    #[error("{}: {problem}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: ModelFileProblem,
    },
}

/// How a well-formed model file is inconsistent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelFileProblem {
    /// Another format tag.
    #[error("format \"{0}\", expected \"{FORMAT}\"")]
    Format(String),
    /// The schema and components give no layout.
    #[error("layout")]
    Layout(#[source] crate::layout::LayoutError),
    /// The stored layout is not the schema's.
    #[error("layout does not match the schema and components")]
    LayoutMismatch,
    /// Parameter vectors of the wrong length.
    #[error("mu and log_sigma must have {d} values, found {mu} and {log_sigma}")]
    Length {
        /// d.
        d: usize,
        /// len(mu).
        mu: usize,
        /// len(log_sigma).
        log_sigma: usize,
    },
    /// A parameter that is NaN or infinite.
    #[error("parameter {0} is not finite")]
    NonFinite(usize),
}

/// Natural parameters of an unconstrained theta (length d of `layout`); a target column's
/// are its pinned classes (component k holds `Layout::target_class(k)` with probability
/// exactly 1), whatever theta holds there. Cost O(d).
pub fn natural_params(layout: &Layout, theta: &[f64]) -> MixtureParams {
    let k_n = layout.components;
    let columns = layout
        .columns
        .iter()
        .enumerate()
        .map(|(ci, col)| {
            let w = col.model.width();
            let block = |k: usize| &theta[col.param_offset + k * w..col.param_offset + (k + 1) * w];
            if layout.target() == Some(ci) {
                let one_hot = |k: usize| {
                    let mut p = vec![0.0; w];
                    p[layout.target_class(k).unwrap_or(0)] = 1.0;
                    p
                };
                return ColumnParams::Categorical {
                    probs: (0..k_n).map(one_hot).collect(),
                };
            }
            match col.model {
                ColumnModel::Beta => ColumnParams::Beta {
                    a: (0..k_n).map(|k| block(k)[0].exp()).collect(),
                    b: (0..k_n).map(|k| block(k)[1].exp()).collect(),
                },
                ColumnModel::Categorical { .. } | ColumnModel::Cells { .. } => {
                    ColumnParams::Categorical {
                        probs: (0..k_n).map(|k| softmax(block(k))).collect(),
                    }
                }
            }
        })
        .collect();
    MixtureParams {
        weights: softmax(&theta[..k_n]),
        columns,
    }
}

impl ModelFile {
    /// A model file for `schema` with posterior (mu, log_sigma).
    pub fn new(schema: Schema, layout: Layout, mu: Vec<f64>, log_sigma: Vec<f64>) -> ModelFile {
        ModelFile {
            format: FORMAT.into(),
            schema,
            components: layout.components,
            layout,
            mu,
            log_sigma,
        }
    }

    /// Loads and validates (format, layout equals the one the schema and K give, lengths,
    /// finiteness).
    pub fn load(path: &Path) -> Result<ModelFile, ModelFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelFileError::Io {
            path: path.into(),
            source,
        })?;
        let m: ModelFile = serde_json::from_str(&text).map_err(|source| ModelFileError::Json {
            path: path.into(),
            source,
        })?;
        let invalid = |problem: ModelFileProblem| ModelFileError::Invalid {
            path: path.into(),
            problem,
        };
        if m.format != FORMAT {
            return Err(invalid(ModelFileProblem::Format(m.format)));
        }
        let expected = Layout::from_schema(&m.schema, m.components)
            .map_err(|e| invalid(ModelFileProblem::Layout(e)))?;
        if expected != m.layout {
            return Err(invalid(ModelFileProblem::LayoutMismatch));
        }
        let d = m.layout.dim();
        if m.mu.len() != d || m.log_sigma.len() != d {
            return Err(invalid(ModelFileProblem::Length {
                d,
                mu: m.mu.len(),
                log_sigma: m.log_sigma.len(),
            }));
        }
        if let Some(i) = m.mu.iter().chain(&m.log_sigma).position(|v| !v.is_finite()) {
            return Err(invalid(ModelFileProblem::NonFinite(i)));
        }
        Ok(m)
    }

    /// Saves as pretty JSON, atomically.
    pub fn save(&self, path: &Path) -> Result<(), ModelFileError> {
        let text = serde_json::to_string_pretty(self).map_err(|source| ModelFileError::Json {
            path: path.into(),
            source,
        })?;
        atomic::write(path, text.as_bytes(), Mode::Public).map_err(|source| ModelFileError::Io {
            path: path.into(),
            source,
        })
    }

    /// The natural parameters at mu (the constrained map of the posterior mean).
    pub fn mean_params(&self) -> MixtureParams {
        natural_params(&self.layout, &self.mu)
    }

    /// The natural parameters at one draw theta = mu + exp(log_sigma) eta, eta ~ N(0, I).
    pub fn sample_params<R: Rng + ?Sized>(&self, rng: &mut R) -> MixtureParams {
        let theta: Vec<f64> = self
            .mu
            .iter()
            .zip(&self.log_sigma)
            .map(|(m, l)| m + l.exp() * rng.sample::<f64, _>(StandardNormal))
            .collect();
        natural_params(&self.layout, &theta)
    }
}
