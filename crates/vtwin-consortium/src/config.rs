//! Configuration files of the three services (TOML, written by `vtwin keygen` or
//! `vtwin keygen sign`, read by
//! `vtwin node|party|coordinator`).
//!
//! Unknown fields are refused (a typo is an error, not a silently ignored setting).
//! Relative paths in a file are relative to that file's directory, so a keygen output
//! directory can be moved as a whole. Errors name the file, the line and column, and the
//! field.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use vtwin_host::atomic;
use vtwin_net::pki::{Identity, PkiError};
use vtwin_net::role::NODES;
use vtwin_net::transport::{Backoff, TransportOptions, KEEP_ALIVE_MAX};

/// The TLS files of one role.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// The consortium CA certificate (PEM).
    pub ca: PathBuf,
    /// This role's certificate (PEM).
    pub cert: PathBuf,
    /// This role's private key (PEM, mode 0600).
    pub key: PathBuf,
}

impl TlsFiles {
    /// Loads the identity (errors name the file).
    pub fn load(&self) -> Result<Identity, PkiError> {
        Identity::load(&self.ca, &self.cert, &self.key)
    }

    fn resolve(&mut self, base: &Path) {
        for p in [&mut self.ca, &mut self.cert, &mut self.key] {
            *p = base.join(&*p);
        }
    }
}

/// Connection and protocol time limits (milliseconds in the file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// Connection attempts to a peer before giving up (>= 1).
    pub connect_attempts: u32,
    /// Delay after the first failed attempt, doubling up to `connect_max_delay_ms`.
    pub connect_initial_delay_ms: u64,
    /// Largest delay between attempts.
    pub connect_max_delay_ms: u64,
    /// Limit on one connection attempt.
    pub connect_attempt_ms: u64,
    /// Limit on one training iteration, from Start to the opened gradient.
    pub iteration_ms: u64,
    /// QUIC idle timeout of a link.
    pub idle_ms: u64,
    /// Emulated one-way delay on every received frame, in milliseconds, fractions allowed
    /// (0: none; experiments only, e.g. bench/netns.sh where the kernel has no netem).
    pub receive_delay_ms: f64,
}

impl Default for Timeouts {
    /// 10 attempts, 100 ms doubling to 5 s, 5 s per attempt, 10 min per iteration, 15 s
    /// idle, no delay.
    fn default() -> Timeouts {
        let b = Backoff::default();
        let t = TransportOptions::default();
        Timeouts {
            connect_attempts: b.attempts,
            connect_initial_delay_ms: b.initial.as_millis() as u64,
            connect_max_delay_ms: b.max.as_millis() as u64,
            connect_attempt_ms: b.attempt_timeout.as_millis() as u64,
            iteration_ms: 600_000,
            idle_ms: t.idle_timeout.as_millis() as u64,
            receive_delay_ms: 0.0,
        }
    }
}

impl Timeouts {
    /// The connection retry schedule.
    pub fn backoff(&self) -> Backoff {
        Backoff {
            attempts: self.connect_attempts,
            initial: Duration::from_millis(self.connect_initial_delay_ms),
            max: Duration::from_millis(self.connect_max_delay_ms),
            attempt_timeout: Duration::from_millis(self.connect_attempt_ms),
        }
    }

    /// The limit on one iteration.
    pub fn iteration(&self) -> Duration {
        Duration::from_millis(self.iteration_ms)
    }

    /// Transport options (idle timeout, keep-alive at a third of it but at most
    /// [`KEEP_ALIVE_MAX`], receive delay).
    pub fn transport(&self) -> TransportOptions {
        let idle = Duration::from_millis(self.idle_ms);
        TransportOptions {
            idle_timeout: idle,
            keep_alive: (idle / 3).min(KEEP_ALIVE_MAX),
            receive_delay: (self.receive_delay_ms > 0.0)
                .then(|| Duration::from_secs_f64(self.receive_delay_ms / 1e3)),
            ..TransportOptions::default()
        }
    }

