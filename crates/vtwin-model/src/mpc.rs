//! The `mpc` backend: ARCHITECTURE "One training iteration" steps 2-4 with the node side
//! run by three in-memory compute nodes, built from exactly the pieces that the separate
//! processes of a consortium run, so that both give the same G + Z bit for bit:
//!
//! - coordinator: the session id `randomness.session(t)` and the public side
//!   [`circuit_public_for`] (no party data); at the end an [`Opening`] of the nodes' reveal
//!   messages, decoded by [`gradient_from_canonical`];
//! - party p: [`crate::party_upload::party_messages`] from its own batch only, with its noise
//!   generator positioned at t ([`NoiseRngs::seek`]) and its client generator
//!   `randomness.party(p, t)`: the fixed backend's party side
//!   ([`crate::fixed::party_upload_batch`]: local kernels, renormalisation, exp, encoding
//!   and range checks, so an out-of-range value is refused before anything is shared), the
//!   check against the public [`input_bounds`], then PRG-compressed shares of its data (client
//!   p) and of its noise share (client P + p: the nodes add the P contributions, so no single
//!   party knows Z). The noise shares are the fixed backend's, drawn in the same order;
//! - node i: an ephemeral X25519 key from `randomness.node(i, t)`
//!   ([`vtwin_mpc::NodeKey::generate`]), the pairwise seeds
//!   ([`vtwin_mpc::PairSeeds::derive`] with the session), and
//!   [`vtwin_mpc::gradient::iteration_node`]; here the three nodes are driven by the
//!   simulator ([`vtwin_mpc::sim::run_nodes`], FIFO).
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
//! Secret randomness ([`SecretRandomness`]): fresh from the OS for every iteration
//! ([`MpcBackend::new`]), or in tests a pure function of (seed, role, t)
//! ([`MpcBackend::seeded`]; voids privacy), so that a retried iteration and a network run
//! with the same seeds redraw exactly the same keys, seeds and session.
//!
//! Cost: per iteration 2P + 94 rounds and (12 + 6 P) B K + 468 B + 3 K + 6 (d - K) ring elements
//! of circuit traffic plus the input forwarding (`protocols/mpc-gradient.md`).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use candle_core::Device;
use vtwin_fixed::Fx;
use vtwin_mpc::gradient::{iteration_node, CircuitPublic, InputBounds, PartyMap, PlainUpload};
use vtwin_mpc::input::InputError;
use vtwin_mpc::sim::run_nodes;
use vtwin_mpc::{Delivery, MpcError, NodeId, NodeKey, Opening, PairSeeds};

use crate::backend::{
    softmax, BackendError, Diagnostics, GradientBackend, GradientInput, GradientOutput, NoiseRngs,
};
use crate::fixed::{PartyUpload, Renormalise};
use crate::kernels::{compute_device, KernelError, PartyMaps};
use crate::layout::Layout;
use crate::party_upload::{party_messages, PartyTask};
use crate::secret_randomness::SecretRandomness;

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
    randomness: SecretRandomness,
    costs: CostLog,
}

impl std::fmt::Debug for MpcBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpcBackend")
            .field("renormalise", &self.renormalise)
            .field("insecure", &self.randomness.is_insecure())
            .finish_non_exhaustive()
    }
}

impl MpcBackend {
    /// On [`compute_device`], every secret fresh from the OS ([`SecretRandomness::Os`]).
    pub fn new(renormalise: Renormalise) -> Result<MpcBackend, KernelError> {
        Self::with_randomness(renormalise, SecretRandomness::Os)
    }

    /// Secrets derived from `seed` ([`SecretRandomness::InsecureSeed`]; tests and
    /// reproducible simulations only: whoever knows it can reconstruct every share).
    pub fn seeded(renormalise: Renormalise, seed: u64) -> Result<MpcBackend, KernelError> {
        Self::with_randomness(renormalise, SecretRandomness::InsecureSeed(seed))
    }

    /// On [`compute_device`] with the given source of secrets.
    pub fn with_randomness(
        renormalise: Renormalise,
        randomness: SecretRandomness,
    ) -> Result<MpcBackend, KernelError> {
        Ok(MpcBackend {
            device: compute_device()?,
            renormalise,
            randomness,
            costs: CostLog::default(),
        })
    }

