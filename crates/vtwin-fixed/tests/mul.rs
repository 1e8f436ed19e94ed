//! Multiplication and inner products against exact integer arithmetic, and the bound checks.

mod common;

use common::{rule, uniform, with_rule};
use proptest::prelude::*;
use vtwin_fixed::{dot, dot_checked, mul, mul_checked, mul_floor, Floor, Fx, RangeError};

#[test]
fn small_products_are_exact() {
    let a = Fx::from_f64(1.5).unwrap();
    let b = Fx::from_f64(-2.25).unwrap();
    assert_eq!(mul_floor(a, b).to_f64(), -3.375);
    assert_eq!(mul_floor(Fx::ONE, Fx::ONE), Fx::ONE);
    // floor(-2^-32 * 0.5) = -2^-32.
    assert_eq!(mul_floor(-Fx(1), Fx(1 << 31)).signed(), -1);
}

#[test]
fn checked_rejects_products_beyond_the_bound() {
    let big = Fx::from_f64(4096.0).unwrap(); // 2^12 * 2^12 = 2^24 > 2^23
    let err = mul_checked(big, big, &mut Floor).unwrap_err();
    assert!(
        matches!(err, RangeError::ProductTooLarge { bits: 87, .. }),
        "{err}"
    );
    let ok = Fx::from_f64(1024.0).unwrap(); // 2^10 * 2^12 = 2^22 < 2^23
    assert_eq!(
        mul_checked(ok, big, &mut Floor).unwrap().to_f64(),
        2f64.powi(22)
    );
    let edge = Fx::from_f64(2048.0).unwrap(); // exactly 2^23: rejected (strict bound)
    assert!(mul_checked(edge, big, &mut Floor).is_err());
    let huge = Fx::from_f64(1e18).unwrap();
    assert!(mul_checked(huge, huge, &mut Floor).is_err()); // overflows i128
                                                           // Sum of products: each term fine, the sum of |terms| not.
    let a = vec![Fx::from_f64(2048.0).unwrap(); 3];
    let b = vec![Fx::from_f64(2048.0).unwrap(); 3];
    assert!(dot_checked(&a[..1], &b[..1], &mut Floor).is_ok());
    assert!(dot_checked(&a, &b, &mut Floor).is_err());
}

proptest! {
    #[test]
    fn mul_is_within_one_ulp(a in uniform(-2000.0, 2000.0), b in uniform(-4000.0, 4000.0), r in rule()) {
        let exact = a.signed() * b.signed(); // < 2^87
        let floor = exact >> 32;
        let got = with_rule(r, |t| mul_checked(a, b, t)).unwrap().signed();
        prop_assert!(got == floor || (matches!(r, common::Rule::Prob(_)) && got == floor + 1), "got {got} floor {floor}");
        prop_assert_eq!(with_rule(r, |t| mul(a, b, t)).signed(), got);
    }

    #[test]
    fn dot_truncates_once(v in proptest::collection::vec((uniform(-8.0, 8.0), uniform(-8.0, 8.0)), 1..200), r in rule()) {
        let (a, b): (Vec<Fx>, Vec<Fx>) = v.into_iter().unzip();
        let exact: i128 = a.iter().zip(&b).map(|(x, y)| x.signed() * y.signed()).sum();
        let got = with_rule(r, |t| dot_checked(&a, &b, t)).unwrap().signed();
        prop_assert!(got - (exact >> 32) == 0 || got - (exact >> 32) == 1);
        prop_assert_eq!(with_rule(r, |t| dot(&a, &b, t)).signed(), got);
    }
}

#[test]
fn inner_product_over_1e5_records_at_the_documented_bound_does_not_wrap() {
    // 10^5 products each just below 64 in magnitude, all of one sign: the worst case.
    let a = vec![Fx::from_f64(7.999).unwrap(); 100_000];
    let b = vec![Fx::from_f64(-7.999).unwrap(); 100_000];
    let got = dot_checked(&a, &b, &mut Floor).unwrap().to_f64();
    let want = -(a[0].to_f64() * a[0].to_f64()) * 1e5;
    assert!((got - want).abs() < 1e-6, "{got} vs {want}");
}
