//! The compute node's side of the protocol ([`NodeSession`]), sans-IO.
//!
//! Per iteration t (session s_t), driven by frames:
//! 1. `Start { public, terms }` from the coordinator, for a session attempt this node has
//!    never started (a repeated one is refused: uploads are computed on once), drops any older
//!    session and checks the terms against the node's own [`NodePolicy`] (sigma at least its
//!    floor, nominal clip C at most its cap) and the circuit: K as announced, one noise
//!    contributor per party, and the bounds the clip's proof assumes of the public side
//!    ([`vtwin_iteration::public_bounds::check`]: the circuit clip is the one derived from C,
//!    weights in [0, 1], score maps within their public bounds). A session outside them is
//!    refused (`Failed`, nothing started). Then it opens s_t: the node draws an ephemeral X25519 key
//!    from `randomness.node(i, t)` ([`vtwin_iteration::node::ephemeral_key`]) and sends
//!    `NodeKey` to the two other nodes, with its [`start_digest`] of the `Start`: a `NodeKey`
//!    whose digest differs (the coordinator sent the nodes different public sides) is an
//!    error.
//! 2. With the three ephemeral publics it builds its program of the iteration
//!    ([`vtwin_iteration::node::program`]: the pairwise seeds, then receive the inputs, the
//!    gradient circuit, reveal G + Z to the coordinator's client P + m).
//! 3. `Upload { part, sealed, certificate, signature, expires }` from party p, on the party's own
//!    link (the TLS-authenticated role says which party it is), twice per session: part 0
//!    (what the circuit's first layers need) and part 1 (T_p and the noise, which the circuit
//!    takes only at its `M_p` layer, so the circuit starts on part 0 while part 1 travels;
//!    [`UploadPart`]). The party's signature of the blob's sealing channel
//!    ([`crate::upload::channel_statement`]: p, i, the channel's key, this node's seal key
//!    and the expiry, which must be at most `upload::CHANNEL_MAX_AHEAD_SECS` ahead of the
//!    node's clock and not past) must verify under a certificate of the consortium CA naming
//!    party p, once per channel (the node keeps the channels it verified while the
//!    signature and the certificate hold); then the blob is unsealed with the
//!    node's long-term seal key (AAD (s_t, t, p, i)), which authenticates it, and decoded
//!    ([`crate::upload::SealedInputs`], read in place); it must name this attempt and the
//!    part it came as; the sigma and clip the
//!    party says it noised with must equal the session's terms (so a coordinator cannot tell
//!    a party a smaller noise than it tells the nodes), and every inner message is checked:
//!    session s_t, addressed to this node, from client p (data) or P + p (noise) only.
//!    The party's statement of its score map must be the session's map for that party
//!    ([`crate::upload::map_statement`]: its clip inputs bound the scores the circuit forms).
//!    Anything else is an error. A second upload of the same part from the same party, or a
//!    part other than 0 and 1, is an error. The plaintext (PRG seeds) is zeroized once
//!    decoded. A party's lost link drops the session only while a part of its upload is
//!    still missing.
//! 4. `Mpc` frames from node j carry one encoded vtwin-mpc message whose sender must be node
//!    j (the TLS-authenticated role). Messages of the node's program to node j go out as
//!    `Mpc` frames to node j, the opening shares to the coordinator.
//!
//! Sessions are told apart by (session id, the coordinator's attempt id): with insecure test
//! seeds a resumed job reuses session ids, and only the attempt separates its frames from an
//! earlier attempt's. Frames for a session attempt that has not started here yet (a faster
//! node's `NodeKey`, or its first MPC messages before this node has all keys) are buffered, at
//! most [`EARLY_FRAMES`] frames and [`EARLY_BYTES`] bytes (the oldest are dropped beyond);
//! a party's upload that comes before `Start` waits apart, its newest of each part only,
//! within [`EARLY_UPLOAD_BYTES_PER_PARTY`] per party and [`EARLY_UPLOAD_BYTES`] for all
//! parties (one that does not fit is dropped), so that no party can push the nodes' frames out. A party's frame is never the session's end unless it
//! is an upload of the session, of its iteration, from one of its parties, that fails a
//! check: anything else from a party link is logged and dropped.
//! Frames of a session attempt that was aborted or finished here are dropped. `Abort` drops the session's state; the node keeps
//! serving and the next `Start` opens a new session.
//!
//! Any error in a session drops it and sends `Failed { reason }` to the coordinator (which
//! aborts the iteration); the error is returned in [`NodeOutput::error`] for the log.

use std::collections::{BTreeMap, HashSet, VecDeque};

use crate::config::NodePolicy;
use sha2::{Digest, Sha256};
use vtwin_iteration::node::{ephemeral_key, program};
use vtwin_iteration::SecretRandomness;
use vtwin_mpc::gradient::CircuitPublic;
use vtwin_mpc::{Counters, Message, Node, NodeId, NodeKey, Peer, SessionId};
use vtwin_net::relay_signature::{Purpose, RelaySignature, RelayVerifier};
use vtwin_net::{unseal_owned, Body, Frame, JobTerms, Role, SealContext, SealKey, WirePublic};

