//! A party's side of one MPC iteration, from its own batch only: the vtwin-mpc messages it
//! sends to each compute node (`docs/architecture.md` steps 2-3). The in-memory mpc backend and a party
//! process both call [`party_messages`], so they send identical messages given identical
//! generators.
//!
//! Party p of P, for iteration t of session s, given the public theta, C, sigma:
//! 1. draws its noise share from `noise_rng` (d exact discrete Gaussians
//!    N_Z(0, (sigma C 2^32)^2 / P), [`crate::fixed_backend::noise_share`]; no draws when sigma = 0);
//! 2. runs the local kernels on its own [`PartyBatch`], renormalises and encodes
//!    ([`crate::fixed_backend::party_upload_batch`]; a value outside the fixed-point pipeline's range
//!    is [`BackendError::Range`] naming the party) and checks the encoding against the public
//!    [`crate::iteration_inputs::input_bounds`] (the same error): on either refusal no
//!    message exists;
//! 3. shards its upload and its noise share (canonical order,
//!    [`crate::iteration_inputs::noise_to_canonical`]) with
//!    [`vtwin_iteration::party::Party::shard`], which documents the draw order from
//!    `client_rng`, the messages by addressee node and their sizes.
//!
//! Cost: the local kernels O(B K |T_p|), d noise samples, and two PRG expansions of the
//! input lengths.

use rand_chacha::ChaCha20Rng;
use vtwin_iteration::party::{NodeMessages, Party, ShardError};
use vtwin_mpc::gradient::PartyMap;
use vtwin_mpc::{Message, SessionId};
use zeroize::Zeroizing;

use crate::backend::BackendError;
use crate::fixed_backend::{noise_share, party_upload_batch, Renormalise};
use crate::iteration_inputs::{input_bounds, input_error, noise_to_canonical, plain_upload};
use crate::kernels::Device;
use crate::layout::Layout;
use crate::party_data::PartyBatch;

/// Everything party `party` needs for one iteration: the public request and its own batch.
#[derive(Clone, Copy, Debug)]
pub struct PartyTask<'a> {
    /// The public layout.
    pub layout: &'a Layout,
    /// This party's index in the layout (its data client id; P + party is its noise client).
    pub party: usize,
    /// The iteration t (the caller positions the generators for it).
    pub iteration: u64,
    /// The iteration's session id (from the coordinator).
    pub session: SessionId,
    /// theta_t, length d, public.
    pub theta: &'a [f64],
    /// Clip bound C > 0.
    pub clip: f64,
    /// Noise multiplier sigma >= 0 (0: no noise, tests only).
    pub sigma: f64,
    /// The responsibilities' inverse temperature at this iteration, in (0, 1]
    /// ([`crate::tempering`]; 1: untempered).
    pub beta: f64,
    /// This party's own rows of the batch (B x |T_p|).
    pub batch: &'a PartyBatch,
    /// Renormalisation of the log-densities before exp.
    pub renormalise: Renormalise,
}

impl PartyTask<'_> {
    /// Checks the task's shapes and public parameters: party < P, the batch is this party's
    /// with the layout's width, theta has d finite values, C > 0 finite, sigma >= 0 finite,
    /// beta in (0, 1].
    pub fn validate(&self) -> Result<(), BackendError> {
        let layout = self.layout;
        if self.party >= layout.n_parties() {
            return Err(BackendError::PartyIndex {
                index: self.party,
                parties: layout.n_parties(),
            });
        }
        let b = self.batch;
        if b.party != self.party
            || b.width != layout.stat_width(self.party)
            || b.stats.len() != b.rows * b.width
        {
            return Err(BackendError::BatchMismatch {
                party: layout.parties[self.party].clone(),
            });
        }
        if self.theta.len() != layout.dim() {
            return Err(BackendError::ThetaLength {
                got: self.theta.len(),
                expected: layout.dim(),
            });
        }
        if let Some(i) = self.theta.iter().position(|t| !t.is_finite()) {
            return Err(BackendError::ThetaNotFinite { index: i });
        }
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return Err(BackendError::Clip(self.clip));
        }
        if !(self.sigma.is_finite() && self.sigma >= 0.0) {
            return Err(BackendError::Sigma(self.sigma));
        }
        if !(self.beta > 0.0 && self.beta <= 1.0) {
            return Err(BackendError::Beta(self.beta));
        }
        Ok(())
    }
}

