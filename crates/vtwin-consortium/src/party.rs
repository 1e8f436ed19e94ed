//! The party's side of the protocol ([`PartyResponder`]), sans-IO.
//!
//! A party holds its own columns only (as sufficient statistics, [`PartyData`]) and answers
//! the coordinator:
//! - `Hello` -> `PartyInfo { rows, ids_digest }` (SHA-256 of its id column,
//!   [`vtwin_model::party_data::ids_digest`]), so
//!   the coordinator can check that every party holds the same individuals in the same order
//!   (a `Hello` starts a job: the party goes back to all of its own rows);
//! - `AlignStart { parties }` -> the party starts its role of the record alignment
//!   (vtwin-psi, `protocols/psi.md`) with its ids and fresh keys from the OS, and sends its
//!   first `Align` message; each `Align` it receives goes to that role, and its answers go
//!   back as `Align`. Every `Align` it sends is signed with its CA-certified key, and every
//!   one it receives must be signed by the party the message names as its sender
//!   ([`vtwin_net::relay_signature`]), so the coordinator that relays them can neither change
//!   nor forge them; an alignment session id is taken once per process. When the role finishes, the party keeps only its rows of the
//!   intersection, in the common order, and replies `PartyInfo` for them. Its ids never
//!   leave it; only blinded points travel (relayed by the coordinator);
//! - `Request { batch, theta, terms }` of iteration t in session s_t -> it checks the job's
//!   terms against its own [`PartyPolicy`] (sigma at least its floor, nominal clip at most its
//!   cap, its K, sample rate at most its cap, planned iterations at most its openings, delta
//!   at most its delta, t inside the plan, and the analyst's epsilon of the announced plan,
//!   by vtwin-dp's RDP accountant at (sigma, q, T, delta), at most its epsilon), then its
//!   budget against its own ledger ([`PartyLedger`]: uploads so far plus this one at most its
//!   openings, their epsilon at most its epsilon). Then it runs its local kernels on its
//!   batch and builds the vtwin-mpc input messages of its data client (p) and its noise
//!   client (P + p) ([`vtwin_model::party_upload::party_messages_with_noise`], client
//!   generator `randomness.party(p, t)`), encodes node i's messages with the noise terms it
//!   used ([`SealedInputs`]), in two parts per node ([`UploadPart`]: the circuit's first
//!   inputs, then T_p and the noise, which the nodes take only at the circuit's `M_p`
//!   layer; each part names the attempt it answers and its part); it seals part 0 to node
//!   i's long-term seal key with AAD (s_t, t, p, i) on its sealing channel to node i, which
//!   it signed for an hour at the job's start and signs anew every 30 minutes
//!   ([`crate::upload::channel_statement`];
//!   every upload on the channel carries that signature), records the upload in its ledger
//!   (synced to disk), and only then returns `Upload { part: 0, .. }` for each node i, to go
//!   over its own link to that node. The driver sends those, then calls
//!   [`PartyResponder::upload_rest`], which seals part 1 the same way and returns
//!   its uploads and `Uploaded` to the coordinator (which never carries a party's blobs).
//!   The circuit thus starts on part 0 while part 1 is sealed and travels. A term outside
//!   the policy, a spent budget or a value of its rows outside the public fixed-point ranges
//!   gives `Refused { refusal }`
//!   (typed: which check, which quantity, the public range; never a value) and nothing is
//!   shared or recorded;
//! - `Abort` -> nothing to send; like every frame, it drops a request's part 1 that the
//!   driver did not take with [`PartyResponder::upload_rest`] (a party keeps no other
//!   per-iteration state).
//!
//! The noise share is never sampled on the message path when the terms are as expected:
//! [`PartyResponder::prepare_noise`], which the driver calls after sending each reply (and
//! once at start), samples the share for the next request ahead of time (for the terms of
//! the last request, or the policy's sigma and clip before the first). A request with other
//! terms (or, with an insecure noise seed, another iteration than the next) samples its
//! share inline. With an insecure noise seed the share of (p, t) is the same either way.
//!
//! Only the coordinator may send to a party (the party dials the nodes, which only receive
//! from it); anything else is an error ([`PartyError`]), which a driver logs and reports with
//! `Failed` (its public summary, [`PartyError::public`]). The QUIC service drops a node's
//! frames before they reach the responder, so that no node can make a party report.
//!
//! Cost per request: the local kernels (O(B K |T_p|)), three input shares of 2 B K, B |T_p|
//! and d ring elements, six seals (one HKDF and AES-256-GCM over the blob each; once per job
//! three channels, two X25519 multiplications and one ECDSA signature each, made again
//! before their signatures lapse, `crate::upload::CHANNEL_LIFETIME_SECS`), one ledger append
//! with `fdatasync`; the budget check O(distinct noise levels x RDP orders) (the ledger keeps
//! each level's curve; the plan's epsilon is cached).

use rand::{SeedableRng, TryRngCore};
use rand_chacha::ChaCha20Rng;
use vtwin_host::wipe::WipedBytes;
use vtwin_model::backend::BackendError;
use vtwin_model::fixed_backend::Renormalise;
use vtwin_model::tempering::Tempering;

use crate::config::PartyPolicy;
use vtwin_data::Schema;
use vtwin_iteration::randomness::{seeded_noise_rng, SecretRandomness};
use vtwin_model::kernels::{compute_device, Device};
use vtwin_model::layout::Layout;
use vtwin_model::party_data::PartyData;
use vtwin_model::party_upload::{party_messages_with_noise, prepare_noise, PartyTask};
use vtwin_mpc::SessionId;
use vtwin_net::{
    Allowed, Body, Budget, Frame, JobTerms, Refusal, RelaySignature, RelaySigner, RelayVerifier,
    Role, SealChannel, SealContext, Term,
};
use zeroize::Zeroizing;

use crate::outgoing::{body_kind, frame, Attempt, Outgoing};
use crate::party_ledger::{batch_digest, LedgerFileError, PartyLedger, UploadRecord};
use crate::upload::{SealedInputs, UploadPart};
use vtwin_host::error_chain::Chain;
use vtwin_iteration::party::NodeMessages;
use vtwin_net::relay_signature::Purpose;

