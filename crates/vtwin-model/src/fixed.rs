//! The `fixed` backend: ARCHITECTURE "One training iteration" steps 2-4 in plaintext fixed
//! point (scale 2^32, ring Z_2^128, [`vtwin_fixed`]), i.e. exactly what the compute nodes
//! compute, with the truncation rule as a parameter ([`Floor`] here; the MPC's
//! probabilistic truncation reproduces its output bit for bit through
//! [`fixed_gradient`]).
//!
//! Party p (plaintext, its own data, f64 then encoded at 2^32):
//! 1. l_p[n][k] and q_p[n][k] from the local kernels ([`crate::kernels`]);
//! 2. renormalise each record ([`Renormalise`]): add a per-record constant c_n^p to
//!    l_p[n][.], which cancels in r;
//! 3. mat_p[n][k] = encode(exp(l_p[n][k] + c_n^p)); encode q_p and T_p.
//!
//! Noise: before the data phase every party samples its share of Z, d exact discrete
//! Gaussians N_Z(0, (sigma C 2^32)^2 / P) ([`vtwin_dp::DiscreteGaussian::share_of`]).
//!
//! Nodes (here in the clear, every product truncated once, in this order):
//! 4. mat = prod_p mat_p; pm[n][k] = pi_k mat[n][k]; den[n] = sum_k pm[n][k];
//! 5. one normalised reciprocal of den per record ([`Reciprocal`]); r = pm / den;
//! 6. |g_n|^2 = sum_k (r - pi)^2 + sum_k r^2 sum_p q_p (two inner products);
//! 7. c_n = min(1, C'/|g_n|) ([`clip_factor_unchecked`]) with C' = C (1 - 2^-20), so that
//!    the clip factor's relative error (< 2^-20) never lets a clipped norm exceed C;
//! 8. w = c r; M_p = W^T T_p (one truncation per element); sw = sum_n w; sc = sum_n c;
//! 9. G = [sw - pi sc ; A_k M_p[k] + b_k sw[k]] + sum_p Z_p (A, b the public affine score
//!    maps; each element one truncation); decode.
//!
//! Fixed-point bounds (checked; a violation is an error naming the party and quantity):
//! mat_p < 2^31, q_p <= 2^40 ([`Q_MAX`]), |T| <= 14 (from the codec),
//! and the public maps satisfy B (14 |A| + |b|) < 2^22.
//!
//! With [`Renormalise::Off`], a record whose mat_p[n][k] all truncate to 0 for one party
//! gets den = 0, the reciprocal of 0 is 0 (normalisation finds no bit), so r = 0: its
//! component parameters get exactly zero gradient and the weight logits get -c_n pi (the
//! paper's Figure 2 failure: nothing is learned from it).

use std::sync::Mutex;
use std::time::Instant;

use candle_core::Device;
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::{clip_factor_unchecked, Floor, Fx, Reciprocal, Truncator, FRAC_BITS};

use crate::backend::{
    BackendError, Diagnostics, GradientBackend, GradientInput, GradientOutput, NoiseRngs,
};
use crate::kernels::{compute_device, local_terms, KernelError, PartyMaps};
use crate::layout::Layout;
use crate::stats::PartyBatch;

/// How a party renormalises its log-densities before exponentiating (paper section 4.5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Renormalise {
    /// c_n = -max_k l_p[n][k]: the record's largest mat_p is exactly 1. The closed form of
    /// Algorithm 4 with threshold 0, applied in both directions (so mat_p <= 1 and den <= 1,
    /// inside the reciprocal's accurate range).
    #[default]
    ClosedForm,
    /// The paper's Algorithm 4 (add 0.01 while max_k < t; never shifts down), in the exact
    /// closed form of [`vtwin_fixed::paper::algorithm4_closed_f64`], with threshold
    /// t = [`paper_threshold`]`(P)`.
    Paper,
    /// No renormalisation (reproduces the paper's Figure 2 failure).
    Off,
}