use crate::error::LinkLoss;
use crate::outgoing::{body_kind, frame, Attempt, Outgoing};
use crate::upload::{
    channel_statement, expiry_acceptable, map_statement, unix_now, SealedInputsView, UploadPart,
    CHANNEL_MAX_AHEAD_SECS,
};
use crate::verified_channels::{kept_until, VerifiedChannels};
use vtwin_host::error_chain::Chain;

/// Most frames of fellow nodes buffered for sessions not started yet.
pub const EARLY_FRAMES: usize = 256;
/// Most bytes (bodies) of fellow nodes' frames buffered for sessions not started yet.
pub const EARLY_BYTES: usize = 256 << 20;
/// Most bytes (whole bodies) of parties' uploads buffered for sessions not started yet, one
/// upload per party and part (its newest), at most [`EARLY_UPLOAD_BYTES_PER_PARTY`] of one
/// party; an upload that does not fit is dropped. Apart from the
/// nodes' bound, so that no party can push a fellow node's early frames out.
pub const EARLY_UPLOAD_BYTES: usize = 256 << 20;
/// Most bytes of one party's early uploads (both parts together): one frame's limit, so that
/// filling [`EARLY_UPLOAD_BYTES`] takes four parties' certificates, as when each party sent
/// one upload.
pub const EARLY_UPLOAD_BYTES_PER_PARTY: usize = vtwin_net::frame::MAX_FRAME_BYTES;
/// How many finished or aborted sessions a node remembers (to drop their late frames).
const CLOSED_SESSIONS: usize = 8;

/// Why a node dropped its session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// A frame from a peer that may not send it, or of a kind a node never receives.
    #[error("{node}: unexpected {kind} from {from}")]
    Unexpected {
        /// This node.
        node: NodeId,
        /// The sender.
        from: Role,
        /// The body kind.
        kind: &'static str,
    },
    /// The coordinator's public circuit parameters are inconsistent, or its terms are
    /// outside the node's policy.
    #[error("{node}: bad Start for iteration {iteration}")]
    BadStart {
        /// This node.
        node: NodeId,
        /// The iteration.
        iteration: u64,
        /// Why.
        #[source]
        fault: StartFault,
    },
    /// A party's upload did not unseal, decode or check.
    #[error("{node}: upload of party {party}")]
    BadUpload {
        /// This node.
        node: NodeId,
        /// The party.
        party: u16,
        /// Why.
        #[source]
        fault: UploadFault,
    },
    /// An MPC message or node key that did not decode or check.
    #[error("{node}: bad {kind} from {from}")]
    BadMessage {
        /// This node.
        node: NodeId,
        /// The sender.
        from: Role,
        /// The body kind.
        kind: &'static str,
        /// Why.
        #[source]
        fault: MessageFault,
    },
    /// The MPC program failed.
    #[error("{node}: mpc")]
    Mpc {
        /// This node.
        node: NodeId,
        /// The cause.
        #[source]
        source: vtwin_mpc::MpcError,
    },
    /// The driver lost the link to a peer during a session.
    #[error("{node}: lost the link to {peer}")]
    LinkLost {
        /// This node.
        node: NodeId,
        /// The peer.
        peer: Role,
        /// Why.
        #[source]
        cause: LinkLoss,
    },
}

/// What is wrong with a `Start` ([`NodeError::BadStart`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartFault {
    /// The public circuit parameters are inconsistent.
    #[error("its public circuit parameters")]
    Public(#[source] vtwin_net::frame::PublicError),
    /// The public circuit parameters are outside the bounds the clip's proof assumes.
    #[error("its public circuit parameters are outside the clip proof's bounds")]
    Bounds(#[source] vtwin_iteration::public_bounds::BoundsError),
    /// The noise multiplier is below the node's floor (or not finite).
    #[error("sigma {sigma} is below this node's floor {floor}")]
    Sigma {
        /// The terms' sigma.
        sigma: f64,
        /// The policy's floor.
        floor: f64,
    },
    /// The nominal clip is above the node's cap (or not positive).
    #[error("clip {clip} is above this node's cap {cap} (or not positive)")]
    Clip {
        /// The terms' clip.
        clip: f64,
        /// The policy's cap.
        cap: f64,
    },
    /// The `Start` does not re-encode (for its digest).
    #[error("it does not re-encode")]
    Encoding,
    /// A session attempt this node has already started.
    #[error("it repeats a session attempt this node has already started")]
    Repeated,
    /// The terms announce another number of components than the circuit has.
    #[error("terms announce {terms} components, the circuit has {circuit}")]
    Components {
        /// The terms' K.
        terms: u32,
        /// The circuit's K.
        circuit: usize,
    },
    /// The noise contributors are not the parties (or there is no party).
    #[error(
        "{contributors} noise contributors for {parties} parties (each party contributes its own share)"
    )]
    NoiseContributors {
        /// The circuit's noise contributors.
        contributors: usize,
        /// Its parties.
        parties: usize,
    },
}

