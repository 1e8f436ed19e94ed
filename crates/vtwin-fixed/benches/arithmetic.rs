#![allow(missing_docs)] // criterion_group! generates an undocumented function.
//! ns per element of every reference function on vectors of 10^5 elements.
//! Run: `cargo bench -p vtwin-fixed --bench arithmetic -- --warm-up-time 1 --measurement-time 3`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::hint::black_box;
use vtwin_fixed::{paper, slice, Floor, Fx};

const N: usize = 100_000;

/// `N` values log-uniform in [2^lo, 2^hi], encoded.
fn log_uniform(rng: &mut ChaCha20Rng, lo: f64, hi: f64) -> Vec<Fx> {
    (0..N)
        .map(|_| {
            let u = rng.next_u64() as f64 / u64::MAX as f64;
            Fx::from_f64((lo + (hi - lo) * u).exp2()).expect("in range")
        })
        .collect()
}

fn uniform(rng: &mut ChaCha20Rng, lo: f64, hi: f64) -> Vec<Fx> {
    (0..N)
        .map(|_| {
            let u = rng.next_u64() as f64 / u64::MAX as f64;
            Fx::from_f64(lo + (hi - lo) * u).expect("in range")
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let small = uniform(&mut rng, -8.0, 8.0);
    let small2 = uniform(&mut rng, -8.0, 8.0);
    let den = log_uniform(&mut rng, -30.0, 16.0);
    let norm2 = log_uniform(&mut rng, -30.0, 40.0);
    let neg = uniform(&mut rng, -64.0, 0.0);
    let floats: Vec<f64> = small.iter().map(|v| v.to_f64()).collect();
    let c_clip = Fx::from_f64(1.0).expect("in range");
    let paper_a: Vec<i64> = small.iter().map(|v| v.signed() as i64).collect();
    let paper_b: Vec<i64> = small2.iter().map(|v| v.signed() as i64).collect();
    let paper_den: Vec<i64> = uniform(&mut rng, 0.5, 100.0)
        .iter()
        .map(|v| v.signed() as i64)
        .collect();

    let mut g = c.benchmark_group("fixed");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("encode", |b| {
        b.iter(|| vtwin_fixed::encode_slice(black_box(&floats)).expect("ok"))
    });
    g.bench_function("decode", |b| {
        b.iter(|| vtwin_fixed::decode_slice(black_box(&small)))
    });
    g.bench_function("mul_floor", |b| {
        b.iter(|| slice::mul_slice(black_box(&small), black_box(&small2), &mut Floor))
    });
    g.bench_function("mul_prob", |b| {
        b.iter_batched(
            || vtwin_fixed::probabilistic_from_rng(ChaCha20Rng::seed_from_u64(1)),
            |mut t| slice::mul_slice(black_box(&small), black_box(&small2), &mut t),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("dot", |b| {
        b.iter(|| vtwin_fixed::dot(black_box(&small), black_box(&small2), &mut Floor))
    });
    g.bench_function("reciprocal", |b| {
        b.iter(|| slice::reciprocal_slice(black_box(&den), &mut Floor).expect("ok"))
    });
    g.bench_function("divide", |b| {
        b.iter(|| slice::divide_slice(black_box(&small), black_box(&den), &mut Floor).expect("ok"))
    });
    g.bench_function("inv_sqrt", |b| {
        b.iter(|| slice::inv_sqrt_slice(black_box(&norm2), &mut Floor).expect("ok"))
    });
    g.bench_function("clip_factor", |b| {
        b.iter(|| slice::clip_factor_slice(black_box(&norm2), c_clip, &mut Floor).expect("ok"))
    });
    g.bench_function("compare_lt", |b| {
        b.iter(|| {
            small
                .iter()
                .zip(&small2)
                .filter(|(&x, &y)| vtwin_fixed::compare::lt(black_box(x), black_box(y)))
                .count()
        })
    });
    g.bench_function("exp", |b| {
        b.iter(|| slice::exp_slice(black_box(&neg), &mut Floor).expect("ok"))
    });
    g.bench_function("paper_alg2_mult", |b| {
        b.iter(|| {
            paper_a
                .iter()
                .zip(&paper_b)
                .map(|(&x, &y)| paper::algorithm2_mult(black_box(x), black_box(y)))
                .collect::<Vec<_>>()
        })
    });
    g.bench_function("paper_alg3_div", |b| {
        b.iter(|| {
            paper_den
                .iter()
                .map(|&y| paper::algorithm3_div(paper::SCALE, black_box(y), paper::DEFAULT_T))
                .collect::<Vec<_>>()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
