//! The party's side of the protocol ([`PartyResponder`]), sans-IO.
//!
//! A party holds its own columns only (as sufficient statistics, [`PartyData`]) and answers
//! the coordinator:
//! - `Hello` -> `PartyInfo { rows, ids_digest }` (SHA-256 of its id column,
//!   [`vtwin_model::stats::ids_digest`]), so
//!   the coordinator can check that every party holds the same individuals in the same order;
//! - `Request { batch, theta, clip, sigma, components }` of iteration t in session s_t -> it runs
//!   its local kernels on its batch and builds the vtwin-mpc input messages of its data client
//!   (p) and its noise client (P + p) with [`vtwin_model::party_upload::party_messages`] (noise
//!   generator for (p, t), client generator `randomness.party(p, t)`), encodes node i's
//!   messages (postcard `Vec<Vec<u8>>` of `Message::encode`) and seals them to node i's
//!   long-term seal key with AAD (s_t, t, p, i), replying `Upload { sealed: [3 blobs] }`. A value
//!   outside the public fixed-point ranges gives `Refused { reason }` and nothing is shared;
//! - `Abort` -> nothing to drop (a party keeps no per-iteration state).
//!
//! Only the coordinator may talk to a party; anything else is an error ([`PartyError`]) that
//! the driver logs and reports with `Failed`.
//!
//! Cost per request: the local kernels (O(B K |T_p|)), two input shares of
//! 2 B K + B |T_p| and d ring elements, three seals (one X25519, one HKDF and AES-256-GCM over
//! the blob each).

use candle_core::Device;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_model::backend::BackendError;
use vtwin_model::fixed::Renormalise;

/// A `Request` batch entry that stands for a padding row: the coordinator sends the real
/// record indices (ascending), then this value up to the public batch size.
pub const PADDING_INDEX: u32 = u32::MAX;
use vtwin_model::kernels::{compute_device, KernelError};
use vtwin_model::layout::Layout;
use vtwin_model::party_upload::{party_messages, PartyTask};
use vtwin_model::secret_randomness::{seeded_noise_rng, SecretRandomness};
use vtwin_model::stats::PartyData;
use vtwin_model::Schema;
use vtwin_mpc::SessionId;
use vtwin_net::{seal, Body, Frame, Role, SealContext};

use crate::outgoing::{body_kind, frame, Attempt, Outgoing};

/// Everything a party needs: its own data and the public parameters.
pub struct PartySetup {
    /// This party's index p in the layout (its role is `Role::Party(p)`).
    pub index: u16,
    /// The public schema (the layout is built for the K of each request).
    pub schema: Schema,
    /// The party's sufficient statistics, rows in id order.
    pub data: PartyData,
    /// [`vtwin_model::stats::ids_digest`] of the party's id column.
    pub ids_digest: [u8; 32],
    /// The three nodes' long-term seal public keys, by node.
    pub node_seal_publics: [[u8; 32]; 3],
    /// Source of the party's client seeds; OS in production.
    pub randomness: SecretRandomness,
    /// Insecure noise seed (tests only: voids privacy); `None` draws noise from the OS.
    pub noise_seed: Option<u64>,
    /// Renormalisation of the local log-densities.
    pub renormalise: Renormalise,
}

impl std::fmt::Debug for PartySetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The data and the randomness are secret: never printed.
        f.debug_struct("PartySetup")
            .field("index", &self.index)
            .field("rows", &self.data.rows)
            .finish_non_exhaustive()
    }
}

/// A frame the party could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PartyError {
    /// A frame from a peer other than the coordinator, or of a kind a party never receives.
    #[error("party {party}: unexpected {kind} from {from}")]
    Unexpected {
        /// This party.
        party: u16,
        /// The sender.
        from: Role,
        /// The body kind.
        kind: &'static str,
    },
    /// The request does not fit the party's data or the layout.
    #[error("party {party}: bad request for iteration {iteration}: {reason}")]
    BadRequest {
        /// This party.
        party: u16,
        /// The iteration.
        iteration: u64,
        /// Why.
        reason: String,
    },
    /// The local computation failed for another reason than a range violation.
    #[error("party {party}: iteration {iteration}: {source}")]
    Compute {
        /// This party.
        party: u16,
        /// The iteration.
        iteration: u64,
        /// The cause.
        source: BackendError,
    },
}

/// The party state machine (module docs).
pub struct PartyResponder {
    setup: PartySetup,
    layout: Option<Layout>,
    device: Device,
    seal_rng: ChaCha20Rng,
}

impl std::fmt::Debug for PartyResponder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartyResponder")
            .field("setup", &self.setup)
            .finish_non_exhaustive()
    }
}

impl PartyResponder {
    /// A responder on [`compute_device`]; sealing randomness from the OS.
    pub fn new(setup: PartySetup) -> Result<PartyResponder, KernelError> {
        Ok(PartyResponder {
            setup,
            layout: None,
            device: compute_device()?,
            seal_rng: ChaCha20Rng::from_os_rng(),
        })
    }

    /// This party's role.
    pub fn role(&self) -> Role {
        Role::Party(self.setup.index)
    }

    /// Number of records.
    pub fn rows(&self) -> usize {
        self.setup.data.rows
    }

