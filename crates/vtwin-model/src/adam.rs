//! Adam (Kingma and Ba 2015) for gradient ascent on the ELBO, with serialisable state.

use serde::{Deserialize, Serialize};

/// The default number of iterations for Adam's learning rate `lr`: T = 100 / lr (10000 at
/// the default 0.01). Why: Adam moves a parameter by at most about lr per step, so T lr =
/// 100 lets every parameter travel far beyond its O(1-10) range even when noisy steps mostly
/// cancel. A rule from public settings only; at fixed epsilon sigma is recalibrated for T.
/// Measured on Adult (docs/utility-levers.md): 10x fewer steps lose much, 2x more gain
/// nothing. Cost O(1).
pub fn default_iterations(lr: f64) -> u64 {
    (100.0 / lr).round().max(1.0) as u64
}

/// How the step size changes over a run. Public (a function of settings only), so any
/// schedule is post-processing of the noisy gradients: no privacy cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LrSchedule {
    /// `lr` at every step.
    #[default]
    Constant,
    /// Cosine decay from `lr` at the first step towards 0 at step `iterations` (the run's
    /// planned length): `lr (1 + cos(pi (t - 1) / iterations)) / 2`, 0 after it.
    Cosine {
        /// The run's planned number of iterations.
        iterations: u64,
    },
}

impl LrSchedule {
    /// The factor applied to `lr` at step `t` (1-based). Cost O(1).
    pub fn factor(self, t: u64) -> f64 {
        match self {
            LrSchedule::Constant => 1.0,
            LrSchedule::Cosine { iterations } => {
                let total = iterations.max(1) as f64;
                let done = (t.saturating_sub(1) as f64).min(total);
                0.5 * (1.0 + (std::f64::consts::PI * done / total).cos())
            }
        }
    }
}

/// Adam's hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdamConfig {
    /// Step size (default 0.01, INTERFACE.md).
    pub lr: f64,
    /// First-moment decay (0.9).
    pub beta1: f64,
    /// Second-moment decay (0.999).
    pub beta2: f64,
    /// Denominator guard (1e-8).
    pub eps: f64,
    /// Step-size schedule (constant unless set; absent in model files and JSON written
    /// before it existed).
    #[serde(default)]
    pub schedule: LrSchedule,
}

impl Default for AdamConfig {
    fn default() -> Self {
        AdamConfig {
            lr: 0.01,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            schedule: LrSchedule::Constant,
        }
    }
}

/// Adam's state for one parameter vector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adam {
    /// Hyper-parameters.
    pub config: AdamConfig,
    /// Steps taken.
    pub t: u64,
    /// First moments.
    pub m: Vec<f64>,
    /// Second moments.
    pub v: Vec<f64>,
}

impl Adam {
    /// Fresh state for `dim` parameters.
    pub fn new(config: AdamConfig, dim: usize) -> Adam {
        Adam {
            config,
            t: 0,
            m: vec![0.0; dim],
            v: vec![0.0; dim],
        }
    }

    /// One ascent step: x += lr_t * m_hat / (sqrt(v_hat) + eps), lr_t = lr times the
    /// schedule's factor at this step. Panics if lengths differ. Cost O(dim).
    pub fn ascend(&mut self, x: &mut [f64], grad: &[f64]) {
        assert!(
            x.len() == self.m.len() && grad.len() == self.m.len(),
            "adam: length mismatch"
        );
        let c = self.config;
        self.t += 1;
        let t = i32::try_from(self.t).unwrap_or(i32::MAX);
        let bc1 = 1.0 - c.beta1.powi(t);
        let bc2 = 1.0 - c.beta2.powi(t);
        let lr = c.lr * c.schedule.factor(self.t);
        for i in 0..x.len() {
            self.m[i] = c.beta1 * self.m[i] + (1.0 - c.beta1) * grad[i];
            self.v[i] = c.beta2 * self.v[i] + (1.0 - c.beta2) * grad[i] * grad[i];
            x[i] += lr * (self.m[i] / bc1) / ((self.v[i] / bc2).sqrt() + c.eps);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_decays_from_one_to_zero_over_the_run() {
        let s = LrSchedule::Cosine { iterations: 100 };
        assert_eq!(s.factor(1), 1.0);
        assert!((s.factor(51) - 0.5).abs() < 1e-12);
        assert!(s.factor(100) > 0.0 && s.factor(100) < 1e-3);
        assert_eq!(s.factor(101), 0.0);
        assert_eq!(s.factor(5000), 0.0);
        assert_eq!(LrSchedule::Constant.factor(7), 1.0);
        // An old checkpoint's config (no schedule) reads as constant.
        let old: AdamConfig =
            serde_json::from_str(r#"{"lr":0.01,"beta1":0.9,"beta2":0.999,"eps":1e-8}"#).unwrap();
        assert_eq!(old.schedule, LrSchedule::Constant);
        // Checkpoints are postcard (not self-describing): the schedule must round-trip there.
        let c = AdamConfig {
            schedule: LrSchedule::Cosine { iterations: 7 },
            ..AdamConfig::default()
        };
        let bytes = postcard::to_allocvec(&c).unwrap();
        assert_eq!(postcard::from_bytes::<AdamConfig>(&bytes).unwrap(), c);
    }

    #[test]
    fn first_step_moves_by_lr_in_the_gradient_direction() {
        let mut a = Adam::new(AdamConfig::default(), 2);
        let mut x = [1.0, -1.0];
        a.ascend(&mut x, &[3.0, -0.5]);
        assert!((x[0] - 1.01).abs() < 1e-9 && (x[1] + 1.01).abs() < 1e-9);
    }

    #[test]
    fn maximises_a_concave_quadratic() {
        let mut a = Adam::new(
            AdamConfig {
                lr: 0.05,
                ..AdamConfig::default()
            },
            1,
        );
        let mut x = [5.0];
        for _ in 0..2000 {
            let g = [-(x[0] - 2.0)];
            a.ascend(&mut x, &g);
        }
        assert!((x[0] - 2.0).abs() < 1e-2, "x = {}", x[0]);
    }
}
