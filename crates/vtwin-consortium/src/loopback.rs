//! A whole consortium in one process over loopback QUIC: a fresh in-memory CA and a
//! certificate per role, three nodes, P parties and the coordinator, each a service of
//! [`crate::service`] on `127.0.0.1`, for `vtwin demo` and the "mpc over QUIC" row of
//! `vtwin bench`.
//!
//! Everything travels as in a deployment (mutual TLS, framing, sealing, node-to-node links);
//! only the processes are tasks of one tokio runtime. Optional receive delay on every link
//! ([`LoopbackSettings::receive_delay`], vtwin-net's delay line) emulates a round-trip time
//! of twice the delay.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::config::{NodePolicy, PartyPolicy};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_data::Schema;
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_model::dpvi::DpviConfig;
use vtwin_model::fixed_backend::Renormalise;
use vtwin_model::layout::Layout;
use vtwin_model::opening_log::OpeningRecord;
use vtwin_model::party_data::OwnPartyData;
use vtwin_model::trainer::Trainer;
use vtwin_mpc::NodeId;
use vtwin_net::pki::{Ca, Identity};
use vtwin_net::transport::{Backoff, TransportOptions};
use vtwin_net::{Role, SealKey};

use crate::coordinator::{HookError, Timeouts};
use crate::party::{PartyResponder, PartySetup};
use crate::party_ledger::PartyLedger;
use crate::service::{
    run_coordinator, CoordinatorHooks, CoordinatorRun, NodeRun, NodeServer, PartyServer,
    ServiceError,
};

/// What to run.
#[derive(Clone, Debug)]
pub struct LoopbackSettings {
    /// The public schema.
    pub schema: Schema,
    /// Each party's own data (index = `data.party`, in layout order).
    pub parties: Vec<OwnPartyData>,
    /// Mixture components K.
    pub components: usize,
    /// DPVI settings (sample rate, clip, sigma, Adam, public seed) of the trainer that [`run`]
    /// builds; [`run_with_hooks`] leaves the trainer to its hooks and ignores them.
    pub config: DpviConfig,
    /// Iterations.
    pub iters: u64,
    /// Renormalisation of the parties' local log-densities.
    pub renormalise: Renormalise,
    /// Insecure MPC seed (tests and benchmarks; `None`: OS randomness). It also seeds the
    /// batch key of the trainer that [`run`] builds ([`SecretRandomness::batch_key`]).
    pub mpc_seed: Option<u64>,
    /// Insecure noise seed (tests and benchmarks; `None`: OS randomness).
    pub noise_seed: Option<u64>,
    /// One-way delay added to every received frame (RTT emulation), or none.
    pub receive_delay: Option<Duration>,
    /// Deadline of one iteration.
    pub iteration_timeout: Duration,
    /// Every party's policy (e.g. [`crate::party::policy_for_plan`] of the job); the nodes
    /// take its sigma floor and clip cap. The parties' ledgers live in memory (they live
    /// as long as the run).
    pub policy: PartyPolicy,
    /// The job's delta, announced in its terms.
    pub delta: f64,
    /// Whether parties whose ids differ align them privately before training.
    pub align: bool,
}

/// What a loopback run measured.
#[derive(Debug)]
pub struct LoopbackReport {
    /// The trained state.
    pub trainer: Trainer,
    /// Wall milliseconds of each iteration, from `Start` to the applied update, in order.
    pub iteration_ms: Vec<f64>,
    /// Milliseconds to set up (certificates, binding, connecting, handshake).
    pub setup_ms: f64,
    /// Wall milliseconds of the whole run.
    pub total_ms: f64,
}

