#![allow(missing_docs)] // criterion_group! generates an undocumented function.
//! Throughput of the wire format and of sealing for a 1 MB payload (the order of a party's
//! upload to one node): frame encode/decode of a `Body::Mpc` (also at 20 KiB, a message
//! between nodes), seal/unseal.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_net::frame::{decode, encode, Body, Frame};
use vtwin_net::seal::{seal, unseal, unseal_owned, SealChannel, SealContext, SealKey};
use vtwin_net::Role;

const PAYLOAD: usize = 1 << 20;

fn payload() -> Vec<u8> {
    (0..PAYLOAD).map(|i| (i * 31 + 7) as u8).collect()
}

fn frame_bench(c: &mut Criterion) {
    // 1 MiB: a party's upload to a node; 20 KiB: a typical message between nodes (Adult).
    for (name, len) in [("frame_1MiB", PAYLOAD), ("frame_20KiB", 20 << 10)] {
        let mut message = payload();
        message.truncate(len);
        let frame = Frame::new([5; 16], 42, 3, Role::Node(1), Body::Mpc { message });
        let wire = encode(&frame).unwrap();
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function("encode", |b| {
            b.iter(|| encode(std::hint::black_box(&frame)).unwrap())
        });
        g.bench_function("decode", |b| {
            b.iter(|| decode(std::hint::black_box(&wire[4..])).unwrap())
        });
        g.finish();
    }
}

fn seal_bench(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let key = SealKey::generate(&mut rng);
    let ctx = SealContext {
        session: [1; 16],
        iteration: 9,
        party: 0,
        node: 2,
    };
    let pt = payload();
    let channel = SealChannel::new(&key.public(), &mut rng).unwrap();
    let sealed = channel.seal(&ctx, &pt, &mut rng).unwrap();
    let mut g = c.benchmark_group("seal_1MiB");
    g.throughput(Throughput::Bytes(PAYLOAD as u64));
    // What a party pays per blob on its job's channel, and the node per blob of a channel
    // it has opened before (the shared secret remembered).
    g.bench_function("seal", |b| {
        b.iter(|| {
            channel
                .seal(&ctx, std::hint::black_box(&pt), &mut rng)
                .unwrap()
        })
    });
    g.bench_function("unseal", |b| {
        b.iter(|| unseal(&key, &ctx, std::hint::black_box(&sealed)).unwrap())
    });
    // In the blob's own buffer, as a node opens an upload it owns (the clone is set-up).
    g.bench_function("unseal_owned", |b| {
        b.iter_batched(
            || sealed.clone(),
            |blob| unseal_owned(&key, &ctx, blob).unwrap(),
            criterion::BatchSize::LargeInput,
        )
    });
    // A blob on a channel of its own (two X25519 multiplications more).
    g.bench_function("seal_one_shot", |b| {
        b.iter(|| seal(&key.public(), &ctx, std::hint::black_box(&pt), &mut rng).unwrap())
    });
    g.finish();
}

criterion_group!(benches, frame_bench, seal_bench);
criterion_main!(benches);
