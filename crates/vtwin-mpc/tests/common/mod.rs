//! Shared test helpers: run a program on inputs shared by a real client.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::Probabilistic;
use vtwin_mpc::input::{accept_client, input};
use vtwin_mpc::{Ctx, Delivery, InputClient, MpcError, SessionId, Shared, SimReport, Simulation};

pub const SESSION: SessionId = SessionId(*b"vtwin-mpc-tests!");

/// Shares `inputs` from client 0 and runs `f` on the resulting sharings.
pub fn run_on<T, F, Fut>(
    inputs: Vec<Vec<u128>>,
    delivery: Delivery,
    f: F,
) -> Result<SimReport<T>, MpcError>
where
    T: 'static,
    F: Fn(Ctx, Vec<Shared>) -> Fut + Clone + 'static,
    Fut: Future<Output = Result<T, MpcError>> + 'static,
{
    run_seeded(inputs, delivery, 7, f)
}

/// [`run_on`] with node keys and client seeds drawn from `seed`.
pub fn run_seeded<T, F, Fut>(
    inputs: Vec<Vec<u128>>,
    delivery: Delivery,
    seed: u64,
    f: F,
) -> Result<SimReport<T>, MpcError>
where
    T: 'static,
    F: Fn(Ctx, Vec<Shared>) -> Fut + Clone + 'static,
    Fut: Future<Output = Result<T, MpcError>> + 'static,
{
    let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x5eed);
    let (mut client, mut msgs) = InputClient::new(0, SESSION, &mut rng);
    for v in &inputs {
        msgs.extend(client.share_raw(v));
    }
    let lens: Vec<usize> = inputs.iter().map(Vec::len).collect();
    Simulation::new(SESSION, seed)?
        .clients(2)
        .delivery(delivery)
        .record_masks()
        .record_views()
        .inject(msgs)
        .run(move |ctx| {
            let lens = lens.clone();
            let f = f.clone();
            async move {
                let seeds = accept_client(&ctx, 0).await?;
                let mut shared = Vec::new();
                for (k, &n) in lens.iter().enumerate() {
                    shared.push(input(&ctx, &seeds, k as u64 + 1, n).await?);
                }
                f(ctx, shared).await
            }
        })
}

/// Reconstructs the output sharing of a simulation.
pub fn open(report: &SimReport<Shared>) -> Vec<u128> {
    vtwin_mpc::sim::reconstruct(&report.outputs)
}

/// The reference truncator replaying node 0's masks for element `k`, in layer order. Every
/// layer holds one or more parts of n values (n the shortest layer: the primitives' layers
/// are whole parts), so value k's masks sit at k, n + k, ...: the reference's call order
/// within the layer.
pub fn replay(masks: &[Vec<u128>], k: usize) -> Probabilistic<impl FnMut() -> u128> {
    let n = masks.iter().map(Vec::len).min().unwrap_or(0).max(1);
    assert!(
        masks.iter().all(|l| l.len() % n == 0),
        "a layer is not a whole number of parts of {n}"
    );
    let seq: Vec<u128> = masks
        .iter()
        .flat_map(|l| l.iter().skip(k).step_by(n).copied())
        .collect();
    let mut it = seq.into_iter();
    Probabilistic::new(move || {
        it.next()
            .expect("the MPC used fewer masks than the reference")
    })
}
