//! `vtwin coordinator`: drives a [`CoordinatorJob`] over QUIC links ([`run_coordinator`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_model::opening_log::OpeningRecord;
use vtwin_model::trainer::Trainer;
use vtwin_net::pki::Identity;
use vtwin_net::transport::{Backoff, Endpoint, TransportOptions};
use vtwin_net::Role;

use super::mesh::{CloseReason, Event, Hub};
use super::{DriverStep, ServiceError, StopCause};
use crate::coordinator::{CoordinatorJob, HookError, JobEvent, JobOutput, Timeouts};
use crate::error::LinkLoss;

/// How often the deadline is checked.
pub const TICK: Duration = Duration::from_millis(50);

/// Everything the coordinator service needs.
#[derive(Debug)]
pub struct CoordinatorRun {
    /// The coordinator's identity (certificate for `coordinator`).
    pub identity: Identity,
    /// Local address to bind (port 0: any).
    pub bind: SocketAddr,
    /// The three nodes, by id.
    pub nodes: [SocketAddr; 3],
    /// The parties, by index.
    pub parties: Vec<SocketAddr>,
    /// Transport options.
    pub transport: TransportOptions,
    /// Connection retry schedule at start.
    pub backoff: Backoff,
    /// Handshake and iteration deadlines.
    pub timeouts: Timeouts,
    /// Source of the session ids.
    pub randomness: SecretRandomness,
    /// Train up to this many iterations.
    pub iters: u64,
    /// The job's delta (announced to the parties and nodes with its other terms).
    pub delta: f64,
    /// Whether parties whose ids differ align them privately before training
    /// ([`CoordinatorJob::with_alignment`]).
    pub align: bool,
}

/// The driver's side: building the trainer once N is known, and persisting progress.
pub trait CoordinatorHooks {
    /// The parties agree on `rows` records: the trainer to run (fresh or resumed). An error
    /// stops the job before any iteration.
    fn agreed(&mut self, rows: u64) -> Result<Trainer, HookError>;
    /// Records `opening` durably (append and sync the opening log) before its shares are
    /// combined; an error stops the job with the shares uncombined. A driver without files
    /// (an in-memory loopback run, which never resumes) may return `Ok` at once.
    fn charge(&mut self, opening: OpeningRecord) -> Result<(), HookError>;
    /// Iteration `iteration` was applied (checkpoint, progress). An error stops the job.
    fn applied(
        &mut self,
        trainer: &Trainer,
        iteration: u64,
        elapsed: Duration,
    ) -> Result<(), HookError>;
}

/// Connects to every node and party (retrying per `run.backoff`; an unreachable or refusing
/// peer is named), runs the job to the end and returns the trainer. On any failure the job
/// aborts (`Abort` to every reachable peer, nothing applied) and the error names the peer.
pub async fn run_coordinator(
    run: CoordinatorRun,
    hooks: &mut dyn CoordinatorHooks,
) -> Result<Trainer, ServiceError> {
    let endpoint = Arc::new(Endpoint::bind(
        run.bind,
        &run.identity,
        &[],
        run.transport.clone(),
    )?);
    let result = drive(&endpoint, &run, hooks).await;
    // Give queued frames (an Abort) a moment to leave, then close.
    tokio::time::sleep(Duration::from_millis(100)).await;
    endpoint.close();
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    result
}

