//! One whole iteration as a test vector (after libprio's): from the seeds and the public and
//! private inputs in `vectors/iteration.json`, every party's encoded messages to the nodes
//! and the coordinator's opened G + Z are reproduced byte for byte. A change to the
//! randomness derivation, the sharding, the wire encoding or the circuit shows up here.
//!
//! Regenerate (only for an intended protocol change, said so in the commit):
//! `VTWIN_REGENERATE_VECTORS=1 cargo test -p vtwin-iteration --test transcript`.

mod common;

use common::gradient_ref::{self, instance_with};
use common::{shard_all, split_noise};
use serde::{Deserialize, Serialize};
use vtwin_fixed::Fx;
use vtwin_iteration::memory::{node_keys, run};
use vtwin_iteration::{CircuitPublic, InputBounds, PartyMap, PlainUpload, SecretRandomness};
use vtwin_mpc::Delivery;

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/iteration.json");

/// Ring elements and encoded values as 32 hex digits (raw, scale 2^32).
type Hex = String;

#[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
struct Map {
    width: usize,
    scale: Vec<Hex>,
    offset: Vec<Hex>,
    /// The party inputs T_p as raw integers (its `stats` below are then scale 1).
    integer_stats: bool,
}

#[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
struct Upload {
    mat: Vec<Hex>,
    root: Vec<Hex>,
    stats: Vec<Hex>,
    flags: Vec<Hex>,
}

#[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
struct Vector {
    about: String,
    // Inputs.
    insecure_seed: u64,
    iteration: u64,
    batch: usize,
    pi: Vec<Hex>,
    circuit_clip: Hex,
    maps: Vec<Map>,
    /// (min, max) of mat, root, stats.
    bounds: [[Hex; 2]; 3],
    uploads: Vec<Upload>,
    /// Party p's noise share, canonical order.
    noise: Vec<Vec<Hex>>,
    // Outputs.
    session: String,
    /// Party p's encoded messages, node 0's first, then node 1's, node 2's.
    messages: Vec<Vec<String>>,
    /// G + Z opened by the coordinator, canonical order.
    opened: Vec<Hex>,
}

fn hex(v: u128) -> Hex {
    format!("{v:032x}")
}

fn unhex(s: &str) -> u128 {
    u128::from_str_radix(s, 16).expect("hex")
}

fn hexes(v: &[Fx]) -> Vec<Hex> {
    v.iter().map(|x| hex(x.raw())).collect()
}

fn fxs(v: &[Hex]) -> Vec<Fx> {
    v.iter().map(|s| Fx::from_raw(unhex(s))).collect()
}

fn bytes_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The vector's inputs as the roles take them.
fn inputs(v: &Vector) -> (CircuitPublic, InputBounds, Vec<PlainUpload>, Vec<Vec<u128>>) {
    let public = CircuitPublic {
        batch: v.batch,
        components: v.pi.len(),
        pi: fxs(&v.pi),
        clip: Fx::from_raw(unhex(&v.circuit_clip)),
        parties: v
            .maps
            .iter()
            .map(|m| PartyMap {
                width: m.width,
                scale: fxs(&m.scale),
                offset: fxs(&m.offset),
                integer_stats: m.integer_stats,
            })
            .collect(),
        noise_contributors: v.maps.len(),
    };
    let pair = |b: &[Hex; 2]| (Fx::from_raw(unhex(&b[0])), Fx::from_raw(unhex(&b[1])));
    let bounds = InputBounds {
        mat: pair(&v.bounds[0]),
        root: pair(&v.bounds[1]),
        stats: pair(&v.bounds[2]),
    };
    let uploads = v
        .uploads
        .iter()
        .zip(&v.maps)
        .map(|(u, m)| PlainUpload {
            mat: fxs(&u.mat),
            root: fxs(&u.root),
            stats: fxs(&u.stats),
            flags: fxs(&u.flags),
            integer_stats: m.integer_stats,
        })
        .collect();
    let noise = v
        .noise
        .iter()
        .map(|z| z.iter().map(|s| unhex(s)).collect())
        .collect();
    (public, bounds, uploads, noise)
}

/// Runs the three roles on the vector's inputs and fills in its outputs.
fn replay(v: &Vector) -> Vector {
    let (public, bounds, uploads, noise) = inputs(v);
    let r = SecretRandomness::InsecureSeed(v.insecure_seed);
    let t = v.iteration;
    let session = r.session(t);
    let by_party = shard_all(&uploads, bounds, &noise, public.dim(), session, &r, t);
    let messages = by_party
        .iter()
        .map(|m| m.iter().flatten().map(|m| bytes_hex(&m.encode())).collect())
        .collect();
    let all = by_party.into_iter().flat_map(|m| m.into_iter().flatten());
    let it = run(session, &public, &node_keys(&r, t), all, Delivery::Fifo).expect("iteration");
    Vector {
        session: bytes_hex(&session.0),
        messages,
        opened: it.opened.iter().map(|&x| hex(x)).collect(),
        ..v.clone()
    }
}

/// Fresh inputs: a random instance (B = 3, K = 2, two parties of widths 1 and 2, the second
/// inputting integer statistics), its noise split between the parties.
fn generate() -> Vector {
    let mut inst = instance_with(31, 3, 2, &[1, 2], &[false, true]);
    inst.public.noise_contributors = 2;
    let noise = split_noise(&inst, 5);
    let b = gradient_ref::bounds();
    let v = Vector {
        about: "vtwin-iteration transcript: inputs -> party messages -> opened G + Z".into(),
        insecure_seed: 42,
        iteration: 3,
        batch: inst.public.batch,
        pi: hexes(&inst.public.pi),
        circuit_clip: hex(inst.public.clip.raw()),
        maps: inst
            .public
            .parties
            .iter()
            .map(|m| Map {
                width: m.width,
                scale: hexes(&m.scale),
                offset: hexes(&m.offset),
                integer_stats: m.integer_stats,
            })
            .collect(),
        bounds: [b.mat, b.root, b.stats].map(|(lo, hi)| [hex(lo.raw()), hex(hi.raw())]),
        uploads: (0..2)
            .map(|p| {
                let u = gradient_ref::plain(&inst, p);
                Upload {
                    mat: hexes(&u.mat),
                    root: hexes(&u.root),
                    stats: hexes(&u.stats),
                    flags: hexes(&u.flags),
                }
            })
            .collect(),
        noise: noise
            .iter()
            .map(|z| z.iter().map(|&x| hex(x)).collect())
            .collect(),
        session: String::new(),
        messages: Vec::new(),
        opened: Vec::new(),
    };
    replay(&v)
}

#[test]
fn the_iteration_transcript_replays_byte_for_byte() {
    if std::env::var_os("VTWIN_REGENERATE_VECTORS").is_some() {
        let v = generate();
        let json = serde_json::to_string_pretty(&v).expect("json") + "\n";
        std::fs::write(PATH, json).expect("write the vector");
    }
    let text = std::fs::read_to_string(PATH).expect("tests/vectors/iteration.json");
    let want: Vector = serde_json::from_str(&text).expect("a transcript vector");
    assert!(!want.opened.is_empty() && want.messages.len() == want.uploads.len());
    let got = replay(&want);
    assert_eq!(got.session, want.session, "session id");
    assert_eq!(got.messages, want.messages, "party messages");
    assert_eq!(got.opened, want.opened, "opened G + Z");
}