impl std::str::FromStr for Renormalise {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "closed-form" => Ok(Renormalise::ClosedForm),
            "paper" => Ok(Renormalise::Paper),
            "off" => Ok(Renormalise::Off),
            other => Err(format!(
                "--renormalise: expected closed-form, paper or off, got \"{other}\""
            )),
        }
    }
}

/// Largest q_p accepted (2^40). A component far from a record (Beta with a large shape
/// parameter, a value near the public bound) has a huge score norm but a tiny
/// responsibility, so q itself cannot be bounded tightly; what the arithmetic needs is
/// that the inner product sum_k r_k^2 Q_k (Q = sum_p q_p) does not wrap, which holds for
/// q <= 2^40 and K, P <= 2^8 (raw terms below 2^32 * 2^80). Under floor truncation the
/// result is then exact; under the MPC's probabilistic truncation the failure probability
/// is below 2^-40 only when sum_k r_k^2 Q_k < 2^23 (vtwin-fixed's product bound).
pub const Q_MAX: f64 = 1_099_511_627_776.0;
/// Largest mat_p accepted (2^31, so products of up to 4 parties stay below the bound after renormalisation).
pub const MAT_MAX: f64 = 2_147_483_648.0;

/// One party's encoded upload for one batch: mat_p (B x K), q_p (B x K), T_p (B x |T_p|).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartyUpload {
    /// exp(l_p + c_n), B x K.
    pub mat: Vec<Fx>,
    /// |s|^2, B x K.
    pub q: Vec<Fx>,
    /// T_p, B x |T_p|.
    pub stats: Vec<Fx>,
}

/// The fixed-point backend (floor truncation).
#[derive(Clone, Debug)]
pub struct FixedBackend {
    device: Device,
    renormalise: Renormalise,
}

impl FixedBackend {
    /// On [`compute_device`].
    pub fn new(renormalise: Renormalise) -> Result<FixedBackend, KernelError> {
        Ok(FixedBackend {
            device: compute_device()?,
            renormalise,
        })
    }
}

/// The discrete Gaussian of one party's noise share, N_Z(0, (sigma C 2^32)^2 / P), cached
/// process-wide by (sigma, C, P): building it from exact rationals costs more than sampling one
/// iteration, and every party of every backend (and a party process) samples the same law.
static NOISE_LAW: Mutex<Option<CachedLaw>> = Mutex::new(None);

/// ((sigma bits, C bits), P, the law).
type CachedLaw = ((u64, u64), usize, vtwin_dp::DiscreteGaussian);

/// One party's noise share for one iteration: d exact discrete Gaussians
/// N_Z(0, (sigma C 2^32)^2 / P) (raw integers at scale 2^32) drawn from `rng`, the party's
/// own generator; all zeros and no draws when sigma = 0 (tests only). The fixed and mpc
/// backends and a party process all draw through this function, so the same generator state
/// gives the same share everywhere. The share is zeroized on drop. Cost: d exact samples
/// (about 3 ChaCha20 blocks each), plus building the law once per (sigma, C, P).
pub fn noise_share(
    sigma: f64,
    clip: f64,
    parties: usize,
    d: usize,
    rng: &mut ChaCha20Rng,
) -> Result<vtwin_dp::NoiseShare, BackendError> {
    if sigma <= 0.0 {
        return Ok(vtwin_dp::NoiseShare::new(vec![0; d]));
    }
    let key = (sigma.to_bits(), clip.to_bits());
    // A poisoned lock only means another thread panicked while sampling: the cached law
    // itself is immutable once built, so it is still valid.
    let mut law = NOISE_LAW.lock().unwrap_or_else(|e| e.into_inner());
    if !matches!(&*law, Some((k, p, _)) if *k == key && *p == parties) {
        let exact = |x: f64| {
            vtwin_dp::rational_from_f64(x)
                .ok_or_else(|| BackendError::Noise(format!("{x} is not finite")))
        };
        let s = exact(sigma)? * exact(clip)? * vtwin_dp::pow2(FRAC_BITS);
        let dg = vtwin_dp::DiscreteGaussian::share_of(&(&s * &s), parties as u32)
            .map_err(|e| BackendError::Noise(e.to_string()))?;
        *law = Some((key, parties, dg));
    }
    let (_, _, dg) = law.as_ref().expect("set above");
    Ok(dg.sample_share(rng, d))
}

