//! `vtwin keygen`: a consortium's CA, one certificate and key per role, the nodes' seal
//! keys, and one configuration file per role with loopback addresses.
//!
//! Files written to the output directory (private keys and seal keys with mode 0600,
//! the rest 0644, each atomically):
//!
//! | file | what |
//! |---|---|
//! | `ca.pem`, `ca.key` | the CA certificate and key (keep `ca.key` offline) |
//! | `coordinator.pem/.key`, `node-I.pem/.key`, `party-NAME.pem/.key` | per-role certificate and key |
//! | `node-I.seal` | node I's X25519 seal key (parties seal their shares to its public key) |
//! | `coordinator.toml`, `node-I.toml`, `party-NAME.toml` | the configurations (each party's and node's `[policy]` from [`KeygenSpec::policy`]) |
//!
//! Each party's ledger, `party-NAME.ledger`, is created by the party on its first run.
//!
//! Ports: node I listens on `base_port + I`, party J on `base_port + 3 + J`, all on
//! 127.0.0.1 (edit the files for other hosts). Existing files are never overwritten: if
//! any target exists nothing is written; if writing fails midway the files already written
//! are removed.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::atomic_file::{self, Mode};
use crate::config::{
    self, CoordinatorConfig, DataSource, Insecure, NodeConfig, NodePolicy, PartyConfig,
    PartyEndpoint, PartyPolicy, Timeouts, TlsFiles, TrainingSettings,
};
use crate::pki::{Ca, PkiError};
use crate::role::{Role, NODES};
use crate::seal::{hex, SealKey};

/// What to generate.
#[derive(Clone, Debug)]
pub struct KeygenSpec {
    /// Party names, in index order (2 or more; letters, digits, `-` and `_`, at most 64).
    pub parties: Vec<String>,
    /// Compute nodes; must be 3.
    pub nodes: usize,
    /// First port (nodes at `base_port + i`, parties after them).
    pub base_port: u16,
    /// The job written to `coordinator.toml`.
    pub training: TrainingSettings,
    /// Each party's data source, by index (same length as `parties`).
    pub data: Vec<DataSource>,
    /// Insecure reproducibility seeds written to every file (tests and demos only).
    pub insecure: Option<Insecure>,
    /// Every party's `[policy]` (what it agrees to; match it to `training`); the nodes'
    /// `[policy]` takes its sigma floor and clip cap.
    pub policy: PartyPolicy,
}

/// What was written.
#[derive(Clone, Debug)]
pub struct KeygenOutput {
    /// Every file written, in order.
    pub files: Vec<PathBuf>,
    /// `coordinator.toml`.
    pub coordinator: PathBuf,
    /// `node-I.toml`, by id.
    pub nodes: Vec<PathBuf>,
    /// `party-NAME.toml`, by index.
    pub parties: Vec<PathBuf>,
}

/// Key generation failed; names the flag or file at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeygenError {
    /// An argument is out of range.
    #[error("{flag}: {reason}")]
    Invalid {
        /// The flag (`--parties`, `--nodes`, `--base-port`).
        flag: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A target file exists already (nothing was written).
    #[error("{file} exists already; keygen never overwrites keys (choose an empty --out)")]
    Exists {
        /// The file.
        file: String,
    },
    /// Certificate generation failed.
    #[error(transparent)]
    Pki(#[from] PkiError),
    /// Writing failed (files written so far were removed).
    #[error("{file}: {reason}")]
    Write {
        /// The file.
        file: String,
        /// The cause.
        reason: String,
    },
}

fn invalid(flag: &'static str, reason: String) -> KeygenError {
    KeygenError::Invalid { flag, reason }
}

fn check(spec: &KeygenSpec) -> Result<(), KeygenError> {
    if spec.nodes != NODES as usize {
        return Err(invalid(
            "--nodes",
            format!("{}: replicated sharing needs exactly 3 nodes", spec.nodes),
        ));
    }
    let p = spec.parties.len();
    if p < 2 {
        return Err(invalid(
            "--parties",
            format!("{p} given; a vertically partitioned table needs at least 2 parties"),
        ));
    }
    if p > usize::from(u16::MAX) {
        return Err(invalid("--parties", format!("{p} given, at most 65535")));
    }
    for (i, name) in spec.parties.iter().enumerate() {
        let ok = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(invalid(
                "--parties",
                format!("{name:?}: use 1 to 64 letters, digits, '-' or '_' (it names files)"),
            ));
        }
        if spec.parties[..i].contains(name) {
            return Err(invalid("--parties", format!("{name:?} appears twice")));
        }
    }
    if spec.data.len() != p {
        return Err(invalid(
            "--parties",
            format!("{} data sources for {p} parties", spec.data.len()),
        ));
    }
    let last = u32::from(spec.base_port) + 3 + p as u32 - 1;
    if spec.base_port == 0 || last > u32::from(u16::MAX) {
        return Err(invalid(
            "--base-port",
            format!(
                "{}: ports {}..={last} must lie in 1..=65535",
                spec.base_port, spec.base_port
            ),
        ));
    }
    Ok(())
}

/// Files to write: (name, content, mode).
type Plan = Vec<(String, Vec<u8>, Mode)>;

fn toml_bytes<T: serde::Serialize>(name: &str, c: &T) -> Result<Vec<u8>, KeygenError> {
    toml::to_string(c)
        .map(String::into_bytes)
        .map_err(|e| KeygenError::Write {
            file: name.to_string(),
            reason: e.to_string(),
        })
}

