//! The coordinator's side of the protocol ([`CoordinatorJob`]), sans-IO: time enters only as
//! the `now` argument of every call.
//!
//! 1. Handshake. Without alignment ([`CoordinatorJob::new`]): `Hello` to every party;
//!    every `PartyInfo` must report the same number of rows and the same id digest as party
//!    0 (same individuals, same order), else the job fails naming the party and saying how
//!    to align. With alignment ([`CoordinatorJob::new_with_alignment`]): `AlignStart` to
//!    every party instead (the frame's session is the alignment's, fresh), and every `Align`
//!    message a party sends is relayed to the party its header addresses (the coordinator
//!    checks the header's sender against the link; it holds no key, but it reads the
//!    blinded points it relays: `protocols/consortium.md`, "Record alignment"). Each party
//!    keeps its rows of the intersection in the common order and reports `PartyInfo` with
//!    the digest of the intersection's tags (never of its ids); these must agree. Then
//!    [`JobEvent::Agreed`]; the driver builds the [`Trainer`] for that N (fresh or from a
//!    checkpoint) and calls [`CoordinatorJob::begin`].
//! 2. Iteration t: `plan = trainer.plan()` (the batch of opening o from the secret batch
//!    key, [`Trainer`]), session `s_t = randomness.session(t)` and a fresh
//!    random attempt id (public; it tells this attempt's frames from those of an earlier
//!    attempt at the same session id, which a resumed job with insecure seeds reuses), public
//!    circuit parameters from theta ([`circuit_public_for`]). `Start` to the three nodes,
//!    `Request` to every party; each party sends its sealed blobs to the nodes over its own
//!    links to them and tells the coordinator (`Uploaded`); the three opening shares (`Mpc`
//!    from each node, addressed to client P + m) are
//!    collected in a [`vtwin_mpc::Opening`]. With all three, before combining them, the job
//!    asks for the opening to be charged durably ([`JobEvent::ChargeDue`]: the driver appends
//!    it to its opening log and syncs it) and waits; [`CoordinatorJob::charged`] then charges
//!    the trainer's ledger ([`Trainer::charge`]), combines the shares, decodes G + Z
//!    ([`gradient_from_canonical`]) and applies it ([`Trainer::apply`]), then
//!    [`JobEvent::Applied`] and the next iteration starts. An apply that fails after the
//!    opening leaves it charged.
//! 3. Failure: a `Refused` or `Failed` frame, a frame that does not check, a lost link
//!    ([`CoordinatorJob::peer_lost`]) or the deadline ([`Timeouts::iteration`], checked by
//!    [`CoordinatorJob::tick`]) aborts: `Abort` to every node and party, nothing applied
//!    (and nothing charged unless the opening was already recorded), [`JobEvent::Aborted`] with a [`JobError`] naming the peer; the job is then
//!    stopped (the driver exits; `--resume` continues from the last checkpoint).
//!
//! The coordinator never sees a party's value: uploads go from each party to the nodes,
//! sealed to them, and the only opening addressed to it is G + Z.

use std::time::{Duration, Instant};

use vtwin_iteration::randomness::SecretRandomness;
use vtwin_model::dpvi::DpviError;
use vtwin_model::mpc_backend::{circuit_public_for, gradient_from_canonical, input_bounds};
use vtwin_model::opening_log::OpeningRecord;
use vtwin_model::trainer::{IterationPlan, Trainer};
use vtwin_mpc::gradient::CircuitPublic;
use vtwin_mpc::{Message, NodeId, Opening, Peer};
use vtwin_net::{Body, Frame, JobTerms, Refusal, Role, WirePublic};

use crate::error::LinkLoss;
use vtwin_host::error_chain::Chain;

use crate::outgoing::{body_kind, frame, Attempt, Outgoing};

/// The coordinator's deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// From `Hello` to the last `PartyInfo`.
    pub handshake: Duration,
    /// From `Start` to the last opening share of one iteration.
    pub iteration: Duration,
}

