//! The gradient circuit of `docs/architecture.md` step 4 (nodes' side), vectorised over the batch:
//! the MPC twin of `vtwin_model::fixed_backend::fixed_gradient` (same products, same truncations).
//!
//! Inputs (at scale 2^32 except an integer party's T_p): public `pi` (K), the clip bound (already reduced by the
//! caller as the fixed backend does), per party the public score maps `scale`/`offset`
//! (K x w_p, row-major); shared per party `mat_p` and the score roots `u_p` (B x K) and
//! `T_p` (B x w_p; raw integers for an integer party); the
//! shared noise `Z` in the canonical output order. Output, in canonical order:
//! `[G_weights (K); for each party p: G_p (K x w_p, row-major)]`, shared.
//!
//! Layers (each truncated layer is one mask vector, in this order, which a replay of the
//! reference must follow):
//! 1. `pm = prod_p mat_p` (P - 1 layers of B K; party 0's factor already holds
//!    `floor(pi_k mat_0)` and is 0 on padding rows, `vtwin_model::fixed_backend::fold_weights`;
//!    with tempering the weights party 0 folds are softmax(beta theta_w), which also sum to 1
//!    within K / 2 ulps: the circuit cannot tell and need not);
//!    `den[n] = sum_k pm` (local);
//! 2. normalised reciprocal of den (5 truncation layers of B + B K, B + P B K, 2 B, 2 B and
//!    2 B values, part after part: the first layer holds `m = trunc(den p)` and
//!    `pm' = trunc(pm p)`, the second `e` and `z = trunc(pm'_k u_pk)` for every (record,
//!    component, party), `[n][k][p]`, the last the last Goldschmidt factor and
//!    `Z' = trunc(2^F sum_(p,k) z^2) + 1 ulp` per record, F =
//!    `vtwin_fixed::score_norm::SCORE_NORM_FINE_BITS`), then one layer of `r = trunc(pm' y)`
//!    (B K; `vtwin_fixed::Reciprocal::divide_fraction`) and `y2' = trunc(y^2) + 1 ulp` (B);
//! 3. `|g|^2 = trunc(sum_k (r - pi)^2) + 2^(2L-F) trunc(Z' y2')` with
//!    `L = vtwin_fixed::clip_bound::NORM_SCALE_BITS` (one layer of 2 B: the first sums, then
//!    the products; `vtwin_fixed::score_norm`: both factors rounded up, so `Z' y2'` is above
//!    `2^(64+F) sum (y z)^2`, and `y z_pk` is within `2^-32 (u_pk + y)` of `r_k u_pk`); every
//!    truncated value stays small, see `protocols/clip-bound.md`;
//! 4. the clip factor's parts `over` and `s - gamma - 1` (`c = 1 + over (s - gamma - 1)`;
//!    8 truncation layers, of B or, in the 2 Newton-Raphson steps, 3 B), with `over r` and
//!    `over flag` (untruncated) riding in its first layer after the normalisation; then in
//!    one layer `w = r + trunc((s - gamma - 1) over r) = trunc(c r)` (B K) and
//!    `flag c = flag + (s - gamma - 1) over flag` with party 0's secret-shared 0/1 flag per
//!    record (padding rows have `r = 0` exactly, so `w = 0`, and the flag keeps their c out of
//!    `sc`: they add exactly nothing, so the public batch size B hides the real one);
//! 5. `sw = sum_n w`, `sc = sum_n flag_n c_n` (local);
//! 6. one layer: `M_p = W^T T_p` (inner products over the batch, one truncated reshare per
//!    output) for every party whose T_p is at scale 2^32, in party order, then `trunc(pi sc)`
//!    (K), giving `G_w = sw - trunc(pi sc)`, then `G_p = trunc(scale M_p + offset sw)` for
//!    every integer party ([`PartyMap::integer_stats`]: T_p at scale 1, so `M_p` is at 2^32
//!    untruncated and the public map is applied to its additive shares); then one layer
//!    `G_p = trunc(scale M_p + offset sw)` for the parties at scale 2^32 (none when every party
//!    is integer), plus Z.
//!
//! Truncation layers: P + 17 ([`CircuitPublic::truncation_layers`]: P + 16 when every party
//! is integer), 1 round each like every layer ([`crate::multiply`]). Rounds:
//! (P - 1) + 16 + 1 + 1 + 20 + 1 + 1 + 1 = P + 40 (P + 39 when every party is integer).

use vtwin_fixed::clip::{CLIP_RSQRT_ITERATIONS, CLIP_X_LIMIT};
use vtwin_fixed::clip_bound::{norm2_bound, NORM_SCALE_BITS};
use vtwin_fixed::score_norm::{ScoreNormSites, SCORE_NORM_FINE_BITS};
use vtwin_fixed::{Fx, FRAC_BITS, ONE_RAW};