/// Party `task.party`'s messages for one iteration, by addressee node (`first` then `late`,
/// [`NodeMessages`]; module docs for the
/// steps, the draw order and the sizes). `noise_rng` is the party's noise generator for the
/// iteration, `client_rng` its client generator (e.g.
/// [`vtwin_iteration::SecretRandomness::party`]). Errors: a bad task
/// ([`PartyTask::validate`]), a kernel failure, or a range violation
/// ([`BackendError::Range`] naming the party); nothing is shared then.
pub fn party_messages(
    device: &Device,
    task: &PartyTask<'_>,
    noise_rng: &mut ChaCha20Rng,
    client_rng: &mut ChaCha20Rng,
) -> Result<[Vec<Message>; 3], BackendError> {
    task.validate()?;
    // 1. Noise first, before the data phase.
    let z = prepare_noise(task.layout, task.sigma, task.clip, noise_rng)?;
    Ok(party_messages_with_noise(device, task, &z, client_rng)?
        .messages
        .map(NodeMessages::into_all))
}

/// Step 1 alone: a party's noise share for one iteration (d exact discrete Gaussians
/// N_Z(0, (sigma C 2^32)^2 / P) from `noise_rng`, in the circuit's canonical order), so a
/// party process can sample it ahead of the request, off the message path (the sampler's
/// time depends on the noise magnitude). Zeroized on drop. Cost: d samples.
pub fn prepare_noise(
    layout: &Layout,
    sigma: f64,
    clip: f64,
    noise_rng: &mut ChaCha20Rng,
) -> Result<Zeroizing<Vec<u128>>, BackendError> {
    let share = noise_share(sigma, clip, layout.n_parties(), layout.dim(), noise_rng)?;
    Ok(Zeroizing::new(noise_to_canonical(layout, share.as_slice())))
}

/// Steps 2-4 with a noise share `z` from [`prepare_noise`] for the task's layout, sigma and
/// clip: the same messages [`party_messages`] sends when its `noise_rng` would have drawn
/// `z`, with the encoded score map the party's roots were computed with. Errors as
/// [`party_messages`], and a `z` whose length is not d.
pub fn party_messages_with_noise(
    device: &Device,
    task: &PartyTask<'_>,
    z: &[u128],
    client_rng: &mut ChaCha20Rng,
) -> Result<PartyMessages, BackendError> {
    task.validate()?;
    let layout = task.layout;
    let (p, parties, d) = (task.party, layout.n_parties(), layout.dim());
    if z.len() != d {
        return Err(BackendError::NoiseLength {
            got: z.len(),
            expected: d,
        });
    }
    // 2. Local kernels, encoding, range checks.
    let encoded = party_upload_batch(
        device,
        layout,
        task.theta,
        task.beta,
        task.batch,
        task.renormalise,
    )?;
    let upload = plain_upload(&encoded, p);
    let party = Party {
        index: p,
        parties,
        session: task.session,
    };
    let bounds = input_bounds(task.renormalise, parties);
    let messages = party
        .shard(&upload, bounds, z, d, client_rng)
        .map_err(|e| match e {
            ShardError::Input(e) => input_error(layout, task.batch.rows, p, &e),
            source => BackendError::Shard {
                party: layout.parties[p].clone(),
                source,
            },
        })?;
    Ok(PartyMessages {
        messages,
        map: encoded.map,
    })
}

/// A party's messages for one iteration ([`party_messages_with_noise`]) and the score map its
/// score roots were computed with.
#[derive(Debug)]
pub struct PartyMessages {
    /// By addressee node, in the two groups the nodes take apart.
    pub messages: [NodeMessages; 3],
    /// The encoded score map of its roots (public).
    pub map: PartyMap,
}
