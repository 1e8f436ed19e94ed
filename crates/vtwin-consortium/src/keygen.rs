//! Key generation for a consortium, two ways.
//!
//! **Deployment: certificate requests** (nobody but a role ever holds its private keys):
//!
//! 1. [`ca`] (the CA operator): `ca.pem`, `ca.key`.
//! 2. [`request`] (each role, on its own host): its TLS key `ROLE.key`, for a node its seal
//!    key `ROLE.seal` (both 0600), and the request `ROLE.csr` (public) to send to the CA
//!    operator. `ROLE` is `coordinator`, `node-I` or `party-NAME` ([`RequestRole`]).
//! 3. [`sign`] (the CA operator): verifies every request and signs one certificate per role
//!    (a node's binds its seal public key, [`vtwin_net::pki`]), and writes the public files of
//!    the consortium: `ca.pem`, `ROLE.pem` and `ROLE.toml` for every role. The configs name
//!    each role's key files by the names [`request`] gave them, so each role puts `ca.pem`,
//!    its `ROLE.pem` and `ROLE.toml` (a party also the three `node-I.pem`) next to its own
//!    keys. No private key leaves its role.
//!
//! Both ends print SHA-256 fingerprints ([`vtwin_net::pki::fingerprint`]) of the CA certificate,
//! each public key and each seal key, to be compared out of band.
//!
//! **Demos and tests: [`keygen`]**, one step, everything in one directory (the operator sees
//! every private key):
//!
//! | file | what |
//! |---|---|
//! | `ca.pem`, `ca.key` | the CA certificate and key (keep `ca.key` offline) |
//! | `coordinator.pem/.key`, `node-I.pem/.key`, `party-NAME.pem/.key` | per-role certificate and key |
//! | `node-I.seal` | node I's X25519 seal key (bound into `node-I.pem`) |
//! | `coordinator.toml`, `node-I.toml`, `party-NAME.toml` | the configurations (each party's and node's `[policy]` from [`KeygenSpec::policy`]) |
//!
//! Each party's ledger, `party-NAME.ledger`, is created by the party on its first run.
//!
//! Private keys and seal keys are written with mode 0600, the rest 0644, each atomically.
//! Ports: node I listens on `base_port + I`, party J on `base_port + 3 + J`, all on
//! 127.0.0.1 (edit the files for other hosts). Existing files are never overwritten: if
//! any target exists nothing is written; if writing fails midway the files already written
//! are removed.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

use vtwin_host::atomic::{self, Mode};
use vtwin_net::pki::{self, fingerprint, Ca, CertRequest, PkiError};
use vtwin_net::role::{Role, NODES};
use vtwin_net::seal::{hex, SealKey};

use crate::config::{
    self, CoordinatorConfig, DataSource, Insecure, NodeConfig, NodePolicy, PartyConfig,
    PartyEndpoint, PartyPolicy, Timeouts, TlsFiles, TrainingSettings,
};

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

/// Key generation failed; names the setting or file at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeygenError {
    /// A setting of the [`KeygenSpec`] is out of range.
    #[error("{setting}")]
    Invalid {
        /// The setting.
        setting: Setting,
        /// What is wrong.
        #[source]
        fault: SpecFault,
    },
    /// A target file exists already (nothing was written).
    #[error(
        "{file} exists already; keygen never overwrites keys (choose an empty output directory)"
    )]
    Exists {
        /// The file.
        file: String,
    },
    /// Certificate generation failed, or a certificate, key or request file is unusable
    /// (the error names the file).
    #[error(transparent)]
    Pki(#[from] PkiError),
    /// A request does not fit the consortium being signed (wrong or duplicate role, seal
    /// key where none belongs or missing).
    #[error("{file}")]
    Request {
        /// The request file.
        file: String,
        /// What is wrong.
        #[source]
        fault: RequestFault,
    },
    /// A role of the consortium has no request among those given.
    #[error("no request for {role}")]
    MissingRequest {
        /// The role.
        role: RequestRole,
    },
    /// A configuration could not be serialised (nothing was written).
    #[error("{file}: cannot serialise")]
    Serialise {
        /// The file.
        file: String,
        /// toml's error.
        #[source]
        source: toml::ser::Error,
    },
    /// Writing failed (files written so far were removed).
    #[error("{file}")]
    Write {
        /// The file (or the output directory).
        file: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// A setting of [`KeygenSpec`] ([`KeygenError::Invalid`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Setting {
    /// [`KeygenSpec::nodes`].
    #[error("node count")]
    Nodes,
    /// [`KeygenSpec::parties`] (and the data sources, one per party).
    #[error("party names")]
    Parties,
    /// [`KeygenSpec::base_port`].
    #[error("base port")]
    BasePort,
}

/// What is wrong with a setting ([`KeygenError::Invalid`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecFault {
    /// Not 3 nodes.
    #[error("{0}: replicated sharing needs exactly 3 nodes")]
    NodeCount(usize),
    /// Fewer than 2 parties.
    #[error("{0} given; a vertically partitioned table needs at least 2 parties")]
    TooFewParties(usize),
    /// More parties than a party index holds.
    #[error("{0} given, at most 65535")]
    TooManyParties(usize),
    /// A party name that is not 1 to 64 letters, digits, `-` or `_`.
    #[error("{0:?}: use 1 to 64 letters, digits, '-' or '_' (it names files)")]
    BadName(String),
    /// A party name given twice.
    #[error("{0:?} appears twice")]
    DuplicateName(String),
    /// Not one data source per party.
    #[error("{sources} data sources for {parties} parties")]
    DataSources {
        /// The data sources.
        sources: usize,
        /// The parties.
        parties: usize,
    },
    /// Ports outside 1..=65535.
    #[error("{base}: ports {base}..={last} must lie in 1..=65535")]
    Ports {
        /// The base port.
        base: u16,
        /// The last port the consortium needs.
        last: u32,
    },
}