use crate::error::MpcError;
use crate::input::{accept_client, input_many, ClientSeeds, InputClient, InputError};
use crate::inv_sqrt::clip_parts;
use crate::message::Message;
use crate::multiply::{inner_products_many, mul_and_mul_trunc, mul_trunc};
use crate::reciprocal::reciprocal_fractions_and_norm_factors;
use crate::runtime::Ctx;
use crate::share::{repeat_each, Shared};
use crate::winograd::{paired_inner_products, share_products};

/// The public side of one iteration.
#[derive(Clone, Debug)]
pub struct CircuitPublic {
    /// Batch size B.
    pub batch: usize,
    /// Components K.
    pub components: usize,
    /// Mixture weights pi (K), encoded.
    pub pi: Vec<Fx>,
    /// Clip bound as used by the circuit (the fixed backend passes C (1 - 2^-20)).
    pub clip: Fx,
    /// Per party: (width w_p, score scale A (K x w_p), score offset b (K x w_p)), encoded.
    pub parties: Vec<PartyMap>,
    /// Number m >= 1 of noise contributors: clients P .. P+m-1 each input one noise vector of
    /// length [`CircuitPublic::dim`] and the nodes add them (Z = sum of the contributions, so
    /// no single contributor knows Z). The coordinator is client P + m.
    pub noise_contributors: usize,
}

/// One party's public affine score map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartyMap {
    /// w_p = |T_p|.
    pub width: usize,
    /// A, K x w_p row-major.
    pub scale: Vec<Fx>,
    /// b, K x w_p row-major.
    pub offset: Vec<Fx>,
    /// Whether every statistic of the party is an integer (one-hot columns only), so that it
    /// inputs T_p as raw integers (scale 1) instead of at scale 2^32. `W^T T_p` is then
    /// already at scale 2^32 and its product with the map is truncated once: `G_p` in one
    /// layer instead of two (`M_p`, then `G_p`), one round fewer when every party is integer.
    pub integer_stats: bool,
}

/// One party's shared first input: what the circuit's first layers need.
#[derive(Clone, Debug)]
pub struct SharedUpload {
    /// mat_p, B x K.
    pub mat: Shared,
    /// The score roots u_p, B x K (`vtwin_fixed::score_root`).
    pub root: Shared,
    /// Party 0 only (empty for the others): raw 0/1 per record, 0 for a padding row.
    pub flags: Shared,
}

/// The inputs the circuit takes only at its `M_p` layer, about 40 rounds in: every party's
/// T_p (its input number 2) and the noise contributions (each contributor's input number 1,
/// its seeds included). A node holds only the parties' seeds until then, so most of the
/// clients' bytes may arrive while the circuit runs ([`LateInputs::receive`]).
#[derive(Debug)]
pub struct LateInputs {
    parties: Vec<ClientSeeds>,
}

impl LateInputs {
    /// Waits for the late inputs (no round: they are checked with the next exchange, the
    /// `M_p` layer's) and returns each party's T_p (B x w_p) and Z, the local sum of the
    /// noise contributions (d). Errors: a payload of the wrong length, or no noise
    /// contributor ([`MpcError::LengthMismatch`]). Cost: one PRG expansion per seed held.
    pub async fn receive(
        self,
        ctx: &Ctx,
        public: &CircuitPublic,
    ) -> Result<(Vec<Shared>, Shared), MpcError> {
        let parties = public.parties.len();
        let mut noise_seeds = Vec::new();
        for c in parties..usize::from(public.coordinator()) {
            noise_seeds.push(accept_client(ctx, c as u16).await?);
        }
        let mut wanted: Vec<(&ClientSeeds, u64, usize)> = self
            .parties
            .iter()
            .zip(&public.parties)
            .map(|(s, m)| (s, STATS_INPUT, public.batch * m.width))
            .collect();
        wanted.extend(noise_seeds.iter().map(|s| (s, 1, public.dim())));
        let mut stats = input_many(ctx, &wanted).await?;
        // Z = sum of the contributions: addition of shares is local.
        let mut contributions = stats.split_off(parties).into_iter();
        let first = contributions.next().ok_or(MpcError::LengthMismatch {
            protocol: "noise contributors",
            left: 0,
            right: 1,
        })?;
        let z = contributions.try_fold(first, |acc, c| acc.add(&c))?;
        Ok((stats, z))
    }
}

/// A party's input number for `[mat | root | flags]` ([`upload_messages`]).
pub const FIRST_INPUT: u64 = 1;
/// A party's input number for T_p ([`upload_messages`]).
pub const STATS_INPUT: u64 = 2;

