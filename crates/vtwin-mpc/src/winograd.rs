//! Winograd's inner product for the nodes' local share of `M_p = W^T T_p`
//! (`protocols/mpc-gradient.md`, step 6): the hot loop of a node's iteration, B K w_p ring
//! products per party.
//!
//! In any commutative ring `x y + u v = (x + v)(u + y) - x u - v y` (Winograd 1968), so a
//! node's replicated cross terms `sum_n w_o t_b + w_n t_o` (`t_b = t_o + t_n`) take one ring
//! product per term instead of two. Two kernels compute the same sums in Z_2^128, bit for
//! bit: a portable one on `u128`, and on x86-64 CPUs with AVX-512 IFMA one that splits each
//! element into 52-bit limbs and accumulates eight outputs at a time with
//! `vpmadd52{lo,hi}uq` (chosen at run time; the binaries stay portable).

use crate::share::{Shared, SharedView};

/// `xi[k] = sum_n w_o[n][k] w_n[n][k]`: the sums of the products of a node's two shares of w
/// (B x `k_n`) down each column, the pairing's correction on w's side
/// ([`paired_inner_products`]). Cost B K ring products.
pub(crate) fn share_products(w: &Shared, k_n: usize) -> Vec<u128> {
    let mut xi = vec![0u128; k_n];
    for (o, n) in w
        .own
        .chunks_exact(k_n.max(1))
        .zip(w.next.chunks_exact(k_n.max(1)))
    {
        for ((x, a), c) in xi.iter_mut().zip(o).zip(n) {
            *x = x.wrapping_add(a.wrapping_mul(*c));
        }
    }
    xi
}

/// Node i's additive share of `M[k][j] = sum_n w_o[n][k] t_b[n][j] + w_n[n][k] t_o[n][j]`
/// (`t_b = t_o + t_n`; K x `wd` row-major) from its two shares of w (B x K) and of T
/// (B x `wd`): with `xi` = [`share_products`] of w (the same for every party's block) and
/// `eta[j] = sum_n t_o[n][j] t_b[n][j]`,
/// `M[k][j] = sum_n (w_o[n][k] + t_o[n][j]) (w_n[n][k] + t_b[n][j]) - xi[k] - eta[j]`,
/// exactly in Z_2^128. Cost: B K `wd` + B `wd` ring products (against 2 B K `wd` directly),
/// eight at a time on a CPU with AVX-512 IFMA.
pub(crate) fn paired_inner_products(
    w: &Shared,
    xi: &[u128],
    t: SharedView<'_>,
    wd: usize,
) -> Vec<u128> {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = ifma::Ifma::try_new() {
        return ifma::paired_inner_products(simd, w, xi, t, wd);
    }
    portable(w, xi, t, wd)
}

/// [`paired_inner_products`] on `u128` (any CPU).
fn portable(w: &Shared, xi: &[u128], t: SharedView<'_>, wd: usize) -> Vec<u128> {
    let k_n = xi.len();
    let mut z = vec![0u128; k_n * wd];
    let mut eta = vec![0u128; wd];
    let mut t_both = vec![0u128; wd];
    let rows = w.own.len().checked_div(k_n).unwrap_or(0);
    for n in 0..rows {
        let (to, tn) = (&t.own[n * wd..(n + 1) * wd], &t.next[n * wd..(n + 1) * wd]);
        for ((tb, e), (o, x)) in t_both.iter_mut().zip(&mut eta).zip(to.iter().zip(tn)) {
            *tb = o.wrapping_add(*x);
            *e = e.wrapping_add(o.wrapping_mul(*tb));
        }
        for k in 0..k_n {
            let (wo, wn) = (w.own[n * k_n + k], w.next[n * k_n + k]);
            let row = &mut z[k * wd..(k + 1) * wd];
            for ((r, tb), o) in row.iter_mut().zip(&t_both).zip(to) {
                *r = r.wrapping_add(wo.wrapping_add(*o).wrapping_mul(wn.wrapping_add(*tb)));
            }
        }
    }
    for (row, x) in z.chunks_exact_mut(wd.max(1)).zip(xi) {
        for (r, e) in row.iter_mut().zip(&eta) {
            *r = r.wrapping_sub(x.wrapping_add(*e));
        }
    }
    z
}

