//! A tight privacy-loss-distribution (PLD) accountant for the Poisson-subsampled Gaussian,
//! with the connect-the-dots discretisation (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
//! 2022) and FFT composition.
//!
//! # Pairs
//! Sensitivity 1, noise multiplier sigma, rate q, add/remove neighbours. Two ordered pairs,
//! composed separately; epsilon is the larger of the two:
//! - remove: `P = (1-q) N(0, σ²) + q N(1, σ²)`, `Q = N(0, σ²)`,
//!   loss `L(x) = ln(1 - q + q e^{(2x-1)/(2σ²)})`, increasing in x, bounded below by ln(1-q);
//! - add: `P = N(0, σ²)`, `Q` the mixture, loss `-L(x)`, bounded above by -ln(1-q).
//!
//! # Discretisation (pessimistic)
//! Losses live on the grid `iΔ`. The P-mass with loss in `(iΔ, (i+1)Δ]` is split between the
//! two grid points so that both its P-mass and its Q-mass are preserved (connect-the-dots).
//! The result is the PLD of a pair that dominates the true pair, so composing it can only
//! over-estimate delta. Mass below the lowest grid point is moved up to it; mass above the top
//! point goes to infinity (counted in delta). Both moves are pessimistic.
//!
//! # Composition
//! Binary exponentiation of FFT convolutions (rustfft). After each convolution, tails with
//! at most [`TAIL_MASS`] of probability are truncated pessimistically (upper tail to
//! infinity, lower tail moved up to the first kept point).
//!
//! # Error bound
//! Let `D_t` be the discretised minus the true loss of step t. Given the true loss, `D_t`
//! takes two values `Δ` apart, and since the split preserves Q-mass, `E[e^{-D_t}...]` forces
//! `E[D_t | L] <= Δ²/8`. Hoeffding then gives `P(Σ D_t > s) <= η` for
//! `s = Δ sqrt(T ln(1/η) / 2) + T Δ²/8`. On the complement the discretised total loss is at
//! most the true one plus s, so with `β` the total mass that was moved (tails, truncations):
//!
//! `ε_true(δ) <= ε_pld(δ) <= ε_true(δ - η - β) + s`.
//!
//! [`PldComposition::epsilon_lower_bound`] reports `ε_pld(δ + η + β) - s`, a certified lower
//! bound on the true epsilon; [`PldComposition::error_bound`] reports `s` with η = 1e-12.
//! Floating point: masses are f64; FFT convolution adds absolute errors of order
//! `N · 2^-52` per entry (negative results are clamped to 0), far below any delta of interest.

use std::sync::Arc;

use rustfft::num_complex::Complex64;
use rustfft::{Fft, FftPlanner};

use crate::normal::{normal_cdf, normal_interval};

/// Tail mass truncated per side after each convolution. Must stay above the FFT noise floor
/// (entries of order 1e-17): at 1e-16 the noisy tails are never truncated and the supports,
/// hence the FFTs, grow about 20-fold.
pub const TAIL_MASS: f64 = 1e-15;
/// Failure probability used in the Hoeffding error bound.
pub const HOEFFDING_ETA: f64 = 1e-12;
/// Standard deviations of x covered by the single-step grid (tail beyond: < 2e-33).
const X_TAIL_SDS: f64 = 12.0;
/// Largest single-step grid.
const MAX_POINTS: f64 = 4e6;

/// A discretised PLD: P-mass `probs[k]` at loss `(offset + k) Δ`, plus mass at +infinity.
#[derive(Debug, Clone)]
struct Pmf {
    offset: i64,
    probs: Vec<f64>,
    inf: f64,
    /// Total probability of every pessimistic move so far (union bound).
    moved: f64,
}

impl Pmf {
    fn identity() -> Self {
        Pmf {
            offset: 0,
            probs: vec![1.0],
            inf: 0.0,
            moved: 0.0,
        }
    }

    /// Drops tails of mass at most `TAIL_MASS` each: upper to infinity, lower moved up.
    fn truncate(&mut self) {
        for p in &mut self.probs {
            if *p < 0.0 || p.is_nan() {
                *p = 0.0;
            }
        }
        let mut upper = 0.0;
        let mut hi = self.probs.len();
        while hi > 1 && upper + self.probs[hi - 1] <= TAIL_MASS {
            upper += self.probs[hi - 1];
            hi -= 1;
        }
        let mut lower = 0.0;
        let mut lo = 0;
        while lo + 1 < hi && lower + self.probs[lo] <= TAIL_MASS {
            lower += self.probs[lo];
            lo += 1;
        }
        self.probs.truncate(hi);
        self.probs.drain(..lo);
        self.probs[0] += lower;
        self.offset += lo as i64;
        self.inf += upper;
        self.moved += upper + lower;
    }
}