impl CircuitPublic {
    /// Truncation layers of [`gradient`], each one round: P + 17, one fewer when every party
    /// inputs integer statistics ([`PartyMap::integer_stats`]: `G_p` needs no `M_p` layer).
    pub fn truncation_layers(&self) -> usize {
        self.parties.len() + 16 + usize::from(self.second_map_layer())
    }

    /// Whether [`gradient`] truncates some `G_p` in a layer after `M_p`'s: a party at scale
    /// 2^32 with at least one statistic.
    fn second_map_layer(&self) -> bool {
        self.parties.iter().any(|p| !p.integer_stats && p.width > 0)
    }

    /// The coordinator's client id, P + m: the only receiver of the opened G.
    pub fn coordinator(&self) -> u16 {
        (self.parties.len() + self.noise_contributors) as u16
    }

    /// Output length d = K + sum_p K w_p.
    pub fn dim(&self) -> usize {
        self.components
            + self
                .parties
                .iter()
                .map(|p| self.components * p.width)
                .sum::<usize>()
    }

    fn check(&self, uploads: &[SharedUpload]) -> Result<(), MpcError> {
        let (b, k) = (self.batch, self.components);
        let bad = |left: usize, right: usize| MpcError::LengthMismatch {
            protocol: "gradient",
            left,
            right,
        };
        if uploads.len() != self.parties.len() || uploads.is_empty() {
            return Err(bad(uploads.len(), self.parties.len()));
        }
        if self.pi.len() != k {
            return Err(bad(self.pi.len(), k));
        }
        for (i, (u, p)) in uploads.iter().zip(&self.parties).enumerate() {
            for (got, want) in [
                (u.flags.len(), if i == 0 { b } else { 0 }),
                (u.mat.len(), b * k),
                (u.root.len(), b * k),
                (p.scale.len(), k * p.width),
                (p.offset.len(), k * p.width),
            ] {
                if got != want {
                    return Err(bad(got, want));
                }
            }
        }
        Ok(())
    }
}

