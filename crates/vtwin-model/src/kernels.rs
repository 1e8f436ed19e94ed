//! A party's local kernels (`docs/architecture.md` "One iteration", step 2), on candle
//! tensors in f64.
//!
//! Every component density here is an exponential family in the party's sufficient
//! statistics T_p(x) (one-hot per categorical column, (log u, log(1-u)) per Beta column):
//! - log-density: l[n][k] = sum_j T[n][j] * nat[j][k] + log_norm[k];
//! - score with respect to the unconstrained parameters of the party's block of component
//!   k: s[n][k][j] = scale[k][j] * T[n][j] + offset[k][j] (the public affine map A_k T + b_k
//!   of `protocols/mpc-gradient.md`, diagonal because statistic j pairs with parameter j, see
//!   [`crate::layout`]):
//!   - categorical (and an integer column's W cells): scale = 1, offset = -omega_{k,c}, so
//!     s_c = 1[x=c] - omega_{k,c}. For cells, l omits the density's constant ln W (the same
//!     for every component, so no responsibility or score depends on it);
//!   - Beta (log a, log b): scale = (a, b), offset = (a (psi(a+b) - psi(a)), b (psi(a+b) - psi(b))),
//!     so s_{log a} = a (log u - psi(a) + psi(a+b)).
//!
//! The scores are computed only when asked for (the float backend); the fixed and mpc
//! uploads bound each record's score norm exactly from the encoded map instead
//! (`vtwin_fixed::score_root`). The maps (nat, log_norm, scale, offset)
//! depend only on theta and are computed on the host ([`PartyMaps::new`]); the per-record
//! work (B x |T_p| x K) runs on the candle device:
//! `Device::Cpu`, or CUDA device 0 with the `cuda` feature.

/// The device the local kernels run on (re-exported so callers need not depend on candle).
pub use candle_core::Device;
use candle_core::Tensor;
use statrs::function::gamma::{digamma, ln_gamma};

use crate::layout::{ColumnModel, Layout};

/// Errors from the local kernels.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// The candle device or a tensor operation failed.
    #[error("kernel: {0}")]
    Candle(#[from] candle_core::Error),
    /// The statistics matrix does not have rows x |T_p| entries.
    #[error("party {party}: statistics have {got} values, expected {rows} x {width}")]
    Shape {
        /// Party index.
        party: usize,
        /// Values given.
        got: usize,
        /// Rows claimed.
        rows: usize,
        /// |T_p|.
        width: usize,
    },
}

/// The device the kernels run on: CUDA device 0 with the `cuda` feature, else the CPU.
pub fn compute_device() -> Result<Device, KernelError> {
    #[cfg(feature = "cuda")]
    {
        Ok(Device::new_cuda(0)?)
    }
    #[cfg(not(feature = "cuda"))]
    {
        Ok(Device::Cpu)
    }
}

/// The public maps of one party at one theta; all row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct PartyMaps {
    /// Party index.
    pub party: usize,
    /// K.
    pub components: usize,
    /// |T_p|.
    pub width: usize,
    /// Natural parameters, |T_p| x K.
    pub nat: Vec<f64>,
    /// Log-normalisers, K.
    pub log_norm: Vec<f64>,
    /// Score scale A_k (diagonal), K x |T_p|.
    pub scale: Vec<f64>,
    /// Score offset b_k, K x |T_p|.
    pub offset: Vec<f64>,
    /// The target mask when this party holds the target column (`vtwin_model::layout`
    /// module docs): the target's first statistic in T_p and the class of each component.
    /// Its natural parameters, scale and offset are 0: the mask alone carries it.
    pub target: Option<TargetMask>,
}

/// Where a party's target column sits in T_p, and which class each component holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetMask {
    /// Offset of the target's one-hot statistics in T_p.
    pub stat_offset: usize,
    /// The class of component k (`Layout::target_class`), K entries.
    pub class: Vec<usize>,
}

impl TargetMask {
    /// Sets `l[k] = -inf` (likelihood exactly 0) for every component whose class is not the
    /// record's, given the record's statistics `t` (|T_p|). A record without a class (a
    /// padding row's zero statistics) gets -inf everywhere. Cost O(K).
    pub fn apply(&self, t: &[f64], l: &mut [f64]) {
        for (lk, &c) in l.iter_mut().zip(&self.class) {
            if t[self.stat_offset + c] != 1.0 {
                *lk = f64::NEG_INFINITY;
            }
        }
    }
}