    /// A handle on this backend's per-iteration costs.
    pub fn costs(&self) -> CostLog {
        self.costs.clone()
    }
}

/// The public ranges every party checks before sharing: mat in [0, [`crate::fixed::mat_max`]],
/// score roots in [0, [`vtwin_fixed::clip_bound::score_root_max`]] (2^7 plus 2 ulp), T in
/// [-14, 14] ([`crate::fixed`]'s bounds).
pub fn input_bounds(renormalise: Renormalise, parties: usize) -> InputBounds {
    let mat_max = Fx::from_f64(crate::fixed::mat_max(renormalise, parties))
        .expect("a power of two below 2^16 encodes");
    InputBounds {
        mat: (Fx::ZERO, mat_max),
        root: (Fx::ZERO, vtwin_fixed::clip_bound::score_root_max()),
        stats: (Fx::from_int(-14), Fx::from_int(14)),
    }
}

/// Party `party`'s fixed-backend upload as the circuit's plaintext input (same encoded
/// values); party 0 also inputs the padding flags.
pub fn plain_upload(up: &PartyUpload, party: usize) -> PlainUpload {
    PlainUpload {
        mat: up.mat.clone(),
        root: up.root.clone(),
        stats: up.stats.clone(),
        flags: if party == 0 {
            up.flags.clone()
        } else {
            Vec::new()
        },
    }
}

/// The circuit's public side for `input` and a batch of `b` rows:
/// [`circuit_public_for`]`(input.layout, input.theta, input.clip, b)`.
pub fn circuit_public(input: &GradientInput<'_>, b: usize) -> Result<CircuitPublic, BackendError> {
    circuit_public_for(input.layout, input.theta, input.clip, b)
}