/// What is wrong with a party's upload ([`NodeError::BadUpload`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UploadFault {
    /// A second upload of the same part by the party in one session.
    #[error("part {0:?} sent twice")]
    Twice(UploadPart),
    /// An upload part other than 0 and 1.
    #[error("part {0}: no such part")]
    Part(u8),
    /// The signature of the blob's sealing channel does not verify (forged, changed on the
    /// way, or the blob sealed on another channel).
    #[error("its channel's signature does not verify")]
    Signature(#[source] vtwin_net::relay_signature::RelaySignatureError),
    /// The blob's channel is signed by another role than the party whose link it came on.
    #[error("its channel is signed by {0}, not by the party that sent it")]
    Signer(Role),
    /// The channel's signature lapses outside what this node accepts: before its clock, or
    /// more than `upload::CHANNEL_MAX_AHEAD_SECS` after it.
    #[error("its channel's signature expires at {expires} (Unix seconds), outside {now} to {now} + {ahead} by this node's clock")]
    ChannelExpiry {
        /// The channel's expiry.
        expires: u64,
        /// The node's clock.
        now: u64,
        /// The latest expiry accepted past it.
        ahead: u64,
    },
    /// The blob was sealed in answer to another attempt, or as the other part.
    #[error(
        "it was sealed for attempt {attempt} as part {part}, not for this attempt as part {want}"
    )]
    Answers {
        /// The attempt it names (hex).
        attempt: String,
        /// The part it names.
        part: u8,
        /// The part it came as.
        want: u8,
    },
    /// The blob did not unseal.
    #[error("does not unseal")]
    Unseal(#[source] vtwin_net::SealError),
    /// The plaintext is not sealed inputs.
    #[error("not sealed inputs")]
    Decode(#[source] postcard::Error),
    /// The noise share was drawn for other terms.
    #[error("its noise share was drawn for another sigma or clip than this session's terms")]
    Terms,
    /// The party trains on other rows than the session's terms name.
    #[error("it trains on other rows than this session's terms name")]
    Rows,
    /// The party was asked for another batch than a party before it.
    #[error("it was asked for another batch than the other parties")]
    Batch,
    /// The party computed its score roots with another score map than the session's circuit
    /// applies (another theta, or a schema that models a column differently).
    #[error("its score roots were computed with another score map than this session's (another theta or another schema)")]
    Maps,
    /// Message `index` of the upload does not decode.
    #[error("message {index}: not an MPC message")]
    MessageDecode {
        /// The message's position.
        index: usize,
        /// The cause.
        #[source]
        source: vtwin_mpc::WireError,
    },
    /// Message `index` belongs to another session.
    #[error("message {index}: another session")]
    OtherSession {
        /// The message's position.
        index: usize,
    },
    /// Message `index` is addressed to another peer.
    #[error("message {index}: addressed to {to}")]
    Addressee {
        /// The message's position.
        index: usize,
        /// Its addressee.
        to: Peer,
    },
    /// Message `index` is from a client that is not the party's.
    #[error("message {index}: from {from}, not this party's clients")]
    Sender {
        /// The message's position.
        index: usize,
        /// Its sender.
        from: Peer,
    },
}

/// What is wrong with a node's message ([`NodeError::BadMessage`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MessageFault {
    /// A frame of another iteration than the session's.
    #[error("iteration {got} in the session of iteration {session}")]
    Iteration {
        /// The frame's iteration.
        got: u64,
        /// The session's.
        session: u64,
    },
    /// A second node key from the same node in one session.
    #[error("second node key in one session")]
    SecondKey,
    /// The other node was started with another public side, terms or attempt.
    #[error("the other node was started with another public side or terms than this node")]
    OtherStart,
    /// The message does not decode.
    #[error("not an MPC message")]
    Decode(#[source] vtwin_mpc::WireError),
    /// The sender's node index is not a node.
    #[error("no node {0}")]
    NoSuchNode(u8),
    /// The message's inner sender is not the link's peer.
    #[error("inner sender {0} differs from the link's peer")]
    InnerSender(Peer),
}

/// What one input produced.
#[derive(Debug, Default)]
pub struct NodeOutput {
    /// Frames to send.
    pub send: Vec<Outgoing>,
    /// The session's program finished in this step (its counters).
    pub finished: Option<(u64, Counters)>,
    /// The session failed and was dropped (a `Failed` frame is in `send`).
    pub error: Option<NodeError>,
    /// The iteration of the session still open after this step, if any.
    pub open: Option<u64>,
}

struct Active {
    session: SessionId,
    at: Attempt,
    iteration: u64,
    public: CircuitPublic,
    terms: JobTerms,
    key: NodeKey,
    /// This node's [`start_digest`] of the session's `Start`.
    start: [u8; 32],
    publics: [Option<[u8; 32]>; 3],
    node: Option<Node<Counters>>,
    /// Messages that arrived before the node existed (uploads, MPC), in order.
    pending: Vec<Message>,
    /// Per party, the parts of its upload that arrived ([`UploadPart`] order).
    uploaded: Vec<[bool; 2]>,
    /// The batch statement of the first party's upload (every other party's must equal it).
    batch: Option<[u8; 32]>,
    /// Per party, the [`map_statement`] of its map in `public`, once computed (both parts
    /// of its upload are checked against it).
    maps: Vec<Option<[u8; 32]>>,
}

/// The compute-node state machine (module docs).
pub struct NodeSession {
    id: NodeId,
    seal_key: SealKey,
    verifier: RelayVerifier,
    policy: NodePolicy,
    randomness: SecretRandomness,
    active: Option<Active>,
    early: VecDeque<(Role, Frame)>,
    early_bytes: usize,
    /// Each party's newest upload of each part for a session not started yet (at most two
    /// per party: their bytes are summed when one arrives).
    early_uploads: BTreeMap<(Role, u8), Frame>,
    closed: VecDeque<Attempt>,
    /// The sealing channels whose party signature this node has verified, with their party
    /// and until when they hold: a later blob on a kept channel from the same party's link
    /// skips the signature check, and its unsealing authenticates it (only the party and
    /// this node hold the channel's secret).
    channels: VerifiedChannels,
    /// The wall clock (Unix seconds) channel expiries are checked against
    /// ([`NodeSession::set_clock`]).
    clock: fn() -> u64,
    /// Every session attempt this node has started (after its checks passed), for the
    /// process's lifetime, one entry per started session: a second `Start` of one is refused,
    /// so the parties' uploads, which are bound to their attempt, are never computed on twice
    /// by this process (two openings of the same inputs and noise under different public
    /// sides would let the noise cancel). Not persisted: a restarted node forgets it.
    started: HashSet<Attempt>,
}

impl std::fmt::Debug for NodeSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeSession")
            .field("id", &self.id)
            .field("iteration", &self.active.as_ref().map(|a| a.iteration))
            .finish_non_exhaustive()
    }
}