/// What is wrong with a certificate request ([`KeygenError::Request`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestFault {
    /// Its subject is no vtwin role.
    #[error(
        "the request names no vtwin role: {0:?} is not one (use coordinator, node-0, node-1, \
         node-2 or party-NAME)"
    )]
    NotARole(String),
    /// Its role is not one of this consortium.
    #[error(
        "the request is for {role}, which is not a role of this consortium (parties {})",
        parties.join(",")
    )]
    NotInConsortium {
        /// Its role.
        role: RequestRole,
        /// The consortium's party names.
        parties: Vec<String>,
    },
    /// A node's request without a seal key.
    #[error("the request for {0} carries no seal key (a node's request must)")]
    NoSealKey(RequestRole),
    /// A seal key in a request of a role that has none.
    #[error("the request for {0} carries a seal key; only nodes have one")]
    UnexpectedSealKey(RequestRole),
    /// A second request for the same role.
    #[error("a second request for {role} (the first: {})", first.display())]
    Duplicate {
        /// The role.
        role: RequestRole,
        /// The first request's file.
        first: PathBuf,
    },
}

fn invalid(setting: Setting, fault: SpecFault) -> KeygenError {
    KeygenError::Invalid { setting, fault }
}

/// A party name: 1 to 64 ASCII letters, digits, `-` or `_` (it names files).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn check(spec: &KeygenSpec) -> Result<(), KeygenError> {
    if spec.nodes != NODES as usize {
        return Err(invalid(Setting::Nodes, SpecFault::NodeCount(spec.nodes)));
    }
    let p = spec.parties.len();
    if p < 2 {
        return Err(invalid(Setting::Parties, SpecFault::TooFewParties(p)));
    }
    if p > usize::from(u16::MAX) {
        return Err(invalid(Setting::Parties, SpecFault::TooManyParties(p)));
    }
    for (i, name) in spec.parties.iter().enumerate() {
        if !valid_name(name) {
            return Err(invalid(Setting::Parties, SpecFault::BadName(name.clone())));
        }
        if spec.parties[..i].contains(name) {
            return Err(invalid(
                Setting::Parties,
                SpecFault::DuplicateName(name.clone()),
            ));
        }
    }
    if spec.data.len() != p {
        return Err(invalid(
            Setting::Parties,
            SpecFault::DataSources {
                sources: spec.data.len(),
                parties: p,
            },
        ));
    }
    let last = u32::from(spec.base_port) + 3 + p as u32 - 1;
    if spec.base_port == 0 || last > u32::from(u16::MAX) {
        return Err(invalid(
            Setting::BasePort,
            SpecFault::Ports {
                base: spec.base_port,
                last,
            },
        ));
    }
    Ok(())
}

/// Files to write: (name, content, mode).
type Plan = Vec<(String, Vec<u8>, Mode)>;

fn toml_bytes<T: serde::Serialize>(name: &str, c: &T) -> Result<Vec<u8>, KeygenError> {
    toml::to_string(c)
        .map(String::into_bytes)
        .map_err(|source| KeygenError::Serialise {
            file: name.to_string(),
            source,
        })
}