/// Generates everything in memory, checks that no target exists, then writes.
///
/// Cost: 2 + 3 + P P-256 key generations and signatures, 3 X25519 keys, 2 (P + 5) + 3
/// small files (well under a second).
pub fn keygen(out: &Path, spec: &KeygenSpec) -> Result<KeygenOutput, KeygenError> {
    check(spec)?;
    let ca = Ca::generate()?;
    let loopback = |port: u32| SocketAddr::from((Ipv4Addr::LOCALHOST, port as u16));
    let base = u32::from(spec.base_port);
    let node_addrs: [SocketAddr; 3] = std::array::from_fn(|i| loopback(base + i as u32));
    let party_addrs: Vec<SocketAddr> = (0..spec.parties.len())
        .map(|j| loopback(base + 3 + j as u32))
        .collect();
    let tls = |stem: &str| TlsFiles {
        ca: "ca.pem".into(),
        cert: format!("{stem}.pem").into(),
        key: format!("{stem}.key").into(),
    };
    let mut plan: Plan = vec![
        (
            "ca.pem".into(),
            ca.cert_pem().as_bytes().to_vec(),
            Mode::Public,
        ),
        (
            "ca.key".into(),
            ca.key_pem().as_bytes().to_vec(),
            Mode::Secret,
        ),
    ];
    let issue = |plan: &mut Plan, stem: &str, role: Role| -> Result<(), KeygenError> {
        let issued = ca.issue(role)?;
        plan.push((
            format!("{stem}.pem"),
            issued.cert_pem.into_bytes(),
            Mode::Public,
        ));
        plan.push((
            format!("{stem}.key"),
            issued.key_pem.as_bytes().to_vec(),
            Mode::Secret,
        ));
        Ok(())
    };

    issue(&mut plan, "coordinator", Role::Coordinator)?;
    let coordinator = CoordinatorConfig {
        tls: tls("coordinator"),
        nodes: node_addrs,
        parties: spec
            .parties
            .iter()
            .zip(&party_addrs)
            .map(|(name, &address)| PartyEndpoint {
                name: name.clone(),
                address,
            })
            .collect(),
        out: "run".into(),
        training: spec.training.clone(),
        timeouts: Timeouts::default(),
        insecure: spec.insecure.clone(),
    };
    plan.push((
        "coordinator.toml".into(),
        toml_bytes("coordinator.toml", &coordinator)?,
        Mode::Public,
    ));

    let mut rng = ChaCha20Rng::from_os_rng();
    let mut seal_publics = Vec::new();
    for i in 0..NODES {
        let stem = format!("node-{i}");
        issue(&mut plan, &stem, Role::Node(i))?;
        let seal = SealKey::generate(&mut rng);
        seal_publics.push(hex(&seal.public()));
        let mut text = hex(seal.to_bytes().as_ref());
        text.push('\n');
        plan.push((format!("{stem}.seal"), text.into_bytes(), Mode::Secret));
        let node = NodeConfig {
            id: i,
            listen: node_addrs[i as usize],
            nodes: node_addrs,
            tls: tls(&stem),
            seal_key: format!("{stem}.seal").into(),
            policy: NodePolicy {
                sigma: spec.policy.sigma,
                clip: spec.policy.clip,
            },
            timeouts: Timeouts::default(),
            insecure: spec.insecure.clone(),
        };
        let name = format!("{stem}.toml");
        plan.push((name.clone(), toml_bytes(&name, &node)?, Mode::Public));
    }
    let seal_publics: [String; 3] = seal_publics.try_into().expect("three nodes");

    for (j, name) in spec.parties.iter().enumerate() {
        let stem = format!("party-{name}");
        issue(&mut plan, &stem, Role::Party(j as u16))?;
        let party = PartyConfig {
            name: name.clone(),
            index: j as u16,
            listen: party_addrs[j],
            tls: tls(&stem),
            node_seal_publics: seal_publics.clone(),
            schema: spec.training.schema.clone(),
            data: spec.data[j].clone(),
            ledger: format!("{stem}.ledger").into(),
            policy: spec.policy.clone(),
            timeouts: Timeouts::default(),
            insecure: spec.insecure.clone(),
        };
        let file = format!("{stem}.toml");
        plan.push((file.clone(), toml_bytes(&file, &party)?, Mode::Public));
    }

    write_all(out, plan).map(|files| KeygenOutput {
        coordinator: out.join("coordinator.toml"),
        nodes: (0..NODES)
            .map(|i| out.join(format!("node-{i}.toml")))
            .collect(),
        parties: spec
            .parties
            .iter()
            .map(|n| out.join(format!("party-{n}.toml")))
            .collect(),
        files,
    })
}

fn write_all(out: &Path, plan: Plan) -> Result<Vec<PathBuf>, KeygenError> {
    std::fs::create_dir_all(out).map_err(|e| KeygenError::Write {
        file: out.display().to_string(),
        reason: e.to_string(),
    })?;
    for (name, _, _) in &plan {
        let path = out.join(name);
        if path.exists() {
            return Err(KeygenError::Exists {
                file: path.display().to_string(),
            });
        }
    }
    let mut written = Vec::new();
    for (name, mut bytes, mode) in plan {
        let path = out.join(&name);
        let result = atomic_file::write(&path, &bytes, mode);
        zeroize::Zeroize::zeroize(&mut bytes);
        if let Err(e) = result {
            for p in &written {
                let _ = std::fs::remove_file(p);
            }
            return Err(KeygenError::Write {
                file: path.display().to_string(),
                reason: e.to_string(),
            });
        }
        written.push(path);
    }
    Ok(written)
}

/// Reads back every configuration written by [`keygen`] (a self-check used by the
/// command and the tests).
pub fn verify(output: &KeygenOutput) -> Result<(), config::ConfigError> {
    CoordinatorConfig::load(&output.coordinator)?;
    for n in &output.nodes {
        NodeConfig::load(n)?;
    }
    for p in &output.parties {
        PartyConfig::load(p)?;
    }
    Ok(())
}