    /// Answers one frame (module docs). An `Err` names what was wrong; the driver reports it
    /// to the coordinator with [`failure`].
    pub fn handle(&mut self, from: Role, f: &Frame) -> Result<Vec<Outgoing>, PartyError> {
        let p = self.setup.index;
        let unexpected = || PartyError::Unexpected {
            party: p,
            from,
            kind: body_kind(&f.body),
        };
        if from != Role::Coordinator {
            return Err(unexpected());
        }
        let me = self.role();
        let reply = |body| {
            vec![Outgoing {
                to: Role::Coordinator,
                frame: frame(me, Attempt::of(f), f.iteration, f.step, body),
            }]
        };
        match &f.body {
            Body::Hello => Ok(reply(Body::PartyInfo {
                rows: self.setup.data.rows as u64,
                ids_digest: self.setup.ids_digest,
            })),
            Body::Request {
                batch,
                theta,
                clip,
                sigma,
                components,
            } => {
                let body = self.upload(f, batch, theta, *clip, *sigma, *components)?;
                Ok(reply(body))
            }
            Body::Abort { .. } => Ok(Vec::new()),
            _ => Err(unexpected()),
        }
    }

    fn upload(
        &mut self,
        f: &Frame,
        batch: &[u32],
        theta: &[f64],
        clip: f64,
        sigma: f64,
        components: u32,
    ) -> Result<Body, PartyError> {
        let (p, t) = (self.setup.index, f.iteration);
        let bad = |reason: String| PartyError::BadRequest {
            party: p,
            iteration: t,
            reason,
        };
        if self.layout.as_ref().map(|l| l.components) != Some(components as usize) {
            let layout = Layout::from_schema(&self.setup.schema, components as usize)
                .map_err(|e| bad(format!("{components} components: {e}")))?;
            if layout.stat_width(usize::from(p)) != self.setup.data.width {
                return Err(bad("the schema does not match the party's data".into()));
            }
            self.layout = Some(layout);
        }
        let Some(layout) = self.layout.as_ref() else {
            return Err(bad("no layout".into()));
        };
        if theta.len() != layout.dim() {
            return Err(bad(format!(
                "theta has {} values, the layout needs {}",
                theta.len(),
                layout.dim()
            )));
        }
        let rows = self.setup.data.rows;
        // Real indices first, then PADDING_INDEX up to the public batch size.
        let real = batch.iter().take_while(|&&r| r != PADDING_INDEX).count();
        if batch[real..].iter().any(|&r| r != PADDING_INDEX) {
            return Err(bad(format!("batch index after padding at {real}")));
        }
        let mut idx = Vec::with_capacity(real);
        for (i, &r) in batch[..real].iter().enumerate() {
            if r as usize >= rows {
                return Err(bad(format!(
                    "batch[{i}] = {r} but the party has {rows} rows"
                )));
            }
            if i > 0 && batch[i - 1] >= r {
                return Err(bad(format!("batch indices not strictly increasing at {i}")));
            }
            idx.push(r as usize);
        }
        let part = self
            .setup
            .data
            .padded_batch(&idx, batch.len())
            .map_err(|e| bad(e.to_string()))?;
        let session = SessionId(f.session);
        let task = PartyTask {
            layout,
            party: usize::from(p),
            iteration: t,
            session,
            theta,
            clip,
            sigma,
            batch: &part,
            renormalise: self.setup.renormalise,
        };
        let mut noise_rng = match self.setup.noise_seed {
            Some(seed) => seeded_noise_rng(seed, usize::from(p), t),
            None => ChaCha20Rng::from_os_rng(),
        };
        let mut client_rng = self.setup.randomness.party(usize::from(p), t);
        let messages = match party_messages(&self.device, &task, &mut noise_rng, &mut client_rng) {
            Ok(m) => m,
            Err(e @ BackendError::Range { .. }) => {
                tracing::warn!(party = p, iteration = t, "refused: {e}");
                return Ok(Body::Refused {
                    reason: e.to_string(),
                });
            }
            Err(source) => {
                return Err(PartyError::Compute {
                    party: p,
                    iteration: t,
                    source,
                })
            }
        };
        let mut sealed: [Vec<u8>; 3] = Default::default();
        for (i, msgs) in messages.iter().enumerate() {
            let encoded: Vec<Vec<u8>> = msgs.iter().map(|m| m.encode()).collect();
            let plain = zeroize::Zeroizing::new(
                postcard::to_allocvec(&encoded).map_err(|e| bad(format!("encoding: {e}")))?,
            );
            let ctx = SealContext {
                session: f.session,
                iteration: t,
                party: p,
                node: i as u8,
            };
            sealed[i] = seal(
                &self.setup.node_seal_publics[i],
                &ctx,
                &plain,
                &mut self.seal_rng,
            )
            .map_err(|e| bad(format!("sealing to node {i}: {e}")))?;
        }
        Ok(Body::Upload { sealed })
    }
}

/// The `Failed` frame a party driver sends to the coordinator after an error in handling `f`.
pub fn failure(party: u16, f: &Frame, e: &PartyError) -> Outgoing {
    Outgoing {
        to: Role::Coordinator,
        frame: frame(
            Role::Party(party),
            Attempt::of(f),
            f.iteration,
            0,
            Body::Failed {
                reason: e.to_string(),
            },
        ),
    }
}