#[cfg(target_arch = "x86_64")]
mod ifma {
    //! The IFMA kernel. An element `x` of Z_2^128 is three limbs `x0 + 2^52 x1 + 2^104 x2`
    //! (`x0, x1 < 2^52`). Mod 2^128, `a b = lo(a0 b0) + 2^52 (hi(a0 b0) + lo(a0 b1) +
    //! lo(a1 b0)) + 2^104 (hi(a0 b1) + hi(a1 b0) + lo(a1 b1) + lo(a0 b2) + lo(a2 b0))`, where
    //! lo and hi are the low and high 52 bits of a 104-bit limb product (every other term is
    //! a multiple of 2^128): nine `vpmadd52` per eight products, each adding a 52-bit value to
    //! a 64-bit lane. The 2^0 and 2^52 columns take at most 3 such values per record, so a
    //! block of at most [`BLOCK`] records cannot overflow them; the 2^104 column may wrap,
    //! since 2^104 2^64 is a multiple of 2^128. A sum `w + t` is formed in limbs with its two
    //! carries propagated; bits above 52 in a limb are ignored by `vpmadd52` and those above
    //! 24 in the top limb are multiples of 2^128, so no masking is needed.

    use core::arch::x86_64::__m512i;

    use pulp::bytemuck::cast;

    use crate::share::{Shared, SharedView};

    pulp::simd_type! {
        /// AVX-512F with IFMA, detected at run time.
        pub(super) struct Ifma {
            pub sse: "sse",
            pub avx512f: "avx512f",
            pub avx512ifma: "avx512ifma",
        }
    }

    /// Records per block: 3 (2^52 - 1) BLOCK < 2^64 keeps the two low columns exact.
    const BLOCK: usize = 1024;
    /// Lanes per vector.
    const LANES: usize = 8;
    const MASK52: u64 = (1 << 52) - 1;

    fn limbs(x: u128) -> [u64; 3] {
        [
            x as u64 & MASK52,
            (x >> 52) as u64 & MASK52,
            (x >> 104) as u64,
        ]
    }

    /// Up to eight ring elements as their low and their high words, lane by lane (missing
    /// lanes zero).
    fn words(e: &[u128]) -> [[u64; LANES]; 2] {
        let mut v = [[0u64; LANES]; 2];
        for (l, x) in e.iter().enumerate() {
            v[0][l] = *x as u64;
            v[1][l] = (*x >> 64) as u64;
        }
        v
    }

