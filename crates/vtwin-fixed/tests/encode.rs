//! Encoding, decoding, I32F32 conversions and their error paths.

use fixed::types::I32F32;
use proptest::prelude::*;
use vtwin_fixed::{encode_slice, EncodeError, Fx, RangeError, ENCODE_LIMIT};

#[test]
fn encodes_exact_values_exactly() {
    assert_eq!(Fx::from_f64(1.0).unwrap().raw(), 1 << 32);
    assert_eq!(Fx::from_f64(-1.0).unwrap().signed(), -(1 << 32));
    assert_eq!(Fx::from_f64(0.5).unwrap().raw(), 1 << 31);
    assert_eq!(Fx::from_f64(2f64.powi(-32)).unwrap().raw(), 1);
    assert_eq!(Fx::from_f64(-0.0).unwrap().raw(), 0);
    assert_eq!(Fx::from_f64(1.5).unwrap().to_f64(), 1.5);
}

#[test]
fn rounds_to_nearest_ties_to_even() {
    let ulp = 2f64.powi(-32);
    assert_eq!(Fx::from_f64(0.5 * ulp).unwrap().raw(), 0);
    assert_eq!(Fx::from_f64(1.5 * ulp).unwrap().raw(), 2);
    assert_eq!(Fx::from_f64(2.5 * ulp).unwrap().raw(), 2);
    assert_eq!(Fx::from_f64(0.51 * ulp).unwrap().raw(), 1);
    assert_eq!(Fx::from_f64(-1.5 * ulp).unwrap().signed(), -2);
    assert_eq!(Fx::from_f64(-0.49 * ulp).unwrap().signed(), 0);
}

#[test]
fn rejects_non_finite_and_out_of_range() {
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(
            matches!(Fx::from_f64(v), Err(EncodeError::NotFinite { .. })),
            "{v}"
        );
    }
    for v in [ENCODE_LIMIT, -ENCODE_LIMIT, 1e30, -1e300, f64::MAX] {
        assert!(
            matches!(Fx::from_f64(v), Err(EncodeError::OutOfRange { .. })),
            "{v}"
        );
    }
    let below = f64::from_bits(ENCODE_LIMIT.to_bits() - 1);
    let big = Fx::from_f64(below).unwrap();
    assert_eq!(big.to_f64(), below);
    assert!(!big.is_negative());
    assert_eq!(Fx::from_f64(-below).unwrap().to_f64(), -below);
}

#[test]
fn error_messages_name_the_value() {
    let msg = Fx::from_f64(f64::NAN).unwrap_err().to_string();
    assert!(msg.contains("NaN"), "{msg}");
    let msg = Fx::from_f64(1e20).unwrap_err().to_string();
    assert!(
        msg.contains("100000000000000000000") && msg.contains("2^63"),
        "{msg}"
    );
}

#[test]
fn slice_encoding_names_the_first_bad_index() {
    let err = encode_slice(&[1.0, 2.0, f64::NAN, f64::INFINITY]).unwrap_err();
    assert_eq!(err.index, 2);
    assert!(err.to_string().starts_with("element 2:"), "{err}");
    assert_eq!(
        encode_slice(&[0.25, -3.0]).unwrap(),
        vec![Fx(1 << 30), -Fx::from_int(3)]
    );
}

#[test]
fn i32f32_round_trip_and_limits() {
    let v = I32F32::from_num(-1234.5678);
    assert_eq!(Fx::from(v).to_i32f32().unwrap(), v);
    assert_eq!(Fx::from(I32F32::MAX).to_i32f32().unwrap(), I32F32::MAX);
    assert_eq!(Fx::from(I32F32::MIN).to_i32f32().unwrap(), I32F32::MIN);
    let too_big = Fx::from_f64(2f64.powi(31)).unwrap();
    assert!(matches!(
        too_big.to_i32f32(),
        Err(RangeError::NotI32F32 { .. })
    ));
    let too_small = Fx::from(I32F32::MIN) - Fx(1);
    assert!(too_small.to_i32f32().is_err());
}

proptest! {
    #[test]
    fn round_trip_error_is_at_most_half_an_ulp(v in -1e18f64..1e18) {
        let x = Fx::from_f64(v).unwrap();
        // Decoding is exact below 2^53 raw; above, compare in the raw domain.
        let exact = v * 2f64.powi(32);
        let err = (x.signed() as f64 - exact).abs();
        prop_assert!(err <= 0.5 + exact.abs() * f64::EPSILON, "v={v} raw={} err={err}", x.signed());
    }

    #[test]
    fn small_values_round_trip_within_2_pow_minus_33(v in -2e6f64..2e6) {
        let x = Fx::from_f64(v).unwrap();
        prop_assert!((x.to_f64() - v).abs() <= 2f64.powi(-33));
    }

    #[test]
    fn i32f32_agrees_with_encoding(bits in any::<i64>()) {
        let v = I32F32::from_bits(bits);
        let x = Fx::from(v);
        prop_assert_eq!(x.signed(), i128::from(bits));
        prop_assert_eq!(x.to_i32f32().unwrap(), v);
        if bits.unsigned_abs() < 1 << 53 {
            // Exactly representable in f64: encoding the decoded value is the identity.
            prop_assert_eq!(Fx::from_f64(v.to_num::<f64>()).unwrap(), x);
        }
    }
}

/// The library path the encoder's fast rounding replaces: `round_ties_even(v 2^32)` as i128.
fn library_rounding(v: f64) -> i128 {
    (v * 2f64.powi(32)).round_ties_even() as i128
}

fn assert_library_rounding(v: f64) {
    if v.is_finite() && v.abs() < ENCODE_LIMIT {
        assert_eq!(
            Fx::from_f64(v).unwrap().signed(),
            library_rounding(v),
            "{v:e}"
        );
    }
}

/// Ties (k + 1/2 ulp) and their neighbours at every magnitude, both signs, and both sides of
/// the fast path's switch at |v 2^32| = 2^51: the library's integer every time.
#[test]
fn fast_rounding_is_the_library_rounding_at_ties_and_at_its_switch() {
    let ulp = 2f64.powi(-32);
    for e in 0..75 {
        let k = 2f64.powi(e);
        for d in [-1.5, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5] {
            for sign in [1.0, -1.0] {
                let x = sign * (k + d);
                assert_library_rounding(x * ulp);
                assert_library_rounding(f64::from_bits((x * ulp).to_bits().wrapping_add(1)));
                assert_library_rounding(f64::from_bits((x * ulp).to_bits().wrapping_sub(1)));
            }
        }
    }
    let switch = 2f64.powi(51);
    for x in [
        switch - 1.5,
        switch - 1.0,
        switch - 0.5,
        switch,
        switch + 1.0,
        switch + 2.0,
    ] {
        assert_library_rounding(x * ulp);
        assert_library_rounding(-x * ulp);
    }
}

proptest! {
    /// Any bit pattern (the encodable ones): the library's integer.
    #[test]
    fn fast_rounding_is_the_library_rounding_for_any_bits(bits in any::<u64>()) {
        assert_library_rounding(f64::from_bits(bits));
    }

    /// Values in the model's ranges, where the fast path runs.
    #[test]
    fn fast_rounding_is_the_library_rounding_in_model_ranges(v in -1.0e6f64..1.0e6) {
        assert_library_rounding(v);
    }
}
