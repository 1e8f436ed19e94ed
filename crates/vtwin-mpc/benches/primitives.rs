#![allow(missing_docs)] // criterion_group! generates an undocumented function.
//! MPC primitives in the in-memory simulator against the vtwin-fixed reference, on 10^4 and
//! 10^5 elements: multiplication with truncation, reciprocal, inverse square root.
//!
//! The MPC timing covers the whole simulated run of the three nodes on one thread: the
//! client's input sharing, the protocol, every message encoded and decoded. The ratio to
//! report is MPC time / reference time at the same size.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::{probabilistic_from_rng, Fx};
use vtwin_mpc::input::{accept_client, input};
use vtwin_mpc::{inv_sqrt, multiply, reciprocal, InputClient, SessionId, Shared, Simulation};

#[path = "../tests/common/gradient_ref.rs"]
mod gradient_ref;

const SESSION: SessionId = SessionId(*b"vtwin-mpc-bench!");

#[derive(Clone, Copy)]
enum Op {
    Mul,
    Recip,
    InvSqrt,
}

fn mpc(op: Op, a: &[u128], b: &[u128]) -> usize {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let (mut client, mut msgs) = InputClient::new(0, SESSION, &mut rng);
    msgs.extend(client.share_raw(a));
    msgs.extend(client.share_raw(b));
    let n = a.len();
    let rep = Simulation::new(SESSION, 2)
        .expect("keys")
        .clients(1)
        .inject(msgs)
        .run(move |ctx| async move {
            let seeds = accept_client(&ctx, 0).await?;
            let x = input(&ctx, &seeds, 1, n).await?;
            let y = input(&ctx, &seeds, 2, n).await?;
            let out: Shared = match op {
                Op::Mul => multiply::mul_trunc(&ctx, &x, &y, 32).await?,
                Op::Recip => reciprocal::reciprocal(&ctx, &x).await?,
                Op::InvSqrt => inv_sqrt::inv_sqrt(&ctx, &x).await?,
            };
            Ok(out.len())
        })
        .expect("run");
    rep.outputs[0]
}

fn reference(op: Op, a: &[Fx], b: &[Fx]) -> usize {
    let mut t = probabilistic_from_rng(ChaCha20Rng::seed_from_u64(3));
    match op {
        Op::Mul => vtwin_fixed::slice::mul_slice(a, b, &mut t).len(),
        Op::Recip => vtwin_fixed::slice::reciprocal_slice(a, &mut t)
            .expect("domain")
            .len(),
        Op::InvSqrt => vtwin_fixed::slice::inv_sqrt_slice(a, &mut t)
            .expect("domain")
            .len(),
    }
}

fn bench(c: &mut Criterion) {
    for (name, op) in [
        ("mul_trunc", Op::Mul),
        ("reciprocal", Op::Recip),
        ("inv_sqrt", Op::InvSqrt),
    ] {
        let mut g = c.benchmark_group(name);
        g.sample_size(10);
        for n in [10_000usize, 100_000] {
            // Positive values in [2^-10, 2^10]: inside every function's documented range.
            let a: Vec<Fx> = (0..n)
                .map(|k| Fx::from_f64(2f64.powf(-10.0 + 20.0 * k as f64 / n as f64)).expect("enc"))
                .collect();
            let b: Vec<Fx> = a.iter().rev().copied().collect();
            let ar: Vec<u128> = a.iter().map(|v| v.0).collect();
            let br: Vec<u128> = b.iter().map(|v| v.0).collect();
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new("mpc_sim", n), &n, |bch, _| {
                bch.iter(|| black_box(mpc(op, &ar, &br)))
            });
            g.bench_with_input(BenchmarkId::new("fixed", n), &n, |bch, _| {
                bch.iter(|| black_box(reference(op, &a, &b)))
            });
        }
        g.finish();
    }
}

/// One gradient iteration at the Adult paper setting (B = 100, K = 20, two parties with
/// |T| = 75, d = 3020): the whole simulated MPC (inputs, circuit, reveal) against the
/// plaintext transcription of the fixed backend's node side (floor truncation).
fn bench_gradient(c: &mut Criterion) {
    let inst = gradient_ref::instance(5, 100, 20, &[75, 75]);
    let mut g = c.benchmark_group("gradient_adult");
    g.sample_size(10);
    g.bench_function("mpc_sim", |bch| {
        bch.iter(|| black_box(gradient_ref::run_mpc(&inst).0.len()))
    });
    g.bench_function("fixed", |bch| {
        bch.iter(|| black_box(gradient_ref::reference(&inst, &mut vtwin_fixed::Floor).len()))
    });
    g.finish();
}

/// The PRG's AES-128-CTR expansion, 2^16 and 2^20 ring elements (the nodes' zero-sharings,
/// masks and clients' seed shares all come from it).
fn bench_prg(c: &mut Criterion) {
    let mut g = c.benchmark_group("prg_expand");
    g.sample_size(20);
    let seed = [7u8; 32];
    for n in [1usize << 16, 1 << 20] {
        g.throughput(Throughput::Bytes(16 * n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |bch, &n| {
            bch.iter(|| black_box(vtwin_mpc::prg::expand(&seed, 3, n).len()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench, bench_gradient, bench_prg);
criterion_main!(benches);
