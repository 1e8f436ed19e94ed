//! Replays reference values computed with mpmath at 50 digits (`tests/vectors/
//! gen_data_vectors.py`): the Beta log-density over shapes 0.01..1e4 and units 1e-6..1-1e-6,
//! and the per-record log-likelihood of a small mixture.

use serde_json::Value;
use vtwin_data::params::{beta_ln_pdf, ln_beta};
use vtwin_data::schema::{CsvDialect, Missing};
use vtwin_data::{Column, ColumnKind, ColumnParams, ColumnSpec, MixtureParams, Schema, Table};

fn vectors(name: &str) -> Value {
    let path = format!("{}/tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// The documented error bound of `beta_ln_pdf`: |error| <= 4e-15 * (1 + |ln Gamma(a)| +
/// |ln Gamma(b)| + |ln Gamma(a+b)| + |(a-1) ln u| + |(b-1) ln(1-u)|) (measured worst: 0.54 of
/// it, i.e. 2.2e-15 times the scale).
fn bound(a: f64, b: f64, u: f64) -> f64 {
    use statrs::function::gamma::ln_gamma;
    let scale = 1.0
        + ln_gamma(a).abs()
        + ln_gamma(b).abs()
        + ln_gamma(a + b).abs()
        + ((a - 1.0) * u.ln()).abs()
        + ((b - 1.0) * (-u).ln_1p()).abs();
    4e-15 * scale
}

#[test]
fn beta_ln_pdf_matches_mpmath() {
    let v = vectors("beta_ln_pdf.json");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 600);
    let mut worst: f64 = 0.0;
    for c in cases {
        let (a, b, u, want) = (f(&c["a"]), f(&c["b"]), f(&c["u"]), f(&c["ln_pdf"]));
        let got = beta_ln_pdf(a, b, u);
        let err = (got - want).abs();
        worst = worst.max(err / bound(a, b, u));
        assert!(
            err <= bound(a, b, u),
            "a={a} b={b} u={u}: {got} vs {want} (err {err:e})"
        );
    }
    eprintln!("worst error / bound: {worst:.3}");
    // ln B(1, 1) = 0 up to rounding; symmetric in (a, b).
    assert!(ln_beta(1.0, 1.0).abs() < 1e-15);
    assert_eq!(ln_beta(2.5, 7.0), ln_beta(7.0, 2.5));
}

#[test]
fn mixture_log_likelihood_matches_mpmath() {
    let v = vectors("mixture_ll.json");
    let nums = |x: &Value| -> Vec<f64> { x.as_array().unwrap().iter().map(f).collect() };
    let params = MixtureParams {
        weights: nums(&v["weights"]),
        columns: vec![
            ColumnParams::Beta {
                a: nums(&v["a"]),
                b: nums(&v["b"]),
            },
            ColumnParams::Categorical {
                probs: v["probs"].as_array().unwrap().iter().map(nums).collect(),
            },
        ],
    };
    let spec = |name: &str, party: &str, kind| ColumnSpec {
        name: name.into(),
        party: party.into(),
        kind,
        missing: Missing::Error,
        strip_suffix: None,
    };
    let schema = Schema::new(
        None,
        CsvDialect::default(),
        None,
        vec![
            spec(
                "x",
                "p",
                ColumnKind::Continuous {
                    min: 0.0,
                    max: 1.0,
                    integer: false,
                    model: Default::default(),
                },
            ),
            spec(
                "c",
                "q",
                ColumnKind::Categorical {
                    categories: ["a", "b", "c", "d"].map(String::from).to_vec(),
                },
            ),
        ],
    )
    .unwrap();
    let records = v["records"].as_array().unwrap();
    let table = Table {
        schema,
        ids: (1..=records.len()).map(|i| i.to_string()).collect(),
        columns: vec![
            Column::Unit(records.iter().map(|r| f(&r["u"])).collect()),
            Column::Index(
                records
                    .iter()
                    .map(|r| r["c"].as_u64().unwrap() as u32)
                    .collect(),
            ),
        ],
    };
    table.check().unwrap();
    let ll = params.log_likelihood(&table).unwrap();
    for (r, got) in records.iter().zip(&ll) {
        let want = f(&r["ll"]);
        assert!(
            (got - want).abs() <= 1e-13 * (1.0 + want.abs()),
            "{r}: {got} vs {want}"
        );
    }
}