/// A `Request` batch entry that stands for a padding row: the coordinator sends the real
/// record indices (ascending), then this value up to the public batch size.
pub const PADDING_INDEX: u32 = u32::MAX;

/// Everything a party needs: its own data and the public parameters.
pub struct PartySetup {
    /// This party's index p in the layout (its role is `Role::Party(p)`).
    pub index: u16,
    /// The public schema (the layout is built for the K of each request).
    pub schema: Schema,
    /// The party's sufficient statistics, rows in id order.
    pub data: PartyData,
    /// The party's record ids, in the rows' order (they never leave the party: the
    /// coordinator sees their digest, the alignment only blinded points).
    pub ids: Vec<String>,
    /// The three nodes' long-term seal public keys, by node.
    pub node_seal_publics: [[u8; 32]; 3],
    /// Source of the party's client seeds; OS in production.
    pub randomness: SecretRandomness,
    /// Insecure noise seed (tests only: voids privacy); `None` draws noise from the OS.
    pub noise_seed: Option<u64>,
    /// Renormalisation of the local log-densities.
    pub renormalise: Renormalise,
    /// What the party agrees to (its config's `[policy]`).
    pub policy: PartyPolicy,
    /// Its TLS identity: the key signs its alignment messages, the CA verifies the other
    /// parties' (the certificate must name this party).
    pub identity: vtwin_net::pki::Identity,
    /// Longest an alignment may run at this party, from `AlignStart` (its config's
    /// `timeouts.iteration_ms`): after it the role and its keys are dropped, so a relay
    /// cannot complete a stalled run later (e.g. with another party's pre-restart messages).
    pub align_timeout: std::time::Duration,
    /// Its ledger of uploads (opened from its file, or in memory).
    pub ledger: PartyLedger,
}

impl std::fmt::Debug for PartySetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The data and the randomness are secret: never printed.
        f.debug_struct("PartySetup")
            .field("index", &self.index)
            .field("rows", &self.data.rows)
            .field("policy", &self.policy)
            .field("uploads", &self.ledger.uploads())
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
    #[error("party {party}: bad request for iteration {iteration}")]
    BadRequest {
        /// This party.
        party: u16,
        /// The iteration.
        iteration: u64,
        /// Why.
        #[source]
        fault: RequestFault,
    },
    /// The local computation failed for another reason than a range violation.
    #[error("party {party}: iteration {iteration}: the local computation failed")]
    Compute {
        /// This party.
        party: u16,
        /// The iteration.
        iteration: u64,
        /// The cause.
        source: BackendError,
    },
    /// The upload could not be recorded in the party's ledger (nothing was uploaded).
    #[error("party {party}: iteration {iteration}: its ledger could not be written")]
    Ledger {
        /// This party.
        party: u16,
        /// The iteration.
        iteration: u64,
        /// The cause.
        source: LedgerFileError,
    },
    /// The record alignment could not run or failed.
    #[error("party {party}: record alignment")]
    Align {
        /// This party.
        party: u16,
        /// The cause.
        #[source]
        source: AlignFailure,
    },
    /// The responder could not be set up (compute device, or a policy K the schema or the
    /// party's data do not fit).
    #[error("party {party}: not set up")]
    Setup {
        /// This party.
        party: u16,
        /// Why.
        #[source]
        fault: SetupFault,
    },
}