    fn check(&self, file: &Path) -> Result<(), ConfigError> {
        for (field, value) in [
            (
                "timeouts.connect_attempts",
                u64::from(self.connect_attempts),
            ),
            ("timeouts.connect_attempt_ms", self.connect_attempt_ms),
            ("timeouts.iteration_ms", self.iteration_ms),
            ("timeouts.idle_ms", self.idle_ms),
        ] {
            if value == 0 {
                return Err(ConfigError::field(file, field, FieldProblem::AtLeastOne));
            }
        }
        // At most a day: `Duration::from_secs_f64` would panic on an absurd value.
        if !(self.receive_delay_ms.is_finite() && (0.0..=86.4e6).contains(&self.receive_delay_ms)) {
            return Err(ConfigError::field(
                file,
                "timeouts.receive_delay_ms",
                FieldProblem::NonNegativeFinite,
            ));
        }
        Ok(())
    }
}

/// Secret seeds that make a run reproducible. INSECURE: whoever knows them can recompute
/// every share and every noise draw; tests and demos only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Insecure {
    /// Seed of the MPC's secret randomness (session ids, node keys, input seeds).
    pub mpc_seed: u64,
    /// Seed of the parties' noise generators.
    pub noise_seed: u64,
}

/// What a party agrees to (`[policy]` of its config): it refuses any request outside these
/// terms and stops uploading at its budget (vtwin-consortium's party). Every field is
/// required: a party states its own budget rather than inheriting the coordinator's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartyPolicy {
    /// The analyst's epsilon it agrees to, over every upload it makes (> 0).
    pub epsilon: f64,
    /// The delta of that epsilon, in (0, 1); a job's delta must be at most this.
    pub delta: f64,
    /// Smallest noise multiplier it accepts (> 0).
    pub sigma: f64,
    /// Largest nominal clip C it accepts (> 0).
    pub clip: f64,
    /// The number of components K it accepts (exactly).
    pub components: u32,
    /// Largest Poisson sampling rate q it accepts, in (0, 1].
    pub sample_rate: f64,
    /// Most uploads it makes (each may be opened, so retries of an iteration count), >= 1;
    /// a job's planned iterations must be at most this.
    pub openings: u64,
    /// Whether it takes part in a record alignment (`protocols/psi.md`): it then reveals to
    /// the other parties its number of ids and which of its ids all of them hold. If false,
    /// it refuses `AlignStart` and trains only with parties holding exactly its ids.
    /// Default true.
    #[serde(default = "align_default")]
    pub align: bool,
}

impl PartyPolicy {
    fn check(&self, file: &Path) -> Result<(), ConfigError> {
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(ConfigError::field(
                    file,
                    &format!("policy.{field}"),
                    FieldProblem::PositiveFinite,
                ))
            }
        };
        positive("epsilon", self.epsilon)?;
        positive("sigma", self.sigma)?;
        positive("clip", self.clip)?;
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(ConfigError::field(
                file,
                "policy.delta",
                FieldProblem::OpenUnit,
            ));
        }
        if !(self.sample_rate > 0.0 && self.sample_rate <= 1.0) {
            return Err(ConfigError::field(
                file,
                "policy.sample_rate",
                FieldProblem::HalfOpenUnit,
            ));
        }
        if self.components == 0 || self.openings == 0 {
            let field = if self.components == 0 {
                "policy.components"
            } else {
                "policy.openings"
            };
            return Err(ConfigError::field(file, field, FieldProblem::AtLeastOne));
        }
        Ok(())
    }
}

/// What a compute node accepts (`[policy]` of its config): it refuses to start a session
/// whose noise multiplier is below `sigma` or whose nominal clip is above `clip`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodePolicy {
    /// Smallest noise multiplier sigma it accepts (> 0).
    pub sigma: f64,
    /// Largest nominal clip C it accepts (> 0).
    pub clip: f64,
}

