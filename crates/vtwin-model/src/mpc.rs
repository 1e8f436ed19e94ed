//! The `mpc` backend: ARCHITECTURE "One training iteration" steps 2-4 with the node side
//! run by three in-memory compute nodes ([`vtwin_mpc::gradient::simulate_iteration`]).
//!
//! Party side: exactly the fixed backend's ([`crate::fixed::party_upload`]: local kernels,
//! renormalisation, exp, encoding and the range checks), so a party's out-of-range value
//! is rejected before anything is shared; each party's upload is then checked again
//! against the public [`input_bounds`] and secret-shared with PRG-compressed shares. Noise:
//! every party samples its share of Z (d exact discrete Gaussians N_Z(0, (sigma C 2^32)^2 /
//! P)) from its own generator in [`NoiseRngs`], the same shares, drawn in the same order,
//! as the fixed backend, and inputs it as its own noise-contributor client (client P + p);
//! the nodes add the P shared contributions, so no single party knows Z.
//!
//! Node side: the circuit of `protocols/mpc-gradient.md`, the MPC twin of
//! [`crate::fixed::fixed_gradient`] with probabilistic truncation; given the nodes' masks
//! replayed through [`vtwin_fixed::Probabilistic`] it equals `fixed_gradient` bit for bit
//! (`tests/mpc_backend.rs`). Against the fixed backend's floor truncation the two differ
//! by the accumulated rounding of the truncations (each < 1 ulp = 2^-32, amplified by the
//! reciprocal, the clip factor and the sums over the batch; measured in the tests).
//!
//! Only the coordinator learns G + Z. [`Diagnostics::clipped`] and
//! [`Diagnostics::den_zero`] are not revealed by the circuit and stay 0. The protocol's
//! costs per iteration go to a [`CostLog`] shared with the caller.
//!
//! Secret randomness (node keys, client PRG seeds, session id, truncation masks) comes from
//! one ChaCha20 generator seeded from the OS ([`MpcBackend::new`]), or from a number in
//! tests ([`MpcBackend::seeded`]).
//!
//! Cost: per iteration 2P + 93 rounds and 21 B K + 465 B + 3 K + 6 (d - K) ring elements
//! of circuit traffic plus the input forwarding (`protocols/mpc-gradient.md`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use candle_core::Device;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::{Fx, FRAC_BITS};
use vtwin_mpc::gradient::{
    simulate_iteration, CircuitPublic, InputBounds, IterationError, PartyMap, PlainUpload,
};
use vtwin_mpc::input::InputError;
use vtwin_mpc::{InputClient, SessionId};

use crate::backend::{
    BackendError, Diagnostics, GradientBackend, GradientInput, GradientOutput, NoiseRngs,
};
use crate::fixed::{party_upload, PartyNoise, PartyUpload, Renormalise};
use crate::kernels::{compute_device, KernelError, PartyMaps};
use crate::layout::Layout;

/// The protocol's costs in one iteration (all three nodes together).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IterationCost {
    /// Communication rounds (inputs, circuit and reveal).
    pub rounds: u64,
    /// Bytes sent between nodes (encoded messages, headers included).
    pub bytes_between_nodes: u64,
    /// Ring elements sent between nodes.
    pub elements_between_nodes: u64,
    /// Bytes the nodes sent to the coordinator (the opening of G + Z).
    pub bytes_to_coordinator: u64,
    /// Bytes each party uploaded (key setup and input message of its data, and of its noise
    /// share), party order.
    pub bytes_uploaded_per_party: Vec<u64>,
    /// Bytes all clients uploaded (the parties' data and noise contributions).
    pub bytes_uploaded_total: u64,
    /// Secret-by-secret products (element-wise; an inner product of length L counts L).
    pub mults: u64,
    /// Probabilistic truncations (element-wise).
    pub truncations: u64,
}

/// The costs of every iteration an [`MpcBackend`] ran, shared with whoever holds a clone
/// (the backend itself is boxed inside the training loop).
#[derive(Clone, Debug, Default)]
pub struct CostLog(Arc<Mutex<Vec<IterationCost>>>);

impl CostLog {
    /// The costs recorded so far, in iteration order.
    pub fn snapshot(&self) -> Vec<IterationCost> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn push(&self, c: IterationCost) {
        if let Ok(mut v) = self.0.lock() {
            v.push(c);
        }
    }
}

/// The mpc backend (see the module documentation).
pub struct MpcBackend {
    device: Device,
    renormalise: Renormalise,
    noise: PartyNoise,
    rng: ChaCha20Rng,
    costs: CostLog,
    upload_bytes: HashMap<(usize, usize), u64>,
}