/// Approximate size of a body, for the early buffer's bound.
fn body_bytes(b: &Body) -> usize {
    match b {
        Body::Mpc { message } => message.len(),
        Body::Upload {
            sealed,
            certificate,
            signature,
            ..
        } => 1 + sealed.len() + certificate.len() + signature.len(),
        _ => 64,
    }
}

impl NodeSession {
    /// Node `id` with its long-term seal key, the verifier of the parties' channel signatures
    /// (trusting the consortium CA), its policy and the source of its ephemeral keys.
    pub fn new(
        id: NodeId,
        seal_key: SealKey,
        verifier: RelayVerifier,
        policy: NodePolicy,
        randomness: SecretRandomness,
    ) -> NodeSession {
        NodeSession {
            id,
            seal_key,
            verifier,
            policy,
            randomness,
            active: None,
            early: VecDeque::new(),
            early_bytes: 0,
            early_uploads: BTreeMap::new(),
            closed: VecDeque::new(),
            channels: VerifiedChannels::default(),
            clock: unix_now,
            started: HashSet::new(),
        }
    }

    /// This node's role.
    pub fn role(&self) -> Role {
        Role::Node(self.id.index() as u8)
    }

    /// Sets the wall clock (Unix seconds) the parties' channel expiries and certificates are
    /// checked against: a test hook (reachable only from code linked into the process);
    /// services keep [`crate::upload::unix_now`].
    pub fn set_clock(&mut self, clock: fn() -> u64) {
        self.clock = clock;
    }

    /// The iteration of the open session, if any.
    pub fn iteration(&self) -> Option<u64> {
        self.active.as_ref().map(|a| a.iteration)
    }

    /// Frames buffered for sessions not started yet.
    pub fn early_frames(&self) -> usize {
        self.early.len() + self.early_uploads.len()
    }

    /// Handles one frame from `from` (the TLS-authenticated role).
    pub fn handle(&mut self, from: Role, f: Frame) -> NodeOutput {
        let mut out = NodeOutput::default();
        if let Err(e) = self.dispatch(from, f, &mut out) {
            self.fail(e, &mut out);
        }
        out.open = self.iteration();
        out
    }

    /// The driver lost its link to `peer`: a session in progress that still needs the peer
    /// (a fellow node, or a party whose upload has not arrived) cannot finish, so it is
    /// dropped and reported. Other losses are only logged by the driver.
    pub fn link_lost(&mut self, peer: Role, cause: LinkLoss) -> NodeOutput {
        let mut out = NodeOutput::default();
        let needed = self.active.as_ref().is_some_and(|a| match peer {
            Role::Node(_) => true,
            // A party past its upload, or one the session does not have, is not waited for.
            Role::Party(p) => a
                .uploaded
                .get(usize::from(p))
                .is_some_and(|done| done.contains(&false)),
            Role::Coordinator => false,
        });
        if needed {
            let e = NodeError::LinkLost {
                node: self.id,
                peer,
                cause,
            };
            self.fail(e, &mut out);
        }
        out.open = self.iteration();
        out
    }