/// What is wrong with a request ([`PartyError::BadRequest`]); public values only.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestFault {
    /// Theta has another length than the layout's.
    #[error("theta has {got} values, the layout needs {want}")]
    ThetaLength {
        /// Its length.
        got: usize,
        /// The layout's dimension.
        want: usize,
    },
    /// A real batch index after the padding.
    #[error("batch index after padding at {0}")]
    AfterPadding(usize),
    /// A batch index beyond the party's rows.
    #[error("batch[{at}] = {row} but the party has {rows} rows")]
    Row {
        /// The position in the batch.
        at: usize,
        /// The index.
        row: u32,
        /// The party's row count (public: it reports it in `PartyInfo`).
        rows: usize,
    },
    /// Batch indices not strictly increasing.
    #[error("batch indices not strictly increasing at {0}")]
    NotIncreasing(usize),
    /// The terms' tempering schedule is out of range.
    #[error("job terms: {0}")]
    Tempering(#[from] vtwin_model::tempering::TemperingError),
    /// The batch does not fit its public padded size.
    #[error(transparent)]
    Batch(#[from] vtwin_model::party_data::BatchOverflow),
    /// The sealed inputs could not be encoded.
    #[error("encoding the sealed inputs")]
    Encoding(#[source] postcard::Error),
    /// The upload to one node is larger than one frame may be (both parts together: what
    /// a node keeps of a party's uploads that come before `Start`).
    #[error("the upload to node {node} has {bytes} bytes, more than the {limit} one node takes")]
    TooLarge {
        /// The node.
        node: usize,
        /// The messages' bytes, both parts.
        bytes: usize,
        /// [`UPLOAD_LIMIT`].
        limit: usize,
    },
    /// Sealing to a node failed.
    #[error("sealing to node {node}")]
    Seal {
        /// The node.
        node: usize,
        /// The cause.
        #[source]
        source: vtwin_net::SealError,
    },
    /// Signing a sealed blob failed.
    #[error("signing the upload to node {node}")]
    Sign {
        /// The node.
        node: usize,
        /// The cause.
        #[source]
        source: vtwin_net::relay_signature::RelaySignatureError,
    },
}

/// Why a responder could not be set up ([`PartyError::Setup`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupFault {
    /// The schema has no layout for the policy's K.
    #[error("policy.components = {components}")]
    Layout {
        /// The policy's K.
        components: usize,
        /// The cause.
        #[source]
        source: vtwin_model::layout::LayoutError,
    },
    /// The schema's width for this party differs from its data's.
    #[error("the schema does not match the party's data")]
    SchemaWidth,
    /// No compute device.
    #[error("no compute device")]
    Device(#[source] vtwin_model::kernels::KernelError),
    /// The TLS identity is another role's.
    #[error("the TLS certificate is for {found}")]
    Identity {
        /// The role the certificate names.
        found: Role,
    },
    /// The TLS key cannot sign alignment messages.
    #[error("the TLS key cannot sign alignment messages")]
    Signer(#[source] vtwin_net::RelaySignatureError),
}

impl PartyError {
    /// What the coordinator is told in `Failed`: the error without anything computed from
    /// the party's data (a local computation or ledger failure is named, its details stay in
    /// the party's own log).
    pub fn public(&self) -> String {
        match self {
            PartyError::Compute {
                party, iteration, ..
            } => format!("party {party}: iteration {iteration}: the local computation failed"),
            PartyError::Ledger {
                party, iteration, ..
            } => format!("party {party}: iteration {iteration}: its ledger could not be written"),
            PartyError::Setup { party, .. } => format!("party {party}: not set up"),
            // Positions in the party's own id list stay with the party.
            PartyError::Align {
                party,
                source: AlignFailure::Input(_),
            } => format!("party {party}: record alignment: its ids are unusable"),
            e @ PartyError::Align { .. } => Chain(e).to_string(),
            // Only public values: the sender and kind, or the request's own values and the
            // row count the party reports in PartyInfo.
            e @ (PartyError::Unexpected { .. } | PartyError::BadRequest { .. }) => {
                Chain(e).to_string()
            }
        }
    }
}

/// Why a party's part of the record alignment failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AlignFailure {
    /// The alignment is for another number of parties than the schema's.
    #[error("for {got} parties, the schema has {want}")]
    Parties {
        /// P announced.
        got: u16,
        /// P of the schema.
        want: usize,
    },
    /// An alignment message with no alignment running.
    #[error("no record alignment is running")]
    OutOfTurn,
    /// The party's policy does not take part in alignments (`policy.align = false`).
    #[error("refused by the party's policy (policy.align = false)")]
    NotAllowed,
    /// The party's set would not fit one frame.
    #[error("{ids} ids exceed the {max} one alignment frame can carry")]
    TooManyIds {
        /// The party's ids.
        ids: usize,
        /// The most one frame carries.
        max: usize,
    },
    /// The party's ids are unusable (empty, duplicated).
    #[error(transparent)]
    Input(vtwin_psi::InputError),
    /// A message broke the protocol.
    #[error(transparent)]
    Protocol(vtwin_psi::ProtocolError),
    /// A message did not decode.
    #[error(transparent)]
    Decode(vtwin_psi::DecodeError),
    /// A message's signature does not verify (changed or forged on the way).
    #[error("a message claiming to come from {claimed} is not signed by it")]
    Signature {
        /// The sender the message names.
        claimed: Role,
        /// Why the signature failed.
        #[source]
        source: vtwin_net::RelaySignatureError,
    },
    /// A message signed by another role than the sender it names.
    #[error("a message claiming to come from {claimed} is signed by {signer}")]
    Signer {
        /// The sender the message names.
        claimed: Role,
        /// The role whose certificate verifies the signature.
        signer: Role,
    },
    /// This party could not sign its message.
    #[error("signing an alignment message")]
    Sign(#[source] vtwin_net::RelaySignatureError),
    /// An alignment session id this process has already taken part in.
    #[error("the alignment session id was used before (a replay)")]
    SessionReused,
    /// The alignment ran past the party's deadline (its keys are dropped).
    #[error("the alignment ran longer than this party's {timeout:?} (timeouts.iteration_ms)")]
    Expired {
        /// The party's limit.
        timeout: std::time::Duration,
    },
}

/// The party's data before an alignment restricted it (restored when the next job starts),
/// and the digest of the aligned rows' tags that it reports.
struct Unaligned {
    data: PartyData,
    ids: Vec<String>,
    digest: [u8; 32],
}

/// Most ids a party may align: its blinded set (30 + 32 n bytes) must fit one frame, with
/// room for the frame's header.
pub const MAX_ALIGN_IDS: usize = (vtwin_net::frame::MAX_FRAME_BYTES - 4096) / 32;

/// The terms a prepared noise share was drawn for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NoiseKey {
    sigma: u64,
    clip: u64,
    /// The iteration, with an insecure noise seed (the share is a function of it); `None`
    /// with OS noise (any fresh share serves any iteration).
    iteration: Option<u64>,
}

struct Prepared {
    key: NoiseKey,
    z: Zeroizing<Vec<u128>>,
}

/// A sealing channel to one node with the party's signature of it (the certificate and
/// signature every `Upload` on the channel carries) and the signature's expiry (Unix
/// seconds).
struct SignedChannel {
    channel: SealChannel,
    signed: RelaySignature,
    expires: u64,
}

/// The party state machine (module docs).
pub struct PartyResponder {
    setup: PartySetup,
    layout: Layout,
    device: Device,
    seal_rng: ChaCha20Rng,
    /// The sealing channels to the three nodes for the current job, each with the party's
    /// signature of it (made at the job's first upload and again before the signatures
    /// lapse, dropped when a new job starts): one X25519 exchange and one ECDSA signature per
    /// node every 30 minutes of a job instead of per blob.
    seal_channels: Option<[SignedChannel; 3]>,
    /// The wall clock (Unix seconds) channel expiries are set by ([`PartyResponder::set_clock`]).
    clock: fn() -> u64,
    /// The noise share for the next request, sampled ahead of it.
    prepared: Option<Prepared>,
    /// The terms (and iteration) the next request is expected to have.
    next: NoiseKey,
    /// The last announced plan that passed the policy check.
    accepted: Option<JobTerms>,
    /// This party's role in a running record alignment, and when it expires.
    aligning: Option<(vtwin_psi::Party, std::time::Instant)>,
    /// The digest of the rows it trains on now (`PartyInfo`'s), once computed.
    rows_digest: Option<[u8; 32]>,
    /// All of the party's rows while a job uses the aligned ones.
    unaligned: Option<Unaligned>,
    /// Signs this party's alignment messages.
    signer: RelaySigner,
    /// Verifies the other parties' alignment messages.
    verifier: RelayVerifier,
    /// Alignment sessions started by this process: a relay that replays an old session id
    /// (to mix an earlier run's signed messages into a new one) is refused.
    align_sessions: std::collections::HashSet<[u8; 16]>,
    /// The late part of the last request's upload, sealed by [`PartyResponder::upload_rest`]
    /// after the first part left; any other frame voids it.
    rest: Option<Rest>,
}

/// What the second upload of a request needs: the request's header and the late messages
/// to each node with their statements (zeroized on drop: the noise setup carries seeds).
struct Rest {
    request: RequestHead,
    inputs: [SealedInputs; 3],
}

/// The header fields of a frame that the party's answers to it repeat (its uploads,
/// `Uploaded`, any reply to the coordinator).
#[derive(Clone, Copy)]
struct RequestHead {
    at: Attempt,
    iteration: u64,
    step: u64,
}

impl RequestHead {
    fn of(f: &Frame) -> RequestHead {
        RequestHead {
            at: Attempt::of(f),
            iteration: f.iteration,
            step: f.step,
        }
    }

    /// A frame from `me` in answer to the request.
    fn reply(self, me: Role, body: Body) -> Frame {
        frame(me, self.at, self.iteration, self.step, body)
    }
}

impl std::fmt::Debug for PartyResponder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartyResponder")
            .field("setup", &self.setup)
            .finish_non_exhaustive()
    }
}