/// Convolution of two PMFs on the same grid.
struct Convolver {
    planner: FftPlanner<f64>,
}

impl Convolver {
    fn convolve(&mut self, a: &Pmf, b: &Pmf) -> Pmf {
        let out_len = a.probs.len() + b.probs.len() - 1;
        let probs = if a.probs.len().min(b.probs.len()) <= 64 {
            direct(&a.probs, &b.probs)
        } else {
            let n = out_len.next_power_of_two();
            let fwd: Arc<dyn Fft<f64>> = self.planner.plan_fft_forward(n);
            let inv: Arc<dyn Fft<f64>> = self.planner.plan_fft_inverse(n);
            let mut fa = padded(&a.probs, n);
            let mut fb = padded(&b.probs, n);
            fwd.process(&mut fa);
            fwd.process(&mut fb);
            for (x, y) in fa.iter_mut().zip(&fb) {
                *x *= *y;
            }
            inv.process(&mut fa);
            let scale = 1.0 / n as f64;
            fa[..out_len]
                .iter()
                .map(|c| (c.re * scale).max(0.0))
                .collect()
        };
        let mut out = Pmf {
            offset: a.offset + b.offset,
            probs,
            inf: 1.0 - (1.0 - a.inf) * (1.0 - b.inf),
            moved: a.moved + b.moved,
        };
        out.truncate();
        out
    }
}

fn direct(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}

fn padded(v: &[f64], n: usize) -> Vec<Complex64> {
    let mut out = vec![Complex64::new(0.0, 0.0); n];
    for (o, x) in out.iter_mut().zip(v) {
        o.re = *x;
    }
    out
}

/// Which ordered pair of the add/remove relation.
#[derive(Clone, Copy)]
enum Direction {
    Remove,
    Add,
}

/// The single-step loss range covered by the grid for one direction: the exact bound where
/// the loss is bounded (ln(1-q) below for remove, -ln(1-q) above for add, when q < 1), and
/// the loss at x = 1 + 12 sigma or x = -12 sigma otherwise (tails beyond: < 2e-33).
fn loss_range(q: f64, sigma: f64, dir: Direction) -> (f64, f64) {
    let s2 = sigma * sigma;
    let loss = |x: f64| (q * ((2.0 * x - 1.0) / (2.0 * s2)).exp_m1()).ln_1p();
    let ln1q = (-q).ln_1p();
    let top = loss(1.0 + X_TAIL_SDS * sigma);
    let bottom = if q < 1.0 {
        ln1q
    } else {
        loss(-X_TAIL_SDS * sigma)
    };
    match dir {
        Direction::Remove => (bottom, top),
        Direction::Add => (-top, -bottom),
    }
}