impl CircuitPublic {
    /// Upper bound on the probability that any probabilistic truncation of one run of the
    /// circuit wraps (a wrap releases a garbage value, so the bound is charged to delta):
    /// the sum over every truncation of max |X| / 2^128, with max |X| from the public
    /// parameters and the parties' input `bounds` only (never from data). Per layer, the
    /// largest pre-truncation value (site by site in `protocols/truncation-failure.md`):
    /// mat products M^(i+1) (M the mat bound; party 0's factor, pi mat_0, is below M too),
    /// the reciprocal's normalisation 1 and its six later truncations (`e`, three Goldschmidt
    /// factors, two squarings of `e`) 24 each (4 when den > 0; a padding row's den = 0 gives
    /// m = 0, e = 1, and y doubles from
    /// 2.91 to 23.3), the divide `pm p` 1 and `pm' y` 3 (pm <= den), the score norm
    /// (`vtwin_fixed::score_norm::ScoreNormSites`, F = `SCORE_NORM_FINE_BITS` extra bits,
    /// S1 and S2 the sums of the roots' bounds and of their squares): the products
    /// `z = pm' u_pk` 1.01 u_pk, `2^F sum z^2` 2^F (1.03 S2 + 2^-30 S1), `y^2` 576 and
    /// `Z' y2'` 2^F (2.26 S2 + 2^-28 S1 + 2^-28), the first norm sum K R^2 (R = 1.5 + 2^-20
    /// the largest responsibility), the inverse
    /// square root's normalisation 2^16 (a fixed 2^80 raw), its line 1.22, per Newton-Raphson
    /// step `y^2` 24, `h y` 1, `1.5 y` 8, `(h y) y^2` 4 (4, 1, 3, 4 when x > 0; x = 0 grows y
    /// by 1.5 per step; `CLIP_RSQRT_ITERATIONS` = 2 steps), and scale-back 8 C' + 2 C', w 1.5, M_p 1.5 B T
    /// (parties at scale 2^32 only), pi sc 1.01 B, and G_p |A| 1.5 B T + |b| 1.5 B per
    /// coordinate (the maps' actual values; T the same real bound at either scale). Cost O(d).
    pub fn truncation_failure_bound(&self, bounds: &InputBounds) -> f64 {
        let (b, k) = (self.batch as f64, self.components as f64);
        let p_n = self.parties.len() as i32;
        let m = bounds.mat.1.to_f64().max(0.0);
        let t_max = bounds
            .stats
            .0
            .to_f64()
            .abs()
            .max(bounds.stats.1.to_f64().abs());
        let r = vtwin_fixed::clip_bound::RESPONSIBILITY_MAX;
        let clip = self.clip.to_f64();
        // Per-(party, component) score-root bound from the public maps.
        let scale = 2f64.powi(-(NORM_SCALE_BITS as i32));
        let mut roots2 = 0.0; // sum_(p,k) u_pk,max^2
        let mut roots1 = 0.0; // sum_(p,k) u_pk,max
        let mut per_coord = 0.0; // sum over G_p coordinates of |A| 1.5 B T + |b| 1.5 B
        for map in &self.parties {
            for row in 0..self.components {
                let cols = row * map.width..(row + 1) * map.width;
                let s2: f64 = map.scale[cols.clone()]
                    .iter()
                    .zip(&map.offset[cols])
                    .map(|(a, o)| {
                        let (a, o) = (a.to_f64().abs(), o.to_f64().abs());
                        per_coord += a * 1.5 * b * t_max + o * 1.5 * b;
                        (a * t_max + o).powi(2)
                    })
                    .sum();
                let u = scale * s2.sqrt() + 3.0 * 2f64.powi(-32);
                roots2 += u * u;
                roots1 += u;
            }
        }
        // M_p's own truncation: only the parties at scale 2^32 have one.
        let coords = self
            .parties
            .iter()
            .filter(|p| !p.integer_stats)
            .map(|p| p.width * self.components)
            .sum::<usize>() as f64;
        // divide_fraction: pm p < 2^64 raw because pm <= den < 2^32, pm' y < 3. den =
        // sum_k pi_k prod_p mat_p <= M^P (party 0 folds pi in) plus a few ulps of rounding;
        // should the public ranges allow more, the reciprocal's window no longer holds den
        // and no finite charge is claimed.
        let divide = if m.powi(p_n) < 2f64.powi(31) {
            1.0 + 3.0
        } else {
            f64::INFINITY
        };
        let per_record_component = (1..p_n).map(|i| m.powi(i + 1)).sum::<f64>() // mat products
            + divide
            + 1.5; // w

        // The clip's normalisation reads norm2 mod 2^80 raw: its site's 2^16 holds only while
        // the largest norm2 these maps allow is inside the window; beyond, no finite charge.
        let clip_norm = if norm2_bound(self.components, roots2) < CLIP_X_LIMIT {
            2f64.powi(16)
        } else {
            f64::INFINITY
        };
        let per_record = 1.0 + 6.0 * 24.0 // reciprocal (den = 0 on padding rows)
            + k * r * r // the first norm sum
            + clip_norm + 1.22 + f64::from(CLIP_RSQRT_ITERATIONS) * (24.0 + 1.0 + 8.0 + 4.0)
            + 10.0 * clip // clip factor
            + ScoreNormSites::for_roots(roots1, roots2).total(roots1); // the score norm
        let batch = coords * 1.5 * b * t_max + k * 1.01 * b + per_coord;
        let total = b * k * per_record_component + b * per_record + batch;
        // Values are in units of 2^64 raw (a 2^32-scale product), failure |X| / 2^128.
        total * 2f64.powi(-64) * (1.0 + 2f64.powi(-20))
    }
}

/// Sums groups of `len` consecutive elements (local).
fn group_sums(x: &Shared, len: usize) -> Shared {
    let sum = |v: &[u128]| {
        v.chunks(len)
            .map(|c| c.iter().fold(0u128, |s, e| s.wrapping_add(*e)))
            .collect()
    };
    x.map_linear(sum)
}

/// Sums over the batch: `out[k] = sum_n x[n][k]` for x of B x K (local).
fn column_sums(x: &Shared, k_n: usize) -> Shared {
    let sum = |v: &[u128]| {
        (0..k_n)
            .map(|k| {
                v.iter()
                    .skip(k)
                    .step_by(k_n)
                    .fold(0u128, |s, e| s.wrapping_add(*e))
            })
            .collect()
    };
    x.map_linear(sum)
}

/// `out[i] = x[idx[i]]` (local).
fn gather(x: &Shared, idx: &[usize]) -> Shared {
    x.map_linear(|v| idx.iter().map(|&i| v[i]).collect())
}

/// Element-wise product with public values, then nothing (local, untruncated).
fn mul_public_each(x: &Shared, c: &[u128]) -> Shared {
    x.map_linear(|v| v.iter().zip(c).map(|(a, b)| a.wrapping_mul(*b)).collect())
}

