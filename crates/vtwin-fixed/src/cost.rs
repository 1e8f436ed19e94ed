//! MPC cost model of each reference function, for 3-party replicated secret sharing on
//! Z_2^128 (ABY3-style, semi-honest, honest majority).
//!
//! Units:
//! - a *multiplication* is a product of two shared values (one reshare of one ring element
//!   per party); multiplications by public integers, bits-as-coefficients and additions are
//!   local;
//! - a *truncation* is [`crate::trunc_prob`] with a preprocessed mask; fused with the
//!   multiplication it follows, a multiplication-with-truncation costs one online round;
//! - binary circuits are counted in AND gates (one reshare of one bit each) and AND depth
//!   (rounds).
//!
//! Binary sub-circuits (formulas in the functions below):
//! - arithmetic-to-binary of the low `w` bits ([`a2b_and_gates`]): a carry-save layer
//!   (w ANDs, depth 1) turns the three replicated summands into two, then a Kogge-Stone
//!   adder: w generate ANDs plus 2(w - 2^l) ANDs at each of ceil(log2 w) prefix levels;
//! - MSB one-hot of w bits ([`msb_scan_and_gates`]): bits j..w of the sum are zero iff sum
//!   bit j is 0 and the zero-detection bits `p_(i+1) ^ !(s_i | c_i)` are 1 above it; their
//!   suffix-AND rides in the adder's levels (depth 0 of its own), then one AND per bit
//!   (depth 1); then w bit injections (one round for all, a three-party oblivious transfer
//!   of 6 ring elements per bit; vtwin-mpc `binary::inject`);
//! - sign bit of a 128-bit value ([`MSB`]): carry-save (128 ANDs) then a carry tree for the
//!   single top carry (128 generate ANDs + 2 x 127 combine ANDs), depth 1 + 1 + 7.

/// Cost of one call of a function under MPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    /// Secret-by-secret multiplications (arithmetic).
    pub mults: u32,
    /// Probabilistic truncations (each consumes one mask).
    pub truncations: u32,
    /// Sign-bit extractions (comparisons).
    pub comparisons: u32,
    /// Width in bits of the normalisation bit decomposition (0 when none).
    pub normalisation_bits: u32,
    /// Online rounds of the arithmetic part (multiplications with truncation in sequence),
    /// not counting the binary sub-circuits.
    pub arithmetic_rounds: u32,
}

const fn log2_ceil(w: u32) -> u32 {
    32 - (w - 1).leading_zeros()
}

/// AND gates of the arithmetic-to-binary conversion of the low `w` bits.
pub const fn a2b_and_gates(w: u32) -> u32 {
    let mut ands = 2 * w; // carry-save layer + generate
    let mut l = 0;
    while l < log2_ceil(w) {
        ands += 2 * (w - (1 << l));
        l += 1;
    }
    ands
}

/// AND depth of [`a2b_and_gates`].
pub const fn a2b_depth(w: u32) -> u32 {
    2 + log2_ceil(w)
}

/// AND gates that turn the adder of the low `w` bits into the one-hot MSB vector: a
/// suffix-AND over `w - 1` zero-detection bits riding in the adder's levels
/// (`w - 1 - 2^l` ANDs at level l), then one AND per bit (`!x_j & Q_j`).
pub const fn msb_scan_and_gates(w: u32) -> u32 {
    let mut ands = w;
    let mut l = 0;
    while l < log2_ceil(w) {
        if w - 1 > (1 << l) {
            ands += w - 1 - (1 << l);
        }
        l += 1;
    }
    ands
}

/// Total binary cost of normalising a `w`-bit value: (AND gates, AND depth, bit injections).
/// Depth: the adder's, plus one layer for the final AND (the suffix-AND rides in the
/// adder's levels).
pub const fn normalisation(w: u32) -> (u32, u32, u32) {
    (
        a2b_and_gates(w) + msb_scan_and_gates(w),
        a2b_depth(w) + 1,
        w,
    )
}

/// Sign bit of a 128-bit shared value: (AND gates, AND depth).
pub const MSB: (u32, u32) = (128 + 128 + 2 * 127, 9);

/// [`crate::mul()`]: one product, one truncation.
pub const MUL: Cost = Cost {
    mults: 1,
    truncations: 1,
    comparisons: 0,
    normalisation_bits: 0,
    arithmetic_rounds: 1,
};

/// [`crate::Reciprocal::new`] + [`crate::Reciprocal::value`]: `m`, `e`, the three
/// Goldschmidt factors with the two squarings of `e` beside the first two (4 layers), the
/// scale-back.
pub const RECIPROCAL: Cost = Cost {
    mults: 1 + 6 + 2,
    truncations: 1 + 6 + 1,
    comparisons: 0,
    normalisation_bits: crate::RECIP_WINDOW_BITS,
    arithmetic_rounds: 1 + 4 + 1,
};

/// [`crate::Reciprocal::divide`] for one extra numerator, given the normalised reciprocal.
pub const DIVIDE_EXTRA: Cost = Cost {
    mults: 3,
    truncations: 2,
    comparisons: 0,
    normalisation_bits: 0,
    arithmetic_rounds: 2,
};

/// [`crate::Reciprocal::divide_fraction`] for one fraction `0 <= a <= x`, given the
/// normalised reciprocal: `t(a p)` rides in the layer of `m`, then `t(a' y)`.
pub const DIVIDE_FRACTION: Cost = Cost {
    mults: 2,
    truncations: 2,
    comparisons: 0,
    normalisation_bits: 0,
    arithmetic_rounds: 1,
};

/// [`crate::InvSqrt::new`] + [`crate::InvSqrt::value`]. The initial line and each step's
/// `1.5 y` multiply by a public constant: a truncation but no secret product. Each
/// Newton-Raphson step is 2 layers (`y^2`, `h y`, `1.5 y`; then `(h y) y^2`).
pub const INV_SQRT: Cost = Cost {
    mults: 1 + 9 + 2,
    truncations: 1 + 1 + 12 + 1,
    comparisons: 0,
    normalisation_bits: crate::RSQRT_WINDOW_BITS,
    arithmetic_rounds: 1 + 1 + 6 + 1,
};

/// [`crate::clip_factor`]: inverse square root with [`crate::clip::CLIP_RSQRT_ITERATIONS`]
/// steps times the public C (a local product, then a truncation), one comparison
/// (parallel), one select.
pub const CLIP_FACTOR: Cost = Cost {
    mults: 1 + 3 * crate::clip::CLIP_RSQRT_ITERATIONS + 2 + 1,
    truncations: 1 + 1 + 4 * crate::clip::CLIP_RSQRT_ITERATIONS + 2,
    comparisons: 1,
    normalisation_bits: crate::RSQRT_WINDOW_BITS,
    arithmetic_rounds: 1 + 1 + 2 * crate::clip::CLIP_RSQRT_ITERATIONS + 2 + 1,
};

/// [`crate::exp()`]: the public log2(e) product (local), 7 Horner products, the final scale
/// product; 9 truncations; a 39-bit decomposition (no MSB search) and a 7-bit one-hot decode.
pub const EXP: Cost = Cost {
    mults: 7 + 1,
    truncations: 1 + 7 + 1,
    comparisons: 0,
    normalisation_bits: 39,
    arithmetic_rounds: 9,
};

/// [`crate::compare::lt`]: one sign bit, exact.
pub const COMPARE: Cost = Cost {
    mults: 0,
    truncations: 0,
    comparisons: 1,
    normalisation_bits: 0,
    arithmetic_rounds: 0,
};
