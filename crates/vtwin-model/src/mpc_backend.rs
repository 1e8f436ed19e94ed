//! The `mpc` backend: a thin in-memory driver of the roles of one iteration
//! (`vtwin_iteration`; `docs/architecture.md`, "One iteration"), built from exactly the
//! pieces that the separate processes of a consortium run, so that both give the same G + Z
//! bit for bit:
//!
//! - coordinator: the session id `randomness.session(t)` and the public side
//!   [`circuit_public_for`] (no party data); at the end the opening of the nodes' reveal
//!   messages ([`vtwin_iteration::coordinator::open`]), decoded by
//!   [`gradient_from_canonical`];
//! - party p: [`crate::party_upload::party_messages`] from its own batch only, with its noise
//!   generator positioned at t ([`NoiseRngs::seek`]) and its client generator
//!   `randomness.party(p, t)`: the fixed backend's party side
//!   ([`crate::fixed_backend::party_upload_batch`]: local kernels, renormalisation, exp, encoding
//!   and range checks, so an out-of-range value is refused before anything is shared), then
//!   [`vtwin_iteration::party::Party::shard`] (PRG-compressed shares of its data, client p,
//!   and of its noise share, client P + p: the nodes add the P contributions, so no single
//!   party knows Z). The noise shares are the fixed backend's, drawn in the same order;
//! - node i: an ephemeral X25519 key from `randomness.node(i, t)` and its program
//!   ([`vtwin_iteration::node::program`]); the three nodes and the opening are driven by
//!   [`vtwin_iteration::memory::run`] (FIFO).
//!
//! Node side: the circuit of `protocols/mpc-gradient.md`, the MPC twin of
//! [`crate::fixed_backend::fixed_gradient`] with probabilistic truncation; given the nodes' masks
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
//! Cost: per iteration P + 41 rounds and (13 + 10 P) B K + 523 B + 5 K + 10 (d - K) ring
//! elements of circuit traffic plus 24 elements of the two input checks between the nodes;
//! P + 40
//! rounds and 5 (d - K) for the last term when every party's statistics are integers
//! (`protocols/mpc-gradient.md`).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use vtwin_iteration::memory::{node_keys, run};
use vtwin_iteration::SecretRandomness;
use vtwin_mpc::Delivery;

use crate::backend::{
    BackendError, Diagnostics, GradientBackend, GradientInput, GradientOutput, NoiseRngs,
};
use crate::fixed_backend::Renormalise;
use crate::kernels::{compute_device, Device, KernelError};
use crate::party_upload::{party_messages, PartyTask};

// The model's side of the circuit's parameters, at the paths callers have always used.
pub use crate::iteration_inputs::{
    canonical_indices, circuit_clip, circuit_public, circuit_public_for, encoded_party_map,
    gradient_from_canonical, input_bounds, noise_to_canonical, plain_upload,
};

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
        // What every node of a consortium checks before it computes (so every in-memory run
        // also shows that an honest public side passes it).
        vtwin_iteration::public_bounds::check(&public, input.clip)?;
        // Charged to delta; checked before anything is opened (unreachable on the shipped
        // ranges, which circuit_public_for and mat_max keep inside the windows).
        let truncation_failure =
            public.truncation_failure_bound(&input_bounds(self.renormalise, layout.n_parties()));
        if !truncation_failure.is_finite() {
            return Err(BackendError::UnboundedTruncation);
        }
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
                beta: input.beta,
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
        // Nodes: ephemeral keys, pairwise seeds, the iteration program; coordinator: open.
        let t1 = Instant::now();
        let keys = node_keys(&self.randomness, t);
        let rep = run(
            session,
            &public,
            &keys,
            to_nodes.into_iter().flatten(),
            Delivery::Fifo,
        )
        .map_err(BackendError::Mpc)?;
        let gradient = gradient_from_canonical(layout, &rep.opened);
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
        Ok(GradientOutput {
            gradient,
            diagnostics: Diagnostics {
                records: b,
                local_ms,
                combine_ms,
                ..Diagnostics::default()
            },
            truncation_failure,
        })
    }
}