/// Every party's noise share for `input`'s iteration, in party order, each from that
/// party's own generator positioned at the iteration ([`NoiseRngs::seek`]).
pub(crate) fn party_noise_shares(
    input: &GradientInput<'_>,
    rngs: &mut NoiseRngs,
) -> Result<Vec<vtwin_dp::NoiseShare>, BackendError> {
    let parties = input.layout.n_parties();
    rngs.seek(input.iteration);
    (0..parties)
        .map(|p| {
            noise_share(
                input.noise.sigma,
                input.clip,
                parties,
                input.layout.dim(),
                rngs.party(p),
            )
        })
        .collect()
}

/// Threshold t of paper-mode renormalisation for P parties: -16 ln 2 / P, so that when
/// every party's largest mat_p is at least e^t their product is at least 2^-16, leaving 16
/// significant bits at scale 2^32 (the paper sets t "based on the precision and number of
/// parties" without a value).
pub fn paper_threshold(parties: usize) -> f64 {
    -16.0 * std::f64::consts::LN_2 / parties as f64
}

/// The renormalisation constant of one record's row l_p[n][.].
fn shift(
    mode: Renormalise,
    row: &[f64],
    parties: usize,
) -> Result<f64, vtwin_fixed::paper::PaperError> {
    match mode {
        Renormalise::ClosedForm => Ok(-row.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        Renormalise::Paper => {
            vtwin_fixed::paper::algorithm4_closed_f64(row, paper_threshold(parties))
        }
        Renormalise::Off => Ok(0.0),
    }
}

/// Party side (steps 1-3) for party `party` of `input`: [`party_upload_batch`] on its batch.
pub fn party_upload(
    device: &Device,
    input: &GradientInput<'_>,
    party: usize,
    renormalise: Renormalise,
) -> Result<PartyUpload, BackendError> {
    party_upload_batch(
        device,
        input.layout,
        input.theta,
        &input.parties[party],
        renormalise,
    )
}

/// Party side (steps 1-3) from the party's own batch only: local kernels, renormalisation,
/// exp and encoding, with the range checks (a violation is [`BackendError::Range`] naming
/// the party). The caller has checked `batch` against the layout (width, party index).
/// Cost O(B K |T_p|) on `device`.
pub fn party_upload_batch(
    device: &Device,
    layout: &Layout,
    theta: &[f64],
    batch: &PartyBatch,
    renormalise: Renormalise,
) -> Result<PartyUpload, BackendError> {
    let party = batch.party;
    let name = &layout.parties[party];
    let k_n = layout.components;
    let maps = PartyMaps::new(theta, layout, party);
    let t = local_terms(device, &maps, &batch.stats, batch.rows, false)?;
    let range = |what: &'static str, value: f64, range: &'static str| BackendError::Range {
        party: name.clone(),
        what,
        value,
        range,
    };
    let mut mat = Vec::with_capacity(t.log_density.len());
    for row in t.log_density.chunks_exact(k_n) {
        let c = shift(renormalise, row, layout.n_parties()).map_err(|e| BackendError::Range {
            party: name.clone(),
            what: "log-density (paper renormalisation)",
            value: row.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            range: match e {
                vtwin_fixed::paper::PaperError::Encode { .. } => "(-2^31, 2^31)",
                _ => "non-empty",
            },
        })?;
        for &l in row {
            let v = (l + c).exp();
            if v.is_nan() || v >= MAT_MAX {
                return Err(range("mat", v, "[0, 2^31)"));
            }
            mat.push(Fx::from_f64(v).map_err(|_| range("mat", v, "[0, 2^31)"))?);
        }
    }
    let q = t
        .score_sq
        .iter()
        .map(|&v| {
            if v <= Q_MAX {
                Fx::from_f64(v).map_err(|_| range("q", v, "[0, 2^40]"))
            } else {
                Err(range("q", v, "[0, 2^40]"))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let stats = batch
        .stats
        .iter()
        .map(|&v| {
            if v.abs() <= 14.0 {
                Fx::from_f64(v).map_err(|_| range("T", v, "[-14, 14]"))
            } else {
                Err(range("T", v, "[-14, 14]"))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PartyUpload { mat, q, stats })
}

/// The range check both fixed-point backends make on one party's public score maps before
/// encoding them: B * b_rows < 2^22 with B = max (14 |A| + |b|) over the maps, for a batch
/// of `b_rows` rows. On failure `BackendError::Range` names `party`. Cost O(maps length).
pub(crate) fn check_score_map_bound(
    maps: &PartyMaps,
    b_rows: usize,
    party: &str,
) -> Result<(), BackendError> {
    let bound = maps
        .scale
        .iter()
        .zip(&maps.offset)
        .map(|(a, o)| 14.0 * a.abs() + o.abs())
        .fold(0.0, f64::max);
    if bound * (b_rows as f64) >= 4_194_304.0 {
        return Err(BackendError::Range {
            party: party.to_string(),
            what: "public score map B (14 |A| + |b|)",
            value: bound * b_rows as f64,
            range: "[0, 2^22)",
        });
    }
    Ok(())
}

/// Node side (steps 4-9 without the noise): G before noise, as ring elements (length d),
/// and diagnostics (clipped and den_zero counts). `noise` holds the summed noise shares,
/// length d (raw integers at scale 2^32), added before decoding.
pub fn fixed_gradient<T: Truncator>(
    input: &GradientInput<'_>,
    uploads: &[PartyUpload],
    noise: &[i128],
    t: &mut T,
) -> Result<(Vec<f64>, Diagnostics), BackendError> {
    let b = input.validate()?;
    let layout = input.layout;
    let (k_n, d) = (layout.components, layout.dim());
    let enc = |v: f64, what: &str| {
        Fx::from_f64(v).map_err(|e| BackendError::Config(format!("public {what}: {e}")))
    };
    let pi: Vec<Fx> = input
        .weights()
        .iter()
        .map(|&p| enc(p, "weight"))
        .collect::<Result<_, _>>()?;
    let mul = |a: Fx, c: Fx, t: &mut T| Fx(t.trunc(a.0.wrapping_mul(c.0), FRAC_BITS));
    let clip = enc(input.clip * (1.0 - 2f64.powi(-20)), "clip")?;

    let mut diag = Diagnostics {
        records: b,
        ..Diagnostics::default()
    };
    // Steps 4-8, per record.
    let mut w = vec![Fx::ZERO; b * k_n];
    let mut sw = vec![Fx::ZERO; k_n];
    let mut sc = Fx::ZERO;
    let mut pm = vec![Fx::ZERO; k_n];
    let mut r = vec![Fx::ZERO; k_n];
    for n in 0..b {
        let mut den = Fx::ZERO;
        for k in 0..k_n {
            let i = n * k_n + k;
            let mut m = uploads[0].mat[i];
            for up in &uploads[1..] {
                m = mul(m, up.mat[i], t);
            }
            pm[k] = mul(pi[k], m, t);
            den += pm[k];
        }
        if den == Fx::ZERO {
            diag.den_zero += 1;
        }
        let recip = Reciprocal::new_unchecked(den, t);
        for k in 0..k_n {
            r[k] = recip.divide(pm[k], t);
        }
        // |g|^2 = sum_k (r - pi)^2 + sum_k r^2 Q, Q = sum_p q_p: two inner products.
        let mut acc_a = 0u128;
        let mut acc_b = 0u128;
        for k in 0..k_n {
            let e = r[k] - pi[k];
            acc_a = acc_a.wrapping_add(e.0.wrapping_mul(e.0));
            let r2 = mul(r[k], r[k], t);
            let q = uploads.iter().fold(Fx::ZERO, |s, up| s + up.q[n * k_n + k]);
            acc_b = acc_b.wrapping_add(r2.0.wrapping_mul(q.0));
        }
        let norm2 = Fx(t.trunc(acc_a, FRAC_BITS)) + Fx(t.trunc(acc_b, FRAC_BITS));
        let c = clip_factor_unchecked(norm2, clip, t);
        if c != Fx::ONE {
            diag.clipped += 1;
        }
        sc += c;
        for k in 0..k_n {
            let wk = mul(c, r[k], t);
            w[n * k_n + k] = wk;
            sw[k] += wk;
        }
    }
    // Step 9.
    let mut g = vec![Fx::ZERO; d];
    for k in 0..k_n {
        g[layout.weight_index(k)] = sw[k] - mul(pi[k], sc, t);
    }
    let idx = crate::float::param_indices(layout);
    for (p, up) in uploads.iter().enumerate() {
        let wd = layout.stat_width(p);
        let maps = PartyMaps::new(input.theta, layout, p);
        check_score_map_bound(&maps, b, &layout.parties[p])?;
        for k in 0..k_n {
            for j in 0..wd {
                // M_p[k][j] = sum_n w[n][k] T_p[n][j], truncated once.
                let mut acc = 0u128;
                for n in 0..b {
                    acc = acc.wrapping_add(w[n * k_n + k].0.wrapping_mul(up.stats[n * wd + j].0));
                }
                let m = Fx(t.trunc(acc, FRAC_BITS));
                let a = enc(maps.scale[k * wd + j], "score scale")?;
                let o = enc(maps.offset[k * wd + j], "score offset")?;
                let raw =
                    a.0.wrapping_mul(m.0)
                        .wrapping_add(o.0.wrapping_mul(sw[k].0));
                g[idx[p][k * wd + j]] = Fx(t.trunc(raw, FRAC_BITS));
            }
        }
    }
    if noise.len() != d {
        return Err(BackendError::Shape(format!(
            "{} noise values for d = {d}",
            noise.len()
        )));
    }
    let out = g
        .iter()
        .zip(noise)
        .map(|(v, z)| (*v + Fx::from_signed(*z)).to_f64())
        .collect();
    Ok((out, diag))
}

impl GradientBackend for FixedBackend {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn gradient(
        &mut self,
        input: &GradientInput<'_>,
        noise: &mut NoiseRngs,
    ) -> Result<GradientOutput, BackendError> {
        input.validate()?;
        let p_n = input.layout.n_parties();
        // Noise shares first, before the data phase.
        let t0 = Instant::now();
        let mut z = vec![0i128; input.layout.dim()];
        for share in party_noise_shares(input, noise)? {
            for (acc, v) in z.iter_mut().zip(share.as_slice()) {
                *acc += v;
            }
        }
        // The sum is as secret as the shares.
        let z = vtwin_dp::NoiseShare::new(z);
        let noise_ms = t0.elapsed().as_secs_f64() * 1e3;
        let t1 = Instant::now();
        let uploads = (0..p_n)
            .map(|p| party_upload(&self.device, input, p, self.renormalise))
            .collect::<Result<Vec<_>, _>>()?;
        let local_ms = t1.elapsed().as_secs_f64() * 1e3;
        let t2 = Instant::now();
        let (gradient, mut diagnostics) =
            fixed_gradient(input, &uploads, z.as_slice(), &mut Floor)?;
        diagnostics.local_ms = local_ms;
        diagnostics.noise_ms = noise_ms;
        diagnostics.combine_ms = t2.elapsed().as_secs_f64() * 1e3;
        Ok(GradientOutput {
            gradient,
            diagnostics,
        })
    }
}