    fn fail(&mut self, e: NodeError, out: &mut NodeOutput) {
        let (at, iteration) = self
            .active
            .as_ref()
            .map_or((Attempt::NONE, 0), |a| (a.at, a.iteration));
        self.close();
        // A lost link names the lost peer, so the coordinator blames it and not this node.
        let body = match &e {
            NodeError::LinkLost { peer, .. } => Body::LinkLost { peer: *peer },
            // The whole chain: the coordinator sees only this text.
            _ => Body::Failed {
                reason: Chain(&e).to_string(),
            },
        };
        out.send.push(Outgoing {
            to: Role::Coordinator,
            frame: frame(self.role(), at, iteration, 0, body),
        });
        out.error = Some(e);
    }

    fn close(&mut self) {
        if let Some(a) = self.active.take() {
            self.closed.push_back(a.at);
            if self.closed.len() > CLOSED_SESSIONS {
                self.closed.pop_front();
            }
        }
    }

    fn unexpected(&self, from: Role, body: &Body) -> NodeError {
        NodeError::Unexpected {
            node: self.id,
            from,
            kind: body_kind(body),
        }
    }

    fn dispatch(&mut self, from: Role, f: Frame, out: &mut NodeOutput) -> Result<(), NodeError> {
        match (&f.body, from) {
            (Body::Start { .. }, Role::Coordinator) => self.start(f, out),
            (Body::Abort { reason }, Role::Coordinator) => {
                let at = Attempt::of(&f);
                if let Some(a) = self.active.as_ref().filter(|a| a.at == at) {
                    // The coordinator cannot see which uploads reached the nodes: say it here.
                    let missing: Vec<usize> = (0..a.uploaded.len())
                        .filter(|&p| a.uploaded[p].contains(&false))
                        .collect();
                    tracing::info!(node = %self.id, iteration = f.iteration, "aborted: {reason} (parties whose upload had not all arrived: {missing:?})");
                    self.close();
                }
                // An abort also voids anything buffered for that session.
                self.early.retain(|(_, e)| Attempt::of(e) != at);
                self.early_uploads.retain(|_, e| Attempt::of(e) != at);
                self.recount_early();
                Ok(())
            }
            (Body::Upload { .. }, Role::Party(_))
            | (Body::NodeKey { .. } | Body::Mpc { .. }, Role::Node(_)) => {
                if from == self.role() {
                    return Err(self.unexpected(from, &f.body));
                }
                let at = Attempt::of(&f);
                match &self.active {
                    Some(a) if a.at == at => self.in_session(from, f, out),
                    _ if self.closed.contains(&at) => {
                        tracing::debug!(node = %self.id, %from, "dropped a late {} of a closed session", body_kind(&f.body));
                        Ok(())
                    }
                    _ => {
                        self.buffer_early(from, f);
                        Ok(())
                    }
                }
            }
            // A party may send uploads only: anything else is its own misstep, logged and
            // dropped, never the session's end (any certified party can reach a node).
            (body, Role::Party(_)) => {
                tracing::warn!(node = %self.id, %from, "dropped a {} from a party", body_kind(body));
                Ok(())
            }
            _ => Err(self.unexpected(from, &f.body)),
        }
    }

    fn recount_early(&mut self) {
        self.early_bytes = self.early.iter().map(|(_, f)| body_bytes(&f.body)).sum();
    }

    fn buffer_early(&mut self, from: Role, f: Frame) {
        if matches!(from, Role::Party(_)) {
            // The newest upload of each party and part, in a budget of the parties' own; a
            // part that does not exist would be refused, so it takes no slot.
            let size = body_bytes(&f.body);
            let key = (from, upload_part_byte(&f.body));
            if UploadPart::from_wire(key.1).is_none() {
                tracing::warn!(node = %self.id, %from, part = key.1, "dropped an early upload of no such part");
                return;
            }
            self.early_uploads.remove(&key);
            let (mut all, mut own) = (0, 0);
            for ((who, _), e) in &self.early_uploads {
                let bytes = body_bytes(&e.body);
                all += bytes;
                own += if *who == from { bytes } else { 0 };
            }
            if all + size > EARLY_UPLOAD_BYTES || own + size > EARLY_UPLOAD_BYTES_PER_PARTY {
                tracing::warn!(node = %self.id, %from, bytes = size, "early uploads full: dropped this party's upload");
                return;
            }
            self.early_uploads.insert(key, f);
            return;
        }
        self.early_bytes += body_bytes(&f.body);
        self.early.push_back((from, f));
        while self.early.len() > EARLY_FRAMES || self.early_bytes > EARLY_BYTES {
            if let Some((who, old)) = self.early.pop_front() {
                tracing::warn!(node = %self.id, from = %who, "early buffer full: dropped a {}", body_kind(&old.body));
                self.early_bytes -= body_bytes(&old.body);
            }
        }
    }