/// G = sum_n c_n g_n + Z, shared, canonical order (module docs). The parties' T_p and the
/// noise are received from `late` just before the `M_p` layer.
pub async fn gradient(
    ctx: &Ctx,
    public: &CircuitPublic,
    uploads: &[SharedUpload],
    late: LateInputs,
) -> Result<Shared, MpcError> {
    public.check(uploads)?;
    let me = ctx.id();
    let (b, k_n) = (public.batch, public.components);
    let pi_bk: Vec<u128> = (0..b * k_n).map(|i| public.pi[i % k_n].0).collect();

    // 1. pm = prod_p mat_p (party 0 folded pi into its factor and zeroed its padding
    //    rows), den.
    let mut pm = uploads[0].mat.clone();
    for u in &uploads[1..] {
        pm = mul_trunc(ctx, &pm, &u.mat, FRAC_BITS).await?;
    }
    let den = group_sums(&pm, k_n);

    // 2. r = pm / den: pm normalised beside den (pm <= den), then one product by the
    //    mantissa; 3. beside them the score norm's factors (`vtwin_fixed::score_norm`):
    //    z = trunc(pm' u) per (record, component, party), from the parties' score roots u
    //    (scaled by 2^-L), in the layer of the reciprocal's e; Z' = trunc(2^F sum z^2) + 1
    //    ulp in its last Goldschmidt layer; y2' = trunc(y^2) + 1 ulp in r's layer. Then
    //    norm2 = trunc(sum_k (r - pi)^2) + 2^(2L-F) trunc(Z' y2'), every truncated value small
    //    (vtwin_fixed::clip_bound).
    let p_n = uploads.len();
    let roots = Shared::concat(&uploads.iter().map(|u| &u.root).collect::<Vec<_>>());
    // [n][k][p], so that each fraction's P multipliers are in a row and each record's
    // sum of squares is one inner product.
    let by_fraction: Vec<usize> = (0..b)
        .flat_map(|n| (0..k_n).flat_map(move |k| (0..p_n).map(move |p| (p * b + n) * k_n + k)))
        .collect();
    let (_, r, z_up, y2_up) = reciprocal_fractions_and_norm_factors(
        ctx,
        &den,
        &pm,
        k_n,
        &gather(&roots, &by_fraction),
        p_n,
    )
    .await?;
    let pi_shared = Shared::public(me, &pi_bk);
    let e = r.sub(&pi_shared)?;
    // Both in one layer: [sum_k e^2 (B) ; Z' y2' (B)].
    let acc = inner_products_many(ctx, &[(&e, &e, k_n), (&z_up, &y2_up, 1)]).await?;
    // Z' y2' is at scale 2^(32 + FINE) (vtwin_fixed::score_norm).
    let norm2 = acc.slice(0..b).add(
        &acc.slice(b..2 * b)
            .mul_public(1u128 << (2 * NORM_SCALE_BITS - SCORE_NORM_FINE_BITS)),
    )?;

    // 4. clip factor c = 1 + over (s - gamma - 1), folded into w's layer: over r and
    //    over flag ride in the clip's first layer after its normalisation, then
    //    w = r + trunc((s - gamma - 1) over r) = trunc(c r) and c flag = flag +
    //    (s - gamma - 1) over flag (exact: over is 0 or 1). Padding rows have r = 0 exactly
    //    (party 0's zero mat), so w = 0; their flag (raw 0) keeps them out of sc. They add
    //    nothing and the nodes never learn the real batch size.
    let flags = &uploads[0].flags;
    let owner: Vec<usize> = (0..b * k_n).map(|i| i / k_n).chain(0..b).collect();
    let (_, s_minus_one, ridden) = clip_parts(
        ctx,
        &norm2,
        public.clip,
        &Shared::concat(&[&r, flags]),
        &owner,
    )
    .await?;
    let (over_r, over_flag) = (
        ridden.slice(0..b * k_n),
        ridden.slice(b * k_n..ridden.len()),
    );
    let (flag_part, w_part) = mul_and_mul_trunc(
        ctx,
        (&s_minus_one, &over_flag),
        (&repeat_each(&s_minus_one, k_n), &over_r),
        FRAC_BITS,
    )
    .await?;
    // The flag is a raw 0/1 integer: flag c = flag ONE + (s - gamma - 1) over flag.
    let (c, w) = (flags.mul_public(ONE_RAW).add(&flag_part)?, r.add(&w_part)?);

    // 5. weight gradient.
    let sw = column_sums(&w, k_n);
    let sc_k = if b == 0 {
        Shared::public(me, &vec![0; k_n])
    } else {
        repeat_each(&group_sums(&c, b), k_n)
    };
    let pi_k: Vec<u128> = public.pi.iter().map(|p| p.0).collect();
    // trunc(pi sc) is truncated in the same layer as M_p (below).
    let pisc_add = mul_public_each(&sc_k, &pi_k).own;

    // 6. M_p = W^T T_p: node i's additive share of every output, accumulated in place.
    //    The replicated product's three cross terms w_o t_o + w_o t_n + w_n t_o =
    //    w_o t_b + w_n t_o (t_b = t_o + t_n) summed over the records are an inner product of
    //    length 2B, taken by Winograd's pairing ([`paired_inner_products`]): B K w_p + B w_p
    //    ring products per party and B K once (xi), instead of 2 B K w_p; the same sum in the
    //    ring. A party whose T_p is at scale 2^32 has M_p truncated in the first layer (beside
    //    trunc(pi sc)) and G_p = trunc(A M + b sw) in a second; an integer party's (scale 1)
    //    M_p is at scale 2^32 already, so its G_p is formed on the additive shares and
    //    truncated in the first layer: one layer in all when every party is integer.
    let (stats, noise) = late.receive(ctx, public).await?;
    let xi = share_products(&w, k_n);
    let mut first = Vec::with_capacity(public.dim());
    let mut g_int = Vec::new();
    for (t, p) in stats.iter().zip(&public.parties) {
        let z = paired_inner_products(&w, &xi, t.view(0..t.len()), p.width);
        if p.integer_stats {
            g_int.extend(affine_map(&z, &sw.own, p));
        } else {
            first.extend(z);
        }
    }
    ctx.count(|c| c.mults += (b * (public.dim() - k_n)) as u64);
    let (n_m, n_g) = (first.len(), g_int.len());
    first.extend(pisc_add);
    first.extend(g_int);
    let first = crate::multiply::layer(ctx, Vec::new(), first, FRAC_BITS)
        .await?
        .1;
    let m = first.slice(0..n_m);
    let g_w = sw.sub(&first.slice(n_m..n_m + k_n))?;
    let g_int = first.slice(n_m + k_n..n_m + k_n + n_g);
    // The parties at scale 2^32: G_p = trunc(A M + b sw), the public map on each node's
    // additive share (its `own`), then one truncation layer (none when every party is
    // integer).
    let mut lin = Vec::with_capacity(n_m);
    let mut at = 0;
    for p in public.parties.iter().filter(|p| !p.integer_stats) {
        let len = k_n * p.width;
        lin.extend(affine_map(&m.own[at..at + len], &sw.own, p));
        at += len;
    }
    let g_real = if public.second_map_layer() {
        crate::multiply::layer(ctx, Vec::new(), lin, FRAC_BITS)
            .await?
            .1
    } else {
        Shared::default()
    };
    // Back to the canonical party order.
    let (mut at_int, mut at_real) = (0, 0);
    let mut parts = vec![g_w];
    for p in &public.parties {
        let len = k_n * p.width;
        parts.push(if p.integer_stats {
            at_int += len;
            g_int.slice(at_int - len..at_int)
        } else {
            at_real += len;
            g_real.slice(at_real - len..at_real)
        });
    }
    Shared::concat(&parts.iter().collect::<Vec<_>>()).add(&noise)
}

