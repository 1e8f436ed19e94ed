//! The density-ratio attack (DOMIAS, van Breugel et al. 2023, "Membership inference attacks
//! against synthetic data through overfitting detection").
//!
//! Threat model: the attacker holds the released model (white box: its density, which is
//! stronger than DOMIAS's density estimate fitted on the synthetic data) and reference data
//! from the same population that is not in the training set. A model that overfits puts
//! more density on its training records than the population does, so the score
//! `ln p_model(x) - ln p_ref(x)` is larger for members. Dividing by the population density
//! removes the effect of a record being merely typical.
//!
//! `p_model` is the mixture at the released posterior mean ([`ModelFile::mean_params`]);
//! `p_ref` is the same mixture family (same K) fitted without noise on the reference records
//! ([`super::training::fit_mixture`], float backend, sigma = 0). Both are densities of the
//! encoded values (vtwin-model's convention); the public scaling Jacobian is the same for
//! both and cancels in the ratio.
//!
//! [`ModelFile::mean_params`]: vtwin_model::model_file::ModelFile::mean_params

use vtwin_data::params::ParamsError;
use vtwin_data::{MixtureParams, Table};

/// `ln p_model(x) - ln p_ref(x)` for every record of `records`. Errors if either mixture does
/// not fit the table's schema. Cost O(records * K * columns) per mixture.
pub fn density_ratio_scores(
    model: &MixtureParams,
    reference: &MixtureParams,
    records: &Table,
) -> Result<Vec<f64>, ParamsError> {
    let lm = model.log_likelihood(records)?;
    let lr = reference.log_likelihood(records)?;
    Ok(lm.iter().zip(&lr).map(|(a, b)| a - b).collect())
}