/// `vtwin node --config FILE`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// This node's id, 0, 1 or 2.
    pub id: u8,
    /// Address to listen on (the coordinator, the lower nodes and the parties connect here).
    pub listen: SocketAddr,
    /// The three nodes' addresses, by id.
    pub nodes: [SocketAddr; 3],
    /// TLS files.
    pub tls: TlsFiles,
    /// This node's seal key file (mode 0600).
    pub seal_key: PathBuf,
    /// The noise floor and clip cap it accepts.
    pub policy: NodePolicy,
    /// Time limits.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Insecure reproducibility seeds (tests only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<Insecure>,
}

/// Where a party's records come from. In TOML, the `[data]` table: `kind = "csv"` with
/// `path`, or `kind = "demo"` with `rows` and `seed`. A field of the other kind, or the
/// schema placed under `[data]`, is refused with a message that says where it belongs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    tag = "kind",
    rename_all = "kebab-case",
    try_from = "RawDataSource"
)]
pub enum DataSource {
    /// The party's own CSV (its columns and the id column).
    Csv {
        /// The file.
        path: PathBuf,
    },
    /// The party's columns of the built-in demo table.
    Demo {
        /// Rows of the demo table.
        rows: usize,
        /// Seed of the demo table.
        seed: u64,
    },
}

/// The `[data]` table as written, before its fields are checked against its kind.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDataSource {
    kind: String,
    path: Option<PathBuf>,
    rows: Option<usize>,
    seed: Option<u64>,
    schema: Option<toml::Value>,
}

/// Why a `[data]` table does not describe a data source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataSourceError {
    /// `schema` under `[data]`.
    #[error(
        "`schema` belongs at the top level of the party configuration (schema = \"schema.toml\"), not under [data]"
    )]
    SchemaUnderData,
    /// A field of the other kind.
    #[error(
        "kind = \"{kind}\" does not take `{field}` (it belongs to kind = \"{other}\"; delete it)"
    )]
    ForeignField {
        /// The kind given.
        kind: &'static str,
        /// The stray field.
        field: &'static str,
        /// The kind the field belongs to.
        other: &'static str,
    },
    /// A field the kind needs is missing.
    #[error("kind = \"{kind}\" needs `{field}`")]
    Missing {
        /// The kind given.
        kind: &'static str,
        /// The missing field.
        field: &'static str,
    },
    /// Neither kind.
    #[error(
        "kind = \"{0}\": expected \"csv\" (your own file) or \"demo\" (the built-in demo data)"
    )]
    Kind(String),
}

impl TryFrom<RawDataSource> for DataSource {
    type Error = DataSourceError;

    fn try_from(r: RawDataSource) -> Result<DataSource, DataSourceError> {
        if r.schema.is_some() {
            return Err(DataSourceError::SchemaUnderData);
        }
        let foreign = |kind, field, other| DataSourceError::ForeignField { kind, field, other };
        match r.kind.as_str() {
            "csv" => {
                if r.rows.is_some() {
                    return Err(foreign("csv", "rows", "demo"));
                }
                if r.seed.is_some() {
                    return Err(foreign("csv", "seed", "demo"));
                }
                let path = r.path.ok_or(DataSourceError::Missing {
                    kind: "csv",
                    field: "path",
                })?;
                Ok(DataSource::Csv { path })
            }
            "demo" => {
                if r.path.is_some() {
                    return Err(foreign("demo", "path", "csv"));
                }
                let missing = |field| DataSourceError::Missing {
                    kind: "demo",
                    field,
                };
                Ok(DataSource::Demo {
                    rows: r.rows.ok_or(missing("rows"))?,
                    seed: r.seed.ok_or(missing("seed"))?,
                })
            }
            other => Err(DataSourceError::Kind(other.to_owned())),
        }
    }
}