/// `A m + b sw` for one party's map (K x w_p, row-major) on one share vector of `m` (K x w_p)
/// and of `sw` (K): local, untruncated (scale 2^64). Cost 2 K w_p ring products.
fn affine_map(m: &[u128], sw: &[u128], map: &PartyMap) -> Vec<u128> {
    let wd = map.width;
    m.iter()
        .enumerate()
        .map(|(i, v)| {
            map.scale[i]
                .0
                .wrapping_mul(*v)
                .wrapping_add(map.offset[i].0.wrapping_mul(sw[i / wd]))
        })
        .collect()
}

/// One party's upload in the clear (what the party encodes before sharing).
#[derive(Clone, Debug)]
pub struct PlainUpload {
    /// mat_p, B x K.
    pub mat: Vec<Fx>,
    /// The score roots u_p = 2^-L sqrt(|s|^2) rounded up, B x K.
    pub root: Vec<Fx>,
    /// T_p, B x w_p: at scale 2^32, or raw integers (scale 1) when `integer_stats`.
    pub stats: Vec<Fx>,
    /// Party 0 only (empty for the others): raw 0/1 per record, 1 for a real record, 0 for
    /// a padding row (the public batch size hides the real one).
    pub flags: Vec<Fx>,
    /// Whether `stats` are raw integers: must be the party's [`PartyMap::integer_stats`].
    pub integer_stats: bool,
}

/// Public closed ranges every party checks before sharing (from the model's fixed-point
/// bounds, e.g. mat in [0, 1], score roots in [0, 2^7], T in [-14, 14]).
#[derive(Clone, Copy, Debug)]
pub struct InputBounds {
    /// Range of mat_p.
    pub mat: (Fx, Fx),
    /// Range of the score roots.
    pub root: (Fx, Fx),
    /// Range of T_p (as reals).
    pub stats: (Fx, Fx),
}

