//! The party's score roots against the definition the clip's proof needs
//! (`protocols/clip-bound.md`): `u >= 2^-L sqrt(sum_j (A_j T_j + b_j)^2)` exactly, checked in
//! big integers on the encoded values, tight to 2 ulps, and the sparse form equal to the
//! dense one to the bit, over maps and records of the shapes the parties send (one-hot
//! columns, Beta coordinates, zero padding rows).

use num_bigint::BigInt;
use proptest::prelude::*;
use vtwin_fixed::clip_bound::NORM_SCALE_BITS;
use vtwin_fixed::score_root::{score_root_raw, ScoreRoots, SparseRow};
use vtwin_fixed::{Fx, FRAC_BITS};

/// One column of a party's map: a one-hot column of `levels` or a Beta pair.
#[derive(Clone, Debug)]
enum Column {
    OneHot { levels: usize },
    Beta,
}

fn columns() -> impl Strategy<Value = Vec<Column>> {
    prop::collection::vec(
        prop_oneof![
            (1usize..40).prop_map(|levels| Column::OneHot { levels }),
            Just(Column::Beta),
        ],
        1..6,
    )
}

fn enc(v: f64) -> Fx {
    Fx::from_f64(v).unwrap()
}

/// `2^64 (u 2^L)^2 >= sum_j s_j^2` (s at scale 2^64), in big integers: the root bounds the
/// exact norm. Also returns whether `u - 2` would not (tightness).
fn bounds_exactly(u: Fx, scale: &[Fx], stats: &[Fx], offset: &[Fx]) -> (bool, bool) {
    let s2: BigInt = scale
        .iter()
        .zip(stats)
        .zip(offset)
        .map(|((a, t), b)| {
            let s = BigInt::from(a.signed()) * t.signed() + (BigInt::from(b.signed()) << FRAC_BITS);
            &s * &s
        })
        .sum();
    let lhs = |u: u128| (BigInt::from(u) << NORM_SCALE_BITS).pow(2) << 64;
    (lhs(u.raw()) >= s2, lhs(u.raw().saturating_sub(2)) <= s2)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn sparse_roots_bound_the_exact_norm_and_equal_the_dense_ones(
        cols in columns(),
        k_n in 1usize..4,
        seed in any::<u64>(),
        padding in any::<bool>(),
    ) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let width: usize = cols.iter().map(|c| match c { Column::OneHot { levels } => *levels, Column::Beta => 2 }).sum();
        // The map: categorical scale 1, offset -omega; Beta scale a, offset a (psi(a+b) - psi(a)).
        let (mut scale, mut offset) = (Vec::new(), Vec::new());
        for _ in 0..k_n {
            for c in &cols {
                match c {
                    Column::OneHot { levels } => for _ in 0..*levels {
                        scale.push(Fx::ONE);
                        offset.push(enc(-rng.random::<f64>()));
                    },
                    Column::Beta => for _ in 0..2 {
                        scale.push(enc(rng.random_range(1e-3..1000.0)));
                        offset.push(enc(rng.random_range(-1e4..1e4)));
                    },
                }
            }
        }
        // One record: a level per one-hot column, (log u, log(1-u)) per Beta; zeros if padding.
        let mut stats = vec![Fx::ZERO; width];
        let mut j0 = 0;
        for c in &cols {
            match c {
                Column::OneHot { levels } => {
                    let j = j0 + rng.random_range(0..*levels);
                    if !padding { stats[j] = Fx::ONE; }
                    j0 += levels;
                }
                Column::Beta => {
                    if !padding {
                        let u: f64 = rng.random_range(1e-6..1.0 - 1e-6);
                        stats[j0] = enc(u.ln());
                        stats[j0 + 1] = enc((-u).ln_1p());
                    }
                    j0 += 2;
                }
            }
        }
        let slots: usize = cols.iter().map(|c| match c { Column::OneHot { .. } => 1, Column::Beta => 2 }).sum();
        let mut row = SparseRow::with_slots(slots);
        row.set(&stats).unwrap();
        let roots = ScoreRoots::new(&scale, &offset, k_n, width).unwrap();
        for k in 0..k_n {
            let cols_k = k * width..(k + 1) * width;
            let dense = score_root_raw(&scale[cols_k.clone()], &stats, &offset[cols_k.clone()]).unwrap();
            prop_assert_eq!(roots.root(k, &row), Some(dense));
            let (upper, tight) = bounds_exactly(dense, &scale[cols_k.clone()], &stats, &offset[cols_k]);
            prop_assert!(upper, "root {} below the exact norm", dense.raw());
            prop_assert!(tight, "root {} more than 2 ulps above the exact norm", dense.raw());
        }
    }
}