/// A role as a certificate request and the file names call it: `coordinator`, `node-I`
/// (I < 3) or `party-NAME` (NAME as in `--parties`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestRole {
    /// The coordinator.
    Coordinator,
    /// Compute node I.
    Node(u8),
    /// The party of this name.
    Party(String),
}

impl std::fmt::Display for RequestRole {
    /// The file stem: `coordinator`, `node-I`, `party-NAME`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestRole::Coordinator => f.write_str("coordinator"),
            RequestRole::Node(i) => write!(f, "node-{i}"),
            RequestRole::Party(name) => write!(f, "party-{name}"),
        }
    }
}

impl std::str::FromStr for RequestRole {
    type Err = String;

    /// Parses `coordinator`, `node-0`..`node-2` or `party-NAME`.
    fn from_str(s: &str) -> Result<RequestRole, String> {
        let role = match s {
            "coordinator" => Some(RequestRole::Coordinator),
            "node-0" | "node-1" | "node-2" => Some(RequestRole::Node(s.as_bytes()[5] - b'0')),
            _ => s
                .strip_prefix("party-")
                .filter(|name| valid_name(name))
                .map(|name| RequestRole::Party(name.to_string())),
        };
        role.ok_or_else(|| {
            format!(
                "{s:?} is not a role: use coordinator, node-0, node-1, node-2 or party-NAME \
                 (NAME: 1 to 64 letters, digits, '-' or '_')"
            )
        })
    }
}

impl RequestRole {
    /// Its certificate role, given the consortium's party names in index order (`None`: a
    /// party not among them).
    fn role(&self, parties: &[String]) -> Option<Role> {
        match self {
            RequestRole::Coordinator => Some(Role::Coordinator),
            RequestRole::Node(i) => Some(Role::Node(*i)),
            RequestRole::Party(name) => parties
                .iter()
                .position(|p| p == name)
                .map(|j| Role::Party(j as u16)),
        }
    }
}

/// Every role of a consortium, in file order (coordinator, nodes, parties).
fn roles(spec: &KeygenSpec) -> Vec<RequestRole> {
    let mut all = vec![RequestRole::Coordinator];
    all.extend((0..NODES).map(RequestRole::Node));
    all.extend(spec.parties.iter().cloned().map(RequestRole::Party));
    all
}

/// Appends every role's configuration to `plan`: TLS files `ca.pem`, `ROLE.pem`,
/// `ROLE.key`, a node's seal key `node-I.seal`, a party's node certificates `node-I.pem`,
/// loopback addresses from `spec.base_port`.
fn plan_configs(spec: &KeygenSpec, plan: &mut Plan) -> Result<(), KeygenError> {
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
    for i in 0..NODES {
        let stem = RequestRole::Node(i).to_string();
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
    for (j, name) in spec.parties.iter().enumerate() {
        let stem = RequestRole::Party(name.clone()).to_string();
        let party = PartyConfig {
            name: name.clone(),
            index: j as u16,
            listen: party_addrs[j],
            nodes: node_addrs,
            tls: tls(&stem),
            node_certs: std::array::from_fn(|i| format!("node-{i}.pem").into()),
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
    Ok(())
}

fn output(out: &Path, spec: &KeygenSpec, files: Vec<PathBuf>) -> KeygenOutput {
    KeygenOutput {
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
    }
}

/// One step, for demos and tests: generates the CA, every role's key and certificate and
/// the nodes' seal keys in memory, checks that no target exists, then writes them with the
/// configurations. Whoever runs it holds every private key; deployments use [`ca`],
/// [`request`] and [`sign`].
///
/// Cost: 2 + 3 + P P-256 key generations and signatures, 3 X25519 keys, 2 (P + 5) + 3
/// small files (well under a second).
pub fn keygen(out: &Path, spec: &KeygenSpec) -> Result<KeygenOutput, KeygenError> {
    check(spec)?;
    let ca = Ca::generate()?;
    let mut plan = ca_files(&ca);
    let mut rng = ChaCha20Rng::from_os_rng();
    for who in roles(spec) {
        let stem = who.to_string();
        let seal = matches!(who, RequestRole::Node(_)).then(|| SealKey::generate(&mut rng));
        let role = who.role(&spec.parties).expect("a role of the spec");
        let issued = ca.issue_sealed(role, seal.as_ref().map(|k| k.public()).as_ref())?;
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
        if let Some(seal) = seal {
            plan.push((format!("{stem}.seal"), seal_file_bytes(&seal), Mode::Secret));
        }
    }
    plan_configs(spec, &mut plan)?;
    write_all(out, plan).map(|files| output(out, spec, files))
}

/// `ca.pem` (public) and `ca.key` (0600) of `ca`, to write.
fn ca_files(ca: &Ca) -> Plan {
    vec![
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
    ]
}

/// The text of a seal key file: 64 hex digits and a newline ([`SealKey::read_file`]).
fn seal_file_bytes(seal: &SealKey) -> Vec<u8> {
    let mut text = hex(seal.to_bytes().as_ref());
    text.push('\n');
    text.into_bytes()
}

/// What [`ca`] wrote.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CaOutput {
    /// `ca.pem`, `ca.key`.
    pub files: Vec<PathBuf>,
    /// [`fingerprint`] of the CA certificate (DER): every role compares it out of band
    /// before trusting `ca.pem`.
    pub fingerprint: String,
}

/// The CA operator's first step: a fresh CA, `ca.pem` (public) and `ca.key` (0600, keep
/// offline) in `out`. Cost: one key generation and one signature.
pub fn ca(out: &Path) -> Result<CaOutput, KeygenError> {
    let ca = Ca::generate()?;
    let der = pem_der(ca.cert_pem());
    let files = write_all(out, ca_files(&ca))?;
    Ok(CaOutput {
        files,
        fingerprint: fingerprint(&der),
    })
}

/// The DER of the first certificate in a PEM text this module wrote.
fn pem_der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .expect("a PEM certificate rcgen wrote")
        .to_vec()
}

/// What [`request`] wrote.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RequestOutput {
    /// `ROLE.key`, `ROLE.seal` (nodes), `ROLE.csr`.
    pub files: Vec<PathBuf>,
    /// `ROLE.csr`, to send to the CA operator.
    pub request: PathBuf,
    /// [`fingerprint`] of the TLS public key (SubjectPublicKeyInfo DER).
    pub key_fingerprint: String,
    /// [`fingerprint`] of the seal public key (nodes).
    pub seal_fingerprint: Option<String>,
}

