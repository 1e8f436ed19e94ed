//! The `fixed` backend: `docs/architecture.md` "One iteration" steps 2-4 in plaintext fixed
//! point (scale 2^32, ring Z_2^128, [`vtwin_fixed`]), i.e. exactly what the compute nodes
//! compute, with the truncation rule as a parameter ([`Floor`] here; the MPC's
//! probabilistic truncation reproduces its output bit for bit through
//! [`fixed_gradient`]).
//!
//! Party p (plaintext, its own data, f64 then encoded at 2^32):
//! 1. l_p[n][k] from the local kernels ([`crate::kernels`]), times the iteration's public
//!    inverse temperature beta ([`crate::tempering`]; beta = 1 untempered);
//! 2. renormalise each record ([`Renormalise`]): add a per-record constant c_n^p to
//!    beta l_p[n][.], which cancels in r;
//! 3. mat_p[n][k] = encode(exp(beta l_p[n][k] + c_n^p)); encode T_p; the score root
//!    u_p[n][k] >= 2^-L |s_p[n][k]| from the encoded maps and T_p, rounded up
//!    ([`vtwin_fixed::score_root`], exact integers, from the record's nonzero
//!    statistics); party 0 then replaces mat_0[n][k] by floor(w_k mat_0[n][k]) with the
//!    public weights w = softmax(beta theta_w) (pi at beta = 1), and by 0 on the padding
//!    rows ([`fold_weights`]).
//!
//! Noise: before the data phase every party samples its share of Z, d exact discrete
//! Gaussians N_Z(0, (sigma C 2^32)^2 / P) ([`vtwin_dp::DiscreteGaussian::share_of`]).
//!
//! Nodes (here in the clear, every product truncated once, in this order):
//! 4. pm = prod_p mat_p (pi is in party 0's factor); den[n] = sum_k pm[n][k];
//! 5. one normalised reciprocal of den per record ([`Reciprocal`]); r = pm / den;
//! 6. |g_n|^2 = trunc(sum_k (r - pi)^2) + 2^(2L-F) trunc(Z' y2') with
//!    Z' = trunc(2^F sum_(p,k) trunc(pm'_k u_pk)^2) and y2' = trunc(y^2), both rounded up by one
//!    ulp (pm' the normalised numerator, y the reciprocal's mantissa: Z' y2' is at least
//!    sum (y z_pk)^2, and y z_pk is within 2^-32 (u_pk + y) of r_k u_pk;
//!    [`vtwin_fixed::score_norm`], L = [`vtwin_fixed::clip_bound::NORM_SCALE_BITS`]);
//! 7. c_n = min(1, C'/|g_n|) ([`clip_factor_unchecked`], rounded down) with the circuit clip
//!    C' of [`vtwin_fixed::clip_bound::effective_clip`]: every record's released contribution,
//!    and the distance between neighbouring released sums, is then at most C after every
//!    rounding (`protocols/clip-bound.md`);
//! 8. w = c r; M_p = W^T T_p (one truncation per element, none for a party whose statistics
//!    are all integers, [`crate::layout::Layout::integer_stats`]: it inputs T_p at scale 1);
//!    sw = sum_n w; sc = sum_n flag_n c_n (padding rows have r = 0, hence w = 0, and flag 0);
//! 9. G = [sw - pi sc ; A_k M_p[k] + b_k sw[k]] + sum_p Z_p (A, b the public affine score
//!    maps; each element one truncation); decode.
//!
//! Fixed-point bounds (checked; a violation is an error naming the party and quantity):
//! mat_p <= [`mat_max`] (1 with closed-form renormalisation), u_p <= 2^7, |T| <= 14 (from the
//! codec), and the public maps satisfy B (14 |A| + |b|) < 2^22 and, per party and component,
//! sum_j (14 |A| + |b|)^2 <= 2^36 (so an honest party's score roots are always in range).
//!
//! With [`Renormalise::Off`], a record whose mat_p[n][k] all truncate to 0 for one party
//! gets den = 0, the reciprocal of 0 is 0 (normalisation finds no bit), so r = 0: its
//! component parameters get exactly zero gradient and the weight logits get -c_n pi (the
//! paper's Figure 2 failure: nothing is learned from it).