/// `vtwin party --config FILE`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartyConfig {
    /// The party's name (as in the schema).
    pub name: String,
    /// The party's index (order of `--parties`; its certificate says `party-INDEX`).
    pub index: u16,
    /// Address to listen on (the coordinator connects here).
    pub listen: SocketAddr,
    /// The three nodes' addresses, by id: the party dials each and sends it its upload.
    pub nodes: [SocketAddr; 3],
    /// TLS files.
    pub tls: TlsFiles,
    /// The three nodes' certificates (PEM), by node id: the party seals node i's input
    /// shares to the seal key that node i's certificate binds, and only if that certificate
    /// is valid under `tls.ca` and names node i.
    pub node_certs: [PathBuf; 3],
    /// Public schema (TOML); none: the built-in demo schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<PathBuf>,
    /// The party's data.
    pub data: DataSource,
    /// The party's own ledger of uploads (created on first use, appended and synced before
    /// each upload; keep it with the party's state, never delete it between jobs).
    pub ledger: PathBuf,
    /// What the party agrees to.
    pub policy: PartyPolicy,
    /// Time limits.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Insecure reproducibility seeds (tests only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<Insecure>,
}

impl PartyConfig {
    /// The nodes' seal public keys, read from `node_certs` ([`vtwin_net::pki::node_seal_publics`]:
    /// each certificate valid under `tls.ca`, naming its node, binding a seal key). Errors
    /// name the file. Cost: four small reads and three chain verifications.
    pub fn node_publics(&self) -> Result<[[u8; 32]; 3], PkiError> {
        vtwin_net::pki::node_seal_publics(&self.tls.ca, &self.node_certs)
    }
}

/// One party as the coordinator sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartyEndpoint {
    /// The party's name.
    pub name: String,
    /// Where it listens.
    pub address: SocketAddr,
}

/// The training job (the `vtwin train` settings that the coordinator needs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingSettings {
    /// Public schema (TOML); none: the built-in demo schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<PathBuf>,
    /// Mixture components K (>= 1).
    pub components: usize,
    /// Total iterations (>= 1).
    pub iters: u64,
    /// Target epsilon (sigma calibrated), or none with `sigma`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
    /// delta (of the target and of the report).
    pub delta: f64,
    /// Noise multiplier, or none with `epsilon`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    /// Expected batch size B.
    pub batch: usize,
    /// Clip bound C (> 0).
    pub clip: f64,
    /// Adam learning rate (> 0).
    pub lr: f64,
    /// Seed of the public randomness.
    pub seed: u64,
    /// `closed-form`, `paper` or `off`.
    pub renormalise: String,
    /// Checkpoint every N iterations (and at the end), >= 1.
    pub checkpoint_every: u64,
    /// Align the parties' records by private set intersection before training
    /// (`protocols/psi.md`) and train on the people all of them hold; if false, the parties
    /// must hold the same ids in the same order (checked by a digest of their id lists,
    /// which the coordinator sees). Default true.
    #[serde(default = "align_default")]
    pub align: bool,
    /// The released model: `ema` (an exponential moving average of the iterates; the
    /// default, as `vtwin train --average`) or `none` (the last iterate).
    #[serde(default = "default_average")]
    pub average: String,
    /// The EMA's half-life in iterations (default iters / 10, as `vtwin train`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average_half_life: Option<f64>,
    /// The responsibilities' inverse temperature at iteration 0, in (0, 1] (as `vtwin train
    /// --temper-start`; default 0.2; 1: no tempering). Public, sent to the parties in the job
    /// terms. A resumed job with neither tempering field keeps its checkpoint's schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temper_start: Option<f64>,
    /// The iteration from which beta is 1, at most iters (default 0.8 iters,
    /// `vtwin_model::tempering::default_until`, as `vtwin train --temper-until`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temper_until: Option<u64>,
}

fn align_default() -> bool {
    true
}

fn default_average() -> String {
    "ema".into()
}