impl PartyResponder {
    /// A responder on [`compute_device`] for the policy's K; sealing randomness from the OS.
    /// Samples the first noise share (for the policy's sigma and clip) before it returns.
    /// Errors: no compute device, or a K the schema or the party's data do not fit.
    pub fn new(setup: PartySetup) -> Result<PartyResponder, PartyError> {
        let party = setup.index;
        let fail = |fault: SetupFault| PartyError::Setup { party, fault };
        let k = setup.policy.components as usize;
        let layout = Layout::from_schema(&setup.schema, k).map_err(|source| {
            fail(SetupFault::Layout {
                components: k,
                source,
            })
        })?;
        if layout.stat_width(usize::from(party)) != setup.data.width {
            return Err(fail(SetupFault::SchemaWidth));
        }
        let found = setup.identity.role();
        if found != Role::Party(party) {
            return Err(fail(SetupFault::Identity { found }));
        }
        let signer = RelaySigner::new(&setup.identity).map_err(|e| fail(SetupFault::Signer(e)))?;
        let verifier = RelayVerifier::new(&setup.identity);
        let next = NoiseKey {
            sigma: setup.policy.sigma.to_bits(),
            clip: setup.policy.clip.to_bits(),
            iteration: setup.noise_seed.map(|_| 0),
        };
        let mut responder = PartyResponder {
            setup,
            layout,
            device: compute_device().map_err(|e| fail(SetupFault::Device(e)))?,
            seal_rng: ChaCha20Rng::from_os_rng(),
            seal_channels: None,
            clock: crate::upload::unix_now,
            prepared: None,
            next,
            accepted: None,
            aligning: None,
            rows_digest: None,
            unaligned: None,
            signer,
            verifier,
            align_sessions: std::collections::HashSet::new(),
            rest: None,
        };
        responder.prepare_noise();
        Ok(responder)
    }

    /// Uploads recorded in the party's ledger (across restarts).
    pub fn uploads(&self) -> u64 {
        self.setup.ledger.uploads()
    }

    /// Samples the noise share for the next expected request if none is ready (module
    /// docs). The driver calls it after sending each reply, off the message path. A
    /// sampling failure is logged; the next request then samples inline and reports it.
    /// Cost: d discrete Gaussian samples, or nothing.
    pub fn prepare_noise(&mut self) {
        if self.prepared.is_some() {
            return;
        }
        let key = self.next;
        match self.sample(key) {
            Ok(z) => self.prepared = Some(Prepared { key, z }),
            Err(e) => tracing::warn!(
                party = self.setup.index,
                "preparing the noise share: {}",
                Chain(&e)
            ),
        }
    }

    fn sample(&self, key: NoiseKey) -> Result<Zeroizing<Vec<u128>>, BackendError> {
        let p = usize::from(self.setup.index);
        let mut rng = match (self.setup.noise_seed, key.iteration) {
            (Some(seed), Some(t)) => seeded_noise_rng(seed, p, t),
            _ => ChaCha20Rng::from_os_rng(),
        };
        prepare_noise(
            &self.layout,
            f64::from_bits(key.sigma),
            f64::from_bits(key.clip),
            &mut rng,
        )
    }

    /// The noise share for `key`: the prepared one if it was drawn for `key`, else one
    /// sampled now (on the message path, logged).
    fn take_noise(&mut self, key: NoiseKey) -> Result<Zeroizing<Vec<u128>>, BackendError> {
        match self.prepared.take() {
            Some(p) if p.key == key => Ok(p.z),
            other => {
                // A share drawn for other terms is dropped (zeroized), never reused for these.
                drop(other);
                tracing::info!(
                    party = self.setup.index,
                    "noise share sampled on the request path (terms or iteration not as prepared)"
                );
                self.sample(key)
            }
        }
    }