impl PartyMaps {
    /// Computes the maps of `party` from theta. Cost O(K |T_p|) plus K lgamma/digamma
    /// evaluations per Beta column. Bounds: finite for finite theta with exp(theta) finite.
    pub fn new(theta: &[f64], layout: &Layout, party: usize) -> PartyMaps {
        let k_n = layout.components;
        let w = layout.stat_width(party);
        let mut m = PartyMaps {
            party,
            components: k_n,
            width: w,
            nat: vec![0.0; w * k_n],
            log_norm: vec![0.0; k_n],
            scale: vec![0.0; k_n * w],
            offset: vec![0.0; k_n * w],
            target: None,
        };
        for ci in layout.columns_of(party) {
            let col = &layout.columns[ci];
            if layout.target() == Some(ci) {
                // Pinned: no parameters to score, and the mask replaces the density.
                m.target = Some(TargetMask {
                    stat_offset: col.stat_offset,
                    class: (0..k_n).filter_map(|k| layout.target_class(k)).collect(),
                });
                continue;
            }
            let cw = col.model.width();
            for k in 0..k_n {
                let base = col.param_offset + k * cw;
                let j0 = col.stat_offset;
                match col.model {
                    ColumnModel::Beta => {
                        let a = theta[base].exp();
                        let b = theta[base + 1].exp();
                        let psi_ab = digamma(a + b);
                        m.nat[j0 * k_n + k] = a - 1.0;
                        m.nat[(j0 + 1) * k_n + k] = b - 1.0;
                        m.log_norm[k] -= ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b);
                        m.scale[k * w + j0] = a;
                        m.scale[k * w + j0 + 1] = b;
                        m.offset[k * w + j0] = a * (psi_ab - digamma(a));
                        m.offset[k * w + j0 + 1] = b * (psi_ab - digamma(b));
                    }
                    // A column's cells are a categorical here: its density's constant ln W
                    // (vtwin_data::params) is the same for every k, so it changes no
                    // responsibility, and leaving it out keeps every factor's range as a
                    // categorical's under each renormalisation.
                    ColumnModel::Categorical { .. } | ColumnModel::Cells { .. } => {
                        let logits = &theta[base..base + cw];
                        let lse = log_sum_exp(logits);
                        for (c, &z) in logits.iter().enumerate() {
                            let log_omega = z - lse;
                            m.nat[(j0 + c) * k_n + k] = log_omega;
                            m.scale[k * w + j0 + c] = 1.0;
                            m.offset[k * w + j0 + c] = -log_omega.exp();
                        }
                    }
                }
            }
        }
        m
    }
}

/// log sum_i exp(x_i), stable; -inf for an empty slice.
pub fn log_sum_exp(x: &[f64]) -> f64 {
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

/// One party's local values for a batch, row-major B x K.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalTerms {
    /// l[n][k] = log F_p(x_n^p | rho_k^p).
    pub log_density: Vec<f64>,
    /// s[n][k][j], B x K x |T_p|, only when asked for.
    pub scores: Option<Vec<f64>>,
}