impl Default for TrainingSettings {
    /// The job `vtwin keygen` writes: demo schema, K = 20, 100 / lr = 10000 iterations
    /// (`vtwin_model::adam::default_iterations`, as `vtwin train`), epsilon 1 at
    /// delta 1e-5, batch 100, clip 1, Adam lr 0.01, public seed 0, closed-form
    /// renormalisation, a checkpoint every 100 iterations, the EMA of the iterates released.
    fn default() -> TrainingSettings {
        TrainingSettings {
            schema: None,
            components: 20,
            // vtwin_model::adam::default_iterations(0.01); vtwin-model is not a dependency of a
            // node-only build, so the value is written out (a test keeps the two equal).
            iters: 10_000,
            epsilon: Some(1.0),
            delta: 1e-5,
            sigma: None,
            batch: 100,
            clip: 1.0,
            lr: 0.01,
            seed: 0,
            renormalise: "closed-form".into(),
            checkpoint_every: 100,
            align: true,
            average: default_average(),
            average_half_life: None,
            temper_start: None,
            temper_until: None,
        }
    }
}

/// `vtwin coordinator --config FILE`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordinatorConfig {
    /// TLS files.
    pub tls: TlsFiles,
    /// The three nodes' addresses, by id.
    pub nodes: [SocketAddr; 3],
    /// The parties, by index.
    pub parties: Vec<PartyEndpoint>,
    /// Output directory (model.json, privacy.json, synthetic.csv, checkpoints).
    pub out: PathBuf,
    /// The job.
    pub training: TrainingSettings,
    /// Time limits.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Insecure reproducibility seeds (tests only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<Insecure>,
}

/// A configuration file could not be read, parsed or validated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read or written.
    #[error("{file}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// TOML syntax or a field of the wrong type, missing or unknown.
    #[error("{file}:{line}:{column}{}", key.as_ref().map(|k| format!(": field `{k}`")).unwrap_or_default())]
    Parse {
        /// The file.
        file: String,
        /// 1-based line (0 if unknown).
        line: usize,
        /// 1-based column (0 if unknown).
        column: usize,
        /// The key the error points at (qualified with its table), where toml's message does
        /// not name it already.
        key: Option<String>,
        /// toml's error.
        #[source]
        source: TomlError,
    },
    /// A field has a value outside its range.
    #[error("{file}: field `{field}`: {problem}")]
    Field {
        /// The file.
        file: String,
        /// The field, e.g. `training.clip` or `parties[1].name`.
        field: String,
        /// What is wrong with its value.
        problem: FieldProblem,
    },
    /// The configuration could not be serialised.
    #[error("{file}: cannot serialise")]
    Serialise {
        /// The file.
        file: String,
        /// toml's error.
        #[source]
        source: toml::ser::Error,
    },
}

/// toml's parse error, displayed as its one-line message (its own `Display` quotes the
/// offending lines; [`ConfigError::Parse`] gives the line and column instead).
#[derive(Debug)]
pub struct TomlError(pub Box<toml::de::Error>);

impl std::fmt::Display for TomlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.message().trim())
    }
}

impl std::error::Error for TomlError {}

/// What is wrong with a field's value ([`ConfigError::Field`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldProblem {
    /// Zero where at least one is needed.
    #[error("must be >= 1")]
    AtLeastOne,
    /// Not finite or not positive.
    #[error("must be finite and > 0")]
    PositiveFinite,
    /// Not finite or negative.
    #[error("must be finite and >= 0")]
    NonNegativeFinite,
    /// Outside (0, 1).
    #[error("must be in (0, 1)")]
    OpenUnit,
    /// Outside (0, 1].
    #[error("must be in (0, 1]")]
    HalfOpenUnit,
    /// Beyond the job's iterations.
    #[error("must be at most training.iters")]
    AtMostIters,
    /// Not a node id.
    #[error("must be 0, 1 or 2")]
    NodeId,
    /// Empty (or blank).
    #[error("must not be empty")]
    Empty,
    /// No party listed.
    #[error("needs at least one party")]
    NoParties,
    /// A party name listed twice.
    #[error("duplicate party name {0:?}")]
    Duplicate(String),
    /// Both or neither of `training.epsilon` and `training.sigma`.
    #[error("give exactly one of training.epsilon and training.sigma")]
    EpsilonXorSigma,
    /// An unknown renormalisation mode.
    #[error("must be closed-form, paper or off")]
    Renormalise,
}

