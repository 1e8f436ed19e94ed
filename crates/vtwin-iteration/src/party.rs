//! A party's role in one iteration: from its encoded upload (computed by the model from its
//! own batch) and its noise share, the messages it sends to each compute node.
//!
//! Party p of P in session s draws from its client generator, in this order, the two 32-byte
//! PRG seeds of client p (its data) and the two of client P + p (its noise contribution)
//! ([`vtwin_mpc::InputClient::new`]); it checks `[mat | root | T | flags]` against the public
//! [`InputBounds`] (nothing is shared on a refusal) and shares it as client p's input 1, and
//! its noise share (canonical order, [`crate::canonical`]) as client P + p's input 1.
//!
//! Messages by addressee node: node 0 gets the two setup messages (client p, then client
//! P + p); node 1 and node 2 each get client p's setup and input, then client P + p's setup
//! and input (both receive the corrections; [`vtwin_mpc::input`]). Sizes: setup 38 + 64
//! bytes to node 0, 38 + 32 to nodes 1 and 2 per client; inputs, to node 1 and to node 2
//! each, 38 + 16 (2 B K + B |T_p| (+ B flags for party 0)) and 38 + 16 d bytes. Cost: two
//! PRG expansions of the input lengths.

use rand_core::{CryptoRng, RngCore};
use vtwin_mpc::gradient::{upload_messages, InputBounds, PlainUpload};
use vtwin_mpc::{InputClient, InputError, Message, Peer, SessionId};

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
    /// The party's messages by addressee node (module docs for the draw order and sizes):
    /// `upload` checked against `bounds` and shared as client p, `noise` (d ring elements in
    /// canonical order) as client P + p, seeds from `client_rng` (a CSPRNG, e.g.
    /// [`crate::SecretRandomness::party`]). Errors: [`ShardError`]; nothing is shared then.
    pub fn shard<R: RngCore + CryptoRng>(
        &self,
        upload: &PlainUpload,
        bounds: InputBounds,
        noise: &[u128],
        dim: usize,
        client_rng: &mut R,
    ) -> Result<[Vec<Message>; 3], ShardError> {
        if noise.len() != dim {
            return Err(ShardError::NoiseLength {
                got: noise.len(),
                want: dim,
            });
        }
        let (mut data_client, data_setup) =
            InputClient::new(self.index as u16, self.session, client_rng);
        let data_input = upload_messages(&mut data_client, upload, bounds)?;
        // The noise contributor's seeds come after the data client's.
        let (mut noise_client, noise_setup) =
            InputClient::new((self.parties + self.index) as u16, self.session, client_rng);
        let noise_input = noise_client.share_raw(noise);
        let mut out: [Vec<Message>; 3] = Default::default();
        for m in data_setup
            .into_iter()
            .chain(data_input)
            .chain(noise_setup)
            .chain(noise_input)
        {
            let Peer::Node(n) = m.to else {
                return Err(ShardError::Misaddressed { to: m.to });
            };
            out[n.index()].push(m);
        }
        Ok(out)
    }
}