    /// Checks the job's terms and the iteration against the policy (module docs).
    fn check_terms(&mut self, t: u64, terms: &JobTerms) -> Result<(), Refusal> {
        let p = self.setup.policy.clone();
        let refuse = |term, allowed| Err(Refusal::Policy { term, allowed });
        // Written so that NaN fails every check.
        if !(terms.sigma >= p.sigma && terms.sigma.is_finite()) {
            return refuse(Term::Sigma, Allowed::AtLeast(p.sigma));
        }
        if !(terms.clip > 0.0 && terms.clip <= p.clip) {
            return refuse(Term::Clip, Allowed::AtMost(p.clip));
        }
        if terms.components != p.components {
            return refuse(Term::Components, Allowed::Exactly(f64::from(p.components)));
        }
        if !(terms.sample_rate > 0.0 && terms.sample_rate <= p.sample_rate) {
            return refuse(Term::SampleRate, Allowed::AtMost(p.sample_rate));
        }
        if terms.iterations > p.openings || t >= terms.iterations {
            return refuse(Term::Iterations, Allowed::AtMost(p.openings as f64));
        }
        if !(terms.delta > 0.0 && terms.delta <= p.delta) {
            return refuse(Term::Delta, Allowed::AtMost(p.delta));
        }
        // The job's rows must be this party's current rows (an alignment is not running, and
        // the digest is the one it reported): otherwise row r could be two people, and one
        // person two records, past what the accounting assumes.
        if self.aligning.is_some() {
            // A job cannot run beside an alignment: the alignment ends, keys and all.
            self.aligning = None;
            return Err(Refusal::Rows);
        }
        if terms.rows != self.rows_digest() {
            return Err(Refusal::Rows);
        }
        if self.accepted.as_ref() != Some(terms) {
            let plan = vtwin_dp::Composition {
                noise_multiplier: terms.sigma,
                sample_rate: terms.sample_rate,
                steps: terms.iterations,
            };
            let eps = vtwin_dp::epsilon(
                vtwin_dp::Accountant::Rdp,
                &plan,
                terms.delta,
                vtwin_dp::Neighbouring::AddRemove,
            );
            if !matches!(eps, Ok(e) if e <= self.setup.policy.epsilon) {
                return refuse(Term::Epsilon, Allowed::AtMost(p.epsilon));
            }
            self.accepted = Some(*terms);
        }
        Ok(())
    }

    /// Checks that one more upload `r` stays within the budget (module docs).
    fn check_budget(&self, r: &UploadRecord) -> Result<(), Refusal> {
        let p = &self.setup.policy;
        if self.setup.ledger.uploads() >= p.openings {
            return Err(Refusal::Budget {
                budget: Budget::Openings { agreed: p.openings },
            });
        }
        match self.setup.ledger.epsilon(Some(r), p.delta) {
            Ok(e) if e <= p.epsilon => Ok(()),
            _ => Err(Refusal::Budget {
                budget: Budget::Epsilon { agreed: p.epsilon },
            }),
        }
    }