impl InputBounds {
    /// The range of T_p's encoded values: `stats` at scale 2^32, or for an integer party
    /// (raw integers at scale 1) the integers within it, `[ceil(lo), floor(hi)]`.
    pub fn stats_encoded(&self, integer_stats: bool) -> (Fx, Fx) {
        if integer_stats {
            let (lo, hi) = self.stats;
            let lo = -((-lo.signed()) >> FRAC_BITS);
            (
                Fx::from_signed(lo),
                Fx::from_signed(hi.signed() >> FRAC_BITS),
            )
        } else {
            self.stats
        }
    }
}

/// A party's upload as the messages of its two inputs ([`FIRST_INPUT`] and [`STATS_INPUT`]).
#[derive(Debug)]
pub struct UploadMessages {
    /// `[mat | root | flags]`: the circuit's first layers need it.
    pub first: Vec<Message>,
    /// T_p: needed only at the `M_p` layer ([`LateInputs`]), so it may travel while the
    /// circuit runs. Most of the upload (B w_p against 2 B K + B elements).
    pub stats: Vec<Message>,
}

impl IntoIterator for UploadMessages {
    type Item = Message;
    type IntoIter = std::iter::Chain<std::vec::IntoIter<Message>, std::vec::IntoIter<Message>>;

    /// Every message, `first` then `stats`.
    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.stats)
    }
}

/// A party's upload as input messages: each segment checked against its public range (an
/// error names the first bad element, counted in `[mat | root | stats | flags]` order; nothing
/// is produced), then `[mat | root | flags]` shared as input [`FIRST_INPUT`] and `stats` as
/// input [`STATS_INPUT`] (`client` fresh: its next input number must be 1).
pub fn upload_messages(
    client: &mut InputClient,
    up: &PlainUpload,
    bounds: InputBounds,
) -> Result<UploadMessages, InputError> {
    let check = |values: &[Fx], (min, max): (Fx, Fx), offset: usize| match values
        .iter()
        .position(|v| v.signed() < min.signed() || v.signed() > max.signed())
    {
        Some(i) => Err(InputError::OutOfRange {
            index: offset + i,
            value: values[i].to_f64(),
            min: min.to_f64(),
            max: max.to_f64(),
        }),
        None => Ok(()),
    };
    check(&up.mat, bounds.mat, 0)?;
    check(&up.root, bounds.root, up.mat.len())?;
    check(
        &up.stats,
        bounds.stats_encoded(up.integer_stats),
        up.mat.len() + up.root.len(),
    )?;
    let one = Fx::from_raw(1);
    check(
        &up.flags,
        (Fx::ZERO, one),
        up.mat.len() + up.root.len() + up.stats.len(),
    )?;
    if client.next_seq() != FIRST_INPUT {
        return Err(InputError::Sequence {
            got: client.next_seq(),
            want: FIRST_INPUT,
        });
    }
    let raw = |values: &[&[Fx]]| -> Vec<u128> {
        values
            .iter()
            .flat_map(|v| v.iter().map(|x| x.raw()))
            .collect()
    };
    Ok(UploadMessages {
        first: client.share_raw(&raw(&[&up.mat, &up.root, &up.flags])),
        stats: client.share_raw(&raw(&[&up.stats])),
    })
}

/// Nodes' side of the first inputs of one iteration: party p is client p and sends
/// `[mat | root | flags]` as its input [`FIRST_INPUT`] ([`upload_messages`]); its T_p and the
/// noise contributions (clients P..P+m-1) are taken later, by [`gradient`] through the
/// returned [`LateInputs`]. No round (the seeds and corrections are checked on the circuit's
/// first exchange, [`crate::input`]).
pub async fn receive_inputs(
    ctx: &Ctx,
    public: &CircuitPublic,
) -> Result<(Vec<SharedUpload>, LateInputs), MpcError> {
    let (b, k_n) = (public.batch, public.components);
    let mut seeds = Vec::new();
    for c in 0..public.parties.len() {
        seeds.push(accept_client(ctx, c as u16).await?);
    }
    let wanted: Vec<(&ClientSeeds, u64, usize)> = seeds
        .iter()
        .enumerate()
        .map(|(p, s)| (s, FIRST_INPUT, 2 * b * k_n + if p == 0 { b } else { 0 }))
        .collect();
    let got = input_many(ctx, &wanted).await?;
    let uploads = got
        .into_iter()
        .map(|u| SharedUpload {
            mat: u.slice(0..b * k_n),
            root: u.slice(b * k_n..2 * b * k_n),
            flags: u.slice(2 * b * k_n..u.len()),
        })
        .collect();
    Ok((uploads, LateInputs { parties: seeds }))
}