/// A role's step, on its own host: a fresh P-256 TLS key `ROLE.key`, for a node a fresh
/// X25519 seal key `ROLE.seal` (both 0600, OS CSPRNG), and the request `ROLE.csr` (its
/// role and seal public key, signed by the TLS key). Cost: one P-256 key generation and
/// signature, one X25519 key.
pub fn request(out: &Path, role: &RequestRole) -> Result<RequestOutput, KeygenError> {
    let stem = role.to_string();
    let seal = matches!(role, RequestRole::Node(_))
        .then(|| SealKey::generate(&mut ChaCha20Rng::from_os_rng()));
    let seal_public = seal.as_ref().map(SealKey::public);
    let (csr_pem, key_pem) = CertRequest::generate(&stem, seal_public.as_ref())?;
    let parsed = CertRequest::from_pem("the new request", &csr_pem)?;
    let mut plan: Plan = vec![(
        format!("{stem}.key"),
        key_pem.as_bytes().to_vec(),
        Mode::Secret,
    )];
    if let Some(seal) = &seal {
        plan.push((format!("{stem}.seal"), seal_file_bytes(seal), Mode::Secret));
    }
    plan.push((format!("{stem}.csr"), csr_pem.into_bytes(), Mode::Public));
    let files = write_all(out, plan)?;
    Ok(RequestOutput {
        request: out.join(format!("{stem}.csr")),
        files,
        key_fingerprint: parsed.key_fingerprint(),
        seal_fingerprint: seal_public.map(|k| fingerprint(&k)),
    })
}

/// One signed request, as [`sign`] reports it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Signed {
    /// The role (`ROLE` of its files).
    pub role: String,
    /// The request file.
    pub request: PathBuf,
    /// [`fingerprint`] of its public key (as [`request`] printed it).
    pub key_fingerprint: String,
    /// [`fingerprint`] of the bound seal public key (nodes).
    pub seal_fingerprint: Option<String>,
}

/// What [`sign`] wrote.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SignOutput {
    /// The certificates and configurations (no private key).
    pub output: KeygenOutput,
    /// [`fingerprint`] of the CA certificate.
    pub ca_fingerprint: String,
    /// Every request signed, in file order (coordinator, nodes, parties).
    pub signed: Vec<Signed>,
}