    fn start(&mut self, f: Frame, out: &mut NodeOutput) -> Result<(), NodeError> {
        let at = Attempt::of(&f);
        let Body::Start { public, terms } = f.body else {
            return Ok(());
        };
        let (t, node) = (f.iteration, self.id);
        let bad = |fault: StartFault| NodeError::BadStart {
            node,
            iteration: t,
            fault,
        };
        if self.started.contains(&at) {
            return Err(bad(StartFault::Repeated));
        }
        self.close();
        let digest = start_digest(&public, &terms, at, t).ok_or(bad(StartFault::Encoding))?;
        let public = CircuitPublic::try_from(public).map_err(|e| bad(StartFault::Public(e)))?;
        check_terms(&self.policy, &terms, &public).map_err(bad)?;
        let parties = public.parties.len();
        if public.noise_contributors != parties || parties == 0 {
            return Err(bad(StartFault::NoiseContributors {
                contributors: public.noise_contributors,
                parties,
            }));
        }
        // Only a session that passed every check is remembered (refused ones cost nothing).
        self.started.insert(at);
        let key = ephemeral_key(&self.randomness, self.id, t);
        let mine = key.public();
        let mut publics = [None; 3];
        publics[self.id.index()] = Some(mine);
        self.active = Some(Active {
            session: SessionId(f.session),
            at,
            iteration: t,
            public,
            terms,
            key,
            start: digest,
            publics,
            node: None,
            pending: Vec::new(),
            uploaded: vec![[false; 2]; parties],
            batch: None,
            maps: vec![None; parties],
        });
        tracing::debug!(node = %self.id, iteration = t, "session started");
        for other in NodeId::ALL.into_iter().filter(|n| *n != self.id) {
            out.send.push(Outgoing {
                to: Role::Node(other.index() as u8),
                frame: frame(
                    self.role(),
                    at,
                    t,
                    0,
                    Body::NodeKey {
                        public: mine,
                        start: digest,
                    },
                ),
            });
        }
        // Replay what arrived early for this session, in arrival order. Frames of other
        // attempts stay buffered even if this session fails or ends on one of its own
        // (whose remaining early frames are then dropped).
        let early = std::mem::take(&mut self.early);
        let uploads = std::mem::take(&mut self.early_uploads);
        let mut result = Ok(());
        let uploads = uploads.into_iter().map(|((who, _), e)| (who, e));
        for (who, e) in early.into_iter().chain(uploads) {
            if Attempt::of(&e) != at {
                if matches!(who, Role::Party(_)) {
                    self.early_uploads
                        .insert((who, upload_part_byte(&e.body)), e);
                } else {
                    self.early.push_back((who, e));
                }
            } else if result.is_ok() && self.active.is_some() {
                result = self.in_session(who, e, out);
            }
        }
        self.recount_early();
        result
    }

