//! Paper mode: the arithmetic of Tajeddine et al. (2022), section 4.5, reproduced exactly so
//! that the paper's results (and failures) can be replayed, on CrypTen's 64-bit ring
//! (`i64`, wrapping) at scale 2^32.
//!
//! - [`algorithm2_mult`]: Algorithm 2, the split multiply, as printed. Finding: on a 64-bit
//!   ring the term `a_frac * b_frac` (up to 2^64) wraps whenever it is >= 2^63, i.e. whenever
//!   the fractional parts satisfy `frac(|a|) * frac(|b|) >= 1/2`, and the result is then off
//!   by exactly -1.0 (times the sign): e.g. `mult(0.75, 0.75) = -0.4375`. The term
//!   `a_int * b_int * scale` also wraps once |a_int * b_int| >= 2^31.
//! - [`crypten_exp`]: CrypTen's exponential `(1 + x/2^8)^(2^8)` (8 squarings with
//!   Algorithm 2), which the paper keeps ("the same techniques used in Crypten").
//! - [`algorithm3_div`]: Algorithm 3, Newton-Raphson division with CrypTen's initial guess
//!   `q0 = 3 exp(1 - 2b) + 0.003` and T iterations of `q = 2q - q (q b)`. The printed line 15,
//!   `q = mult(q, mult(q, b)) + q`, has a sign typo (it can only grow); we implement CrypTen's
//!   update, which is what ran. Where it loses accuracy: `protocols/arithmetic.md` and the
//!   test `paper_algorithm3_boundaries`.
//! - [`algorithm4_loop`] and [`algorithm4_closed`]: Algorithm 4 (renormalisation of a
//!   record's log-densities by 0.01 steps up to a threshold t) and its closed form, on raw
//!   values at scale 2^32 so that both are exact and agree bit for bit.

/// The paper's scale, 2^32.
pub const SCALE: i64 = 1 << 32;
/// CrypTen's default number of reciprocal iterations (the paper leaves T to the user).
pub const DEFAULT_T: u32 = 10;
/// CrypTen's default number of squarings in its exponential.
pub const EXP_ITERATIONS: u32 = 8;
/// `round(0.003 * 2^32)`, the additive term of the initial guess.
pub const INITIAL_GUESS_OFFSET: i64 = 12_884_902;
/// `round(0.01 * 2^32)`, the step c of Algorithm 4.
pub const ALG4_STEP: i64 = 42_949_673;

/// Why a paper-mode input was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PaperError {
    /// Not finite or |v| >= 2^31 (does not fit the 64-bit ring at scale 2^32).
    #[error("cannot encode {value} on the 64-bit ring at scale 2^32 (|v| < 2^31)")]
    Encode {
        /// The value.
        value: f64,
    },
    /// Algorithm 4 needs at least one log-density.
    #[error("algorithm 4: no log-densities for the record")]
    Empty,
    /// Algorithm 4 needs a positive step.
    #[error("algorithm 4: step {step} must be positive")]
    NonPositiveStep {
        /// The raw step.
        step: i64,
    },
}

/// `round(v * 2^32)` as an `i64`; errs unless finite and |v| < 2^31.
pub fn encode(v: f64) -> Result<i64, PaperError> {
    if v.is_finite() && v.abs() < 2_147_483_648.0 {
        Ok((v * SCALE as f64).round_ties_even() as i64)
    } else {
        Err(PaperError::Encode { value: v })
    }
}

/// `x / 2^32`.
pub fn decode(x: i64) -> f64 {
    x as f64 / SCALE as f64
}

/// CrypTen's sign, `1 - 2 [x < 0]` (so sign(0) = 1), as an integer.
pub fn sign(x: i64) -> i64 {
    1 - 2 * i64::from(x < 0)
}

/// Algorithm 2, `mult(a, b)`, exactly as printed, on the wrapping 64-bit ring.
///
/// `truncate(.)` and `/scale` are integer division truncating toward zero. Cost in the paper
/// (CrypTen, 2 parties): 2 sign computations (comparisons), 2 + 4 + 2 multiplications of
/// shares, 3 divisions by the public scale (truncations).
pub fn algorithm2_mult(a: i64, b: i64) -> i64 {
    let (sa, sb) = (sign(a), sign(b));
    let (aa, ba) = (a.wrapping_mul(sa), b.wrapping_mul(sb));
    let (ai, bi) = (aa.wrapping_div(SCALE), ba.wrapping_div(SCALE));
    let af = aa.wrapping_sub(ai.wrapping_mul(SCALE));
    let bf = ba.wrapping_sub(bi.wrapping_mul(SCALE));
    let c = ai
        .wrapping_mul(bi)
        .wrapping_mul(SCALE)
        .wrapping_add(ai.wrapping_mul(bf))
        .wrapping_add(af.wrapping_mul(bi))
        .wrapping_add(af.wrapping_mul(bf).wrapping_div(SCALE));
    sa.wrapping_mul(sb).wrapping_mul(c)
}

