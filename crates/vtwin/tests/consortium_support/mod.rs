//! Shared by the consortium tests: a keygen'd consortium (or configs written elsewhere) on free loopback ports with
//! insecure test seeds, child processes killed on drop, and helpers to run the binary.

#![allow(dead_code, unreachable_pub)]

use std::fs::File;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use vtwin_consortium::config::{
    self, CoordinatorConfig, DataSource, Insecure, NodeConfig, NodePolicy, PartyConfig, PartyPolicy,
};
use vtwin_consortium::party_ledger::{batch_digest, UploadRecord};
use vtwin_consortium::PartyLedger;

/// Runs of the job a test consortium's parties agree to serve on the same batches (a full
/// run, an interrupted one and its resume): with seeds every run draws the same batches, so
/// each batch is opened up to this many times, and each opening counts.
const RUNS: u64 = 3;

/// The parties' policy for `job`: sigma calibrated as the coordinator calibrates it (RDP, the
/// job's epsilon at delta 1e-5 for q = batch / rows), and the budget of [`RUNS`] runs, each
/// batch opened [`RUNS`] times, by the party ledger's own accounting.
fn policy(job: &Job) -> PartyPolicy {
    let delta = 1e-5;
    let q = job.batch as f64 / job.demo_rows as f64;
    let sigma = vtwin_dp::calibrate_sigma(
        vtwin_dp::Accountant::Rdp,
        job.epsilon,
        delta,
        q,
        job.iters,
        vtwin_dp::Neighbouring::AddRemove,
    )
    .expect("calibrate sigma");
    let mut ledger = PartyLedger::in_memory();
    for t in 0..job.iters {
        for _ in 0..RUNS {
            let upload = UploadRecord {
                iteration: t,
                batch: batch_digest(&[t as u32]),
                sigma,
                clip: 1.0,
                sample_rate: q,
            };
            ledger.record(&upload).expect("in memory");
        }
    }
    PartyPolicy {
        epsilon: ledger.epsilon(None, delta).expect("epsilon"),
        delta,
        sigma,
        clip: 1.0,
        components: job.components as u32,
        sample_rate: q,
        openings: RUNS * job.iters,
        align: true,
    }
}

/// The vtwin binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vtwin"))
}

/// A UDP port that was free a moment ago, below Linux's ephemeral range (32768-60999): a
/// port the OS hands out for port 0 could be handed out again, before the test binds it, to
/// any socket that asks for port 0 (every connect probe does). Ports are spread by process
/// id and a counter, and checked free.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    let start = std::process::id().wrapping_mul(7919);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (LOW + start.wrapping_add(n.wrapping_mul(131)) % SPAN) as u16;
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Child processes, all killed (and reaped) on drop.
#[derive(Default)]
pub struct Kids(pub Vec<(String, Child)>);