    /// Sets the wall clock (Unix seconds) the party's channel signatures are dated by and
    /// renewed against: a test hook (to run a job across hours; reachable only from code
    /// linked into the process); services keep [`crate::upload::unix_now`].
    pub fn set_clock(&mut self, clock: fn() -> u64) {
        self.clock = clock;
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
    /// to the coordinator with [`failure`]. After a request, the driver sends what this
    /// returns (the first part of the upload), then calls [`PartyResponder::upload_rest`].
    pub fn handle(&mut self, from: Role, f: &Frame) -> Result<Vec<Outgoing>, PartyError> {
        // A request's second upload is due only right after its first: a driver that did
        // not take it has left that iteration to time out.
        if self.rest.take().is_some() {
            tracing::warn!(
                party = self.setup.index,
                "a request's second upload was never taken (upload_rest): dropped"
            );
        }
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
                frame: RequestHead::of(f).reply(me, body),
            }]
        };
        match &f.body {
            Body::Hello => {
                self.new_job();
                Ok(reply(self.party_info()))
            }
            Body::AlignStart { parties } => {
                let out = self.start_alignment(f, *parties)?;
                Ok(reply(self.signed(&out)?))
            }
            Body::Align {
                message,
                certificate,
                signature,
            } => {
                let signature = RelaySignature {
                    certificate: certificate.clone(),
                    signature: signature.clone(),
                };
                let answers = self.align_step(message, &signature)?;
                let mut out = Vec::with_capacity(answers.len() + 1);
                for m in &answers {
                    out.extend(reply(self.signed(m)?));
                }
                if self.aligning.as_ref().is_some_and(|(r, _)| r.is_done()) {
                    self.finish_alignment()?;
                    out.extend(reply(self.party_info()));
                }
                Ok(out)
            }
            Body::Request {
                batch,
                theta,
                terms,
            } => {
                tracing::debug!(party = p, "request received");
                match self.upload(f, batch, theta, terms)? {
                    // Each blob straight to its node; the coordinator hears that they left
                    // after the second part ([`PartyResponder::upload_rest`]).
                    Ok(uploads) => Ok(to_nodes(me, RequestHead::of(f), uploads)),
                    Err(refusal) => {
                        tracing::warn!(party = p, iteration = f.iteration, "refused: {refusal}");
                        Ok(reply(Body::Refused { refusal }))
                    }
                }
            }
            Body::Abort { .. } => Ok(Vec::new()),
            _ => Err(unexpected()),
        }
    }

    /// The second part of the last request's upload, once the driver sent the first: T_p and
    /// the noise share, sealed for each node, then `Uploaded` to the coordinator.
    /// The nodes take them only at the circuit's `M_p` layer, about 40 rounds in, so sealing
    /// and sending them overlaps the circuit's first rounds. Nothing when no request's first
    /// part is outstanding (any frame handled since voids it). Errors: as the first part's
    /// sealing and signing ([`RequestFault::Seal`], [`RequestFault::Sign`]).
    pub fn upload_rest(&mut self) -> Result<Vec<Outgoing>, PartyError> {
        let Some(rest) = self.rest.take() else {
            return Ok(Vec::new());
        };
        let head = rest.request;
        let uploads = self.seal_parts(head, UploadPart::Late, &rest.inputs)?;
        let mut out = to_nodes(self.role(), head, uploads);
        out.push(Outgoing {
            to: Role::Coordinator,
            frame: head.reply(self.role(), Body::Uploaded),
        });
        tracing::debug!(party = self.setup.index, "late upload sealed");
        Ok(out)
    }

    /// Seals each node's inputs to it as upload `part`, on the party's signed channel to that
    /// node (made at the job's first upload and whenever less than
    /// [`crate::upload::CHANNEL_RENEW_SECS`] remain, [`PartyResponder::signed_channels`]): one
    /// `Upload` body per node, in node order.
    fn seal_parts(
        &mut self,
        head: RequestHead,
        part: UploadPart,
        inputs: &[SealedInputs; 3],
    ) -> Result<Vec<Body>, PartyError> {
        let (p, t) = (self.setup.index, head.iteration);
        let bad = |fault: RequestFault| PartyError::BadRequest {
            party: p,
            iteration: t,
            fault,
        };
        // New channels at a job's first upload, and before the signatures lapse.
        let now = (self.clock)();
        let channels = match self.seal_channels {
            Some(ref channels) if crate::upload::channel_lasts(channels[0].expires, now) => {
                channels
            }
            _ => {
                let made = self.signed_channels(now).map_err(bad)?;
                &*self.seal_channels.insert(made)
            }
        };
        let mut uploads = Vec::with_capacity(inputs.len());
        for (i, inputs) in inputs.iter().enumerate() {
            // Encoded in place into a wiped buffer of an upper bound of the encoding (the
            // attempt, the part, two f64, three digests, then varint lengths of at most 10
            // bytes): the bytes holding seeds never leave it, on an error either, and it
            // never reallocates.
            let bound = 131 + inputs.messages.iter().map(|m| 10 + m.len()).sum::<usize>();
            let mut plain = WipedBytes::from(vec![0u8; bound]);
            let n = postcard::to_slice(inputs, &mut plain[..])
                .map_err(|e| bad(RequestFault::Encoding(e)))?
                .len();
            plain.truncate(n);
            let ctx = SealContext {
                session: head.at.session,
                iteration: t,
                party: p,
                node: i as u8,
            };
            let sealed = channels[i]
                .channel
                .seal(&ctx, &plain, &mut self.seal_rng)
                .map_err(|source| bad(RequestFault::Seal { node: i, source }))?;
            // The channel's signature (sealing is anonymous): the nodes verify it before
            // they unseal; the attempt and the part are inside the blob.
            let signed = &channels[i].signed;
            uploads.push(Body::Upload {
                part: part as u8,
                sealed,
                certificate: signed.certificate.clone(),
                signature: signed.signature.clone(),
                expires: channels[i].expires,
            });
        }
        Ok(uploads)
    }

    /// A sealing channel to each node, each signed over
    /// [`crate::upload::channel_statement`] until [`crate::upload::CHANNEL_LIFETIME_SECS`]
    /// after `now` (Unix seconds). Errors: [`RequestFault::Seal`] (a low-order node key),
    /// [`RequestFault::Sign`]. Cost: two X25519 scalar multiplications and one ECDSA
    /// signature per node.
    fn signed_channels(&mut self, now: u64) -> Result<[SignedChannel; 3], RequestFault> {
        let p = self.setup.index;
        let expires = now.saturating_add(crate::upload::CHANNEL_LIFETIME_SECS);
        let mut one = |i: usize| -> Result<SignedChannel, RequestFault> {
            let node_public = &self.setup.node_seal_publics[i];
            let channel = SealChannel::new(node_public, &mut self.seal_rng)
                .map_err(|source| RequestFault::Seal { node: i, source })?;
            let statement = crate::upload::channel_statement(
                p,
                i as u8,
                &channel.public(),
                node_public,
                expires,
            );
            let signed = self
                .signer
                .sign(Purpose::Channel, &statement)
                .map_err(|source| RequestFault::Sign { node: i, source })?;
            Ok(SignedChannel {
                channel,
                signed,
                expires,
            })
        };
        Ok([one(0)?, one(1)?, one(2)?])
    }

    /// A new job (`Hello` or `AlignStart`): all of the party's own rows again, no alignment
    /// running, no plan accepted.
    fn new_job(&mut self) {
        self.aligning = None;
        if let Some(u) = self.unaligned.take() {
            self.setup.data = u.data;
            self.setup.ids = u.ids;
        }
        self.rows_digest = None;
        self.accepted = None;
        self.seal_channels = None;
    }

    /// `PartyInfo` of the rows the party trains on now: after an alignment the digest of
    /// the intersection's tags (what the relay saw already), otherwise of its ids.
    fn party_info(&mut self) -> Body {
        Body::PartyInfo {
            rows: self.setup.data.rows as u64,
            ids_digest: self.rows_digest(),
        }
    }

    /// The digest of the rows it trains on now (cached until they change). Cost: SHA-256
    /// over the ids the first time after a change.
    fn rows_digest(&mut self) -> [u8; 32] {
        let (unaligned, ids) = (&self.unaligned, &self.setup.ids);
        *self.rows_digest.get_or_insert_with(|| match unaligned {
            Some(u) => u.digest,
            None => vtwin_model::party_data::ids_digest(ids),
        })
    }

    /// `m` as an `Align` body, signed with this party's key.
    fn signed(&mut self, m: &vtwin_psi::Message) -> Result<Body, PartyError> {
        let message = m.encode();
        match self.signer.sign(Purpose::Alignment, &message) {
            Ok(s) => Ok(Body::Align {
                message,
                certificate: s.certificate,
                signature: s.signature,
            }),
            Err(e) => {
                self.aligning = None;
                Err(self.align_error(AlignFailure::Sign(e)))
            }
        }
    }

    fn align_error(&self, source: AlignFailure) -> PartyError {
        PartyError::Align {
            party: self.setup.index,
            source,
        }
    }

    /// Starts this party's role of the alignment announced by `f` (fresh keys from the OS).
    fn start_alignment(
        &mut self,
        f: &Frame,
        parties: u16,
    ) -> Result<vtwin_psi::Message, PartyError> {
        // An alignment starts a job, as `Hello` does.
        self.new_job();
        if !self.setup.policy.align {
            return Err(self.align_error(AlignFailure::NotAllowed));
        }
        if !self.align_sessions.insert(f.session) {
            return Err(self.align_error(AlignFailure::SessionReused));
        }
        let want = self.layout.n_parties();
        if usize::from(parties) != want {
            return Err(self.align_error(AlignFailure::Parties { got: parties, want }));
        }
        if self.setup.ids.len() > MAX_ALIGN_IDS {
            return Err(self.align_error(AlignFailure::TooManyIds {
                ids: self.setup.ids.len(),
                max: MAX_ALIGN_IDS,
            }));
        }
        // Straight from the OS: no generator state that could re-derive the keys is left.
        let keys = vtwin_psi::PartyKeys::random(&mut rand::rngs::OsRng.unwrap_err());
        let ids: Vec<&[u8]> = self.setup.ids.iter().map(|s| s.as_bytes()).collect();
        let (role, first) = vtwin_psi::Party::start(
            self.setup.index,
            parties,
            vtwin_psi::SessionId(f.session),
            &ids,
            keys,
        )
        .map_err(|e| self.align_error(AlignFailure::Input(e)))?;
        tracing::info!(
            party = self.setup.index,
            ids = ids.len(),
            "record alignment started"
        );
        self.aligning = Some((role, std::time::Instant::now() + self.setup.align_timeout));
        Ok(first)
    }

    /// One alignment message in (its signature verified first), the role's answers out.
    fn align_step(
        &mut self,
        message: &[u8],
        signature: &RelaySignature,
    ) -> Result<Vec<vtwin_psi::Message>, PartyError> {
        let verifier = &self.verifier;
        let Some((role, deadline)) = self.aligning.as_mut() else {
            return Err(self.align_error(AlignFailure::OutOfTurn));
        };
        let expired = std::time::Instant::now() > *deadline;
        let timeout = self.setup.align_timeout;
        let answers = vtwin_psi::Message::decode(message)
            .map_err(AlignFailure::Decode)
            .and_then(|m| {
                let claimed = Role::Party(m.from);
                match verifier.verify(Purpose::Alignment, message, signature) {
                    Ok(signer) if signer == claimed => Ok(m),
                    Ok(signer) => Err(AlignFailure::Signer { claimed, signer }),
                    Err(source) => Err(AlignFailure::Signature { claimed, source }),
                }
            })
            .and_then(|m| match expired {
                true => Err(AlignFailure::Expired { timeout }),
                false => role.receive(m).map_err(AlignFailure::Protocol),
            });
        // A failed alignment drops the role and its keys at once.
        answers.map_err(|e| {
            self.aligning = None;
            self.align_error(e)
        })
    }

    /// The role is done: keep only the intersection's rows, in the common order.
    fn finish_alignment(&mut self) -> Result<(), PartyError> {
        let (role, _) = self.aligning.take().expect("checked by the caller");
        let alignment = role
            .finish()
            .map_err(|e| self.align_error(AlignFailure::Protocol(e)))?;
        let rows = &alignment.rows;
        let data = self.setup.data.select(rows);
        let ids = rows.iter().map(|&r| self.setup.ids[r].clone()).collect();
        let full = Unaligned {
            data: std::mem::replace(&mut self.setup.data, data),
            ids: std::mem::replace(&mut self.setup.ids, ids),
            digest: alignment.digest(),
        };
        tracing::info!(
            party = self.setup.index,
            ids = full.ids.len(),
            common = rows.len(),
            "record alignment done"
        );
        self.unaligned = Some(full);
        // Other rows: a plan accepted before is checked again.
        self.rows_digest = None;
        self.accepted = None;
        Ok(())
    }

    /// The `Upload` of each node in node order (its sealed blob and its channel signature), or the
    /// refusal; `Err` for a request that does not fit.
    fn upload(
        &mut self,
        f: &Frame,
        batch: &[u32],
        theta: &[f64],
        terms: &JobTerms,
    ) -> Result<Result<Vec<Body>, Refusal>, PartyError> {
        let (p, t) = (self.setup.index, f.iteration);
        let bad = |fault: RequestFault| PartyError::BadRequest {
            party: p,
            iteration: t,
            fault,
        };
        if let Err(refusal) = self.check_terms(t, terms) {
            return Ok(Err(refusal));
        }
        let tempering = Tempering::from_terms(terms.tempering_start, terms.tempering_iterations)
            .map_err(|e| bad(RequestFault::Tempering(e)))?;
        let layout = &self.layout;
        if theta.len() != layout.dim() {
            return Err(bad(RequestFault::ThetaLength {
                got: theta.len(),
                want: layout.dim(),
            }));
        }
        let rows = self.setup.data.rows;
        // Real indices first, then PADDING_INDEX up to the public batch size.
        let real = batch.iter().take_while(|&&r| r != PADDING_INDEX).count();
        if batch[real..].iter().any(|&r| r != PADDING_INDEX) {
            return Err(bad(RequestFault::AfterPadding(real)));
        }
        let mut idx = Vec::with_capacity(real);
        for (i, &r) in batch[..real].iter().enumerate() {
            if r as usize >= rows {
                return Err(bad(RequestFault::Row {
                    at: i,
                    row: r,
                    rows,
                }));
            }
            if i > 0 && batch[i - 1] >= r {
                return Err(bad(RequestFault::NotIncreasing(i)));
            }
            idx.push(r as usize);
        }
        let record = UploadRecord {
            iteration: t,
            batch: batch_digest(batch),
            sigma: terms.sigma,
            clip: terms.clip,
            sample_rate: terms.sample_rate,
        };
        if let Err(refusal) = self.check_budget(&record) {
            return Ok(Err(refusal));
        }
        let key = NoiseKey {
            sigma: terms.sigma.to_bits(),
            clip: terms.clip.to_bits(),
            iteration: self.setup.noise_seed.map(|_| t),
        };
        let compute = |source| PartyError::Compute {
            party: p,
            iteration: t,
            source,
        };
        let z = self.take_noise(key).map_err(compute)?;
        let part = self
            .setup
            .data
            .padded_batch(&idx, batch.len())
            .map_err(|e| bad(RequestFault::Batch(e)))?;
        let task = PartyTask {
            layout: &self.layout,
            party: usize::from(p),
            iteration: t,
            session: SessionId(f.session),
            theta,
            clip: terms.clip,
            sigma: terms.sigma,
            beta: tempering.beta(t),
            batch: &part,
            renormalise: self.setup.renormalise,
        };
        let mut client_rng = self.setup.randomness.party(usize::from(p), t);
        let uploaded = match party_messages_with_noise(&self.device, &task, &z, &mut client_rng) {
            Ok(m) => m,
            Err(BackendError::Range { what, range, .. }) => {
                // The unused share was never revealed: keep it for the next request.
                self.prepared = Some(Prepared { key, z });
                return Ok(Err(Refusal::Range {
                    quantity: what.into(),
                    range: range.into(),
                }));
            }
            Err(source) => return Err(compute(source)),
        };
        let statement = crate::upload::batch_statement(&f.session, t, batch);
        // The map the roots were computed with, as the nodes must hold it.
        let maps = crate::upload::map_statement(&uploaded.map);
        let inputs = |pick: fn(&NodeMessages) -> &Vec<vtwin_mpc::Message>, part: UploadPart| {
            uploaded.messages.each_ref().map(|msgs| SealedInputs {
                attempt: f.attempt,
                part: part as u8,
                sigma: terms.sigma,
                clip: terms.clip,
                rows: terms.rows,
                batch: statement,
                maps,
                messages: pick(msgs).iter().map(|m| m.encode()).collect(),
            })
        };
        let (first, late) = (
            inputs(|m| &m.first, UploadPart::First),
            inputs(|m| &m.late, UploadPart::Late),
        );
        drop(uploaded);
        check_upload_sizes(&first, &late).map_err(bad)?;
        let uploads = self.seal_parts(RequestHead::of(f), UploadPart::First, &first)?;
        tracing::debug!(party = p, "inputs sealed");
        // Durable before it leaves: every upload may be opened.
        self.setup
            .ledger
            .record(&record)
            .map_err(|source| PartyError::Ledger {
                party: p,
                iteration: t,
                source,
            })?;
        self.next = NoiseKey {
            iteration: key.iteration.map(|t| t + 1),
            ..key
        };
        self.rest = Some(Rest {
            request: RequestHead::of(f),
            inputs: late,
        });
        tracing::debug!(party = p, "upload recorded");
        Ok(Ok(uploads))
    }
}