/// The nodes' truncation masks as recorded by [`crate::sim::Simulation::record_masks`] for one run of
/// [`gradient`] (one vector per truncation layer, in the layer order of the module docs),
/// rearranged into the order in which `vtwin_model::fixed_backend::fixed_gradient` calls its
/// truncator: per record the mat products, the reciprocal (its multi-part layers part by
/// part), the two truncations of `divide_fraction` per component (`pm'`, from the
/// reciprocal's first layer, then `r`), the score norm (`vtwin_fixed::score_norm`: `trunc(pm'
/// u)` per component and party from the reciprocal's layer of e, `Z'` from its last layer,
/// `y2'` from r's layer), the two norm sums, the clip factor, w; then trunc(pi sc) per component; then
/// per party and coordinate M and G_p (G_p alone for an integer party). Feeding them, in this order, to a
/// replaying truncator makes the plaintext reference reproduce the circuit bit for bit;
/// tests (here and in vtwin-model) use it for that. Panics unless `layers` has
/// [`CircuitPublic::truncation_layers`] vectors of the layer lengths `public` implies.
/// Cost O(total mask count).
pub fn masks_in_reference_order(public: &CircuitPublic, layers: &[Vec<u128>]) -> Vec<u128> {
    let (b, k_n, parties) = (public.batch, public.components, public.parties.len());
    assert_eq!(
        layers.len(),
        public.truncation_layers(),
        "truncation layers"
    );
    let mut it = layers.iter();
    let mut take =
        |n: usize| -> Vec<&Vec<u128>> { (0..n).map(|_| it.next().expect("layer")).collect() };
    let mat = take(parties - 1);
    let recip = take(5);
    let lens = |ls: &[&Vec<u128>]| ls.iter().map(|l| l.len()).collect::<Vec<_>>();
    let bkp = b * k_n * parties;
    assert_eq!(
        lens(&recip),
        [b + b * k_n, b + bkp, 2 * b, 2 * b, 2 * b],
        "reciprocal layers"
    );
    let quotient = take(1)[0];
    assert_eq!(
        quotient.len(),
        b * k_n + b,
        "quotients and the squared mantissas"
    );
    let acc = take(1)[0];
    let clip = take(8);
    assert_eq!(
        lens(&clip),
        [b, b, 3 * b, b, 3 * b, b, b, b],
        "clip factor layers"
    );
    let w = take(1)[0];
    let first = take(1)[0];
    let no_layer = Vec::new();
    let g_real = if public.second_map_layer() {
        take(1)[0]
    } else {
        &no_layer
    };
    let (m, rest) = first.split_at(g_real.len());
    let (pisc, g_int) = rest.split_at(k_n);
    let mut out = Vec::new();
    for n in 0..b {
        for k in 0..k_n {
            let i = n * k_n + k;
            out.extend(mat.iter().map(|l| l[i]));
        }
        // Layers of several parts (Goldschmidt, Newton-Raphson): part by part; the first
        // layer's second part is pm' (B K), taken with the quotients, the second's the
        // products z = trunc(pm' u) and the last's Z', taken with the score norm.
        out.extend([recip[0][n], recip[1][n], recip[2][n], recip[2][b + n]]);
        out.extend([recip[3][n], recip[3][b + n], recip[4][n]]);
        for k in 0..k_n {
            out.push(recip[0][b + n * k_n + k]);
            out.push(quotient[n * k_n + k]);
        }
        // The score norm (vtwin_fixed::score_norm): z per (component, party) from e's
        // layer, Z' from the last Goldschmidt layer, y2' from the quotients' layer.
        out.extend(recip[1][b + n * k_n * parties..b + (n + 1) * k_n * parties].iter());
        out.extend([recip[4][b + n], quotient[b * k_n + n]]);
        out.extend([acc[n], acc[b + n]]);
        out.extend(
            clip.iter()
                .flat_map(|l| l.iter().skip(n).step_by(b).copied()),
        );
        out.extend((0..k_n).map(|k| w[n * k_n + k]));
    }
    out.extend(pisc.iter().copied());
    // Per party in order: M then G_p per coordinate at scale 2^32, G_p alone for an integer
    // party.
    let (mut real_at, mut int_at) = (0, 0);
    for p in &public.parties {
        for _ in 0..k_n * p.width {
            if !p.integer_stats {
                out.extend([m[real_at], g_real[real_at]]);
                real_at += 1;
            } else {
                out.push(g_int[int_at]);
                int_at += 1;
            }
        }
    }
    out
}