impl std::fmt::Debug for MpcBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The generator is secret: never printed.
        f.debug_struct("MpcBackend")
            .field("renormalise", &self.renormalise)
            .finish_non_exhaustive()
    }
}

impl MpcBackend {
    /// On [`compute_device`], secret randomness from an OS-seeded ChaCha20.
    pub fn new(renormalise: Renormalise) -> Result<MpcBackend, KernelError> {
        Self::with_rng(renormalise, ChaCha20Rng::from_os_rng())
    }

    /// Secret randomness from `seed` (tests and reproducible simulations only: whoever
    /// knows it can reconstruct every share).
    pub fn seeded(renormalise: Renormalise, seed: u64) -> Result<MpcBackend, KernelError> {
        Self::with_rng(renormalise, ChaCha20Rng::seed_from_u64(seed))
    }

    fn with_rng(renormalise: Renormalise, rng: ChaCha20Rng) -> Result<MpcBackend, KernelError> {
        Ok(MpcBackend {
            device: compute_device()?,
            renormalise,
            noise: PartyNoise::default(),
            rng,
            costs: CostLog::default(),
            upload_bytes: HashMap::new(),
        })
    }

    /// A handle on this backend's per-iteration costs.
    pub fn costs(&self) -> CostLog {
        self.costs.clone()
    }

    /// Encoded bytes of one party's upload of `values` elements (setup included): measured
    /// once per size by sharing zeros with a throw-away client (messages discarded).
    fn upload_bytes(&mut self, party: usize, values: usize) -> u64 {
        let rng = &mut self.rng;
        *self.upload_bytes.entry((party, values)).or_insert_with(|| {
            let (mut c, setup) = InputClient::new(party as u16, SessionId([0; 16]), rng);
            let msgs = c.share_raw(&vec![0u128; values]);
            setup
                .iter()
                .chain(&msgs)
                .map(|m| m.encoded_len() as u64)
                .sum()
        })
    }
}

/// The public ranges every party checks before sharing: mat in [0, 2^31) (the largest
/// value below 2^31), q in [0, 2^40] ([`crate::fixed::Q_MAX`]), T in [-14, 14] ([`crate::fixed`]'s bounds).
pub fn input_bounds() -> InputBounds {
    InputBounds {
        mat: (Fx::ZERO, Fx::from_raw((1u128 << (31 + FRAC_BITS)) - 1)),
        q: (Fx::ZERO, Fx::from_int(crate::fixed::Q_MAX as i64)),
        stats: (Fx::from_int(-14), Fx::from_int(14)),
    }
}

/// A fixed-backend upload as the circuit's plaintext input (same encoded values).
pub fn plain_upload(up: &PartyUpload) -> PlainUpload {
    PlainUpload {
        mat: up.mat.clone(),
        q: up.q.clone(),
        stats: up.stats.clone(),
    }
}

/// The circuit's public side for a batch of `b` rows: pi, C (1 - 2^-20) and every party's
/// score maps, encoded exactly as [`crate::fixed::fixed_gradient`] encodes them, with its
/// check B (14 |A| + |b|) < 2^22 on the maps.
pub fn circuit_public(input: &GradientInput<'_>, b: usize) -> Result<CircuitPublic, BackendError> {
    let layout = input.layout;
    let enc = |v: f64, what: &str| {
        Fx::from_f64(v).map_err(|e| BackendError::Config(format!("public {what}: {e}")))
    };
    let pi = input
        .weights()
        .iter()
        .map(|&p| enc(p, "weight"))
        .collect::<Result<Vec<_>, _>>()?;
    let clip = enc(input.clip * (1.0 - 2f64.powi(-20)), "clip")?;
    let mut parties = Vec::with_capacity(layout.n_parties());
    for p in 0..layout.n_parties() {
        let maps = PartyMaps::new(input.theta, layout, p);
        crate::fixed::check_score_map_bound(&maps, b, &layout.parties[p])?;
        parties.push(PartyMap {
            width: layout.stat_width(p),
            scale: maps
                .scale
                .iter()
                .map(|&a| enc(a, "score scale"))
                .collect::<Result<_, _>>()?,
            offset: maps
                .offset
                .iter()
                .map(|&o| enc(o, "score offset"))
                .collect::<Result<_, _>>()?,
        });
    }
    Ok(CircuitPublic {
        batch: b,
        components: layout.components,
        pi,
        clip,
        parties,
        // Every party contributes its own noise share (ARCHITECTURE step 3), as its own client.
        noise_contributors: layout.n_parties(),
    })
}

