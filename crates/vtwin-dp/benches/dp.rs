//! Sampler throughput at sigma = 2^33 and accountant time for 20000 steps.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
use vtwin_dp::{parse_decimal, pld::PldComposition, pow2, rdp::RdpCurve, DiscreteGaussian};

fn sampler(c: &mut Criterion) {
    let cases = [
        ("sigma_2^33", pow2(33)),
        (
            "sigma_2.042*2^32",
            parse_decimal("2.042").unwrap() * pow2(32),
        ),
    ];
    let mut g = c.benchmark_group("discrete_gaussian");
    g.throughput(Throughput::Elements(1000));
    for (name, sigma) in cases {
        let dg = DiscreteGaussian::from_sigma(&sigma).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        g.bench_function(format!("{name}_x1000"), |b| {
            b.iter(|| {
                let mut acc = 0i128;
                for _ in 0..1000 {
                    acc = acc.wrapping_add(dg.sample(&mut rng));
                }
                black_box(acc)
            })
        });
    }
    // The all-BigUint reference path, for comparison with the fixed-width fast path.
    let dg = DiscreteGaussian::from_sigma(&pow2(33)).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    g.bench_function("sigma_2^33_reference_bigint_x1000", |b| {
        b.iter(|| {
            for _ in 0..1000 {
                black_box(dg.sample_reference(&mut rng));
            }
        })
    });
    g.finish();
}

fn accountants(c: &mut Criterion) {
    let (q, sigma, steps) = (100.0 / 30162.0, 2.042, 20_000);
    let mut g = c.benchmark_group("accountant_20000_steps");
    g.sample_size(10);
    g.bench_function("rdp", |b| {
        b.iter(|| black_box(RdpCurve::poisson_gaussian(q, sigma, steps).epsilon(1e-5)))
    });
    g.bench_function("pld", |b| {
        b.iter(|| black_box(PldComposition::poisson_gaussian(q, sigma, steps).epsilon(1e-5)))
    });
    g.finish();
}

criterion_group!(benches, sampler, accountants);
criterion_main!(benches);
