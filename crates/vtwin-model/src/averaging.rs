//! Iterate averaging: the released model is an exponential moving average (EMA) of the
//! iterates (mu, log_sigma) rather than the last iterate.
//!
//! Why: every iterate moves by a noisy gradient step, so the last one carries the noise of
//! the last few steps; an average over many steps carries less (Polyak and Juditsky 1992;
//! for noisy gradient methods with a constant step, tail/EMA averaging is the standard
//! remedy). Privacy: the average is a deterministic function of the iterates, which are
//! themselves a function of the released noisy gradients and public randomness, so it is
//! post-processing and costs no epsilon (docs/privacy.md). The average never feeds back into
//! training: the next theta is drawn around the current iterate, so every backend runs the
//! same iterations with or without it.
//!
//! Weights: after t updates with decay beta = 2^(-1/h) (h the half-life in iterations),
//! iterate s (1 <= s <= t) has weight beta^(t-s) / W_t with W_t = sum_{s<=t} beta^(t-s) (the
//! EMA normalised over the steps taken, so neither the initialisation nor a start-up bias
//! enters). It is kept as W_t = beta W_(t-1) + 1 and avg_t = avg_(t-1) + (x_t - avg_(t-1)) /
//! W_t: O(d) per iteration, no powers, exact on resume (the state is serialised).

use serde::{Deserialize, Serialize};

use crate::training_state::DpviError;

/// Which model a run releases.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Averaging {
    /// The last iterate.
    None,
    /// An EMA of the iterates with this half-life in iterations (> 0).
    Ema {
        /// Iterations after which an iterate's weight has halved.
        half_life: f64,
    },
}

/// The default half-life as a fraction of the run's iterations T: the EMA's mean weight
/// age is h / ln 2, about 0.14 T, so the average spans the last sixth or so of the run,
/// where the training curve has flattened, and still averages hundreds of noisy steps for
/// any T above a few thousand. A rule from T alone (public), not tuned on a data set.
pub const DEFAULT_HALF_LIFE_FRACTION: f64 = 0.1;

impl Averaging {
    /// The default for a run of `iters` iterations: EMA with half-life
    /// max(1, [`DEFAULT_HALF_LIFE_FRACTION`] T).
    pub fn default_for(iters: u64) -> Averaging {
        Averaging::Ema {
            half_life: (DEFAULT_HALF_LIFE_FRACTION * iters as f64).max(1.0),
        }
    }

    /// Checks the settings (a finite positive half-life).
    pub fn check(self) -> Result<Averaging, DpviError> {
        match self {
            Averaging::Ema { half_life } if !(half_life.is_finite() && half_life > 0.0) => {
                Err(DpviError::HalfLife(half_life))
            }
            a => Ok(a),
        }
    }
}

/// The running EMA of (mu, log_sigma) (module docs): part of the training state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterateAverage {
    /// Half-life in iterations.
    pub half_life: f64,
    /// W_t, the sum of the weights so far (0 before the first update).
    pub weight: f64,
    /// The averaged posterior means (the iterate itself before the first update).
    pub mu: Vec<f64>,
    /// The averaged posterior log standard deviations.
    pub log_sigma: Vec<f64>,
}

impl IterateAverage {
    /// An average that has seen no update yet, equal to the current iterate.
    pub fn new(half_life: f64, mu: &[f64], log_sigma: &[f64]) -> IterateAverage {
        IterateAverage {
            half_life,
            weight: 0.0,
            mu: mu.to_vec(),
            log_sigma: log_sigma.to_vec(),
        }
    }

    /// The settings this average runs with.
    pub fn averaging(&self) -> Averaging {
        Averaging::Ema {
            half_life: self.half_life,
        }
    }

    /// Takes the iterate after one more step into the average. Cost O(d).
    pub fn update(&mut self, mu: &[f64], log_sigma: &[f64]) {
        let beta = (-std::f64::consts::LN_2 / self.half_life).exp();
        self.weight = beta * self.weight + 1.0;
        let a = 1.0 / self.weight;
        for (avg, x) in self.mu.iter_mut().zip(mu) {
            *avg += a * (x - *avg);
        }
        for (avg, x) in self.log_sigma.iter_mut().zip(log_sigma) {
            *avg += a * (x - *avg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_normalised_exponential_weights() {
        let h = 3.0;
        let beta: f64 = 0.5f64.powf(1.0 / h);
        let xs = [1.0, -2.0, 4.0, 0.5, 7.0];
        let mut avg = IterateAverage::new(h, &[100.0], &[-100.0]);
        for (t, x) in xs.iter().enumerate() {
            avg.update(&[*x], &[2.0 * x]);
            let (mut num, mut den) = (0.0, 0.0);
            for (s, y) in xs[..=t].iter().enumerate() {
                let w = beta.powi((t - s) as i32);
                num += w * y;
                den += w;
            }
            assert!((avg.mu[0] - num / den).abs() < 1e-12, "t {t}");
            assert!((avg.log_sigma[0] - 2.0 * num / den).abs() < 1e-12, "t {t}");
        }
    }

    #[test]
    fn first_update_forgets_the_initialisation_and_a_constant_stays() {
        let mut avg = IterateAverage::new(10.0, &[5.0, 5.0], &[1.0, 1.0]);
        avg.update(&[2.0, -3.0], &[0.0, 0.0]);
        assert_eq!(avg.mu, vec![2.0, -3.0]);
        for _ in 0..50 {
            avg.update(&[2.0, -3.0], &[0.0, 0.0]);
        }
        assert!((avg.mu[0] - 2.0).abs() < 1e-12 && (avg.mu[1] + 3.0).abs() < 1e-12);
    }

    #[test]
    fn shrinks_noise_around_a_fixed_point() {
        // Iterates x_t = noise: the average's spread is far below the iterates'.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let mut avg = IterateAverage::new(100.0, &[0.0], &[0.0]);
        let (mut s_avg, mut s_last) = (0.0, 0.0);
        for t in 0..20_000 {
            let x: f64 = rng.random_range(-1.0..1.0);
            avg.update(&[x], &[x]);
            if t >= 1000 {
                s_avg += avg.mu[0] * avg.mu[0];
                s_last += x * x;
            }
        }
        // Var of the EMA of iid noise: (1 - beta) / (1 + beta) of the iterates' (~1/290 here).
        assert!(s_avg < s_last / 100.0, "{s_avg} vs {s_last}");
    }

    #[test]
    fn default_half_life_scales_with_t_and_bad_ones_are_refused() {
        assert_eq!(
            Averaging::default_for(20_000),
            Averaging::Ema { half_life: 2000.0 }
        );
        assert_eq!(Averaging::default_for(3), Averaging::Ema { half_life: 1.0 });
        assert!(Averaging::Ema { half_life: 0.0 }.check().is_err());
        assert!(Averaging::Ema {
            half_life: f64::NAN
        }
        .check()
        .is_err());
        assert!(Averaging::None.check().is_ok());
    }
}
