//! The figures of docs/network-results.md, in one run: ms per iteration on the Adult workload
//! of the plaintext `fixed` backend, the in-memory `mpc` backend and the consortium over
//! loopback QUIC (mutual TLS, sealing, node-to-node links, per-party CSVs read by each party),
//! then the consortium at emulated round-trip times (vtwin-net's receive delay line on every
//! link, one-way delay = RTT / 2) against the rounds x RTT model.
//!
//! `cargo run --release -p vtwin-consortium --example network_figures [-- ITERS [RTT_ITERS]]`
//! The Adult files come from `$VTWIN_DATA_DIR` or `../shared/data/adult` next to the
//! workspace; the per-party CSVs are written to a temporary directory (never the repository).
//! Secrets come from insecure seeds (timing only). Prints a JSON object.
//!
//! Bytes on the wire: the loopback interface's transmit counters (`/proc/net/dev`, Linux) over
//! the whole no-delay QUIC run (setup and warm-up included, so slightly high; every process
//! of the host counts, so run it on a quiet machine), per iteration: QUIC, TLS, frame and
//! IP/UDP headers included.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use vtwin_consortium::loopback::{run, LoopbackSettings};
use vtwin_data::{Schema, Table};
use vtwin_iteration::randomness::BatchKey;
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::{GradientBackend, NoiseRngs};
use vtwin_model::dpvi::{Dpvi, DpviConfig};
use vtwin_model::fixed_backend::{FixedBackend, Renormalise};
use vtwin_model::layout::Layout;
use vtwin_model::mpc_backend::MpcBackend;
use vtwin_model::party_data::PartyData;

const WARMUP: usize = 3;

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn spread(v: &[f64]) -> serde_json::Value {
    serde_json::json!({
        "median": median(v), "p10": quantile(v, 0.1), "p90": quantile(v, 0.9), "n": v.len(),
    })
}