impl ConfigError {
    fn field(file: &Path, field: &str, problem: FieldProblem) -> ConfigError {
        ConfigError::Field {
            file: file.display().to_string(),
            field: field.to_string(),
            problem,
        }
    }
}

fn parse<T: DeserializeOwned>(file: &Path, text: &str) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let (line, column, key) = match e.span() {
            Some(span) => {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let start = before.rfind('\n').map_or(0, |i| i + 1);
                let column = before[start..].chars().count() + 1;
                // The key on that line, if the error points at a value ("key = value").
                let line_text = text[start..].lines().next().unwrap_or("");
                let key = line_text
                    .split_once('=')
                    .map(|(k, _)| k.trim().to_string())
                    .filter(|k| !k.is_empty() && !k.starts_with('['))
                    .map(|k| {
                        // Qualify with the enclosing [table] header, if any.
                        let table = text[..start].lines().rev().find_map(|l| {
                            let l = l.trim();
                            l.strip_prefix('[')?.strip_suffix(']').map(str::to_string)
                        });
                        match table {
                            Some(t) => format!("{}.{k}", t.trim_matches(['[', ']'])),
                            None => k,
                        }
                    });
                (line, column, key)
            }
            None => (0, 0, None),
        };
        // "missing field `x`" and "unknown field `x`" name their field already.
        let message = e.message().trim();
        let key = key.filter(|_| {
            !(message.starts_with("missing field") || message.starts_with("unknown field"))
        });
        ConfigError::Parse {
            file: file.display().to_string(),
            line,
            column,
            key,
            source: TomlError(Box::new(e)),
        }
    })
}

fn read(file: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(file).map_err(|source| ConfigError::Io {
        file: file.display().to_string(),
        source,
    })
}

fn base_of(file: &Path) -> PathBuf {
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Writes `config` as TOML to `file` atomically (mode 0644).
pub fn write<T: Serialize>(file: &Path, config: &T) -> Result<(), ConfigError> {
    let text = toml::to_string(config).map_err(|source| ConfigError::Serialise {
        file: file.display().to_string(),
        source,
    })?;
    atomic::write(file, text.as_bytes(), atomic::Mode::Public).map_err(|source| ConfigError::Io {
        file: file.display().to_string(),
        source,
    })
}

impl NodeConfig {
    /// Reads and validates a node configuration (id < 3, policy sigma and clip finite and
    /// positive, timeouts >= 1); relative paths become relative to the file's directory.
    pub fn load(file: &Path) -> Result<NodeConfig, ConfigError> {
        let mut c: NodeConfig = parse(file, &read(file)?)?;
        if c.id >= NODES {
            return Err(ConfigError::field(file, "id", FieldProblem::NodeId));
        }
        for (field, v) in [
            ("policy.sigma", c.policy.sigma),
            ("policy.clip", c.policy.clip),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(ConfigError::field(
                    file,
                    field,
                    FieldProblem::PositiveFinite,
                ));
            }
        }
        c.timeouts.check(file)?;
        let base = base_of(file);
        c.tls.resolve(&base);
        c.seal_key = base.join(&c.seal_key);
        Ok(c)
    }
}

impl PartyConfig {
    /// Reads and validates a party configuration (non-empty name, a policy in range
    /// ([`PartyPolicy`]), timeouts >= 1); relative paths (TLS files, node certificates,
    /// schema, data, ledger) become relative to the file's directory. The node certificates
    /// are checked when read ([`PartyConfig::node_publics`]).
    pub fn load(file: &Path) -> Result<PartyConfig, ConfigError> {
        let mut c: PartyConfig = parse(file, &read(file)?)?;
        if c.name.trim().is_empty() {
            return Err(ConfigError::field(file, "name", FieldProblem::Empty));
        }
        c.policy.check(file)?;
        c.timeouts.check(file)?;
        let base = base_of(file);
        c.tls.resolve(&base);
        for p in &mut c.node_certs {
            *p = base.join(&*p);
        }
        c.ledger = base.join(&c.ledger);
        c.schema = c.schema.map(|p| base.join(p));
        if let DataSource::Csv { path } = &mut c.data {
            *path = base.join(&*path);
        }
        Ok(c)
    }
}

