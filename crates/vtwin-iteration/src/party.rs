//! A party's role in one iteration: from its encoded upload (computed by the model from its
//! own batch) and its noise share, the messages it sends to each compute node.
//!
//! Party p of P in session s draws from its client generator, in this order, the two 32-byte
//! PRG seeds of client p (its data) and the two of client P + p (its noise contribution)
//! ([`vtwin_mpc::InputClient::new`]); it checks `[mat | root | T | flags]` against the public
//! [`InputBounds`] (nothing is shared on a refusal) and shares `[mat | root | flags]` as client
//! p's input 1 and T as its input 2 ([`vtwin_mpc::gradient::upload_messages`]), and its noise
//! share (canonical order, [`crate::canonical`]) as client P + p's input 1.
//!
//! Messages by addressee node, in two groups ([`NodeMessages`]): `first`, what the circuit's
//! first layers need (client p's setup and input 1), and `late`, what the nodes take only at
//! the `M_p` layer (client p's input 2, then client P + p's setup and input;
//! [`vtwin_mpc::gradient::LateInputs`]). Node 0 gets only the setups (client p's in `first`,
//! client P + p's in `late`); node 1 and node 2 each get every message (both receive the
//! corrections; [`vtwin_mpc::input`]). Sizes: setup 38 + 64 bytes to node 0, 38 + 32 to
//! nodes 1 and 2 per client; inputs, to node 1 and to node 2 each, 38 + 16 (2 B K (+ B flags
//! for party 0)), 38 + 16 B |T_p| and 38 + 16 d bytes. Cost: two PRG expansions of the input
//! lengths.

use rand_core::{CryptoRng, RngCore};
use vtwin_mpc::gradient::{upload_messages, InputBounds, PlainUpload};
use vtwin_mpc::{InputClient, InputError, Message, Peer, SessionId};
use zeroize::Zeroize;

/// Why a party refused to shard (nothing was shared).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// An upload value outside its public range.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A noise share whose length is not d.
    #[error("noise share of {got} values, the circuit needs {want}")]
    NoiseLength {
        /// Values given.
        got: usize,
        /// d.
        want: usize,
    },
    /// An input message addressed to something other than a node (a vtwin-mpc bug).
    #[error("an input message addressed to {to}")]
    Misaddressed {
        /// The addressee.
        to: Peer,
    },
}

/// A party's messages to one compute node (module docs). Their payloads (corrections, and
/// the setups' seeds) are zeroized on drop, and `Debug` prints only how many there are.
#[derive(Default)]
pub struct NodeMessages {
    /// The data client's setup and its first input: what the circuit's first layers need.
    pub first: Vec<Message>,
    /// The data client's T_p, then the noise contributor's setup and input: taken at the
    /// `M_p` layer, about 40 rounds in, so they may travel while the circuit runs.
    pub late: Vec<Message>,
}

impl NodeMessages {
    /// Every message, `first` then `late` (the caller owns them, unzeroized, from here).
    pub fn into_all(mut self) -> Vec<Message> {
        let mut all = std::mem::take(&mut self.first);
        all.append(&mut self.late);
        all
    }
}

impl Drop for NodeMessages {
    fn drop(&mut self) {
        for m in self.first.iter_mut().chain(&mut self.late) {
            m.payload.zeroize();
        }
    }
}

impl std::fmt::Debug for NodeMessages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeMessages")
            .field("first", &self.first.len())
            .field("late", &self.late.len())
            .finish()
    }
}

/// Party `index` of `parties` in one iteration's session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Party {
    /// p: its data client id (P + p is its noise client id).
    pub index: usize,
    /// P, the number of parties.
    pub parties: usize,
    /// The iteration's session id (from the coordinator).
    pub session: SessionId,
}

impl Party {
    /// The party's messages by addressee node, each in its two groups (module docs for the
    /// draw order and sizes): `upload` checked against `bounds` and shared as client p,
    /// `noise` (d ring elements in canonical order) as client P + p, seeds from `client_rng`
    /// (a CSPRNG, e.g. [`crate::SecretRandomness::party`]). Errors: [`ShardError`]; nothing
    /// is shared then.
    pub fn shard<R: RngCore + CryptoRng>(
        &self,
        upload: &PlainUpload,
        bounds: InputBounds,
        noise: &[u128],
        dim: usize,
        client_rng: &mut R,
    ) -> Result<[NodeMessages; 3], ShardError> {
        if noise.len() != dim {
            return Err(ShardError::NoiseLength {
                got: noise.len(),
                want: dim,
            });
        }
        // Every message goes into `out` as soon as it exists, so that a refusal drops the
        // seeds zeroized with it.
        let mut out: [NodeMessages; 3] = Default::default();
        let (mut data_client, data_setup) =
            InputClient::new(self.index as u16, self.session, client_rng);
        route(&mut out, data_setup, false)?;
        let data_input = upload_messages(&mut data_client, upload, bounds)?;
        route(&mut out, data_input.first, false)?;
        route(&mut out, data_input.stats, true)?;
        // The noise contributor's seeds come after the data client's.
        let (mut noise_client, noise_setup) =
            InputClient::new((self.parties + self.index) as u16, self.session, client_rng);
        route(&mut out, noise_setup, true)?;
        route(&mut out, noise_client.share_raw(noise), true)?;
        Ok(out)
    }
}

/// Appends each message to its addressee node's `first` or `late` group.
fn route(out: &mut [NodeMessages; 3], msgs: Vec<Message>, late: bool) -> Result<(), ShardError> {
    for m in msgs {
        let Peer::Node(n) = m.to else {
            return Err(ShardError::Misaddressed { to: m.to });
        };
        let group = &mut out[n.index()];
        if late {
            &mut group.late
        } else {
            &mut group.first
        }
        .push(m);
    }
    Ok(())
}