async fn drive(
    endpoint: &Arc<Endpoint>,
    run: &CoordinatorRun,
    hooks: &mut dyn CoordinatorHooks,
) -> Result<Trainer, ServiceError> {
    let mut peers: Vec<(Role, SocketAddr)> = (0..3u8)
        .map(|i| (Role::Node(i), run.nodes[usize::from(i)]))
        .collect();
    peers.extend(
        run.parties
            .iter()
            .enumerate()
            .map(|(p, a)| (Role::Party(p as u16), *a)),
    );
    let mut connects = JoinSet::new();
    for (role, addr) in peers {
        let (endpoint, backoff) = (endpoint.clone(), run.backoff);
        connects.spawn(async move { endpoint.connect(addr, role, backoff).await });
    }
    // The coordinator dials every link itself; the hub's link input stays open but unused.
    let (mut hub, _links) = Hub::new(Role::Coordinator);
    while let Some(joined) = connects.join_next().await {
        let link = joined.map_err(|e| ServiceError::Stopped(StopCause::Task(e)))??;
        tracing::info!(peer = %link.peer(), addr = %link.remote_address(), "link up");
        hub.mesh.attach(link);
    }
    let (mut job, hello) = CoordinatorJob::new_with_alignment(
        run.parties.len(),
        run.iters,
        run.delta,
        run.timeouts,
        run.randomness,
        run.align,
        Instant::now(),
    );
    let mut pending = JobOutput {
        send: hello,
        events: Vec::new(),
    };
    let mut ticker = tokio::time::interval(TICK);
    let mut span: Option<(u64, tracing::Span)> = None;
    loop {
        // Send, then react to the events (which may produce more output).
        while !pending.send.is_empty() || !pending.events.is_empty() {
            let out = std::mem::take(&mut pending);
            let mut lost = None;
            for o in out.send {
                if !hub.mesh.send(o.to, o.frame) {
                    lost.get_or_insert(o.to);
                }
            }
            if let Some(peer) = lost {
                let o = job.peer_lost(peer, LinkLoss::NoLink, Instant::now());
                pending.send.extend(o.send);
                pending.events.extend(o.events);
            }
            for ev in out.events {
                match ev {
                    JobEvent::Agreed { rows, .. } => {
                        tracing::info!(rows, "parties agree on the records");
                        let trainer =
                            hooks.agreed(rows).map_err(|source| ServiceError::Driver {
                                step: DriverStep::Agreed,
                                source,
                            })?;
                        let o = job.begin(trainer, Instant::now());
                        pending.send.extend(o.send);
                        pending.events.extend(o.events);
                    }
                    JobEvent::ChargeDue(record) => {
                        let o = match hooks.charge(record) {
                            Ok(()) => job.charged(Instant::now()),
                            Err(source) => job.charge_failed(source),
                        };
                        pending.send.extend(o.send);
                        pending.events.extend(o.events);
                    }
                    JobEvent::Applied {
                        iteration,
                        batch,
                        elapsed,
                    } => {
                        if let Some((_, s)) = &span {
                            s.in_scope(|| {
                                // The batch size is known to the coordinator only (nodes see the padded size):
                                // keep it out of info-level logs that operators share.
                                tracing::debug!(batch, ms = elapsed.as_secs_f64() * 1e3, "applied");
                            });
                        }
                        span = None;
                        let trainer = job
                            .trainer()
                            .ok_or_else(|| ServiceError::Stopped(StopCause::NoTrainer))?;
                        hooks
                            .applied(trainer, iteration, elapsed)
                            .map_err(|source| ServiceError::Driver {
                                step: DriverStep::Applied(iteration),
                                source,
                            })?;
                    }
                    JobEvent::Finished => {
                        hub.mesh.close_all(CloseReason::JobFinished);
                        return job
                            .into_trainer()
                            .ok_or_else(|| ServiceError::Stopped(StopCause::NoTrainer));
                    }
                    JobEvent::Aborted(e) => {
                        // The Abort frames are queued; nothing was applied.
                        for o in std::mem::take(&mut pending.send) {
                            hub.mesh.send(o.to, o.frame);
                        }
                        return Err(ServiceError::Job(e));
                    }
                }
            }
        }
        if let Some(t) = job.iteration_in_flight() {
            if span.as_ref().map(|(s, _)| *s) != Some(t) {
                span = Some((t, tracing::info_span!("iteration", t)));
            }
        }
        tokio::select! {
            ev = hub.next() => {
                let now = Instant::now();
                let _enter = span.as_ref().map(|(_, s)| s.enter());
                pending = match ev? {
                    Event::Frame(peer, f) => job.handle(peer, f, now),
                    Event::Down(peer, cause) => job.peer_lost(peer, LinkLoss::Transport(cause), now),
                };
            }
            _ = ticker.tick() => {
                pending = job.tick(Instant::now());
            }
        }
    }
}