impl Kids {
    /// Kills the child named `name` (SIGKILL) and reaps it.
    pub fn kill(&mut self, name: &str) {
        if let Some(i) = self.0.iter().position(|(n, _)| n == name) {
            let (_, mut c) = self.0.remove(i);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Kids {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The job's settings, shared by the coordinator files and the `vtwin train` comparison.
#[derive(Clone, Debug)]
pub struct Job {
    pub components: usize,
    pub iters: u64,
    pub batch: usize,
    pub epsilon: f64,
    pub seed: u64,
    pub mpc_seed: u64,
    pub noise_seed: u64,
    pub checkpoint_every: u64,
    pub demo_rows: usize,
    /// `training.align`: off for the bit-for-bit comparisons (the parties hold the same
    /// ids in the same order; an alignment would reorder the rows into its common order).
    pub align: bool,
}

impl Default for Job {
    fn default() -> Job {
        Job {
            components: 4,
            iters: 6,
            batch: 60,
            epsilon: 2.0,
            seed: 3,
            mpc_seed: 41,
            noise_seed: 42,
            checkpoint_every: 1,
            demo_rows: 600,
            align: false,
        }
    }
}

/// A keygen'd consortium directory with rewritten configs.
pub struct Consortium {
    pub dir: PathBuf,
    pub coordinator: PathBuf,
    pub nodes: Vec<PathBuf>,
    pub parties: Vec<PathBuf>,
    pub job: Job,
}

/// `vtwin keygen` into `dir`, then [`configure`] on its files.
pub fn keygen(dir: &Path, job: &Job, node_delay_ms: u64) -> Consortium {
    let out = bin()
        .args(["keygen", "--out"])
        .arg(dir)
        .args(["--parties", "health,retail"])
        .output()
        .expect("run keygen");
    assert!(
        out.status.success(),
        "keygen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nodes = (0..3).map(|i| dir.join(format!("node-{i}.toml"))).collect();
    let parties = ["health", "retail"]
        .iter()
        .map(|name| dir.join(format!("party-{name}.toml")))
        .collect();
    configure(
        dir,
        dir.join("coordinator.toml"),
        nodes,
        parties,
        job,
        node_delay_ms,
    )
}

/// Rewrites the given configs (coordinator, nodes by id, parties `health` and `retail` by
/// index, wherever they lie): every address moved to a free port, the job, the demo data
/// size, the insecure seeds and short timeouts. Logs and the coordinator's output go to
/// `dir`.
pub fn configure(
    dir: &Path,
    coordinator: PathBuf,
    node_files: Vec<PathBuf>,
    party_files: Vec<PathBuf>,
    job: &Job,
    node_delay_ms: u64,
) -> Consortium {
    let insecure = Some(Insecure {
        mpc_seed: job.mpc_seed,
        noise_seed: job.noise_seed,
    });
    let node_addrs = [
        loopback(free_port()),
        loopback(free_port()),
        loopback(free_port()),
    ];
    let party_addrs = [loopback(free_port()), loopback(free_port())];
    let policy = policy(job);
    let mut nodes = Vec::new();
    for (i, f) in node_files.into_iter().enumerate() {
        let mut c = NodeConfig::load(&f).expect("node config");
        c.listen = node_addrs[i];
        c.nodes = node_addrs;
        c.insecure = insecure.clone();
        c.policy = NodePolicy {
            sigma: policy.sigma,
            clip: policy.clip,
        };
        c.timeouts.connect_initial_delay_ms = 50;
        c.timeouts.connect_max_delay_ms = 500;
        c.timeouts.receive_delay_ms = node_delay_ms as f64;
        // A killed peer is detected by the QUIC idle timeout (keep-alives every third of it).
        c.timeouts.idle_ms = 1500;
        config::write(&f, &c).expect("write node config");
        nodes.push(f);
    }
    let mut parties = Vec::new();
    for (p, f) in party_files.into_iter().enumerate() {
        let mut c = PartyConfig::load(&f).expect("party config");
        c.listen = party_addrs[p];
        c.nodes = node_addrs;
        c.insecure = insecure.clone();
        // As the nodes': quick redials, and a dead node's link seen within the idle timeout.
        c.timeouts.connect_initial_delay_ms = 50;
        c.timeouts.connect_max_delay_ms = 500;
        c.timeouts.idle_ms = 1500;
        c.data = DataSource::Demo {
            rows: job.demo_rows,
            seed: 1,
        };
        c.policy = policy.clone();
        config::write(&f, &c).expect("write party config");
        parties.push(f);
    }
    let f = coordinator;
    let mut c = CoordinatorConfig::load(&f).expect("coordinator config");
    c.nodes = node_addrs;
    for (p, a) in c.parties.iter_mut().zip(party_addrs) {
        p.address = a;
    }
    c.insecure = insecure;
    c.out = dir.join("out");
    c.training.components = job.components;
    c.training.iters = job.iters;
    c.training.batch = job.batch;
    c.training.epsilon = Some(job.epsilon);
    c.training.sigma = None;
    c.training.seed = job.seed;
    c.training.checkpoint_every = job.checkpoint_every;
    c.training.align = job.align;
    // Services that are still starting answer "port unreachable", which ends an attempt at
    // once: 16 attempts (delays up to 500 ms, the last one 5 s) wait ~11 s for a slow start.
    c.timeouts.connect_attempts = 16;
    c.timeouts.connect_initial_delay_ms = 50;
    c.timeouts.connect_max_delay_ms = 500;
    c.timeouts.iteration_ms = 20_000;
    c.timeouts.idle_ms = 1500;
    config::write(&f, &c).expect("write coordinator config");
    Consortium {
        dir: dir.to_owned(),
        coordinator: f,
        nodes,
        parties,
        job: job.clone(),
    }
}

impl Drop for Consortium {
    /// A failed test shows the tail of every service's log (CI keeps nothing else).
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut logs: Vec<PathBuf> = dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        logs.sort();
        for p in logs {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            eprintln!("--- {} (last 80 of {} lines)", p.display(), lines.len());
            for l in &lines[lines.len().saturating_sub(80)..] {
                eprintln!("{l}");
            }
        }
    }
}

impl Consortium {
    /// A copy of the coordinator config writing to `out`, edited by `edit`.
    pub fn coordinator_config(
        &self,
        name: &str,
        out: &Path,
        edit: impl FnOnce(&mut CoordinatorConfig),
    ) -> PathBuf {
        let mut c = CoordinatorConfig::load(&self.coordinator).expect("coordinator config");
        c.out = out.to_owned();
        edit(&mut c);
        let f = self.dir.join(name);
        config::write(&f, &c).expect("write coordinator config");
        f
    }

    /// Starts `vtwin node|party --config F` with its stderr in DIR/NAME.log.
    pub fn spawn(&self, kids: &mut Kids, role: &str, name: &str, cfg: &Path) {
        let log = File::create(self.dir.join(format!("{name}.log"))).expect("log file");
        let child = bin()
            .arg(role)
            .arg("--config")
            .arg(cfg)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn");
        kids.0.push((name.to_owned(), child));
    }

    /// Starts the three nodes and both parties, and waits until each logs that it serves
    /// (a port that is not bound yet answers "port unreachable", which ends a coordinator's
    /// connection attempt at once; on a loaded machine a service can take seconds to bind).
    pub fn start_all(&self, kids: &mut Kids) {
        let mut names = Vec::new();
        for (i, f) in self.nodes.iter().enumerate() {
            let name = format!("node-{i}");
            self.spawn(kids, "node", &name, f);
            names.push((name, "node serving"));
        }
        for (p, f) in self.parties.iter().enumerate() {
            let name = format!("party-{p}");
            self.spawn(kids, "party", &name, f);
            names.push((name, "party serving"));
        }
        for (name, line) in names {
            assert!(
                wait_until(Duration::from_secs(60), || self.log(&name).contains(line)),
                "{name} did not start: {}",
                self.log(&name)
            );
        }
    }

    /// A service's log so far.
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default()
    }
}

/// Runs `vtwin coordinator --config F [extra]` to the end: (status, stderr, seconds).
pub fn coordinate(cfg: &Path, extra: &[&str]) -> (ExitStatus, String, f64) {
    let t0 = Instant::now();
    let out = bin()
        .arg("coordinator")
        .arg("--config")
        .arg(cfg)
        .args(extra)
        .env("RUST_LOG", "info")
        .output()
        .expect("run the coordinator");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        t0.elapsed().as_secs_f64(),
    )
}

/// Waits (up to `limit`) until `f` holds.
pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}
