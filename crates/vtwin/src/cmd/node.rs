//! `vtwin node --config FILE`: one compute node of the consortium (INTERFACE.md), serving
//! iterations until interrupted. It hosts the vtwin-mpc state machine of each iteration
//! (`vtwin_consortium::node`), talks QUIC with mutual TLS (`vtwin_net`), and keeps serving
//! after a failed session, a refused handshake or a bad frame (each logged).
//!
//! Logs go to stderr through `tracing` (filter from `RUST_LOG`, default `info`), one
//! `iteration` span per iteration.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context};
use vtwin_consortium::config::{Insecure, NodeConfig};
use vtwin_consortium::service::{NodeRun, NodeServer};
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_mpc::NodeId;
use vtwin_net::pki::check_seal_binding;
use vtwin_net::{Role, SealKey};

/// Run a compute node of the consortium.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The node's configuration (written by `vtwin keygen sign` or `vtwin keygen`).
    #[arg(long)]
    config: PathBuf,
}

/// Logs to stderr with the `RUST_LOG` filter (default `info`). Idempotent.
pub(crate) fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

/// The secret randomness of a service: OS, or the insecure seed of its config (with a
/// warning: the run is then neither private nor secret).
pub(crate) fn randomness(insecure: &Option<Insecure>, file: &std::path::Path) -> SecretRandomness {
    match insecure {
        Some(i) => {
            tracing::warn!(
                "{}: [insecure] seeds: every secret of this run can be recomputed from them (tests only)",
                file.display()
            );
            SecretRandomness::InsecureSeed(i.mpc_seed)
        }
        None => SecretRandomness::Os,
    }
}

/// A multi-threaded tokio runtime for the services.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    init_logging();
    let cfg = NodeConfig::load(&a.config)?;
    let file = a.config.display().to_string();
    let id =
        NodeId::new(cfg.id).ok_or_else(|| anyhow!("{file}: id {} is not 0, 1 or 2", cfg.id))?;
    let identity = cfg.tls.load()?;
    if identity.role() != Role::Node(cfg.id) {
        bail!(
            "{file}: the certificate {} is for {}, not node {}",
            cfg.tls.cert.display(),
            identity.role(),
            cfg.id
        );
    }
    let seal_key = SealKey::read_file(&cfg.seal_key)?;
    // Parties seal to the key the CA bound into this node's certificate: a node holding
    // another key could open nothing, so refuse to start, naming both files.
    check_seal_binding(&identity, &cfg.tls.cert, &seal_key, &cfg.seal_key)?;
    let randomness = randomness(&cfg.insecure, &a.config);
    let rt = runtime()?;
    rt.block_on(async {
        let mut transport = cfg.timeouts.transport();
        transport.insecure = cfg.insecure.is_some();
        let server = NodeServer::bind(id, &identity, cfg.listen, transport)?;
        let run = NodeRun {
            nodes: cfg.nodes,
            seal_key,
            policy: cfg.policy.clone(),
            randomness,
            backoff: cfg.timeouts.backoff(),
        };
        tokio::select! {
            r = server.serve(run) => r.map_err(anyhow::Error::from),
            signal = shutdown() => {
                tracing::info!("{signal}: stopping");
                Ok(())
            }
        }
    })
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM (what systemd and container runtimes send to
/// stop a service), naming the signal. A node or party holds no state that a stop could
/// leave half-written: a party's ledger entry is synced before its upload leaves.
pub(crate) async fn shutdown() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        },
        // Without a SIGTERM handler (never on Linux), Ctrl-C still stops the service.
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}