/// Most bytes of a party's messages to one node per request, both parts together: one
/// frame's limit less 8 KiB for the two blobs' certificates, signatures, seals and
/// statements, so that a node's early buffer (`node::EARLY_UPLOAD_BYTES_PER_PARTY`) always
/// holds both parts. Larger requests are refused before anything is sealed or recorded.
pub const UPLOAD_LIMIT: usize = vtwin_net::frame::MAX_FRAME_BYTES - (8 << 10);
// What a node keeps early of one party always fits both parts of an upload within the limit.
const _: () = assert!(UPLOAD_LIMIT + (8 << 10) <= crate::node::EARLY_UPLOAD_BYTES_PER_PARTY);

/// [`RequestFault::TooLarge`] for the first node whose two parts' messages together exceed
/// [`UPLOAD_LIMIT`].
fn check_upload_sizes(
    first: &[SealedInputs; 3],
    late: &[SealedInputs; 3],
) -> Result<(), RequestFault> {
    for (node, (a, b)) in first.iter().zip(late).enumerate() {
        let bytes: usize = a.messages.iter().chain(&b.messages).map(Vec::len).sum();
        if bytes > UPLOAD_LIMIT {
            return Err(RequestFault::TooLarge {
                node,
                bytes,
                limit: UPLOAD_LIMIT,
            });
        }
    }
    Ok(())
}