    fn in_session(&mut self, from: Role, f: Frame, out: &mut NodeOutput) -> Result<(), NodeError> {
        let id = self.id;
        let Some(a) = self.active.as_mut() else {
            return Ok(());
        };
        let bad_message = |kind: &'static str, fault: MessageFault| NodeError::BadMessage {
            node: id,
            from,
            kind,
            fault,
        };
        // Any certified party may connect: a party outside the session, or an upload of
        // another iteration (which its sealing context would not open for), is dropped, not the
        // session.
        if let Role::Party(p) = from {
            if usize::from(p) >= a.uploaded.len() || f.iteration != a.iteration {
                tracing::warn!(node = %id, %from, iteration = f.iteration, "dropped an Upload outside the session");
                return Ok(());
            }
        }
        if f.iteration != a.iteration {
            return Err(bad_message(
                body_kind(&f.body),
                MessageFault::Iteration {
                    got: f.iteration,
                    session: a.iteration,
                },
            ));
        }
        let msgs: Vec<Message> = match (f.body, from) {
            (Body::NodeKey { public, start }, Role::Node(j)) => {
                // One public side for the three nodes: a coordinator that sent them different
                // weights would make the shares of `r - pi` inconsistent (a public constant
                // sits in a share two nodes hold) and the clip factor random.
                if start != a.start {
                    return Err(bad_message("NodeKey", MessageFault::OtherStart));
                }
                let slot = &mut a.publics[usize::from(j)];
                if slot.is_some() {
                    return Err(bad_message("NodeKey", MessageFault::SecondKey));
                }
                *slot = Some(public);
                Vec::new()
            }
            (Body::Mpc { message }, Role::Node(j)) => {
                let m = Message::decode(&message)
                    .map_err(|e| bad_message("Mpc", MessageFault::Decode(e)))?;
                let node = NodeId::new(j)
                    .ok_or_else(|| bad_message("Mpc", MessageFault::NoSuchNode(j)))?;
                if m.from != Peer::Node(node) {
                    return Err(bad_message("Mpc", MessageFault::InnerSender(m.from)));
                }
                vec![m]
            }
            (
                Body::Upload {
                    part,
                    sealed,
                    certificate,
                    signature,
                    expires,
                },
                Role::Party(party),
            ) => {
                let bad = |fault: UploadFault| NodeError::BadUpload {
                    node: id,
                    party,
                    fault,
                };
                let parties = a.public.parties.len();
                let p = usize::from(party);
                let part = UploadPart::from_wire(part).ok_or(bad(UploadFault::Part(part)))?;
                if std::mem::replace(&mut a.uploaded[p][part as usize], true) {
                    return Err(bad(UploadFault::Twice(part)));
                }
                // The blob's channel must be signed by the party whose link it came on
                // (sealing alone is anonymous), verified once per channel; the unsealing then
                // authenticates the blob, and what it answers is inside it.
                let channel = vtwin_net::seal::channel_of(&sealed).ok_or_else(|| {
                    bad(UploadFault::Unseal(vtwin_net::SealError::TooShort {
                        len: sealed.len(),
                    }))
                })?;
                let now = (self.clock)();
                let mut keep_until = None;
                if !self.channels.holds(&channel, party, now) {
                    if !expiry_acceptable(expires, now) {
                        return Err(bad(UploadFault::ChannelExpiry {
                            expires,
                            now,
                            ahead: CHANNEL_MAX_AHEAD_SECS,
                        }));
                    }
                    let statement = channel_statement(
                        party,
                        id.index() as u8,
                        &channel,
                        &self.seal_key.public(),
                        expires,
                    );
                    let signed = RelaySignature {
                        certificate,
                        signature,
                    };
                    // The certificate's window is judged at the same reading as the expiry.
                    let at = rustls::pki_types::UnixTime::since_unix_epoch(
                        std::time::Duration::from_secs(now),
                    );
                    match self
                        .verifier
                        .verify_at(Purpose::Channel, &statement, &signed, at)
                    {
                        Ok(signer) if signer == Role::Party(party) => {}
                        Ok(signer) => return Err(bad(UploadFault::Signer(signer))),
                        Err(e) => return Err(bad(UploadFault::Signature(e))),
                    }
                    keep_until = kept_until(expires, &signed.certificate);
                }
                let ctx = SealContext {
                    session: a.session.0,
                    iteration: a.iteration,
                    party,
                    node: id.index() as u8,
                };
                let plain = unseal_owned(&self.seal_key, &ctx, sealed)
                    .map_err(|e| bad(UploadFault::Unseal(e)))?;
                if let Some(until) = keep_until {
                    self.channels.keep(channel, party, until, now);
                }
                // Borrowed from `plain`, which is zeroized on drop (after the messages are
                // decoded below).
                let inputs: SealedInputsView<'_> =
                    postcard::from_bytes(&plain).map_err(|e| bad(UploadFault::Decode(e)))?;
                tracing::debug!(node = %id, party, ?part, "inputs unsealed");
                if inputs.attempt != a.at.attempt || inputs.part != part as u8 {
                    return Err(bad(UploadFault::Answers {
                        attempt: vtwin_net::seal::hex(&inputs.attempt),
                        part: inputs.part,
                        want: part as u8,
                    }));
                }
                if inputs.sigma.to_bits() != a.terms.sigma.to_bits()
                    || inputs.clip.to_bits() != a.terms.clip.to_bits()
                {
                    return Err(bad(UploadFault::Terms));
                }
                // One person, one record: every party trains on the announced rows and on
                // the same batch of them.
                if inputs.rows != a.terms.rows {
                    return Err(bad(UploadFault::Rows));
                }
                if *a.batch.get_or_insert(inputs.batch) != inputs.batch {
                    return Err(bad(UploadFault::Batch));
                }
                // The party's score roots bound the norm under its own map: it must be the
                // map this circuit applies, or the clip does not hold.
                let maps = *a.maps[p].get_or_insert_with(|| map_statement(&a.public.parties[p]));
                if inputs.maps != maps {
                    return Err(bad(UploadFault::Maps));
                }
                let allowed = [Peer::Client(party), Peer::Client((parties + p) as u16)];
                // A few messages per upload; a blob declaring millions of (empty) ones must not
                // reserve room for them before the first fails to decode.
                let mut msgs = Vec::with_capacity(inputs.messages.len().min(8));
                for (index, bytes) in inputs.messages.iter().enumerate() {
                    let m = Message::decode(bytes)
                        .map_err(|source| bad(UploadFault::MessageDecode { index, source }))?;
                    if m.session != a.session {
                        return Err(bad(UploadFault::OtherSession { index }));
                    }
                    if m.to != Peer::Node(id) {
                        return Err(bad(UploadFault::Addressee { index, to: m.to }));
                    }
                    if !allowed.contains(&m.from) {
                        return Err(bad(UploadFault::Sender {
                            index,
                            from: m.from,
                        }));
                    }
                    msgs.push(m);
                }
                msgs
            }
            (body, _) => {
                return Err(NodeError::Unexpected {
                    node: id,
                    from,
                    kind: body_kind(&body),
                })
            }
        };
        a.pending.extend(msgs);
        self.advance(out)
    }

    /// Builds the node once all keys are in, then feeds it every pending message.
    fn advance(&mut self, out: &mut NodeOutput) -> Result<(), NodeError> {
        let id = self.id;
        let mpc = |source| NodeError::Mpc { node: id, source };
        let Some(a) = self.active.as_mut() else {
            return Ok(());
        };
        if a.node.is_none() {
            let [Some(p0), Some(p1), Some(p2)] = a.publics else {
                return Ok(());
            };
            let mut node =
                program(id, &a.key, &[p0, p1, p2], a.session, a.public.clone()).map_err(mpc)?;
            let msgs = node.start().map_err(mpc)?;
            tracing::debug!(node = %id, "all node keys in; circuit started");
            a.node = Some(node);
            emit(id, a.at, a.iteration, msgs, &a.public, out)?;
        }
        let Some(node) = a.node.as_mut() else {
            return Ok(());
        };
        for m in std::mem::take(&mut a.pending) {
            tracing::trace!(node = %id, from = %m.from, step = m.step, "message");
            let msgs = node.handle(m).map_err(mpc)?;
            emit(id, a.at, a.iteration, msgs, &a.public, out)?;
        }
        if node.is_done() {
            let counters = node.counters();
            out.finished = Some((a.iteration, counters));
            tracing::debug!(node = %id, iteration = a.iteration, rounds = counters.rounds, "session finished");
            self.close();
        }
        Ok(())
    }
}