/// Why a loopback run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoopbackError {
    /// The schema has no layout for the run's K.
    #[error("loopback setup: the layout for {components} components")]
    Layout {
        /// K.
        components: usize,
        /// The cause.
        #[source]
        source: vtwin_model::layout::LayoutError,
    },
    /// The tokio runtime could not be built.
    #[error("loopback setup: the tokio runtime")]
    Runtime(#[source] std::io::Error),
    /// Certificates or keys could not be made.
    #[error("loopback setup: certificates")]
    Pki(#[source] vtwin_net::pki::PkiError),
    /// A party's responder could not be set up.
    #[error("loopback setup")]
    Party(#[source] crate::party::PartyError),
    /// A service failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// The default hooks: a fresh [`Trainer`], iteration times recorded.
#[derive(Debug)]
struct Recorder {
    config: DpviConfig,
    randomness: SecretRandomness,
    layout: Layout,
    started: Instant,
    agreed_at: Option<Instant>,
    iteration_ms: Vec<f64>,
}

impl CoordinatorHooks for Recorder {
    fn agreed(&mut self, rows: u64) -> Result<Trainer, HookError> {
        self.agreed_at = Some(Instant::now());
        Trainer::new(
            self.config.clone(),
            self.layout.clone(),
            rows as usize,
            self.randomness.batch_key(),
        )
        .map_err(HookError::from)
    }

    fn charge(&mut self, _: OpeningRecord) -> Result<(), HookError> {
        // No files and no resume: the trainer's in-memory ledger is the whole record.
        Ok(())
    }

    fn applied(&mut self, _: &Trainer, _: u64, elapsed: Duration) -> Result<(), HookError> {
        self.iteration_ms.push(elapsed.as_secs_f64() * 1e3);
        Ok(())
    }
}

fn randomness_of(settings: &LoopbackSettings) -> SecretRandomness {
    match settings.mpc_seed {
        Some(s) => SecretRandomness::InsecureSeed(s),
        None => SecretRandomness::Os,
    }
}

/// Runs a fresh job to the end on a new multi-threaded tokio runtime (see the module docs).
pub fn run(settings: LoopbackSettings) -> Result<LoopbackReport, LoopbackError> {
    let layout = Layout::from_schema(&settings.schema, settings.components).map_err(|source| {
        LoopbackError::Layout {
            components: settings.components,
            source,
        }
    })?;
    let mut hooks = Recorder {
        config: settings.config.clone(),
        randomness: randomness_of(&settings),
        layout,
        started: Instant::now(),
        agreed_at: None,
        iteration_ms: Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(LoopbackError::Runtime)?;
    let trainer = rt.block_on(run_with_hooks(&settings, &mut hooks))?;
    let total_ms = hooks.started.elapsed().as_secs_f64() * 1e3;
    let setup_ms = hooks
        .agreed_at
        .map_or(0.0, |a| (a - hooks.started).as_secs_f64() * 1e3);
    Ok(LoopbackReport {
        trainer,
        iteration_ms: hooks.iteration_ms,
        setup_ms,
        total_ms,
    })
}

fn identity(ca: &Ca, role: Role) -> Result<Identity, LoopbackError> {
    ca.identity(role).map_err(LoopbackError::Pki)
}

/// Runs the consortium inside the current tokio runtime (multi-threaded) with the caller's
/// hooks (which build the trainer and persist progress); returns the trained state. The
/// node and party tasks are stopped when it returns.
pub async fn run_with_hooks(
    settings: &LoopbackSettings,
    hooks: &mut dyn CoordinatorHooks,
) -> Result<Trainer, LoopbackError> {
    let ca = Ca::generate().map_err(LoopbackError::Pki)?;
    let randomness = randomness_of(settings);
    let transport = TransportOptions {
        receive_delay: settings.receive_delay,
        // Every role of this run shares the seeds, so all announce it alike.
        insecure: settings.mpc_seed.is_some() || settings.noise_seed.is_some(),
        ..TransportOptions::default()
    };
    let node_policy = NodePolicy {
        sigma: settings.policy.sigma,
        clip: settings.policy.clip,
    };
    let backoff = Backoff {
        attempts: 20,
        initial: Duration::from_millis(20),
        max: Duration::from_millis(500),
        attempt_timeout: Duration::from_secs(5),
    };
    let local: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut seal_rng = ChaCha20Rng::from_os_rng();
    let mut tasks = tokio::task::JoinSet::new();

    let mut node_servers = Vec::new();
    let mut node_addrs = [local; 3];
    let mut seal_keys = Vec::new();
    for id in NodeId::ALL {
        let i = id.index() as u8;
        let server =
            NodeServer::bind(id, &identity(&ca, Role::Node(i))?, local, transport.clone())?;
        node_addrs[usize::from(i)] = server.local_addr()?;
        node_servers.push(server);
        seal_keys.push(SealKey::generate(&mut seal_rng));
    }
    let publics = [
        seal_keys[0].public(),
        seal_keys[1].public(),
        seal_keys[2].public(),
    ];
    for (server, seal_key) in node_servers.into_iter().zip(seal_keys) {
        let run = NodeRun {
            nodes: node_addrs,
            seal_key,
            policy: node_policy.clone(),
            randomness,
            backoff,
        };
        tasks.spawn(async move { server.serve(run).await });
    }
    let mut party_addrs = Vec::new();
    for own in &settings.parties {
        let p = own.data.party as u16;
        let party_identity = identity(&ca, Role::Party(p))?;
        let server = PartyServer::bind(&party_identity, local, transport.clone())?;
        party_addrs.push(server.local_addr()?);
        let responder = PartyResponder::new(PartySetup {
            index: p,
            schema: settings.schema.clone(),
            data: own.data.clone(),
            ids: own.ids.clone(),
            node_seal_publics: publics,
            randomness,
            noise_seed: settings.noise_seed,
            renormalise: settings.renormalise,
            policy: settings.policy.clone(),
            ledger: PartyLedger::in_memory(),
            identity: party_identity,
            align_timeout: settings.iteration_timeout,
        })
        .map_err(LoopbackError::Party)?;
        tasks.spawn(async move { server.serve(responder, node_addrs, backoff).await });
    }
    let run = CoordinatorRun {
        identity: identity(&ca, Role::Coordinator)?,
        bind: local,
        nodes: node_addrs,
        parties: party_addrs,
        transport,
        backoff,
        timeouts: Timeouts {
            handshake: settings.iteration_timeout,
            iteration: settings.iteration_timeout,
        },
        randomness,
        iters: settings.iters,
        delta: settings.delta,
        align: settings.align,
    };
    let result = run_coordinator(run, hooks).await;
    tasks.abort_all();
    Ok(result?)
}
