//! Helpers shared by the role tests and the transcript vector.

#![allow(dead_code, unreachable_pub)]

#[path = "../../../vtwin-mpc/tests/common/gradient_ref.rs"]
pub mod gradient_ref;

use gradient_ref::Instance;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_iteration::party::Party;
use vtwin_iteration::{InputBounds, PlainUpload, SecretRandomness};
use vtwin_mpc::{Message, SessionId};

/// Party p's messages by node: `uploads[p]` and `noise[p]` sharded with the client generator
/// `randomness.party(p, t)`.
pub fn shard_all(
    uploads: &[PlainUpload],
    bounds: InputBounds,
    noise: &[Vec<u128>],
    dim: usize,
    session: SessionId,
    randomness: &SecretRandomness,
    t: u64,
) -> Vec<[Vec<Message>; 3]> {
    let parties = uploads.len();
    (0..parties)
        .map(|p| {
            Party {
                index: p,
                parties,
                session,
            }
            .shard(
                &uploads[p],
                bounds,
                &noise[p],
                dim,
                &mut randomness.party(p, t),
            )
            .expect("in range")
            .map(vtwin_iteration::party::NodeMessages::into_all)
        })
        .collect()
}

/// Every party's messages for an instance (insecure seed 3, iteration 0), party p sharing
/// `noise[p]`.
pub fn messages(inst: &Instance, session: SessionId, noise: &[Vec<u128>]) -> Vec<Message> {
    let uploads: Vec<PlainUpload> = (0..inst.public.parties.len())
        .map(|p| gradient_ref::plain(inst, p))
        .collect();
    shard_all(
        &uploads,
        gradient_ref::bounds(),
        noise,
        inst.public.dim(),
        session,
        &SecretRandomness::InsecureSeed(3),
        0,
    )
    .into_iter()
    .flat_map(|m| m.into_iter().flatten())
    .collect()
}

/// The instance's noise split into one random-looking contribution per party.
pub fn split_noise(inst: &Instance, seed: u64) -> Vec<Vec<u128>> {
    let parties = inst.public.parties.len();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut parts: Vec<Vec<u128>> = (1..parties)
        .map(|_| {
            inst.noise
                .iter()
                .map(|_| u128::from(rng.next_u64()))
                .collect()
        })
        .collect();
    let last = inst
        .noise
        .iter()
        .enumerate()
        .map(|(i, z)| {
            parts
                .iter()
                .fold(*z as u128, |acc, part| acc.wrapping_sub(part[i]))
        })
        .collect();
    parts.push(last);
    parts
}

/// Largest |a_i - b_i| of two encoded vectors, as reals.
pub fn max_abs_diff(a: &[u128], b: &[u128]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (vtwin_fixed::Fx(*x) - vtwin_fixed::Fx(*y)).to_f64().abs())
        .fold(0.0, f64::max)
}