/// Runs the local kernels of one party on a batch of sufficient statistics `stats`
/// (rows x |T_p|, row-major). Returns l, and the scores if `with_scores`; with the target
/// mask, l is -inf in the components of the other classes.
/// Cost: one (B x |T_p|)(|T_p| x K) matrix product, and B K |T_p| multiply-adds for the
/// scores (skipped without them: the fixed and mpc uploads compute their exact score roots
/// from the encoded map instead).
pub fn local_terms(
    device: &Device,
    maps: &PartyMaps,
    stats: &[f64],
    rows: usize,
    with_scores: bool,
) -> Result<LocalTerms, KernelError> {
    let (k_n, w) = (maps.components, maps.width);
    if stats.len() != rows * w {
        return Err(KernelError::Shape {
            party: maps.party,
            got: stats.len(),
            rows,
            width: w,
        });
    }
    if rows == 0 {
        return Ok(LocalTerms {
            log_density: Vec::new(),
            scores: with_scores.then(Vec::new),
        });
    }
    let t = Tensor::from_slice(stats, (rows, w), device)?;
    let nat = Tensor::from_slice(&maps.nat, (w, k_n), device)?;
    let log_norm = Tensor::from_slice(&maps.log_norm, (1, k_n), device)?;
    let l = t.matmul(&nat)?.broadcast_add(&log_norm)?;
    let mut log_density: Vec<f64> = l.flatten_all()?.to_vec1()?;
    if let Some(mask) = &maps.target {
        for (t_n, l_n) in stats.chunks_exact(w).zip(log_density.chunks_exact_mut(k_n)) {
            mask.apply(t_n, l_n);
        }
    }
    let scores = if with_scores {
        let scale = Tensor::from_slice(&maps.scale, (1, k_n, w), device)?;
        let offset = Tensor::from_slice(&maps.offset, (1, k_n, w), device)?;
        let s = t
            .unsqueeze(1)?
            .broadcast_mul(&scale)?
            .broadcast_add(&offset)?;
        Some(s.flatten_all()?.to_vec1()?)
    } else {
        None
    };
    Ok(LocalTerms {
        log_density,
        scores,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::ColumnModel;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn layout() -> Layout {
        Layout::new(
            4,
            vec!["a".into()],
            vec![
                ("x".into(), 0, ColumnModel::Beta),
                ("c".into(), 0, ColumnModel::Categorical { cardinality: 3 }),
                ("y".into(), 0, ColumnModel::Beta),
            ],
        )
        .unwrap()
    }

    /// Direct log-density of one record from theta, independent of the maps.
    fn direct_log_density(theta: &[f64], l: &Layout, k: usize, u: &[f64; 2], c: usize) -> f64 {
        let beta = |base: usize, u: f64| {
            let (a, b) = (theta[base].exp(), theta[base + 1].exp());
            (a - 1.0) * u.ln() + (b - 1.0) * (1.0 - u).ln() - ln_gamma(a) - ln_gamma(b)
                + ln_gamma(a + b)
        };
        let cb = l.columns[1].param_offset + 3 * k;
        beta(l.columns[0].param_offset + 2 * k, u[0])
            + beta(l.columns[2].param_offset + 2 * k, u[1])
            + theta[cb + c]
            - log_sum_exp(&theta[cb..cb + 3])
    }

    fn stats(u: &[f64; 2], c: usize) -> Vec<f64> {
        let mut t = vec![
            u[0].ln(),
            (1.0 - u[0]).ln(),
            0.0,
            0.0,
            0.0,
            u[1].ln(),
            (1.0 - u[1]).ln(),
        ];
        t[2 + c] = 1.0;
        t
    }

    #[test]
    fn score_is_finite_difference_gradient() {
        let l = layout();
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for _ in 0..20 {
            let theta: Vec<f64> = (0..l.dim()).map(|_| rng.random_range(-1.5..1.5)).collect();
            let u = [rng.random_range(0.01..0.99), rng.random_range(0.01..0.99)];
            let c = rng.random_range(0..3);
            let t = stats(&u, c);
            let maps = PartyMaps::new(&theta, &l, 0);
            let out = local_terms(&Device::Cpu, &maps, &t, 1, true).unwrap();
            let s = out.scores.unwrap();
            for k in 0..4 {
                let direct = direct_log_density(&theta, &l, k, &u, c);
                assert!((out.log_density[k] - direct).abs() < 1e-10);
                for j in 0..7 {
                    let i = l.param_index(0, k, j);
                    let h = 1e-6;
                    let (mut a, mut b) = (theta.clone(), theta.clone());
                    a[i] += h;
                    b[i] -= h;
                    let fd = (direct_log_density(&a, &l, k, &u, c)
                        - direct_log_density(&b, &l, k, &u, c))
                        / (2.0 * h);
                    let sv = s[k * 7 + j];
                    assert!(
                        (fd - sv).abs() < 1e-5 * (1.0 + sv.abs()),
                        "k {k} j {j}: fd {fd} score {sv}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_target_masks_the_other_classes_and_scores_nothing() {
        let plain = layout();
        let l = layout().with_target("c").unwrap();
        let c_col = &l.columns[1];
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        for _ in 0..20 {
            let theta: Vec<f64> = (0..l.dim()).map(|_| rng.random_range(-1.5..1.5)).collect();
            let u = [rng.random_range(0.01..0.99), rng.random_range(0.01..0.99)];
            let c = rng.random_range(0..3);
            let t = stats(&u, c);
            let masked =
                local_terms(&Device::Cpu, &PartyMaps::new(&theta, &l, 0), &t, 1, true).unwrap();
            let free = local_terms(
                &Device::Cpu,
                &PartyMaps::new(&theta, &plain, 0),
                &t,
                1,
                true,
            )
            .unwrap();
            let (ms, fs) = (masked.scores.unwrap(), free.scores.unwrap());
            for k in 0..4 {
                if l.target_class(k) != Some(c) {
                    assert_eq!(masked.log_density[k], f64::NEG_INFINITY, "k {k}");
                } else {
                    // The other columns' density, without the target's own term.
                    let base = c_col.param_offset + 3 * k;
                    let log_omega = theta[base + c] - log_sum_exp(&theta[base..base + 3]);
                    let want = free.log_density[k] - log_omega;
                    assert!((masked.log_density[k] - want).abs() < 1e-10, "k {k}");
                }
                for j in 0..7 {
                    let target = (2..5).contains(&j);
                    let want = if target { 0.0 } else { fs[k * 7 + j] };
                    assert_eq!(ms[k * 7 + j], want, "k {k} j {j}");
                }
            }
            // A padding row (zero statistics) holds no class: every component is masked.
            let pad = local_terms(
                &Device::Cpu,
                &PartyMaps::new(&theta, &l, 0),
                &[0.0; 7],
                1,
                false,
            )
            .unwrap();
            assert!(pad.log_density.iter().all(|&v| v == f64::NEG_INFINITY));
        }
    }

    #[test]
    fn rejects_wrong_shape() {
        let l = layout();
        let maps = PartyMaps::new(&vec![0.0; l.dim()], &l, 0);
        assert!(matches!(
            local_terms(&Device::Cpu, &maps, &[0.0; 6], 1, false),
            Err(KernelError::Shape { got: 6, .. })
        ));
    }
}