/// An error of the driver's own step (a [`crate::service::CoordinatorHooks`] method, a
/// [`crate::memory::ChargeHook`]), kept with its causes.
pub type HookError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why the job stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// Parties disagree on the records (count or ids).
    #[error("{party}: {what}; {}", mismatch_advice(*aligned))]
    Mismatch {
        /// The party that differs from party 0.
        party: Role,
        /// What differs.
        what: RecordMismatch,
        /// Whether the reports came after a record alignment (which should have made them
        /// equal).
        aligned: bool,
    },
    /// A party refused its upload (terms outside its policy, its budget spent, or a value
    /// outside the public ranges; nothing was shared). The reason is the party's typed,
    /// value-free refusal.
    #[error("iteration {iteration}: {party} refused: {refusal}")]
    Refused {
        /// The iteration.
        iteration: u64,
        /// The party.
        party: Role,
        /// Its reason, as the party sent it.
        refusal: Refusal,
    },
    /// A peer reported a failure.
    #[error("iteration {iteration}: {peer} failed: {reason}")]
    PeerFailed {
        /// The iteration.
        iteration: u64,
        /// The peer.
        peer: Role,
        /// The text of its `Failed` frame (the peer's own account, received on the wire).
        reason: String,
    },
    /// The link to a peer was lost.
    #[error("iteration {iteration}: lost the link to {peer}")]
    PeerLost {
        /// The iteration.
        iteration: u64,
        /// The peer.
        peer: Role,
        /// Why.
        #[source]
        cause: LinkLoss,
    },
    /// A peer sent a frame that does not fit the protocol.
    #[error("iteration {iteration}: {peer} sent a bad {kind}")]
    Protocol {
        /// The iteration.
        iteration: u64,
        /// The peer.
        peer: Role,
        /// The body kind.
        kind: &'static str,
        /// What is wrong with it.
        #[source]
        fault: ProtocolFault,
    },
    /// The deadline passed.
    #[error(
        "iteration {iteration}: timed out after {after:?} waiting for {}",
        names(waiting)
    )]
    Timeout {
        /// The iteration (or 0 in the handshake).
        iteration: u64,
        /// The deadline.
        after: Duration,
        /// Who had not answered.
        waiting: Vec<Role>,
    },
    /// The public circuit parameters could not be built (theta out of the encodable range).
    #[error("iteration {iteration}: the public circuit parameters could not be built")]
    Public {
        /// The iteration.
        iteration: u64,
        /// Why.
        #[source]
        source: PublicFailure,
    },
    /// The update failed (e.g. divergence); the opening stays charged.
    #[error(transparent)]
    Apply(#[from] DpviError),
    /// The opening could not be recorded durably, so its shares were never combined.
    #[error("iteration {iteration}: opening {opening} not recorded")]
    Charge {
        /// The iteration.
        iteration: u64,
        /// The opening.
        opening: u64,
        /// The driver's error.
        #[source]
        source: HookError,
    },
}

/// How a party's `PartyInfo` differs from party 0's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordMismatch {
    /// Another row count.
    #[error("reports {rows} rows, party 0 reports {first}")]
    Rows {
        /// This party's count.
        rows: u64,
        /// Party 0's.
        first: u64,
    },
    /// The same count but another id digest.
    #[error("its id column differs from party 0's (not the same individuals in the same order)")]
    Ids,
}

fn mismatch_advice(aligned: bool) -> &'static str {
    if aligned {
        "after the record alignment (a party did not align as the others did, or a relay \
         changed its messages)"
    } else {
        "the parties hold different ids (different people, or rows one party dropped for a \
         missing value): turn on record alignment (training.align = true) or align the files \
         with `vtwin align`"
    }
}