/// The circuit's public side for a batch of `b` rows, from public values only (the
/// coordinator needs no party data): pi = softmax(theta[0..K]), the circuit clip C' of
/// [`vtwin_fixed::clip_bound::effective_clip`] for the nominal `clip` (the largest C' for which
/// the released sums provably move by at most `clip`), and every party's score maps encoded
/// ([`encoded_party_map`]), with the public map checks of
/// [`crate::fixed::check_score_map_bound`] ([`BackendError::Range`] naming the party);
/// P noise contributors (each party inputs its own share). Errors also on theta of the wrong
/// length or not finite, and C not positive and finite. Cost O(d).
pub fn circuit_public_for(
    layout: &Layout,
    theta: &[f64],
    clip: f64,
    b: usize,
) -> Result<CircuitPublic, BackendError> {
    if theta.len() != layout.dim() {
        return Err(BackendError::Shape(format!(
            "theta has {} values, layout needs {}",
            theta.len(),
            layout.dim()
        )));
    }
    if let Some(i) = theta.iter().position(|t| !t.is_finite()) {
        return Err(BackendError::Shape(format!("theta[{i}] is not finite")));
    }
    if !(clip.is_finite() && clip > 0.0) {
        return Err(BackendError::Config(format!(
            "--clip must be positive and finite, got {clip}"
        )));
    }
    let enc = |v: f64, what: &str| {
        Fx::from_f64(v).map_err(|e| BackendError::Config(format!("public {what}: {e}")))
    };
    let pi = softmax(&theta[..layout.components])
        .iter()
        .map(|&p| enc(p, "weight"))
        .collect::<Result<Vec<_>, _>>()?;
    let clip = circuit_clip(layout, clip)?.circuit;
    let mut parties = Vec::with_capacity(layout.n_parties());
    for p in 0..layout.n_parties() {
        let maps = PartyMaps::new(theta, layout, p);
        crate::fixed::check_score_map_bound(&maps, b, &layout.parties[p])?;
        parties.push(encoded_party_map(&maps, layout.stat_width(p))?);
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

/// The circuit clip for a nominal clip C and this layout's shape, with its derivation
/// ([`vtwin_fixed::clip_bound::effective_clip`]). Errors on C outside [1/16, 1024].
pub fn circuit_clip(
    layout: &Layout,
    clip: f64,
) -> Result<vtwin_fixed::clip_bound::ClipBound, BackendError> {
    let shape = vtwin_fixed::clip_bound::ClipShape {
        components: layout.components,
        parties: layout.n_parties(),
        dim: layout.dim(),
    };
    vtwin_fixed::clip_bound::effective_clip(clip, shape)
        .map_err(|e| BackendError::Config(e.to_string()))
}

/// One party's public score maps encoded at scale 2^32 (what the circuit and the party's
/// score roots use). Cost O(K w_p).
pub fn encoded_party_map(maps: &PartyMaps, width: usize) -> Result<PartyMap, BackendError> {
    let enc = |v: &f64| {
        Fx::from_f64(*v).map_err(|e| BackendError::Config(format!("public score map: {e}")))
    };
    Ok(PartyMap {
        width,
        scale: maps.scale.iter().map(enc).collect::<Result<_, _>>()?,
        offset: maps.offset.iter().map(enc).collect::<Result<_, _>>()?,
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
pub(crate) fn input_error(layout: &Layout, b: usize, party: usize, e: &InputError) -> BackendError {
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
        let t = input.iteration;
        // Coordinator: session and public side.
        let t0 = Instant::now();
        let session = self.randomness.session(t);
        let public = circuit_public_for(layout, input.theta, input.clip, b)?;
        // Parties: each from its own batch and generators (noise included in local_ms).
        noise.seek(t);
        let mut to_nodes: [Vec<vtwin_mpc::Message>; 3] = Default::default();
        let mut per_party = Vec::with_capacity(layout.n_parties());
        for (p, batch) in input.parties.iter().enumerate() {
            let task = PartyTask {
                layout,
                party: p,
                iteration: t,
                session,
                theta: input.theta,
                clip: input.clip,
                sigma: input.noise.sigma,
                batch,
                renormalise: self.renormalise,
            };
            let mut client_rng = self.randomness.party(p, t);
            let msgs = party_messages(&self.device, &task, noise.party(p), &mut client_rng)?;
            per_party.push(msgs.iter().flatten().map(|m| m.encoded_len() as u64).sum());
            for (node, m) in to_nodes.iter_mut().zip(msgs) {
                node.extend(m);
            }
        }
        let local_ms = t0.elapsed().as_secs_f64() * 1e3;
        // Nodes: ephemeral keys, pairwise seeds, the iteration program.
        let t1 = Instant::now();
        let keys: Vec<NodeKey> = (0..3)
            .map(|i| NodeKey::generate(&mut self.randomness.node(i, t)))
            .collect();
        let publics = [keys[0].public(), keys[1].public(), keys[2].public()];
        let node = |id: NodeId| {
            PairSeeds::derive(id, &keys[id.index()], &publics, session)
                .map(|seeds| iteration_node(id, session, seeds, public.clone()))
        };
        let [n0, n1, n2] = NodeId::ALL;
        let nodes = [
            node(n0).map_err(BackendError::Mpc)?,
            node(n1).map_err(BackendError::Mpc)?,
            node(n2).map_err(BackendError::Mpc)?,
        ];
        let rep = run_nodes(nodes, to_nodes.into_iter().flatten(), Delivery::Fifo)
            .map_err(BackendError::Mpc)?;
        // Coordinator: open G + Z.
        let mut opening = Opening::new(session, public.coordinator(), public.dim());
        for m in rep.to_clients {
            opening.handle(m).map_err(BackendError::Mpc)?;
        }
        let opened = opening
            .result()
            .ok_or(BackendError::Mpc(MpcError::Stalled { node: 0 }))?;
        let gradient = gradient_from_canonical(layout, &opened);
        let combine_ms = t1.elapsed().as_secs_f64() * 1e3;
        let total = rep.counters[0].plus(rep.counters[1]).plus(rep.counters[2]);
        self.costs.push(IterationCost {
            rounds: total.rounds,
            bytes_between_nodes: total.bytes,
            elements_between_nodes: total.elements,
            bytes_to_coordinator: total.bytes_to_clients,
            bytes_uploaded_per_party: per_party,
            bytes_uploaded_total: rep.client_bytes,
            mults: total.mults,
            truncations: total.truncations,
        });
        let bounds = input_bounds(self.renormalise, layout.n_parties());
        Ok(GradientOutput {
            gradient,
            diagnostics: Diagnostics {
                records: b,
                local_ms,
                combine_ms,
                ..Diagnostics::default()
            },
            truncation_failure: public.truncation_failure_bound(&bounds),
        })
    }
}