/// Single-step connect-the-dots PMF for one direction.
fn single_step(q: f64, sigma: f64, delta_grid: f64, dir: Direction) -> Pmf {
    let s2 = sigma * sigma;
    // x with remove-loss exactly eps (for eps > ln(1-q)); -inf below.
    let x_of = |eps: f64| {
        let r = eps.exp_m1() / q;
        if r <= -1.0 {
            f64::NEG_INFINITY
        } else {
            s2 * r.ln_1p() + 0.5
        }
    };
    let (lo_eps, hi_eps) = loss_range(q, sigma, dir);
    let (i_lo, i_hi) = (
        (lo_eps / delta_grid).floor() as i64,
        (hi_eps / delta_grid).ceil() as i64,
    );
    // P- and Q-mass of the loss interval (ea, eb].
    let masses = |ea: f64, eb: f64| -> (f64, f64) {
        match dir {
            Direction::Remove => {
                let (xa, xb) = (x_of(ea), x_of(eb));
                let n0 = normal_interval(xa / sigma, xb / sigma);
                let n1 = normal_interval((xa - 1.0) / sigma, (xb - 1.0) / sigma);
                ((1.0 - q) * n0 + q * n1, n0)
            }
            Direction::Add => {
                // add-loss in (ea, eb] <=> remove-loss in [-eb, -ea).
                let (xa, xb) = (x_of(-eb), x_of(-ea));
                let n0 = normal_interval(xa / sigma, xb / sigma);
                let n1 = normal_interval((xa - 1.0) / sigma, (xb - 1.0) / sigma);
                (n0, (1.0 - q) * n0 + q * n1)
            }
        }
    };
    let len = (i_hi - i_lo + 1) as usize;
    let mut probs = vec![0.0f64; len];
    let shrink = -(-delta_grid).exp_m1(); // 1 - e^{-Δ}
    for k in 0..len - 1 {
        let ea = (i_lo + k as i64) as f64 * delta_grid;
        let eb = ea + delta_grid;
        let (p, qm) = masses(ea, eb);
        // Upper share b preserves Q-mass: b = (P - Q e^{ea}) / (1 - e^{-Δ}).
        let b = ((p - qm * ea.exp()) / shrink).clamp(0.0, p);
        probs[k] += p - b;
        probs[k + 1] += b;
    }
    // Tails beyond the grid: P-mass with loss <= lowest point or > highest point.
    let (e_lo, e_hi) = (i_lo as f64 * delta_grid, i_hi as f64 * delta_grid);
    let p_below_x = |x: f64| match dir {
        Direction::Remove => (1.0 - q) * normal_cdf(x / sigma) + q * normal_cdf((x - 1.0) / sigma),
        Direction::Add => normal_cdf(x / sigma),
    };
    let (below, above) = match dir {
        // Remove-loss is increasing in x.
        Direction::Remove => (p_below_x(x_of(e_lo)), 1.0 - p_below_x(x_of(e_hi))),
        // Add-loss = -remove-loss is decreasing in x.
        Direction::Add => (1.0 - p_below_x(x_of(-e_lo)), p_below_x(x_of(-e_hi))),
    };
    let (below, above) = (below.max(0.0), above.max(0.0));
    probs[0] += below;
    let mut pmf = Pmf {
        offset: i_lo,
        probs,
        inf: above,
        moved: below + above,
    };
    pmf.truncate();
    pmf
}

fn compose(base: Pmf, steps: u64) -> Pmf {
    let mut conv = Convolver {
        planner: FftPlanner::new(),
    };
    let mut result = Pmf::identity();
    let mut base = base;
    let mut t = steps;
    while t > 0 {
        if t & 1 == 1 {
            result = conv.convolve(&result, &base);
        }
        t >>= 1;
        if t > 0 {
            base = conv.convolve(&base, &base);
        }
    }
    result
}

/// Smallest epsilon with `delta(epsilon) <= delta` for a composed PMF.
fn pmf_epsilon(pmf: &Pmf, grid: f64, delta: f64) -> f64 {
    if pmf.inf >= delta {
        return f64::INFINITY;
    }
    // Scan from the top: a = inf + sum_{i > j} p_i, c = sum_{i > j} p_i e^{L_j - L_i}, so that
    // delta(L_j) = a - c and on (L_j, L_{j+1}], delta(eps) = a - e^{eps - L_j} c.
    let decay = (-grid).exp();
    let mut a = pmf.inf;
    let mut c = 0.0f64;
    for j in (0..pmf.probs.len()).rev() {
        if j + 1 < pmf.probs.len() {
            // a, c currently cover i > j + 1; extend to i > j.
            a += pmf.probs[j + 1];
            c = decay * (c + pmf.probs[j + 1]);
        }
        let lj = (pmf.offset + j as i64) as f64 * grid;
        if a - c > delta {
            // The answer is in (L_j, L_{j+1}].
            return lj + ((a - delta) / c).ln();
        }
    }
    // delta(eps) <= target already at the lowest point: solve below it with all the mass.
    let l0 = pmf.offset as f64 * grid;
    let a_all = a + pmf.probs[0];
    let c_all = c + pmf.probs[0]; // sum p_i e^{L_0 - L_i}
    if a_all <= delta {
        return f64::NEG_INFINITY;
    }
    l0 + ((a_all - delta) / c_all).ln()
}

/// The composed connect-the-dots PLD of `steps` Poisson-subsampled Gaussian steps, both
/// directions of add/remove.
#[derive(Debug, Clone)]
pub struct PldComposition {
    grid: f64,
    steps: u64,
    remove: Pmf,
    add: Pmf,
}