use std::sync::Mutex;
use std::time::Instant;

use candle_core::Device;
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::clip_bound::{MAP_BATCH_LIMIT, SCORE_NORM2_MAX, STAT_ABS_MAX};
use vtwin_fixed::score_norm::record_norm2;
use vtwin_fixed::score_root::{ScoreRoots, SparseRow};
use vtwin_fixed::{clip_factor_unchecked, Floor, Fx, Reciprocal, Truncator, FRAC_BITS};

use crate::backend::{
    BackendError, Diagnostics, GradientBackend, GradientInput, GradientOutput, NoiseRngs,
};
use crate::kernels::{compute_device, local_terms, KernelError, PartyMaps};
use crate::layout::Layout;
use crate::party_data::PartyBatch;
use vtwin_mpc::gradient::PartyMap;

/// How a party renormalises its log-densities before exponentiating (paper section 4.5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Renormalise {
    /// c_n = -max_k beta l_p[n][k]: the record's largest mat_p is exactly 1. The closed form of
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

/// A renormalisation name other than `closed-form`, `paper` or `off`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("renormalisation: expected closed-form, paper or off, got \"{0}\"")]
pub struct UnknownRenormalise(pub String);

impl std::str::FromStr for Renormalise {
    type Err = UnknownRenormalise;
    fn from_str(s: &str) -> Result<Self, UnknownRenormalise> {
        match s {
            "closed-form" => Ok(Renormalise::ClosedForm),
            "paper" => Ok(Renormalise::Paper),
            "off" => Ok(Renormalise::Off),
            other => Err(UnknownRenormalise(other.to_owned())),
        }
    }
}

/// Largest mat_p accepted: 1 with [`Renormalise::ClosedForm`] (the record's largest value is
/// exactly e^0), else 2^floor(15 / P), so that the product over the P parties stays below
/// 2^15, and so does den = sum_k pi_k prod_p mat_p (party 0 folds the weights pi, which sum
/// to 1, into its factor; plus a few ulps of rounding): inside the reciprocal's accurate
/// range, with small truncated values.
pub fn mat_max(renormalise: Renormalise, parties: usize) -> f64 {
    match renormalise {
        Renormalise::ClosedForm => 1.0,
        _ => 2f64.powi(15 / parties.max(1) as i32),
    }
}

/// One party's encoded upload for one batch: mat_p (B x K), q_p (B x K), T_p (B x |T_p|).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartyUpload {
    /// exp(beta l_p + c_n), B x K; for party 0 floor(w_k exp(beta l_0 + c_n)) with
    /// w = softmax(beta theta_w), and 0 on padding rows ([`fold_weights`]).
    pub mat: Vec<Fx>,
    /// Score roots u = 2^-L |s| rounded up, B x K.
    pub root: Vec<Fx>,
    /// T_p, B x |T_p|.
    pub stats: Vec<Fx>,
    /// Raw 0/1 per row: 1 for a real record, 0 for padding ([`PartyBatch::flags`]).
    pub flags: Vec<Fx>,
    /// The encoded score map the roots were computed with (public; a consortium party states
    /// its digest to the nodes, which require it to be the circuit's map).
    pub map: PartyMap,
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
        // Only a non-finite value has no exact rational.
        let s = vtwin_dp::rational_from_f64(sigma).ok_or(BackendError::Sigma(sigma))?
            * vtwin_dp::rational_from_f64(clip).ok_or(BackendError::Clip(clip))?
            * vtwin_dp::pow2(FRAC_BITS);
        let dg = vtwin_dp::DiscreteGaussian::share_of(&(&s * &s), parties as u32)?;
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
        // Algorithm 4 depends on the row's maximum only, so the target mask's -inf entries
        // (likelihood exactly 0 whatever the shift) are left out of its encoding.
        Renormalise::Paper => {
            let finite: Vec<f64> = row.iter().copied().filter(|l| l.is_finite()).collect();
            vtwin_fixed::paper::algorithm4_closed_f64(&finite, paper_threshold(parties))
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
        input.beta,
        &input.parties[party],
        renormalise,
    )
}