impl CoordinatorConfig {
    /// Reads and validates a coordinator configuration (>= 1 party with unique non-empty
    /// names; K, iters, batch, checkpoint_every >= 1; clip, lr > 0 and finite; delta in
    /// (0, 1); epsilon > 0 or sigma >= 0, finite; temper_start in (0, 1] and temper_until
    /// at most iters where given; renormalise known; timeouts >= 1);
    /// relative paths become relative to the file's directory.
    pub fn load(file: &Path) -> Result<CoordinatorConfig, ConfigError> {
        let mut c: CoordinatorConfig = parse(file, &read(file)?)?;
        if c.parties.is_empty() {
            return Err(ConfigError::field(file, "parties", FieldProblem::NoParties));
        }
        for (i, p) in c.parties.iter().enumerate() {
            if p.name.trim().is_empty() {
                return Err(ConfigError::field(
                    file,
                    &format!("parties[{i}].name"),
                    FieldProblem::Empty,
                ));
            }
            if c.parties[..i].iter().any(|q| q.name == p.name) {
                return Err(ConfigError::field(
                    file,
                    &format!("parties[{i}].name"),
                    FieldProblem::Duplicate(p.name.clone()),
                ));
            }
        }
        let t = &c.training;
        for (field, value) in [
            ("training.components", t.components as u64),
            ("training.iters", t.iters),
            ("training.batch", t.batch as u64),
            ("training.checkpoint_every", t.checkpoint_every),
        ] {
            if value == 0 {
                return Err(ConfigError::field(file, field, FieldProblem::AtLeastOne));
            }
        }
        for (field, value) in [("training.clip", t.clip), ("training.lr", t.lr)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(ConfigError::field(
                    file,
                    field,
                    FieldProblem::PositiveFinite,
                ));
            }
        }
        if !(t.delta > 0.0 && t.delta < 1.0) {
            return Err(ConfigError::field(
                file,
                "training.delta",
                FieldProblem::OpenUnit,
            ));
        }
        match (t.epsilon, t.sigma) {
            (Some(e), None) if e.is_finite() && e > 0.0 => {}
            (None, Some(s)) if s.is_finite() && s >= 0.0 => {}
            (Some(_), Some(_)) | (None, None) => {
                return Err(ConfigError::field(
                    file,
                    "training.epsilon",
                    FieldProblem::EpsilonXorSigma,
                ))
            }
            (Some(_), None) => {
                return Err(ConfigError::field(
                    file,
                    "training.epsilon",
                    FieldProblem::PositiveFinite,
                ))
            }
            (None, Some(_)) => {
                return Err(ConfigError::field(
                    file,
                    "training.sigma",
                    FieldProblem::NonNegativeFinite,
                ))
            }
        }
        if let Some(s) = t.temper_start {
            if !(s > 0.0 && s <= 1.0) {
                return Err(ConfigError::field(
                    file,
                    "training.temper_start",
                    FieldProblem::HalfOpenUnit,
                ));
            }
        }
        if t.temper_until.is_some_and(|u| u > t.iters) {
            return Err(ConfigError::field(
                file,
                "training.temper_until",
                FieldProblem::AtMostIters,
            ));
        }
        if !["closed-form", "paper", "off"].contains(&t.renormalise.as_str()) {
            return Err(ConfigError::field(
                file,
                "training.renormalise",
                FieldProblem::Renormalise,
            ));
        }
        c.timeouts.check(file)?;
        let base = base_of(file);
        c.tls.resolve(&base);
        c.out = base.join(&c.out);
        c.training.schema = c.training.schema.map(|p| base.join(p));
        Ok(c)
    }
}