/// One `Upload` frame per body, to node 0, 1 and 2 in order, in reply to the request `f`.
fn to_nodes(me: Role, head: RequestHead, uploads: Vec<Body>) -> Vec<Outgoing> {
    uploads
        .into_iter()
        .enumerate()
        .map(|(i, body)| Outgoing {
            to: Role::Node(i as u8),
            frame: head.reply(me, body),
        })
        .collect()
}

/// The policy of a party that agrees to exactly the plan `terms`: its sigma as the floor,
/// its clip as the cap, its K, q and delta, `terms.iterations` openings, and as epsilon the
/// analyst's epsilon of the plan by the RDP accountant (the figure the party checks). For
/// the in-process consortium (`vtwin demo`, benchmarks, tests) and `vtwin keygen`'s demo
/// job. Errors: sigma not > 0, q or delta out of range (the accountant's error).
pub fn policy_for_plan(terms: &JobTerms) -> Result<PartyPolicy, vtwin_dp::AccountingError> {
    let epsilon = vtwin_dp::epsilon(
        vtwin_dp::Accountant::Rdp,
        &vtwin_dp::Composition {
            noise_multiplier: terms.sigma,
            sample_rate: terms.sample_rate,
            steps: terms.iterations,
        },
        terms.delta,
        vtwin_dp::Neighbouring::AddRemove,
    )?;
    Ok(PartyPolicy {
        epsilon,
        delta: terms.delta,
        sigma: terms.sigma,
        clip: terms.clip,
        components: terms.components,
        sample_rate: terms.sample_rate,
        openings: terms.iterations,
        align: true,
    })
}

/// The `Failed` frame a party driver sends to the coordinator after an error in handling `f`
/// (with [`PartyError::public`], nothing computed from the party's data).
pub fn failure(party: u16, f: &Frame, e: &PartyError) -> Outgoing {
    Outgoing {
        to: Role::Coordinator,
        frame: frame(
            Role::Party(party),
            Attempt::of(f),
            f.iteration,
            0,
            Body::Failed { reason: e.public() },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(sizes: [usize; 3]) -> [SealedInputs; 3] {
        sizes.map(|n| SealedInputs {
            attempt: [0; 8],
            part: 0,
            sigma: 1.0,
            clip: 1.0,
            rows: [0; 32],
            batch: [0; 32],
            maps: [0; 32],
            messages: vec![vec![0; n]],
        })
    }

    /// Both parts to one node count together: at the limit they pass, one byte over is
    /// refused naming that node, whichever part holds the bytes.
    #[test]
    fn an_upload_over_one_frame_per_node_is_refused() {
        let half = UPLOAD_LIMIT / 2;
        let rest = UPLOAD_LIMIT - half;
        assert!(check_upload_sizes(&inputs([1, half, 0]), &inputs([1, rest, 0])).is_ok());
        assert!(matches!(
            check_upload_sizes(&inputs([1, half, 0]), &inputs([1, rest, UPLOAD_LIMIT + 1])),
            Err(RequestFault::TooLarge { node: 2, bytes, limit }) if bytes == UPLOAD_LIMIT + 1 && limit == UPLOAD_LIMIT
        ));
        assert!(matches!(
            check_upload_sizes(&inputs([0, half + 1, 0]), &inputs([0, rest, 0])),
            Err(RequestFault::TooLarge { node: 1, .. })
        ));
    }
}