/// Party side (steps 1-3) from the party's own batch only: local kernels, tempering by
/// `beta` (the log-densities times beta before renormalising, and party 0's folded weights
/// `softmax(beta theta_w)`, [`crate::tempering`]; beta = 1 leaves both as they are),
/// renormalisation, exp and encoding, with the range checks (a violation is
/// [`BackendError::Range`] naming the party). The caller has checked `batch` against the
/// layout (width, party index) and beta (in (0, 1]). Cost O(B K |T_p|) on `device`.
pub fn party_upload_batch(
    device: &Device,
    layout: &Layout,
    theta: &[f64],
    beta: f64,
    batch: &PartyBatch,
    renormalise: Renormalise,
) -> Result<PartyUpload, BackendError> {
    let party = batch.party;
    let name = &layout.parties[party];
    let k_n = layout.components;
    let maps = PartyMaps::new(theta, layout, party);
    // The public bounds the clip's proof assumes of this map (the coordinator and every node
    // check them too): a party does not compute with a map outside them.
    check_score_map_bound(&maps, batch.rows, name)?;
    // Kernels on every row, padding included (zero statistics), so the party's work does
    // not depend on the real batch size; the padding rows' values are replaced below.
    let t = local_terms(device, &maps, &batch.stats, batch.rows, false)?;
    let range = |what, value, range| range_error(name, what, value, range);
    let mat_limit = mat_max(renormalise, layout.n_parties());
    let mut mat = Vec::with_capacity(t.log_density.len());
    let mut tempered = Vec::with_capacity(k_n);
    let stand_in = padding_stand_in(&maps);
    for (n, row) in t.log_density.chunks_exact(k_n).enumerate() {
        // Padding rows (zero statistics; no class under a target mask) take the same steps on
        // a public stand-in row of a real row's shape, so the party's work does not depend on
        // the real batch size; their values and refusals are discarded (mat = 1).
        let real = n < batch.real;
        let row = if real { row } else { &stand_in[..] };
        // beta = 1 multiplies exactly, so an untempered upload is bit for bit the same.
        tempered.clear();
        tempered.extend(row.iter().map(|&l| beta * l));
        let row = &tempered[..];
        let c = match shift(renormalise, row, layout.n_parties()) {
            Ok(c) => c,
            Err(_) if !real => 0.0,
            Err(e) => {
                return Err(range(
                    "log-density (paper renormalisation)",
                    row.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    match e {
                        vtwin_fixed::paper::PaperError::Encode { .. } => "(-2^31, 2^31)",
                        _ => "non-empty",
                    },
                ))
            }
        };
        for &l in row {
            let v = (l + c).exp();
            let encoded = if v.is_nan() || v > mat_limit {
                Err(range("mat", v, "[0, mat_max]"))
            } else {
                Fx::from_f64(v).map_err(|_| range("mat", v, "[0, mat_max]"))
            };
            match std::hint::black_box(encoded) {
                _ if !real => mat.push(Fx::ONE),
                Ok(m) => mat.push(m),
                Err(e) => return Err(e),
            }
        }
    }
    // Padding rows: mat = 1, T = 0, root 0. Party 0 then folds in the public weights and
    // zeroes its padding rows (below), so a padding row's den is exactly 0, its r and w are
    // exactly 0 whatever the other parties send, and its flag keeps it out of sum_n c_n.
    if party == 0 {
        fold_weights(&mut mat, &weights_encoded(theta, beta, k_n)?, batch.real);
    }
    // An integer party (one-hot columns only) inputs T_p as raw integers, so a value off
    // the integers would be floored there while its score root saw the real value: refused.
    let integer = layout.integer_stats(party);
    let stats = batch
        .stats
        .iter()
        .map(|&v| {
            if integer && v.fract() != 0.0 {
                Err(range("T", v, "integers in [-14, 14]"))
            } else if v.abs() <= 14.0 {
                Fx::from_f64(v).map_err(|_| range("T", v, "[-14, 14]"))
            } else {
                Err(range("T", v, "[-14, 14]"))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let map = crate::mpc_backend::encoded_party_map(&maps, layout, party)?;
    let root = score_roots(&map, &stats, batch, layout.stat_nonzeros(party), k_n, name)?;
    Ok(PartyUpload {
        mat,
        root,
        stats,
        flags: batch.flags(),
        map,
    })
}

/// [`BackendError::Range`] naming `party`: `what` had `value`, outside `range`.
fn range_error(party: &str, what: &'static str, value: f64, range: &'static str) -> BackendError {
    BackendError::Range {
        party: party.to_string(),
        what,
        value,
        range,
    }
}

/// What a padding row's renormalisation and exp run on instead of its own log-densities
/// (which a target mask makes all -inf, a cheaper path): a public row of a real row's shape,
/// distinct finite values `-(k + 1/2)`, and -inf where a record of the first class has
/// likelihood 0 (the other classes' components). Cost O(K).
fn padding_stand_in(maps: &PartyMaps) -> Vec<f64> {
    (0..maps.components)
        .map(|k| match &maps.target {
            Some(mask) if mask.class[k] != 0 => f64::NEG_INFINITY,
            _ => -(k as f64) - 0.5,
        })
        .collect()
}

/// The score roots u[n][k] of every row of `batch` (`vtwin_fixed::score_root`), B x K (`k_n`), from
/// each record's nonzero statistics only: at most `slots` per record (one per one-hot
/// column, two per Beta column, [`Layout::stat_nonzeros`]), padded with zero entries so that
/// every row, padding rows included, takes the same `K slots` terms. Padding rows' roots are
/// then 0. Errors (unreachable for codec statistics once the public map check has passed)
/// name the party: a record with more than `slots` nonzero statistics, or a root out of
/// range. Cost O(B |T_p| + B K slots) integer operations.
fn score_roots(
    map: &PartyMap,
    stats: &[Fx],
    batch: &PartyBatch,
    slots: usize,
    k_n: usize,
    party: &str,
) -> Result<Vec<Fx>, BackendError> {
    let range = |what, value, range| range_error(party, what, value, range);
    let out_of_range = || range("score root", f64::NAN, "[0, 2^-11 sqrt(2^36)]");
    let wd = map.width;
    let roots = ScoreRoots::new(&map.scale, &map.offset, k_n, wd).ok_or_else(out_of_range)?;
    let mut out = Vec::with_capacity(batch.rows * k_n);
    let mut row = SparseRow::with_slots(slots);
    for n in 0..batch.rows {
        row.set(&stats[n * wd..(n + 1) * wd]).map_err(|nonzero| {
            range(
                "nonzero statistics in a record",
                nonzero as f64,
                "at most one per one-hot column and two per Beta column",
            )
        })?;
        for k in 0..k_n {
            let u = roots.root(k, &row).ok_or_else(out_of_range)?;
            // Computed for padding rows too (same work), then replaced by 0.
            out.push(if n < batch.real { u } else { Fx::ZERO });
        }
    }
    Ok(out)
}

/// The tempered mixture weights softmax(beta theta[..K]) (proportional to pi^beta, summing
/// to 1; at beta = 1 exactly pi = softmax(theta[..K])) encoded as the circuit's public side
/// encodes pi (`vtwin_iteration::coordinator::encode_weights`, from the same softmax as
/// `iteration_inputs::circuit_public_for`). On another host a different libm could round a
/// weight 1 ulp apart; that changes accuracy only (the circuit's norm and G_w use its own
/// pi, and 0 <= pm <= den whatever party 0 folds in).
fn weights_encoded(theta: &[f64], beta: f64, k_n: usize) -> Result<Vec<Fx>, BackendError> {
    // beta = 1 multiplies exactly: untempered, these are pi's logits bit for bit.
    let logits: Vec<f64> = theta[..k_n].iter().map(|&z| beta * z).collect();
    Ok(vtwin_iteration::coordinator::encode_weights(
        &crate::backend::softmax(&logits),
    )?)
}

/// Party 0's step 3b: `mat_0[n][k] = floor(pi_k mat_0[n][k])` for the `real` rows and 0 for
/// the padding rows after them (`pi` here: the tempered weights softmax(beta theta_w), which
/// are the mixture weights at beta = 1). pi is public, so this is a local integer operation (a floor:
/// at most 1 ulp below pi_k mat_0, never above, so the factor stays below M) that spares
/// the nodes a truncated layer (`pm = pi mat`); a zero row gives den = 0, r = 0 and w = 0
/// exactly in the circuit. Cost O(B K).
pub fn fold_weights(mat: &mut [Fx], pi: &[Fx], real: usize) {
    let k_n = pi.len();
    for (n, row) in mat.chunks_exact_mut(k_n).enumerate() {
        for (m, p) in row.iter_mut().zip(pi) {
            // Every row takes the product (the work does not depend on `real`).
            let folded = std::hint::black_box(vtwin_fixed::mul(*p, *m, &mut Floor));
            *m = if n < real { folded } else { Fx::ZERO };
        }
    }
}

/// The range checks both fixed-point backends make on one party's public score maps before
/// encoding them: B * b_rows < 2^22 with B = max (14 |A| + |b|) over the maps, for a batch of
/// `b_rows` rows (the released sums stay small), and per component
/// sum_j (14 |A_kj| + |b_kj|)^2 <= 2^36 ([`SCORE_NORM2_MAX`]: every score norm the parties can
/// produce is within the clip bound's range). Both are on public values only. On failure
/// `BackendError::Range` names `party`. Cost O(maps length).
pub(crate) fn check_score_map_bound(
    maps: &PartyMaps,
    b_rows: usize,
    party: &str,
) -> Result<(), BackendError> {
    let per_coord: Vec<f64> = maps
        .scale
        .iter()
        .zip(&maps.offset)
        .map(|(a, o)| STAT_ABS_MAX * a.abs() + o.abs())
        .collect();
    // Encoding moves A and b by at most 2^-33 each, so 14 |A| + |b| by at most 15 2^-33:
    // counted here, every map that passes also passes the nodes' exact check on the encoded
    // values (`vtwin_iteration::public_bounds`).
    let slack = (STAT_ABS_MAX + 1.0) * 2f64.powi(-33);
    let bound = per_coord.iter().copied().fold(0.0, f64::max) + slack;
    // Inflated for the f64 rounding of 14 |A| + |b| and of the product.
    if bound * (b_rows as f64) * (1.0 + 2f64.powi(-40)) >= MAP_BATCH_LIMIT {
        return Err(range_error(
            party,
            "public score map B (14 |A| + |b|)",
            bound * b_rows as f64,
            "[0, 2^22)",
        ));
    }
    if maps.width > 0 {
        // The same encoding slack per coordinate, and the f64 sum inflated.
        for row in per_coord.chunks_exact(maps.width) {
            let s2: f64 =
                row.iter().map(|v| (v + slack) * (v + slack)).sum::<f64>() * (1.0 + 2f64.powi(-40));
            if s2.is_nan() || s2 > SCORE_NORM2_MAX {
                return Err(range_error(
                    party,
                    "public score map sum_j (14 |A| + |b|)^2",
                    s2,
                    "[0, 2^36]",
                ));
            }
        }
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
    // The public side exactly as the circuit gets it: pi, the circuit clip C', the maps.
    let public = crate::mpc_backend::circuit_public(input, b)?;
    let pi = &public.pi;
    let mul = |a: Fx, c: Fx, t: &mut T| Fx(t.trunc(a.0.wrapping_mul(c.0), FRAC_BITS));

    let mut diag = Diagnostics {
        records: input.parties.first().map_or(0, |p| p.real),
        ..Diagnostics::default()
    };
    // Steps 4-8, per record.
    let mut w = vec![Fx::ZERO; b * k_n];
    let mut sw = vec![Fx::ZERO; k_n];
    let mut sc = Fx::ZERO;
    let mut pm = vec![Fx::ZERO; k_n];
    let mut r = vec![Fx::ZERO; k_n];
    let mut pmn = vec![Fx::ZERO; k_n];
    for n in 0..b {
        // A padding row's flag (raw 0) keeps its factor out of sc; party 0 zeroed its mat.
        let flag = uploads[0].flags[n];
        let mut den = Fx::ZERO;
        for (k, pmk) in pm.iter_mut().enumerate() {
            let i = n * k_n + k;
            // Party 0's mat already holds w_k mat_0 (fold_weights; w = pi untempered).
            let mut m = uploads[0].mat[i];
            for up in &uploads[1..] {
                m = mul(m, up.mat[i], t);
            }
            *pmk = m;
            den += m;
        }
        if den == Fx::ZERO && flag != Fx::ZERO {
            diag.den_zero += 1;
        }
        let recip = Reciprocal::new_unchecked(den, t);
        for k in 0..k_n {
            pmn[k] = recip.normalise_fraction(pm[k], t);
            r[k] = recip.times_mantissa(pmn[k], t);
        }
        // |g|^2 as the circuit forms it (`vtwin_fixed::score_norm`, `protocols/clip-bound.md`).
        let norm2 = record_norm2(
            &recip,
            &pmn,
            &r,
            pi,
            uploads.len(),
            |k, p| uploads[p].root[n * k_n + k],
            t,
        );
        let c = clip_factor_unchecked(norm2, public.clip, t);
        if flag != Fx::ZERO && c != Fx::ONE {
            diag.clipped += 1;
        }
        // An integer product (flag raw 0 or 1): padding rows stay out of sum_n c_n.
        sc += Fx(c.0.wrapping_mul(flag.0));
        // w = trunc(c r) as the circuit forms it, with the exact part r outside the
        // truncation (its clip selection rides in w's layer: c - 1 = over (s - gamma - 1)).
        for k in 0..k_n {
            let wk = r[k] + mul(c - Fx::ONE, r[k], t);
            w[n * k_n + k] = wk;
            sw[k] += wk;
        }
    }
    // Step 9.
    let mut g = vec![Fx::ZERO; d];
    for k in 0..k_n {
        g[layout.weight_index(k)] = sw[k] - mul(pi[k], sc, t);
    }
    let idx = crate::float_backend::param_indices(layout);
    for (p, (up, map)) in uploads.iter().zip(&public.parties).enumerate() {
        let wd = map.width;
        // An integer party inputs T_p at scale 1: its M_p is at scale 2^32 untruncated.
        let stats = if map.integer_stats {
            std::borrow::Cow::Owned(crate::iteration_inputs::integer_stats(&up.stats))
        } else {
            std::borrow::Cow::Borrowed(&up.stats[..])
        };
        for k in 0..k_n {
            for j in 0..wd {
                // M_p[k][j] = sum_n w[n][k] T_p[n][j], truncated once (at scale 2^32 only).
                let mut acc = 0u128;
                for n in 0..b {
                    acc = acc.wrapping_add(w[n * k_n + k].0.wrapping_mul(stats[n * wd + j].0));
                }
                let m = if map.integer_stats {
                    Fx(acc)
                } else {
                    Fx(t.trunc(acc, FRAC_BITS))
                };
                let (a, o) = (map.scale[k * wd + j], map.offset[k * wd + j]);
                let raw =
                    a.0.wrapping_mul(m.0)
                        .wrapping_add(o.0.wrapping_mul(sw[k].0));
                g[idx[p][k * wd + j]] = Fx(t.trunc(raw, FRAC_BITS));
            }
        }
    }
    if noise.len() != d {
        return Err(BackendError::NoiseLength {
            got: noise.len(),
            expected: d,
        });
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
            // Exact arithmetic: nothing can wrap.
            truncation_failure: 0.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::ColumnModel;

    /// The party's sparse score roots equal the dense root of each record's encoded
    /// statistics (`vtwin_fixed::score_root::score_root_raw`) for every column kind (Beta,
    /// categorical, cells, the pinned target), and padding rows get 0; a record with a
    /// second level set in one column is refused, naming the party.
    #[test]
    fn sparse_party_roots_equal_the_dense_roots() {
        use rand::{Rng, SeedableRng};
        use vtwin_fixed::score_root::score_root_raw;

        let layout = Layout::new(
            6,
            vec!["a".into()],
            vec![
                ("x".into(), 0, ColumnModel::Beta),
                ("c".into(), 0, ColumnModel::Categorical { cardinality: 3 }),
                ("h".into(), 0, ColumnModel::Cells { cells: 5 }),
                ("y".into(), 0, ColumnModel::Categorical { cardinality: 2 }),
            ],
        )
        .unwrap()
        .with_target("y")
        .unwrap();
        let w = layout.stat_width(0);
        assert_eq!(layout.stat_nonzeros(0), 5);
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let theta: Vec<f64> = (0..layout.dim())
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let (rows, real) = (9, 6);
        let mut stats = vec![0.0; rows * w];
        for t in stats.chunks_exact_mut(w).take(real) {
            let u: f64 = rng.random_range(0.001..0.999);
            t[0] = u.ln();
            t[1] = (-u).ln_1p();
            t[2 + rng.random_range(0..3)] = 1.0;
            t[5 + rng.random_range(0..5)] = 1.0;
            t[10 + rng.random_range(0..2)] = 1.0;
        }
        let batch = PartyBatch {
            party: 0,
            width: w,
            rows,
            real,
            stats,
        };
        let up = party_upload_batch(
            &Device::Cpu,
            &layout,
            &theta,
            1.0,
            &batch,
            Renormalise::ClosedForm,
        )
        .unwrap();
        let k_n = layout.components;
        for n in 0..rows {
            for k in 0..k_n {
                let cols = k * w..(k + 1) * w;
                let dense = score_root_raw(
                    &up.map.scale[cols.clone()],
                    &up.stats[n * w..(n + 1) * w],
                    &up.map.offset[cols],
                )
                .unwrap();
                let want = if n < real { dense } else { Fx::ZERO };
                assert_eq!(up.root[n * k_n + k], want, "record {n}, component {k}");
            }
        }
        // Two levels of the categorical set in one record: more nonzeros than the layout allows.
        let mut bad = batch.clone();
        bad.stats[2..5].copy_from_slice(&[1.0, 1.0, 0.0]);
        bad.stats[5..10].fill(0.0);
        bad.stats[5] = 1.0;
        bad.stats[6] = 1.0;
        let err = party_upload_batch(
            &Device::Cpu,
            &layout,
            &theta,
            1.0,
            &bad,
            Renormalise::ClosedForm,
        )
        .unwrap_err();
        assert!(
            matches!(&err, BackendError::Range { party, what, .. }
                if party == "a" && what.contains("nonzero statistics")),
            "{err}"
        );
    }

    #[test]
    fn fold_weights_floors_pi_times_mat_and_zeroes_padding() {
        let pi = [Fx::from_f64(0.25).unwrap(), Fx::from_f64(0.75).unwrap()];
        // Raw 3 * 0.25 = 0.75 ulp floors to 0; raw 3 * 0.75 = 2.25 floors to 2.
        let mut mat = vec![
            Fx(3),
            Fx(3),
            Fx::ONE,
            Fx::from_f64(0.5).unwrap(),
            Fx::ONE,
            Fx::ONE,
        ];
        fold_weights(&mut mat, &pi, 2);
        assert_eq!(
            mat,
            vec![
                Fx(0),
                Fx(2),
                pi[0],
                Fx::from_f64(0.375).unwrap(),
                Fx::ZERO,
                Fx::ZERO
            ]
        );
    }
}