    /// [`super::paired_inner_products`] with IFMA: the same sums in Z_2^128, bit for bit.
    /// Records are read in order (one pass over T's shares); the accumulators, (K + 1) x
    /// ceil(w / 8) x 3 vectors, stay in cache.
    pub(super) fn paired_inner_products(
        simd: Ifma,
        w: &Shared,
        xi: &[u128],
        t: SharedView<'_>,
        wd: usize,
    ) -> Vec<u128> {
        let k_n = xi.len();
        let rows = w.own.len().checked_div(k_n).unwrap_or(0);
        let chunks = wd.div_ceil(LANES);
        // Row k_n of the accumulators has w = 0: it sums t_o t_b, i.e. eta.
        let k_all = k_n + 1;
        let mut sums = vec![0u128; k_all * chunks * LANES];
        let mut acc = vec![[0u64; LANES]; k_all * chunks * 3];
        // One record's t_o and t_b in limbs, by chunk: 6 vectors each.
        let mut row = vec![[[0u64; LANES]; 6]; chunks];
        let w_limbs = |n: usize, k: usize| -> [[u64; 3]; 2] {
            if k == k_n {
                [[0; 3]; 2]
            } else {
                let i = n * k_n + k;
                [limbs(w.own[i]), limbs(w.next[i])]
            }
        };
        simd.vectorize(
            #[inline(always)]
            || {
                let f = simd.avx512f;
                let m = simd.avx512ifma;
                let one = f._mm512_set1_epi64(1);
                let mask = f._mm512_set1_epi64(MASK52 as i64);
                let split = |lo, hi| {
                    [
                        cast(f._mm512_and_si512(lo, mask)),
                        cast(f._mm512_and_si512(
                            f._mm512_or_si512(
                                f._mm512_srli_epi64::<52>(lo),
                                f._mm512_slli_epi64::<12>(hi),
                            ),
                            mask,
                        )),
                        cast(f._mm512_srli_epi64::<40>(hi)),
                    ]
                };
                // The limbs of t + w, each limb's carry added into the next.
                let limb_sum = |t: &[[u64; LANES]], w: [__m512i; 3]| {
                    let x0 = f._mm512_add_epi64(cast(t[0]), w[0]);
                    let x1 = f._mm512_add_epi64(
                        f._mm512_add_epi64(cast(t[1]), w[1]),
                        f._mm512_srli_epi64::<52>(x0),
                    );
                    let x2 = f._mm512_add_epi64(
                        f._mm512_add_epi64(cast(t[2]), w[2]),
                        f._mm512_srli_epi64::<52>(x1),
                    );
                    [x0, x1, x2]
                };
                for start in (0..rows).step_by(BLOCK) {
                    let end = rows.min(start + BLOCK);
                    for n in start..end {
                        let (to, tn) =
                            (&t.own[n * wd..(n + 1) * wd], &t.next[n * wd..(n + 1) * wd]);
                        for (c, limbs) in row.iter_mut().enumerate() {
                            let span = c * LANES..wd.min((c + 1) * LANES);
                            let [o_lo, o_hi] = words(&to[span.clone()]).map(cast);
                            let [x_lo, x_hi] = words(&tn[span]).map(cast);
                            // t_b = t_o + t_n in Z_2^128: the low words' carry into the high.
                            let b_lo = f._mm512_add_epi64(o_lo, x_lo);
                            let carry = f._mm512_cmplt_epu64_mask(b_lo, o_lo);
                            let b_hi = f._mm512_add_epi64(o_hi, x_hi);
                            let b_hi = f._mm512_mask_add_epi64(b_hi, carry, b_hi, one);
                            let [l0, l1, l2] = split(o_lo, o_hi);
                            let [l3, l4, l5] = split(b_lo, b_hi);
                            *limbs = [l0, l1, l2, l3, l4, l5];
                        }
                        for k in 0..k_all {
                            let [wo, wx] = w_limbs(n, k);
                            let splat = |v: [u64; 3]| v.map(|x| f._mm512_set1_epi64(x as i64));
                            let (ws, vs) = (splat(wo), splat(wx));
                            let accs =
                                acc[k * chunks * 3..(k + 1) * chunks * 3].chunks_exact_mut(3);
                            for (limbs, a) in row.iter().zip(accs) {
                                // a = w_o + t_o and d = w_n + t_b in limbs, carries propagated.
                                let [a0, a1, a2] = limb_sum(&limbs[..3], ws);
                                let [d0, d1, d2] = limb_sum(&limbs[3..], vs);
                                let mut c0 = cast(a[0]);
                                let mut c1 = cast(a[1]);
                                let mut c2 = cast(a[2]);
                                c0 = m._mm512_madd52lo_epu64(c0, a0, d0);
                                c1 = m._mm512_madd52hi_epu64(c1, a0, d0);
                                c2 = m._mm512_madd52hi_epu64(c2, a0, d1);
                                c1 = m._mm512_madd52lo_epu64(c1, a0, d1);
                                c2 = m._mm512_madd52hi_epu64(c2, a1, d0);
                                c1 = m._mm512_madd52lo_epu64(c1, a1, d0);
                                c2 = m._mm512_madd52lo_epu64(c2, a1, d1);
                                c2 = m._mm512_madd52lo_epu64(c2, a0, d2);
                                c2 = m._mm512_madd52lo_epu64(c2, a2, d0);
                                a[0] = cast(c0);
                                a[1] = cast(c1);
                                a[2] = cast(c2);
                            }
                        }
                    }
                    // The block's columns into the ring: x0 + 2^52 x1 + 2^104 x2 per lane.
                    for (s, a) in sums.chunks_exact_mut(LANES).zip(acc.chunks_exact_mut(3)) {
                        for (l, r) in s.iter_mut().enumerate() {
                            *r = r
                                .wrapping_add(u128::from(a[0][l]))
                                .wrapping_add(u128::from(a[1][l]) << 52)
                                .wrapping_add(u128::from(a[2][l]) << 104);
                        }
                        a.fill([0; LANES]);
                    }
                }
            },
        );
        let eta = &sums[k_n * chunks * LANES..];
        let mut z = Vec::with_capacity(k_n * wd);
        for (k, x) in xi.iter().enumerate() {
            let row = &sums[k * chunks * LANES..][..wd];
            z.extend(
                row.iter()
                    .zip(eta)
                    .map(|(r, e)| r.wrapping_sub(x.wrapping_add(*e))),
            );
        }
        z
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// (B, K, w) shapes: empty batches and widths, widths that are not multiples of eight,
    /// and batches longer than the IFMA kernel's block of 1024 records (1400 is past 1365,
    /// the most records whose low columns cannot overflow).
    const SHAPES: [(usize, usize, usize); 8] = [
        (0, 3, 4),
        (5, 1, 0),
        (1, 1, 1),
        (7, 3, 5),
        (16, 4, 9),
        (33, 2, 17),
        (1100, 2, 9),
        (1400, 2, 3),
    ];

    fn direct_sum(w: &Shared, t: &Shared, b: usize, k_n: usize, wd: usize) -> Vec<u128> {
        let mut want = vec![0u128; k_n * wd];
        for n in 0..b {
            for k in 0..k_n {
                for j in 0..wd {
                    let (o, x) = (t.own[n * wd + j], t.next[n * wd + j]);
                    let (a, c) = (w.own[n * k_n + k], w.next[n * k_n + k]);
                    let term = a
                        .wrapping_mul(o)
                        .wrapping_add(a.wrapping_mul(x))
                        .wrapping_add(c.wrapping_mul(o));
                    want[k * wd + j] = want[k * wd + j].wrapping_add(term);
                }
            }
        }
        want
    }

    /// How the test elements are drawn.
    #[derive(Clone, Copy, Debug)]
    enum Draw {
        /// Uniform ring elements: every wrap exercised.
        Uniform,
        /// All ones: every limb and carry at its maximum.
        AllOnes,
        /// T = 0 and every w with both low limbs at 2^53 - 1 after its carry (the largest
        /// value a record adds to the 2^52 column): the block's overflow bound is tight here,
        /// and without T's wraps row k and `eta` cannot cancel an overflow (a kernel with
        /// blocks of 1366 records or more fails at B 1400).
        LowColumnsFull,
    }

    /// Every shape under every draw.
    fn cases() -> Vec<(Shared, Shared, usize, usize, usize)> {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let low_full = ((1u128 << 53) - 1) | (((1u128 << 24) - 1) << 104);
        let mut out = Vec::new();
        for (b, k_n, wd) in SHAPES {
            for draw in [Draw::Uniform, Draw::AllOnes, Draw::LowColumnsFull] {
                let mut ring = |len: usize, is_w: bool| -> Vec<u128> {
                    (0..len)
                        .map(|_| match draw {
                            Draw::Uniform => {
                                u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64())
                            }
                            Draw::AllOnes => u128::MAX,
                            Draw::LowColumnsFull if is_w => low_full,
                            Draw::LowColumnsFull => 0,
                        })
                        .collect()
                };
                let w = Shared {
                    own: ring(b * k_n, true),
                    next: ring(b * k_n, true),
                };
                let t = Shared {
                    own: ring(b * wd, false),
                    next: ring(b * wd, false),
                };
                out.push((w, t, b, k_n, wd));
            }
        }
        out
    }

