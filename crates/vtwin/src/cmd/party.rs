//! `vtwin party --config FILE`: one party of the consortium (INTERFACE.md), answering the
//! coordinator until interrupted. It loads only its own columns (its CSV, rows in id order,
//! or its slice of the built-in demo table), computes its local kernels per request, and
//! uploads its inputs sealed to the nodes (`vtwin_consortium::party`), within its own
//! `[policy]` and budget, recording every upload in its ledger file (`ledger`) first.
//!
//! The consortium runs the closed-form renormalisation (the `vtwin train` default).

use std::path::PathBuf;

use anyhow::bail;
use vtwin_consortium::config::{DataSource, PartyConfig};
use vtwin_consortium::service::PartyServer;
use vtwin_consortium::{PartyLedger, PartyResponder, PartySetup};
use vtwin_data::Schema;
use vtwin_model::fixed_backend::Renormalise;
use vtwin_model::layout::Layout;
use vtwin_model::party_data::PartyData;
use vtwin_net::Role;

use super::node::{init_logging, randomness, runtime};

/// Run a party of the consortium.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The party's configuration (written by `vtwin keygen`).
    #[arg(long)]
    config: PathBuf,
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    init_logging();
    let cfg = PartyConfig::load(&a.config)?;
    let file = a.config.display().to_string();
    let identity = cfg.tls.load()?;
    if identity.role() != Role::Party(cfg.index) {
        bail!(
            "{file}: the certificate {} is for {}, not party {}",
            cfg.tls.cert.display(),
            identity.role(),
            cfg.index
        );
    }
    // Bind before loading the data: a coordinator that dials while a large file loads then
    // finds the port open (its link waits in the accept queue) instead of "port unreachable",
    // which would end its connection attempts early.
    let rt = runtime()?;
    let server = {
        let _runtime = rt.enter();
        let mut transport = cfg.timeouts.transport();
        transport.insecure = cfg.insecure.is_some();
        PartyServer::bind(&identity, cfg.listen, transport)?
    };
    let schema = match &cfg.schema {
        Some(p) => Schema::load(p)?,
        None => vtwin_data::demo::demo_schema(),
    };
    // The statistics do not depend on K; the layout is rebuilt per request's K. The policy's
    // K (the only one the party accepts) also satisfies a target's at least one component per
    // class, which K = 1 would not.
    let layout = Layout::from_schema(&schema, cfg.policy.components as usize)?;
    let own = match &cfg.data {
        DataSource::Csv { path } => PartyData::from_party_csv(&schema, &layout, &cfg.name, path)?,
        DataSource::Demo { rows, seed } => PartyData::from_demo(&layout, &cfg.name, *rows, *seed)?,
    };
    if own.data.party != usize::from(cfg.index) {
        bail!(
            "{file}: party \"{}\" is party {} of the schema, but the config says index {}",
            cfg.name,
            own.data.party,
            cfg.index
        );
    }
    let setup = PartySetup {
        index: cfg.index,
        schema,
        ids: own.ids,
        data: own.data,
        node_seal_publics: cfg.node_publics()?,
        randomness: randomness(&cfg.insecure, &a.config),
        noise_seed: cfg.insecure.as_ref().map(|i| i.noise_seed),
        renormalise: Renormalise::ClosedForm,
        policy: cfg.policy.clone(),
        ledger: PartyLedger::open(&cfg.ledger)?,
        identity: identity.clone(),
        align_timeout: cfg.timeouts.iteration(),
    };
    tracing::info!(
        uploads = setup.ledger.uploads(),
        openings = cfg.policy.openings,
        epsilon = cfg.policy.epsilon,
        "{file}: policy loaded; ledger {}",
        cfg.ledger.display()
    );
    let responder = PartyResponder::new(setup)?;
    rt.block_on(async {
        tokio::select! {
            r = server.serve(responder, cfg.nodes, cfg.timeouts.backoff()) => r.map_err(anyhow::Error::from),
            signal = super::node::shutdown() => {
                tracing::info!("{signal}: stopping");
                Ok(())
            }
        }
    })
}