/// The part byte of an `Upload` body (0 for any other body: only uploads are keyed by it).
fn upload_part_byte(body: &Body) -> u8 {
    match body {
        Body::Upload { part, .. } => *part,
        _ => 0,
    }
}

/// SHA-256 over a domain tag, the session attempt, the iteration and the postcard encodings of
/// a `Start`'s public side and terms: what the three nodes of one session must have been
/// sent alike (they compare it in their `NodeKey`s). Public values only. Cost: one SHA-256
/// over the public side (about 32 d bytes).
/// `None` if either does not encode (they were just decoded from the same format, so never
/// in practice; the caller refuses the `Start` rather than compare a partial digest).
pub fn start_digest(
    public: &WirePublic,
    terms: &JobTerms,
    at: Attempt,
    t: u64,
) -> Option<[u8; 32]> {
    let mut h = Sha256::new();
    h.update(b"vtwin start digest v1\0");
    h.update(at.session);
    h.update(at.attempt);
    h.update(t.to_le_bytes());
    h.update(postcard::to_allocvec(public).ok()?);
    h.update(postcard::to_allocvec(terms).ok()?);
    Some(h.finalize().into())
}

/// Checks a session's terms against the node's policy and the circuit (module docs, step 1).
/// The fault names the term and the policy's bound.
fn check_terms(
    policy: &NodePolicy,
    terms: &JobTerms,
    public: &CircuitPublic,
) -> Result<(), StartFault> {
    // Written so that NaN fails every check.
    if !(terms.sigma >= policy.sigma && terms.sigma.is_finite()) {
        return Err(StartFault::Sigma {
            sigma: terms.sigma,
            floor: policy.sigma,
        });
    }
    if !(terms.clip > 0.0 && terms.clip <= policy.clip) {
        return Err(StartFault::Clip {
            clip: terms.clip,
            cap: policy.clip,
        });
    }
    if terms.components as usize != public.components {
        return Err(StartFault::Components {
            terms: terms.components,
            circuit: public.components,
        });
    }
    // The circuit clip (exactly the one derived from C), the weights and the maps.
    vtwin_iteration::public_bounds::check(public, terms.clip).map_err(StartFault::Bounds)
}

/// The node program's messages as frames: to another node, or the opening to the coordinator.
fn emit(
    id: NodeId,
    at: Attempt,
    iteration: u64,
    msgs: Vec<Message>,
    public: &CircuitPublic,
    out: &mut NodeOutput,
) -> Result<(), NodeError> {
    let me = Role::Node(id.index() as u8);
    for m in msgs {
        let to = match m.to {
            Peer::Node(n) => Role::Node(n.index() as u8),
            Peer::Client(c) if c == public.coordinator() => Role::Coordinator,
            Peer::Client(c) => {
                return Err(NodeError::Mpc {
                    node: id,
                    source: vtwin_mpc::MpcError::UnknownPeer {
                        from: Peer::Client(c),
                    },
                })
            }
        };
        out.send.push(Outgoing {
            to,
            frame: frame(
                me,
                at,
                iteration,
                m.step,
                Body::Mpc {
                    message: m.encode(),
                },
            ),
        });
    }
    Ok(())
}