/// What is wrong with a frame the coordinator received ([`JobError::Protocol`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolFault {
    /// A `PartyInfo` outside the handshake.
    #[error("outside the handshake")]
    OutsideHandshake,
    /// A second `PartyInfo` or `Uploaded` from the same party in one round.
    #[error("sent twice")]
    SentTwice,
    /// The sender's party index is not below the job's party count.
    #[error("no party {party} in this job of {parties}")]
    NoSuchParty {
        /// The index.
        party: u16,
        /// The job's party count.
        parties: usize,
    },
    /// The sender's node index is not a node.
    #[error("no node {0}")]
    NoSuchNode(u8),
    /// An `Align` message while no record alignment runs.
    #[error("no record alignment in progress")]
    NoAlignment,
    /// An `Align` message that does not decode.
    #[error("not an alignment message")]
    AlignDecode(#[source] vtwin_psi::DecodeError),
    /// An `Align` message whose header names another party as its sender.
    #[error("its header names party {0} as the sender")]
    AlignSender(u16),
    /// An `Align` message of another alignment session or party count.
    #[error("for another alignment session or party count")]
    OtherAlignment,
    /// An `Uploaded` or `Mpc` frame while no iteration is in flight.
    #[error("no iteration in flight")]
    NotRunning,
    /// An `Uploaded` or `Mpc` frame of another session, attempt or iteration.
    #[error("for another session, attempt or iteration")]
    OtherAttempt,
    /// An `Mpc` frame whose message does not decode.
    #[error("not an MPC message")]
    MpcDecode(#[source] vtwin_mpc::WireError),
    /// An `Mpc` message whose inner sender is not the link's peer.
    #[error("inner sender {0} differs from the link's peer")]
    InnerSender(Peer),
    /// An opening share the opening does not accept.
    #[error("its opening share does not fit the opening")]
    Opening(#[source] vtwin_mpc::MpcError),
    /// A body the coordinator never receives from this peer.
    #[error("not expected by the coordinator")]
    Unexpected,
}

/// Why the public circuit parameters of an iteration could not be built
/// ([`JobError::Public`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublicFailure {
    /// The circuit parameters for theta.
    #[error("the circuit parameters")]
    Circuit(#[source] vtwin_model::backend::BackendError),
    /// Their wire form.
    #[error("their wire form")]
    Wire(#[source] vtwin_net::frame::PublicError),
    /// No finite truncation-failure bound for them (a value could leave its window).
    #[error("no finite truncation-failure bound (a value could leave its window)")]
    Unbounded,
}

/// The first party whose (rows, id digest) differs from party 0's, as the job's error.
/// `aligned`: the reports come after a record alignment (which should have made them equal).
fn first_mismatch(got: &[(u64, [u8; 32])], aligned: bool) -> Option<JobError> {
    let (rows0, digest0) = got[0];
    got.iter()
        .enumerate()
        .skip(1)
        .find_map(|(q, &(rows, digest))| {
            let what = if rows != rows0 {
                RecordMismatch::Rows { rows, first: rows0 }
            } else if digest != digest0 {
                RecordMismatch::Ids
            } else {
                return None;
            };
            Some(JobError::Mismatch {
                party: Role::Party(q as u16),
                what,
                aligned,
            })
        })
}

fn names(roles: &[Role]) -> String {
    roles
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the driver should know.
#[derive(Debug)]
#[non_exhaustive]
pub enum JobEvent {
    /// All parties agree: N rows with this id digest. Call [`CoordinatorJob::begin`].
    Agreed {
        /// N.
        rows: u64,
        /// The parties' common id digest.
        ids_digest: [u8; 32],
    },
    /// All three opening shares of this opening are in, not combined: record it durably
    /// (append and sync the opening log), then call [`CoordinatorJob::charged`], or
    /// [`CoordinatorJob::charge_failed`] if it could not be recorded.
    ChargeDue(OpeningRecord),
    /// Iteration `iteration` (0-based) was applied; the trainer now has `iteration + 1`
    /// completed iterations.
    Applied {
        /// The iteration.
        iteration: u64,
        /// Batch size B.
        batch: usize,
        /// From `Start` to the last opening share.
        elapsed: Duration,
    },
    /// All iterations are done.
    Finished,
    /// The job stopped; nothing of the current iteration was applied.
    Aborted(JobError),
}

/// What one call produced.
#[derive(Debug, Default)]
pub struct JobOutput {
    /// Frames to send, in order.
    pub send: Vec<Outgoing>,
    /// Events, in order.
    pub events: Vec<JobEvent>,
}

struct Running {
    plan: IterationPlan,
    at: Attempt,
    opening: Opening,
    /// The parties that said they uploaded (`Uploaded`), for a timeout's `waiting`.
    uploads: Vec<bool>,
    shares: [bool; 3],
    /// All shares are in and [`JobEvent::ChargeDue`] was emitted.
    charge_due: bool,
    /// The circuit's truncation-failure bound for this iteration (charged to delta).
    truncation_failure: f64,
    started: Instant,
    deadline: Instant,
}

enum Phase {
    Handshake {
        infos: Vec<Option<(u64, [u8; 32])>>,
        deadline: Instant,
        /// The alignment's session id once the parties were asked to align.
        aligning: Option<[u8; 16]>,
    },
    Agreed,
    Running(Box<Running>),
    Done,
    Stopped,
}

/// The iteration in flight, if the frame's session attempt and iteration are its.
fn running_for(
    phase: &mut Phase,
    at: Attempt,
    iteration: u64,
) -> Result<&mut Running, ProtocolFault> {
    let Phase::Running(r) = phase else {
        return Err(ProtocolFault::NotRunning);
    };
    if at != r.at || iteration != r.plan.iteration {
        return Err(ProtocolFault::OtherAttempt);
    }
    Ok(r)
}

/// The coordinator state machine (module docs).
pub struct CoordinatorJob {
    parties: usize,
    iters: u64,
    delta: f64,
    timeouts: Timeouts,
    randomness: SecretRandomness,
    trainer: Option<Trainer>,
    phase: Phase,
    /// The rows' digest every party reported (sent in every job's terms).
    rows_digest: [u8; 32],
}

impl std::fmt::Debug for CoordinatorJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoordinatorJob")
            .field("parties", &self.parties)
            .field("iters", &self.iters)
            .field("iteration", &self.trainer.as_ref().map(|t| t.iteration()))
            .finish_non_exhaustive()
    }
}

fn all_nodes() -> impl Iterator<Item = Role> {
    (0..3u8).map(Role::Node)
}

impl CoordinatorJob {
    /// A job for `parties` parties that trains up to `iters` iterations at `delta` (both
    /// announced to every party and node in the job's terms), on parties that hold the same
    /// ids in the same order; returns the `Hello` frames to send.
    pub fn new(
        parties: usize,
        iters: u64,
        delta: f64,
        timeouts: Timeouts,
        randomness: SecretRandomness,
        now: Instant,
    ) -> (CoordinatorJob, Vec<Outgoing>) {
        Self::new_with_alignment(parties, iters, delta, timeouts, randomness, false, now)
    }

    /// [`CoordinatorJob::new`], with `align`: the job begins with the record alignment
    /// (module docs; `AlignStart` instead of `Hello`, so no party ever sends a digest of its
    /// whole id list), and trains on the parties' intersection.
    pub fn new_with_alignment(
        parties: usize,
        iters: u64,
        delta: f64,
        timeouts: Timeouts,
        randomness: SecretRandomness,
        align: bool,
        now: Instant,
    ) -> (CoordinatorJob, Vec<Outgoing>) {
        let mut job = CoordinatorJob {
            parties,
            iters,
            delta,
            timeouts,
            randomness,
            trainer: None,
            rows_digest: [0; 32],
            phase: Phase::Handshake {
                infos: vec![None; parties],
                deadline: now + timeouts.handshake,
                aligning: None,
            },
        };
        if align {
            let mut out = JobOutput::default();
            job.start_alignment(now, &mut out);
            return (job, out.send);
        }
        let send = (0..parties)
            .map(|p| Outgoing {
                to: Role::Party(p as u16),
                frame: frame(Role::Coordinator, Attempt::NONE, 0, 0, Body::Hello),
            })
            .collect();
        (job, send)
    }

    /// The trainer (after [`CoordinatorJob::begin`]).
    pub fn trainer(&self) -> Option<&Trainer> {
        self.trainer.as_ref()
    }

    /// Takes the trainer out (after the job finished or stopped).
    pub fn into_trainer(self) -> Option<Trainer> {
        self.trainer
    }

    /// True once all iterations are applied.
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// True once the job stopped on an error.
    pub fn is_stopped(&self) -> bool {
        matches!(self.phase, Phase::Stopped)
    }

    /// The iteration in flight, if any.
    pub fn iteration_in_flight(&self) -> Option<u64> {
        match &self.phase {
            Phase::Running(r) => Some(r.plan.iteration),
            _ => None,
        }
    }

    /// Starts training with `trainer` (fresh or resumed) after [`JobEvent::Agreed`].
    pub fn begin(&mut self, trainer: Trainer, now: Instant) -> JobOutput {
        let mut out = JobOutput::default();
        if !matches!(self.phase, Phase::Agreed) {
            return out;
        }
        self.trainer = Some(trainer);
        self.next_iteration(now, &mut out);
        out
    }

    fn current_iteration(&self) -> u64 {
        match &self.phase {
            Phase::Running(r) => r.plan.iteration,
            _ => self.trainer.as_ref().map_or(0, |t| t.iteration()),
        }
    }

    fn next_iteration(&mut self, now: Instant, out: &mut JobOutput) {
        let Some(trainer) = self.trainer.as_ref() else {
            return;
        };
        if trainer.iteration() >= self.iters {
            self.phase = Phase::Done;
            out.events.push(JobEvent::Finished);
            return;
        }
        let plan = trainer.plan();
        let t = plan.iteration;
        let session = self.randomness.session(t);
        // Not a secret, only unique: a fresh draw per attempt, also with insecure seeds.
        let at = Attempt {
            session: session.0,
            attempt: rand::random(),
        };
        let clip = trainer.config().clip;
        let layout = trainer.layout();
        let (tempering_start, tempering_iterations) = trainer.config().tempering.to_terms();
        let terms = JobTerms {
            sigma: trainer.config().sigma,
            clip,
            components: layout.components as u32,
            sample_rate: trainer.config().sample_rate,
            iterations: self.iters,
            delta: self.delta,
            rows: self.rows_digest,
            tempering_start,
            tempering_iterations,
        };
        // The public side, checked and in its wire form; a failure stops the job.
        let prepared = circuit_public_for(layout, &plan.theta, clip, plan.padded)
            .map_err(PublicFailure::Circuit)
            .and_then(|p| {
                WirePublic::try_from(&p)
                    .map(|w| (p, w))
                    .map_err(PublicFailure::Wire)
            });
        let (public, wire): (CircuitPublic, WirePublic) = match prepared {
            Ok(pw) => pw,
            Err(source) => {
                self.stop(
                    JobError::Public {
                        iteration: t,
                        source,
                    },
                    out,
                );
                return;
            }
        };
        let dim = public.dim();
        let coordinator_client = public.coordinator();
        // From public values only: the parties' input ranges are the closed-form ones
        // (the consortium runs closed-form renormalisation only: `vtwin coordinator` refuses
        // another mode and every party enforces it).
        let truncation_failure = public.truncation_failure_bound(&input_bounds(
            vtwin_model::fixed_backend::Renormalise::ClosedForm,
            self.parties,
        ));
        // No finite charge, no opening (unreachable on the shipped ranges: circuit_public
        // refuses such shapes first).
        if !truncation_failure.is_finite() {
            self.stop(
                JobError::Public {
                    iteration: t,
                    source: PublicFailure::Unbounded,
                },
                out,
            );
            return;
        }
        for node in all_nodes() {
            out.send.push(Outgoing {
                to: node,
                frame: frame(
                    Role::Coordinator,
                    at,
                    t,
                    0,
                    Body::Start {
                        public: wire.clone(),
                        terms,
                    },
                ),
            });
        }
        // The real indices, then PADDING_INDEX up to the public size: each party pads its
        // batch the same way, and the nodes see only the public size.
        let mut batch: Vec<u32> = plan.batch.iter().map(|&i| i as u32).collect();
        batch.resize(plan.padded, crate::party::PADDING_INDEX);
        for p in 0..self.parties {
            out.send.push(Outgoing {
                to: Role::Party(p as u16),
                frame: frame(
                    Role::Coordinator,
                    at,
                    t,
                    0,
                    Body::Request {
                        batch: batch.clone(),
                        theta: plan.theta.clone(),
                        terms,
                    },
                ),
            });
        }
        tracing::debug!(iteration = t, batch = batch.len(), "iteration started");
        self.phase = Phase::Running(Box::new(Running {
            plan,
            at,
            opening: Opening::new(session, coordinator_client, dim),
            uploads: vec![false; self.parties],
            shares: [false; 3],
            charge_due: false,
            truncation_failure,
            started: now,
            deadline: now + self.timeouts.iteration,
        }));
    }

    /// Asks every party to align (module docs): a fresh session id, the handshake's
    /// deadline, and each party's `PartyInfo` is expected after its alignment.
    fn start_alignment(&mut self, now: Instant, out: &mut JobOutput) {
        // Public and only needs to be fresh: the parties' keys are their own secrets.
        let mut session = [0u8; 16];
        rand::Rng::fill(&mut rand::rng(), &mut session);
        tracing::info!(
            parties = self.parties,
            "aligning the parties' records privately before training"
        );
        for p in 0..self.parties {
            let mut f = frame(
                Role::Coordinator,
                Attempt::NONE,
                0,
                0,
                Body::AlignStart {
                    parties: self.parties as u16,
                },
            );
            f.session = session;
            out.send.push(Outgoing {
                to: Role::Party(p as u16),
                frame: f,
            });
        }
        self.phase = Phase::Handshake {
            infos: vec![None; self.parties],
            deadline: now + self.timeouts.handshake,
            aligning: Some(session),
        };
    }

    /// Sends `Abort` to every peer and stops.
    fn stop(&mut self, err: JobError, out: &mut JobOutput) {
        let (at, t) = match &self.phase {
            Phase::Running(r) => (r.at, r.plan.iteration),
            _ => (Attempt::NONE, self.current_iteration()),
        };
        // The whole chain: the peers see only this text.
        let reason = Chain(&err).to_string();
        tracing::error!(iteration = t, "abort: {reason}");
        let peers: Vec<Role> = all_nodes()
            .chain((0..self.parties).map(|p| Role::Party(p as u16)))
            .collect();
        for to in peers {
            out.send.push(Outgoing {
                to,
                frame: frame(
                    Role::Coordinator,
                    at,
                    t,
                    0,
                    Body::Abort {
                        reason: reason.clone(),
                    },
                ),
            });
        }
        self.phase = Phase::Stopped;
        out.events.push(JobEvent::Aborted(err));
    }

    /// Handles one frame from `from` (the TLS-authenticated role).
    /// (`_now` is kept for the interface: since the write-ahead charge, the iteration
    /// completes in [`CoordinatorJob::charged`], which takes the time.)
    pub fn handle(&mut self, from: Role, f: Frame, _now: Instant) -> JobOutput {
        let mut out = JobOutput::default();
        // A stopped job has reported its error once; frames still in flight change nothing.
        if matches!(self.phase, Phase::Stopped) {
            return out;
        }
        if let Err(e) = self.dispatch(from, f, &mut out) {
            self.stop(e, &mut out);
        }
        out
    }

    /// The driver lost the link to `peer` (`cause`): fatal while the job is running.
    pub fn peer_lost(&mut self, peer: Role, cause: LinkLoss, _now: Instant) -> JobOutput {
        let mut out = JobOutput::default();
        if matches!(
            self.phase,
            Phase::Handshake { .. } | Phase::Agreed | Phase::Running(_)
        ) {
            let e = JobError::PeerLost {
                iteration: self.current_iteration(),
                peer,
                cause,
            };
            self.stop(e, &mut out);
        }
        out
    }

    /// Checks the deadline.
    pub fn tick(&mut self, now: Instant) -> JobOutput {
        let mut out = JobOutput::default();
        let err = match &self.phase {
            Phase::Handshake {
                infos, deadline, ..
            } if now >= *deadline => Some(JobError::Timeout {
                iteration: 0,
                after: self.timeouts.handshake,
                waiting: infos
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| i.is_none())
                    .map(|(p, _)| Role::Party(p as u16))
                    .collect(),
            }),
            Phase::Running(r) if now >= r.deadline => {
                let mut waiting: Vec<Role> = r
                    .uploads
                    .iter()
                    .enumerate()
                    .filter(|(_, u)| !**u)
                    .map(|(p, _)| Role::Party(p as u16))
                    .collect();
                waiting.extend(
                    (0..3u8)
                        .filter(|&i| !r.shares[usize::from(i)])
                        .map(Role::Node),
                );
                Some(JobError::Timeout {
                    iteration: r.plan.iteration,
                    after: self.timeouts.iteration,
                    waiting,
                })
            }
            _ => None,
        };
        if let Some(e) = err {
            self.stop(e, &mut out);
        }
        out
    }

    fn dispatch(&mut self, from: Role, f: Frame, out: &mut JobOutput) -> Result<(), JobError> {
        let t = self.current_iteration();
        let kind = body_kind(&f.body);
        let (at, iteration) = (Attempt::of(&f), f.iteration);
        let protocol = |fault: ProtocolFault| JobError::Protocol {
            iteration: t,
            peer: from,
            kind,
            fault,
        };
        let parties = self.parties;
        match (f.body, from) {
            (Body::Failed { reason }, peer) => Err(JobError::PeerFailed {
                iteration: t,
                peer,
                reason,
            }),
            // The lost peer first: it is the one that failed, not the one that noticed. A
            // node reports a lost link during its session, a party a lost node link after
            // its upload: fatal to that attempt only (the report of one that is over, or of
            // another coordinator run's, is late, not a failure).
            (Body::LinkLost { peer: lost }, Role::Node(_) | Role::Party(_)) => {
                if running_for(&mut self.phase, at, iteration).is_err() {
                    return Ok(());
                }
                if matches!(from, Role::Party(_))
                    && !matches!(lost, Role::Node(_) if lost.is_valid())
                {
                    return Err(protocol(ProtocolFault::Unexpected));
                }
                Err(JobError::PeerLost {
                    iteration: t,
                    peer: lost,
                    cause: LinkLoss::ReportedBy(from),
                })
            }
            (Body::Refused { refusal }, Role::Party(_))
                if matches!(self.phase, Phase::Running(_)) =>
            {
                Err(JobError::Refused {
                    iteration: t,
                    party: from,
                    refusal,
                })
            }
            (Body::PartyInfo { rows, ids_digest }, Role::Party(p)) => {
                let Phase::Handshake {
                    infos, aligning, ..
                } = &mut self.phase
                else {
                    return Err(protocol(ProtocolFault::OutsideHandshake));
                };
                let slot = infos
                    .get_mut(usize::from(p))
                    .ok_or_else(|| protocol(ProtocolFault::NoSuchParty { party: p, parties }))?;
                if slot.replace((rows, ids_digest)).is_some() {
                    return Err(protocol(ProtocolFault::SentTwice));
                }
                if !infos.iter().all(Option::is_some) {
                    return Ok(());
                }
                let got: Vec<(u64, [u8; 32])> = infos.iter().flatten().copied().collect();
                match first_mismatch(&got, aligning.is_some()) {
                    None => {
                        let (rows, ids_digest) = got[0];
                        self.phase = Phase::Agreed;
                        self.rows_digest = ids_digest;
                        out.events.push(JobEvent::Agreed { rows, ids_digest });
                        Ok(())
                    }
                    Some(e) => Err(e),
                }
            }
            (
                Body::Align {
                    message,
                    certificate,
                    signature,
                },
                Role::Party(p),
            ) => {
                let Phase::Handshake {
                    aligning: Some(session),
                    ..
                } = &self.phase
                else {
                    return Err(protocol(ProtocolFault::NoAlignment));
                };
                let m = vtwin_psi::Message::decode(&message)
                    .map_err(|e| protocol(ProtocolFault::AlignDecode(e)))?;
                if m.from != p {
                    return Err(protocol(ProtocolFault::AlignSender(m.from)));
                }
                if m.session.0 != *session || usize::from(m.parties) != self.parties {
                    return Err(protocol(ProtocolFault::OtherAlignment));
                }
                let mut relayed = frame(
                    Role::Coordinator,
                    Attempt::NONE,
                    0,
                    0,
                    // Passed on unchanged: the addressee verifies the sender's signature.
                    Body::Align {
                        message,
                        certificate,
                        signature,
                    },
                );
                relayed.session = *session;
                out.send.push(Outgoing {
                    to: Role::Party(m.to),
                    frame: relayed,
                });
                Ok(())
            }
            (Body::Uploaded, Role::Party(p)) => {
                // It travels beside the uploads, not with them: it may arrive once its
                // iteration is over, and is then only late.
                let Ok(r) = running_for(&mut self.phase, at, iteration) else {
                    return Ok(());
                };
                let slot = r
                    .uploads
                    .get_mut(usize::from(p))
                    .ok_or_else(|| protocol(ProtocolFault::NoSuchParty { party: p, parties }))?;
                if std::mem::replace(slot, true) {
                    return Err(protocol(ProtocolFault::SentTwice));
                }
                tracing::debug!(party = p, "party uploaded");
                Ok(())
            }
            (Body::Mpc { message }, Role::Node(i)) => {
                let r = running_for(&mut self.phase, at, iteration).map_err(protocol)?;
                let m =
                    Message::decode(&message).map_err(|e| protocol(ProtocolFault::MpcDecode(e)))?;
                let node = NodeId::new(i).ok_or_else(|| protocol(ProtocolFault::NoSuchNode(i)))?;
                if m.from != Peer::Node(node) {
                    return Err(protocol(ProtocolFault::InnerSender(m.from)));
                }
                r.opening
                    .handle(m)
                    .map_err(|e| protocol(ProtocolFault::Opening(e)))?;
                r.shares[usize::from(i)] = true;
                if r.shares.iter().all(|&s| s) {
                    // Write-ahead: not combined until the driver has recorded the opening.
                    r.charge_due = true;
                    out.events.push(JobEvent::ChargeDue(OpeningRecord {
                        opening: r.plan.opening,
                        iteration: r.plan.iteration,
                        truncation_failure: r.truncation_failure,
                    }));
                }
                Ok(())
            }
            (body, _) => Err(JobError::Protocol {
                iteration: t,
                peer: from,
                kind: body_kind(&body),
                fault: ProtocolFault::Unexpected,
            }),
        }
    }

    /// The driver recorded the opening of [`JobEvent::ChargeDue`] durably: charge it,
    /// combine the shares, apply G + Z and start the next iteration. Does nothing unless a
    /// charge is due. A failed update stops the job with the opening charged.
    pub fn charged(&mut self, now: Instant) -> JobOutput {
        let mut out = JobOutput::default();
        if let Err(e) = self.finish_iteration(now, &mut out) {
            self.stop(e, &mut out);
        }
        out
    }

    /// The driver could not record the opening of [`JobEvent::ChargeDue`]: the shares are
    /// dropped uncombined and the job stops (`Abort` to every peer).
    pub fn charge_failed(&mut self, source: HookError) -> JobOutput {
        let mut out = JobOutput::default();
        if let Phase::Running(r) = &self.phase {
            if r.charge_due {
                let e = JobError::Charge {
                    iteration: r.plan.iteration,
                    opening: r.plan.opening,
                    source,
                };
                self.stop(e, &mut out);
            }
        }
        out
    }

    fn finish_iteration(&mut self, now: Instant, out: &mut JobOutput) -> Result<(), JobError> {
        let (Phase::Running(r), Some(trainer)) = (&self.phase, self.trainer.as_mut()) else {
            return Ok(());
        };
        if !r.charge_due {
            return Ok(());
        }
        trainer.charge(&r.plan, r.truncation_failure)?;
        let Some(opened) = r.opening.result() else {
            return Ok(());
        };
        let g = gradient_from_canonical(trainer.layout(), &opened);
        // On error nothing changes but the charge; the caller aborts.
        trainer.apply(r.plan.clone(), &g)?;
        let (t, b) = (r.plan.iteration, r.plan.batch.len());
        let elapsed = now.saturating_duration_since(r.started);
        out.events.push(JobEvent::Applied {
            iteration: t,
            batch: b,
            elapsed,
        });
        tracing::debug!(
            iteration = t,
            ms = elapsed.as_secs_f64() * 1e3,
            "iteration applied"
        );
        self.next_iteration(now, out);
        Ok(())
    }
}