    /// Winograd's pairing, as dispatched (IFMA's kernel where the CPU has it) and the portable
    /// kernel, against the direct sum of the three cross terms.
    #[test]
    fn both_kernels_equal_the_direct_sum() {
        type Kernel = fn(&Shared, &[u128], SharedView<'_>, usize) -> Vec<u128>;
        for (kernel, name) in [
            (paired_inner_products as Kernel, "dispatched"),
            (portable as Kernel, "portable"),
        ] {
            for (w, t, b, k_n, wd) in cases() {
                let got = kernel(&w, &share_products(&w, k_n), t.view(0..t.len()), wd);
                let want = direct_sum(&w, &t, b, k_n, wd);
                assert_eq!(got, want, "{name}: B {b}, K {k_n}, w {wd}");
            }
        }
    }

    /// The IFMA kernel against the portable one, on a CPU that has it (it says so when it
    /// does not: then only the portable kernel runs anywhere on this machine).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_ifma_kernel_equals_the_portable_one() {
        let Some(simd) = ifma::Ifma::try_new() else {
            eprintln!("no AVX-512 IFMA on this CPU: the IFMA kernel is not exercised");
            return;
        };
        for (w, t, _, k_n, wd) in cases() {
            let xi = share_products(&w, k_n);
            assert_eq!(
                ifma::paired_inner_products(simd, &w, &xi, t.view(0..t.len()), wd),
                portable(&w, &xi, t.view(0..t.len()), wd),
                "K {k_n}, w {wd}"
            );
        }
    }
}
