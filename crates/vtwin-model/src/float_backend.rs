//! The `float` backend: the non-partitioned f64 baseline (the paper's DPVI on joined data).
//!
//! Per record, in log space: j[n][k] = ln pi_k + sum_p l_p[n][k], r = softmax_k(beta j) (beta
//! the iteration's inverse temperature, [`crate::tempering`]; 1 untempered), and the
//! per-example gradient of (1 / beta) ln sum_k exp(beta j[n][k]) is formed explicitly as a
//! d-vector: r[n][k] - pi_k for the weight logits and r[n][k] s_p[n][k][j] for component k's
//! parameters (the score s from [`crate::kernels`]). Each is clipped to L2 norm C, summed,
//! and N(0, (sigma C)^2) is added per coordinate from party 0's noise generator (continuous
//! Gaussian in f64: a baseline, not a deployable mechanism).
//!
//! Forming g_n explicitly (B x d) makes this an independent check of the algebra the fixed
//! backend uses (squared norms from q, M_p = W^T T_p and the public affine map).

use std::time::Instant;

use candle_core::Device;
use rand_distr::{Distribution, Normal};

use crate::backend::{
    BackendError, Diagnostics, GradientBackend, GradientInput, GradientOutput, NoiseRngs,
};
use crate::kernels::{compute_device, local_terms, log_sum_exp, KernelError, PartyMaps};
use crate::layout::Layout;
use crate::party_data::PartyBatch;

/// The f64 baseline backend.
#[derive(Clone, Debug)]
pub struct FloatBackend {
    device: Device,
}

impl FloatBackend {
    /// On [`compute_device`].
    pub fn new() -> Result<FloatBackend, KernelError> {
        Ok(FloatBackend {
            device: compute_device()?,
        })
    }
}

/// theta index of every (party, k, j), K x |T_p| per party.
pub(crate) fn param_indices(layout: &Layout) -> Vec<Vec<usize>> {
    (0..layout.n_parties())
        .map(|p| {
            let w = layout.stat_width(p);
            (0..layout.components)
                .flat_map(|k| (0..w).map(move |j| (k, j)))
                .map(|(k, j)| layout.param_index(p, k, j))
                .collect()
        })
        .collect()
}

/// The joint log-densities j[n][k] = ln pi_k + sum_p l_p[n][k] (B x K) and, if asked, each
/// party's scores (B x K x |T_p|).
fn joint_terms(
    device: &Device,
    layout: &Layout,
    theta: &[f64],
    parties: &[PartyBatch],
    with_scores: bool,
) -> Result<(Vec<f64>, Vec<Vec<f64>>), KernelError> {
    let k_n = layout.components;
    let b = parties.first().map_or(0, |p| p.rows);
    let pi = crate::backend::softmax(&theta[..k_n]);
    let mut joint: Vec<f64> = (0..b * k_n).map(|i| pi[i % k_n].ln()).collect();
    let mut scores = Vec::new();
    for batch in parties {
        let maps = PartyMaps::new(theta, layout, batch.party);
        let t = local_terms(device, &maps, &batch.stats, b, with_scores)?;
        for (j, l) in joint.iter_mut().zip(&t.log_density) {
            *j += l;
        }
        if let Some(s) = t.scores {
            scores.push(s);
        }
    }
    Ok((joint, scores))
}

/// ln p(x_n | theta) for every record of the batch (all parties' rows of the same records).
/// Cost O(B K sum_p |T_p|).
pub fn log_likelihood(
    device: &Device,
    layout: &Layout,
    theta: &[f64],
    parties: &[PartyBatch],
) -> Result<Vec<f64>, KernelError> {
    let (joint, _) = joint_terms(device, layout, theta, parties, false)?;
    Ok(joint
        .chunks_exact(layout.components)
        .map(log_sum_exp)
        .collect())
}

/// The unclipped per-example gradients d ln p(x_n | theta) / d theta, B x d row-major, with
/// the responsibilities tempered by `input.beta` (the gradient of
/// (1 / beta) ln sum_k (pi_k p(x_n | k))^beta; exactly d ln p(x_n | theta) at beta = 1).
/// Cost O(B d).
pub fn per_example_gradients(
    device: &Device,
    input: &GradientInput<'_>,
) -> Result<Vec<f64>, BackendError> {
    let b = input.validate()?;
    let layout = input.layout;
    let (k_n, d) = (layout.components, layout.dim());
    let pi = input.weights();
    let (mut joint, scores) = joint_terms(device, layout, input.theta, input.parties, true)?;
    // Exact at beta = 1 (the untempered gradient bit for bit); B K multiplications.
    joint.iter_mut().for_each(|j| *j *= input.beta);
    let idx = param_indices(layout);
    let mut g = vec![0.0; b * d];
    for n in 0..b {
        let row = &joint[n * k_n..(n + 1) * k_n];
        let lse = log_sum_exp(row);
        let gn = &mut g[n * d..(n + 1) * d];
        for k in 0..k_n {
            let r = (row[k] - lse).exp();
            gn[layout.weight_index(k)] = r - pi[k];
            for (p, s) in scores.iter().enumerate() {
                let w = layout.stat_width(p);
                let base = (n * k_n + k) * w;
                for j in 0..w {
                    gn[idx[p][k * w + j]] = r * s[base + j];
                }
            }
        }
    }
    Ok(g)
}

impl GradientBackend for FloatBackend {
    fn name(&self) -> &'static str {
        "float"
    }

    fn gradient(
        &mut self,
        input: &GradientInput<'_>,
        noise: &mut NoiseRngs,
    ) -> Result<GradientOutput, BackendError> {
        let t0 = Instant::now();
        let g = per_example_gradients(&self.device, input)?;
        let d = input.layout.dim();
        // Padding rows (after the real ones) contribute nothing.
        let real = input.parties.first().map_or(0, |p| p.real);
        let mut sum = vec![0.0; d];
        let mut clipped = 0;
        for gn in g.chunks_exact(d).take(real) {
            let norm = gn.iter().map(|v| v * v).sum::<f64>().sqrt();
            let c = if norm > input.clip {
                clipped += 1;
                input.clip / norm
            } else {
                1.0
            };
            for (s, v) in sum.iter_mut().zip(gn) {
                *s += c * v;
            }
        }
        let local_ms = t0.elapsed().as_secs_f64() * 1e3;
        let t1 = Instant::now();
        if input.noise.sigma > 0.0 {
            let normal = Normal::new(0.0, input.noise.sigma * input.clip)?;
            let rng = noise.party(0);
            for s in sum.iter_mut() {
                *s += normal.sample(rng);
            }
        }
        Ok(GradientOutput {
            gradient: sum,
            diagnostics: Diagnostics {
                records: real,
                clipped,
                den_zero: 0,
                local_ms,
                combine_ms: 0.0,
                noise_ms: t1.elapsed().as_secs_f64() * 1e3,
            },
            // Exact arithmetic: nothing can wrap.
            truncation_failure: 0.0,
        })
    }
}