fn in_memory(
    backend: Box<dyn GradientBackend>,
    config: &DpviConfig,
    layout: &Layout,
    table: &Table,
    iters: usize,
) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let data = PartyData::from_table(table, layout)?;
    let mut dpvi = Dpvi::new(
        config.clone(),
        layout.clone(),
        data,
        backend,
        NoiseRngs::seeded(1, layout.n_parties()),
        BatchKey::insecure(1),
    )?;
    let mut ms = Vec::new();
    for i in 0..WARMUP + iters {
        let t0 = Instant::now();
        dpvi.step()?;
        if i >= WARMUP {
            ms.push(t0.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(ms)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let args: Vec<String> = std::env::args().collect();
    let iters: usize = args.get(1).map_or(Ok(30), |s| s.parse())?;
    let rtt_iters: usize = args.get(2).map_or(Ok(5), |s| s.parse())?;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let data = std::env::var_os("VTWIN_DATA_DIR")
        .map_or_else(|| root.join("../shared/data/adult"), PathBuf::from);
    let mut schema = Schema::load(&root.join("examples/adult/schema.toml"))?;
    let mut table = Table::read_joined(&schema, &data.join("adult.data"))?;
    // Adult has no id column; per-party files are matched by one, so the row number (the
    // table's ids) becomes the id column of the per-party CSVs.
    if schema.id.is_none() {
        schema.id = Some("row".into());
        table.schema = schema.clone();
    }
    // `vtwin train`'s default K for the schema (9 for the shipped Adult).
    let k = vtwin_model::components::default_components(&schema)?;
    let layout = Layout::from_schema(&schema, k)?;
    let n = table.n_rows();
    let tmp = tempfile::tempdir()?;
    let mut parties = Vec::new();
    for name in &layout.parties {
        let path = tmp.path().join(format!("{name}.csv"));
        table.write_party_csv(name, &path)?;
        parties.push(PartyData::from_party_csv(&schema, &layout, name, &path)?);
    }
    let config = DpviConfig {
        sample_rate: 100.0 / n as f64,
        clip: 1.0,
        sigma: 1.0,
        adam: AdamConfig::default(),
        seed: 0,
        tempering: vtwin_model::tempering::Tempering::Off,
    };
    let started = chrono_free_utc();

    let fixed = in_memory(
        Box::new(FixedBackend::new(Renormalise::ClosedForm)?),
        &config,
        &layout,
        &table,
        iters,
    )?;
    let mpc_backend = MpcBackend::seeded(Renormalise::ClosedForm, 2)?;
    let costs = mpc_backend.costs();
    let mpc = in_memory(Box::new(mpc_backend), &config, &layout, &table, iters)?;
    let rounds = costs.snapshot().last().map_or(0, |c| c.rounds);
    let bytes_between_nodes = costs.snapshot().last().map_or(0, |c| c.bytes_between_nodes);

    let quic = |delay: Option<Duration>,
                iters: usize|
     -> Result<(Vec<f64>, f64), Box<dyn std::error::Error>> {
        let settings = LoopbackSettings {
            schema: schema.clone(),
            parties: parties.clone(),
            components: k,
            config: config.clone(),
            iters: (WARMUP + iters) as u64,
            renormalise: Renormalise::ClosedForm,
            mpc_seed: Some(3),
            noise_seed: Some(4),
            receive_delay: delay,
            iteration_timeout: Duration::from_secs(300),
            policy: vtwin_consortium::party::policy_for_plan(&vtwin_net::JobTerms {
                sigma: config.sigma,
                clip: config.clip,
                components: k as u32,
                sample_rate: config.sample_rate,
                iterations: (WARMUP + iters) as u64,
                delta: 1e-5,
                // A policy bounds neither the rows nor the tempering.
                rows: [0; 32],
                tempering_start: 1.0,
                tempering_iterations: 0,
            })?,
            delta: 1e-5,
            align: false,
        };
        let r = run(settings)?;
        Ok((r.iteration_ms[WARMUP..].to_vec(), r.setup_ms))
    };
    let lo_before = loopback_tx();
    let (loopback, setup_ms) = quic(None, iters)?;
    let wire = match (lo_before, loopback_tx()) {
        (Some((b0, p0)), Some((b1, p1))) => {
            let runs = (WARMUP + iters) as f64;
            serde_json::json!({
                "bytes_per_iteration": (b1 - b0) as f64 / runs,
                "packets_per_iteration": (p1 - p0) as f64 / runs,
            })
        }
        _ => serde_json::Value::Null,
    };
    let mut rtt = Vec::new();
    for rtt_ms in [1.0f64, 20.0] {
        let (ms, _) = quic(Some(Duration::from_secs_f64(rtt_ms / 2e3)), rtt_iters)?;
        rtt.push(serde_json::json!({
            "rtt_ms": rtt_ms,
            "ms_per_iteration": spread(&ms),
            "rounds_x_rtt_ms": rounds as f64 * rtt_ms,
            "model_ms": (rounds as f64 + 3.0) * rtt_ms / 2.0 + median(&loopback),
        }));
    }
    let out = serde_json::json!({
        "workload": format!("adult: N = {n}, K = {k}, expected batch 100, d = {}", layout.dim()),
        "started_utc": started,
        "iterations_timed": iters,
        "warmup": WARMUP,
        "fixed": spread(&fixed),
        "mpc_in_memory": spread(&mpc),
        "mpc_loopback_quic": spread(&loopback),
        "loopback_setup_ms": setup_ms,
        "loopback_wire": wire,
        "quic_over_mpc": median(&loopback) / median(&mpc),
        "quic_over_fixed": median(&loopback) / median(&fixed),
        "mpc_rounds_per_iteration": rounds,
        "mpc_bytes_between_nodes_per_iteration": bytes_between_nodes,
        "emulated_rtt": rtt,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// (bytes, packets) sent on the loopback interface so far, from `/proc/net/dev` (None where
/// it cannot be read: not Linux).
fn loopback_tx() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/net/dev").ok()?;
    let line = text.lines().find(|l| l.trim_start().starts_with("lo:"))?;
    let fields: Vec<u64> = line
        .split_once(':')?
        .1
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit.
    Some((*fields.get(8)?, *fields.get(9)?))
}

/// UTC time of day from the system clock (seconds precision), without a date crate.
fn chrono_free_utc() -> String {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02}", (s / 3600) % 24, (s / 60) % 60, s % 60)
}