/// The exact product `floor(a b / 2^32)` (computed in i128, then wrapped to 64 bits), used to
/// separate Algorithm 3's own behaviour from Algorithm 2's wrap.
pub fn exact_mult(a: i64, b: i64) -> i64 {
    ((i128::from(a) * i128::from(b)) >> 32) as i64
}

/// CrypTen's exponential: `y = 1 + x / 2^8`, then 8 squarings `y = mult(y, y)`.
pub fn crypten_exp_with(x: i64, mult: impl Fn(i64, i64) -> i64) -> i64 {
    let mut y = SCALE.wrapping_add(x.wrapping_div(1 << EXP_ITERATIONS));
    for _ in 0..EXP_ITERATIONS {
        y = mult(y, y);
    }
    y
}

/// [`crypten_exp_with`] using [`algorithm2_mult`].
pub fn crypten_exp(x: i64) -> i64 {
    crypten_exp_with(x, algorithm2_mult)
}

/// Algorithm 3 with the multiplication `mult` and exponential `exp` given: the initial guess
/// `q0 = 3 exp(1 - 2b) + 0.003`, T updates `q = 2q - mult(q, mult(q, b))`, output
/// `mult(q, a)`.
pub fn algorithm3_div_with(
    a: i64,
    b: i64,
    t: u32,
    mult: impl Fn(i64, i64) -> i64,
    exp: impl Fn(i64) -> i64,
) -> i64 {
    let mut q = algorithm3_initial_guess_with(b, &exp);
    for _ in 0..t {
        q = q.wrapping_mul(2).wrapping_sub(mult(q, mult(q, b)));
    }
    mult(q, a)
}

/// The initial guess `3 exp(1 - 2b) + 0.003` with the exponential `exp`.
pub fn algorithm3_initial_guess_with(b: i64, exp: impl Fn(i64) -> i64) -> i64 {
    exp(SCALE.wrapping_sub(b.wrapping_mul(2)))
        .wrapping_mul(3)
        .wrapping_add(INITIAL_GUESS_OFFSET)
}

/// Algorithm 3 as the paper ran it: [`algorithm2_mult`] and [`crypten_exp`].
/// Cost: T * 2 + 1 multiplications (each an Algorithm 2), plus the exponential (8).
pub fn algorithm3_div(a: i64, b: i64, t: u32) -> i64 {
    algorithm3_div_with(a, b, t, algorithm2_mult, crypten_exp)
}

fn check_alg4(logs: &[i64], c: i64) -> Result<i64, PaperError> {
    if c <= 0 {
        return Err(PaperError::NonPositiveStep { step: c });
    }
    logs.iter().copied().max().ok_or(PaperError::Empty)
}

/// Algorithm 4 as printed: while `max_k log F_k < t`, add `c` to every log-density and to
/// the constant. Returns the constant (raw, scale 2^32). Runs `ceil((t - max) / c)` steps:
/// for reference and tests only.
pub fn algorithm4_loop(logs: &[i64], t: i64, c: i64) -> Result<i64, PaperError> {
    check_alg4(logs, c)?;
    let mut logs = logs.to_vec();
    let mut constant: i64 = 0;
    while logs.iter().copied().max().unwrap_or(t) < t {
        for l in &mut logs {
            *l += c;
        }
        constant += c;
    }
    Ok(constant)
}

/// The same constant as [`algorithm4_loop`] without the loop: `c * ceil((t - max) / c)` when
/// `max < t`, else 0. Exact integer arithmetic.
pub fn algorithm4_closed(logs: &[i64], t: i64, c: i64) -> Result<i64, PaperError> {
    let max = check_alg4(logs, c)?;
    if max >= t {
        return Ok(0);
    }
    let gap = i128::from(t) - i128::from(max);
    let c128 = i128::from(c);
    let steps = (gap + c128 - 1) / c128;
    Ok((steps * c128) as i64)
}

/// [`algorithm4_closed`] on `f64` log-densities (each encoded at scale 2^32 first, so the
/// constant is the one the fixed-point loop would produce), with the step 0.01.
/// Returns the constant as `f64`.
pub fn algorithm4_closed_f64(logs: &[f64], t: f64) -> Result<f64, PaperError> {
    let raw: Vec<i64> = logs.iter().map(|&l| encode(l)).collect::<Result<_, _>>()?;
    Ok(decode(algorithm4_closed(&raw, encode(t)?, ALG4_STEP)?))
}