impl PldComposition {
    /// The default grid for `steps` steps: `Δ = min(1e-4, 2e-3 / sqrt(steps))`, which keeps
    /// the Hoeffding term of [`PldComposition::error_bound`] near 0.01 or below.
    pub fn default_grid(steps: u64) -> f64 {
        (2e-3 / (steps.max(1) as f64).sqrt()).min(1e-4)
    }

    /// Composition for rate `q in (0, 1]`, noise multiplier `sigma > 0`, on the default grid.
    /// Cost: O(log steps) FFTs of the composed support (about a second for 20000 steps at
    /// the paper's Adult setting; see the `dp` bench).
    pub fn poisson_gaussian(q: f64, sigma: f64, steps: u64) -> Self {
        Self::with_grid(q, sigma, steps, Self::default_grid(steps))
    }

    /// As [`PldComposition::poisson_gaussian`] on grid spacing `grid > 0` (widened if the
    /// single-step grid would exceed 4 million points).
    pub fn with_grid(q: f64, sigma: f64, steps: u64, grid: f64) -> Self {
        let (lo, hi) = loss_range(q, sigma, Direction::Remove);
        let grid = grid.max((hi - lo) / MAX_POINTS);
        let remove = compose(single_step(q, sigma, grid, Direction::Remove), steps);
        let add = compose(single_step(q, sigma, grid, Direction::Add), steps);
        PldComposition {
            grid,
            steps,
            remove,
            add,
        }
    }

    /// Pessimistic epsilon at `delta`: the larger of the two directions, at least 0.
    pub fn epsilon(&self, delta: f64) -> f64 {
        pmf_epsilon(&self.remove, self.grid, delta)
            .max(pmf_epsilon(&self.add, self.grid, delta))
            .max(0.0)
    }

    /// The grid spacing Δ used.
    pub fn grid(&self) -> f64 {
        self.grid
    }

    /// `s = Δ sqrt(T ln(1/η)/2) + TΔ²/8` with η = [`HOEFFDING_ETA`]: the most by which the
    /// discretisation can raise epsilon (see the module documentation).
    pub fn error_bound(&self) -> f64 {
        let t = self.steps as f64;
        self.grid * (t * (1.0 / HOEFFDING_ETA).ln() / 2.0).sqrt() + t * self.grid * self.grid / 8.0
    }

    /// Total probability moved pessimistically (tails and truncations, both directions).
    pub fn moved_mass(&self) -> f64 {
        self.remove.moved.max(self.add.moved)
    }

    /// A certified lower bound on the true epsilon at `delta`:
    /// `ε_pld(δ + η + β) - s` (module documentation), at least 0.
    pub fn epsilon_lower_bound(&self, delta: f64) -> f64 {
        (self.epsilon(delta + HOEFFDING_ETA + self.moved_mass()) - self.error_bound()).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_step_masses_sum_to_one() {
        for dir in [Direction::Remove, Direction::Add] {
            let p = single_step(0.01, 1.0, 1e-4, dir);
            let total: f64 = p.probs.iter().sum::<f64>() + p.inf;
            assert!((total - 1.0).abs() < 1e-9, "{total}");
            assert!(p.probs.iter().all(|&x| x >= 0.0));
        }
    }

    #[test]
    fn single_step_preserves_q_mass() {
        // Connect-the-dots preserves Q-mass: sum p_i e^{-L_i} = Q(finite loss) <= 1.
        let p = single_step(0.05, 1.5, 1e-4, Direction::Remove);
        let q: f64 = p
            .probs
            .iter()
            .enumerate()
            .map(|(k, &m)| m * (-((p.offset + k as i64) as f64 * 1e-4)).exp())
            .sum();
        assert!((q - 1.0).abs() < 1e-6, "{q}");
    }

    #[test]
    fn bias_of_the_split_is_at_most_delta_squared_over_eight() {
        for &d in &[1e-5, 1e-4, 1e-2, 0.1] {
            for k in 0..=100 {
                let theta = f64::from(k) / 100.0;
                let w = (-(-theta * d).exp_m1()) / (-(-d).exp_m1());
                let bias = d * (w - theta);
                assert!(
                    bias <= d * d / 8.0 * (1.0 + 1e-9) + 1e-18,
                    "d={d} theta={theta}"
                );
            }
        }
    }
}