/// The layout index of every canonical output position of the circuit:
/// `[weights (K); for each party p, (k, j) row-major]`, as `fixed_gradient` writes g.
pub fn canonical_indices(layout: &Layout) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..layout.components)
        .map(|k| layout.weight_index(k))
        .collect();
    for p in 0..layout.n_parties() {
        for k in 0..layout.components {
            for j in 0..layout.stat_width(p) {
                idx.push(layout.param_index(p, k, j));
            }
        }
    }
    idx
}

/// Noise in layout order (raw integers at scale 2^32) to the circuit's canonical order.
pub fn noise_to_canonical(layout: &Layout, noise: &[i128]) -> Vec<u128> {
    canonical_indices(layout)
        .iter()
        .map(|&i| noise[i] as u128)
        .collect()
}

/// The opened G + Z (canonical order, raw ring elements) decoded into layout order.
pub fn gradient_from_canonical(layout: &Layout, opened: &[u128]) -> Vec<f64> {
    let mut g = vec![0.0; layout.dim()];
    for (&i, &v) in canonical_indices(layout).iter().zip(opened) {
        g[i] = Fx::from_raw(v).to_f64();
    }
    g
}

/// A party's refusal of its own upload as a backend error naming the party and quantity.
fn input_error(layout: &Layout, b: usize, party: usize, e: &InputError) -> BackendError {
    let k = layout.components;
    match *e {
        InputError::OutOfRange { index, value, .. } => {
            let (what, range) = if index < b * k {
                ("mat", "[0, 2^31)")
            } else if index < 2 * b * k {
                ("q", "[0, 2^40]")
            } else {
                ("T", "[-14, 14]")
            };
            BackendError::Range {
                party: layout.parties[party].clone(),
                what,
                value,
                range,
            }
        }
        _ => BackendError::Config(format!("party {}: {e}", layout.parties[party])),
    }
}

impl GradientBackend for MpcBackend {
    fn name(&self) -> &'static str {
        "mpc"
    }

    fn gradient(
        &mut self,
        input: &GradientInput<'_>,
        noise: &mut NoiseRngs,
    ) -> Result<GradientOutput, BackendError> {
        let b = input.validate()?;
        let layout = input.layout;
        let p_n = layout.n_parties();
        // Noise shares first, before the data phase (as the fixed backend).
        let t0 = Instant::now();
        let shares = self.noise.shares(input, noise)?;
        let noise_ms = t0.elapsed().as_secs_f64() * 1e3;
        let t1 = Instant::now();
        let uploads = (0..p_n)
            .map(|p| {
                party_upload(&self.device, input, p, self.renormalise).map(|u| plain_upload(&u))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let local_ms = t1.elapsed().as_secs_f64() * 1e3;
        let t2 = Instant::now();
        let public = circuit_public(input, b)?;
        // Each party checks its upload against the public bounds inside simulate_iteration
        // (`upload_messages`) before any message reaches a node.
        let z_canon: Vec<zeroize::Zeroizing<Vec<u128>>> = shares
            .iter()
            .map(|z| zeroize::Zeroizing::new(noise_to_canonical(layout, z.as_slice())))
            .collect();
        let z_refs: Vec<&[u128]> = z_canon.iter().map(|z| z.as_slice()).collect();
        let it = simulate_iteration(&public, &uploads, &z_refs, input_bounds(), &mut self.rng)
            .map_err(|e| match e {
                IterationError::Input { party, source } => input_error(layout, b, party, &source),
                other => BackendError::Config(format!("mpc: {other}")),
            })?;
        let gradient = gradient_from_canonical(layout, &it.gradient);
        let combine_ms = t2.elapsed().as_secs_f64() * 1e3;
        let total = it.counters[0].plus(it.counters[1]).plus(it.counters[2]);
        let per_party = uploads
            .iter()
            .enumerate()
            .map(|(p, u)| {
                // The party's data upload plus its noise share (as its noise-contributor client).
                self.upload_bytes(p, u.mat.len() + u.q.len() + u.stats.len())
                    + self.upload_bytes(p, layout.dim())
            })
            .collect();
        self.costs.push(IterationCost {
            rounds: total.rounds,
            bytes_between_nodes: total.bytes,
            elements_between_nodes: total.elements,
            bytes_to_coordinator: total.bytes_to_clients,
            bytes_uploaded_per_party: per_party,
            bytes_uploaded_total: it.client_bytes,
            mults: total.mults,
            truncations: total.truncations,
        });
        Ok(GradientOutput {
            gradient,
            diagnostics: Diagnostics {
                records: b,
                local_ms,
                combine_ms,
                noise_ms,
                ..Diagnostics::default()
            },
        })
    }
}