/// The CA operator's second step: loads the CA from `ca_dir` (`ca.pem`, `ca.key`), verifies
/// every request (signature, role, seal key) and writes to `out`: `ca.pem`, one certificate
/// `ROLE.pem` per role (a node's binds its seal public key) and every role's configuration,
/// as [`keygen`] does but without any private key. `requests` must hold exactly one request
/// per role of `spec`: the coordinator, node-0..2 and `party-NAME` for each of
/// `spec.parties` (whose order gives the party indices). Nothing is written on any error.
///
/// Cost: one signature verification and one signature per request.
pub fn sign(
    out: &Path,
    ca_dir: &Path,
    requests: &[PathBuf],
    spec: &KeygenSpec,
) -> Result<SignOutput, KeygenError> {
    check(spec)?;
    let ca = Ca::load(&ca_dir.join("ca.pem"), &ca_dir.join("ca.key"))?;
    let all = roles(spec);
    let mut by_role: Vec<Option<(PathBuf, CertRequest)>> = all.iter().map(|_| None).collect();
    for file in requests {
        let name = file.display().to_string();
        let bad = |fault: RequestFault| KeygenError::Request {
            file: name.clone(),
            fault,
        };
        let req = CertRequest::load(file)?;
        let who: RequestRole = req
            .name()
            .parse()
            .map_err(|_| bad(RequestFault::NotARole(req.name().to_string())))?;
        let slot = all.iter().position(|r| *r == who).ok_or_else(|| {
            bad(RequestFault::NotInConsortium {
                role: who.clone(),
                parties: spec.parties.clone(),
            })
        })?;
        match (&who, req.seal_public()) {
            (RequestRole::Node(_), None) => return Err(bad(RequestFault::NoSealKey(who))),
            (RequestRole::Coordinator | RequestRole::Party(_), Some(_)) => {
                return Err(bad(RequestFault::UnexpectedSealKey(who)))
            }
            _ => {}
        }
        if let Some((first, _)) = &by_role[slot] {
            return Err(bad(RequestFault::Duplicate {
                role: who,
                first: first.clone(),
            }));
        }
        by_role[slot] = Some((file.clone(), req));
    }
    let mut plan: Plan = vec![(
        "ca.pem".into(),
        ca.cert_pem().as_bytes().to_vec(),
        Mode::Public,
    )];
    let mut signed = Vec::new();
    for (who, slot) in all.iter().zip(by_role) {
        let (file, req) = slot.ok_or_else(|| KeygenError::MissingRequest { role: who.clone() })?;
        let role = who.role(&spec.parties).expect("a role of the spec");
        let cert_pem = ca.sign_request(&req, role)?;
        plan.push((format!("{who}.pem"), cert_pem.into_bytes(), Mode::Public));
        signed.push(Signed {
            role: who.to_string(),
            request: file,
            key_fingerprint: req.key_fingerprint(),
            seal_fingerprint: req.seal_public().map(|k| fingerprint(k)),
        });
    }
    plan_configs(spec, &mut plan)?;
    let files = write_all(out, plan)?;
    Ok(SignOutput {
        output: output(out, spec, files),
        ca_fingerprint: fingerprint(&pem_der(ca.cert_pem())),
        signed,
    })
}

/// The fingerprints of a certificate or request file, for the out-of-band check: one line
/// per fact (`role`, `certificate`, `tls key`, `seal key`). Errors name the file.
/// Cost: one small read, one parse.
pub fn describe(file: &Path) -> Result<Vec<(String, String)>, KeygenError> {
    let name = file.display().to_string();
    let bytes = std::fs::read(file).map_err(|source| PkiError::Io {
        file: name.clone(),
        source,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = Vec::new();
    if text.contains("-----BEGIN CERTIFICATE REQUEST-----") {
        let req = CertRequest::from_pem(&name, &text)?;
        lines.push(("request for".into(), req.name().to_string()));
        lines.push(("tls key".into(), req.key_fingerprint()));
        if let Some(k) = req.seal_public() {
            lines.push(("seal key".into(), fingerprint(k)));
        }
    } else {
        let s = pki::summarise_certificate(&name, &bytes)?;
        let (role, key) = match s.role {
            Some(r) => (r.to_string(), "tls key"),
            None => ("no role (a CA certificate)".into(), "public key"),
        };
        lines.push(("certificate for".into(), role));
        lines.push(("certificate".into(), s.cert));
        lines.push((key.into(), s.key));
        if let Some(k) = s.seal {
            lines.push(("seal key".into(), k));
        }
    }
    Ok(lines)
}

fn write_all(out: &Path, plan: Plan) -> Result<Vec<PathBuf>, KeygenError> {
    std::fs::create_dir_all(out).map_err(|source| KeygenError::Write {
        file: out.display().to_string(),
        source,
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
        let result = atomic::write(&path, &bytes, mode);
        zeroize::Zeroize::zeroize(&mut bytes);
        if let Err(source) = result {
            for p in &written {
                let _ = std::fs::remove_file(p);
            }
            return Err(KeygenError::Write {
                file: path.display().to_string(),
                source,
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
