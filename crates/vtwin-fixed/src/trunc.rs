//! Truncation: dividing a raw ring element by 2^d after a multiplication.
//!
//! Two rules, both on the full ring Z_2^128:
//!
//! - [`trunc_floor`]: exact `floor(X / 2^d)` (arithmetic shift of the two's-complement value).
//! - [`trunc_prob`]: the probabilistic truncation the MPC computes, *mask and reveal*
//!   (in the spirit of ABY3's Π_trunc2, with a mask uniform on the whole ring). In vtwin-mpc
//!   (`multiply::layer`, since 2026-11-24) node 0 alone draws `r` from its private seed and
//!   sends nodes 1 and 2 masked parts from which both compute `c = X + r mod 2^128` (node 0
//!   never sees `c`); the output `(c >> d) - (r >> d) mod 2^128` (logical shifts) is shared
//!   as `c >> d` (held by nodes 1 and 2) and `-(r >> d) = -t_0 - t_1`, split by node 0 into
//!   the other two shares. One round. Given the same `r`, the MPC output equals [`trunc_prob`] bit for bit.
//!
//! Error and failure of [`trunc_prob`], for a signed pre-truncation value `X`:
//! - if the integer `X + r` (r in [0, 2^128)) does not leave [0, 2^128), the result is
//!   `floor(X / 2^d) + carry`, carry = 1 iff `(X mod 2^d) + (r mod 2^d) >= 2^d`; so the error
//!   against the exact `X / 2^d` is in (-1, 1) ulp, and it is unbiased over `r`
//!   (the mean of carry is (X mod 2^d) / 2^d);
//! - otherwise (probability exactly `|X| / 2^128` over uniform `r`) it is off by
//!   `±2^(128-d)`: a catastrophic wrap. For `|X| < 2^87` ([`crate::PRODUCT_BOUND_BITS`]) this
//!   probability is below 2^-41; every function in this crate keeps its pre-truncation values
//!   below 2^87 for inputs inside its documented range.
//!
//! Compound functions take a `&mut impl Truncator` and call it once per truncation, in a
//! documented order, so that a test can replay the MPC's masks through [`Probabilistic`].

use rand_core::RngCore;

/// `floor(X / 2^d)` for the two's-complement value `X` (arithmetic shift). `d < 128`.
pub const fn trunc_floor(x: u128, d: u32) -> u128 {
    ((x as i128) >> d) as u128
}

/// The MPC's probabilistic truncation of `x` by `d` bits with mask `r` (see module docs):
/// `((x + r) >> d) - (r >> d) mod 2^128`, logical shifts. `d < 128`.
pub const fn trunc_prob(x: u128, r: u128, d: u32) -> u128 {
    (x.wrapping_add(r) >> d).wrapping_sub(r >> d)
}

/// The share-local truncation of SecureML for a 2-out-of-2 sharing `x = s0 + s1`: party 0
/// outputs `s0 >> d`, party 1 outputs `-((-s1) >> d)` (logical shifts). Provided for
/// comparison only; vtwin's 3-party engine uses [`trunc_prob`]. Given `s0`, returns the sum
/// of the two output shares. Error within one ulp except with probability about
/// `|x| / 2^127` over a uniform `s0`.
pub const fn trunc_share_local(x: u128, s0: u128, d: u32) -> u128 {
    let s1 = x.wrapping_sub(s0);
    (s0 >> d).wrapping_add((s1.wrapping_neg() >> d).wrapping_neg())
}

/// A truncation rule, called once per truncation by every compound function.
pub trait Truncator {
    /// Returns `x / 2^d` rounded as this rule rounds (`d < 128`).
    fn trunc(&mut self, x: u128, d: u32) -> u128;
}

/// Exact floor truncation ([`trunc_floor`]). Deterministic; the default reference.
#[derive(Debug, Clone, Copy, Default)]
pub struct Floor;

impl Truncator for Floor {
    fn trunc(&mut self, x: u128, d: u32) -> u128 {
        trunc_floor(x, d)
    }
}

/// Probabilistic truncation ([`trunc_prob`]) with masks drawn from `masks`, one per call.
///
/// In tests, `masks` replays the MPC's masks (or a seeded RNG); the MPC equals the reference
/// bit for bit when both see the same sequence.
#[derive(Debug, Clone)]
pub struct Probabilistic<F> {
    masks: F,
    calls: u64,
}

impl<F: FnMut() -> u128> Probabilistic<F> {
    /// Uses `masks()` as the mask of each successive truncation.
    pub fn new(masks: F) -> Self {
        Probabilistic { masks, calls: 0 }
    }

    /// Number of truncations performed so far (= masks consumed).
    pub fn calls(&self) -> u64 {
        self.calls
    }
}

/// Draws one 128-bit mask from `rng`: high 64 bits first, then low 64 bits.
pub fn mask_from_rng<R: RngCore + ?Sized>(rng: &mut R) -> u128 {
    let hi = u128::from(rng.next_u64());
    let lo = u128::from(rng.next_u64());
    (hi << 64) | lo
}

/// Probabilistic truncation with masks from `rng` ([`mask_from_rng`], one per truncation).
pub fn probabilistic_from_rng<R: RngCore>(mut rng: R) -> Probabilistic<impl FnMut() -> u128> {
    Probabilistic::new(move || mask_from_rng(&mut rng))
}

impl<F: FnMut() -> u128> Truncator for Probabilistic<F> {
    fn trunc(&mut self, x: u128, d: u32) -> u128 {
        self.calls += 1;
        trunc_prob(x, (self.masks)(), d)
    }
}

/// Wraps a truncator and counts its calls (used to check the documented MPC costs).
#[derive(Debug, Clone, Default)]
pub struct Counting<T> {
    /// The wrapped rule.
    pub inner: T,
    /// Truncations performed so far.
    pub count: u64,
}

impl<T: Truncator> Truncator for Counting<T> {
    fn trunc(&mut self, x: u128, d: u32) -> u128 {
        self.count += 1;
        self.inner.trunc(x, d)
    }
}

impl<T: Truncator + ?Sized> Truncator for &mut T {
    fn trunc(&mut self, x: u128, d: u32) -> u128 {
        (**self).trunc(x, d)
    }
}
