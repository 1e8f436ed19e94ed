//! Data-path costs at the Adult scale: reading and validating adult.data (30162 complete
//! records of 32561), the per-record log-likelihood of the 15060 test records under a K = 20
//! mixture (what `eval` and train's test NLL cost), and sampling 30162 synthetic records.
//! The Adult reads are skipped, saying why, without the data directory.

#![allow(missing_docs)] // criterion_group! generates an undocumented function.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_data::synth::sample_table;
use vtwin_data::{ColumnParams, MixtureParams, Schema, Table};

fn adult_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("VTWIN_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/adult")
        });
    dir.join("adult.data").is_file().then_some(dir)
}

fn adult_schema() -> Schema {
    Schema::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/adult/schema.toml"),
    )
    .unwrap()
}

/// Random K-component parameters for `schema` (Beta shapes in [0.5, 20], Dirichlet-ish rows
/// for categorical, binned and cells columns).
fn random_params(schema: &Schema, k: usize, rng: &mut impl Rng) -> MixtureParams {
    let simplex = |n: usize, rng: &mut dyn rand::RngCore| {
        let v: Vec<f64> = (0..n).map(|_| rng.random_range(0.05..1.0)).collect();
        let s: f64 = v.iter().sum();
        v.into_iter().map(|x| x / s).collect::<Vec<f64>>()
    };
    MixtureParams {
        weights: simplex(k, rng),
        columns: schema
            .columns
            .iter()
            .map(|c| match c.kind.levels() {
                None => ColumnParams::Beta {
                    a: (0..k).map(|_| rng.random_range(0.5..20.0)).collect(),
                    b: (0..k).map(|_| rng.random_range(0.5..20.0)).collect(),
                },
                Some(n) => ColumnParams::Categorical {
                    probs: (0..k).map(|_| simplex(n, rng)).collect(),
                },
            })
            .collect(),
    }
}

fn bench(c: &mut Criterion) {
    let schema = adult_schema();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let params = random_params(&schema, 20, &mut rng);
    c.bench_function("sample_table adult schema K=20, 30162 rows", |b| {
        b.iter(|| sample_table(&params, &schema, 30162, &mut rng).unwrap())
    });
    let Some(dir) = adult_dir() else {
        eprintln!("skipping the Adult benches: data directory not found (set VTWIN_DATA_DIR)");
        return;
    };
    c.bench_function("read_joined adult.data (30162 of 32561 records)", |b| {
        b.iter(|| Table::read_joined(&schema, &dir.join("adult.data")).unwrap())
    });
    let test = Table::read_joined(&schema, &dir.join("adult.test")).unwrap();
    c.bench_function("log_likelihood adult.test (15060 records) K=20", |b| {
        b.iter(|| params.log_likelihood(&test).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
