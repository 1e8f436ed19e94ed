//! The consortium as separate OS processes on loopback: `vtwin keygen`, three `vtwin node`,
//! two `vtwin party` and `vtwin coordinator`, with insecure test seeds.
//! - The result equals `vtwin train --backend mpc --demo` with the same seeds bit for bit.
//! - A node killed mid-iteration: the coordinator aborts within its timeout naming the node,
//!   applies and charges nothing, leaves the last checkpoint byte-identical; after the node
//!   restarts, `--resume` finishes with the model and checkpoint of an uninterrupted run.
//! - The coordinator killed between an opening and the next checkpoint: `--resume` charges
//!   every opening of its log, and privacy.json counts every opening.
//! - A schema with a target column trains across the processes.

mod consortium_support;

use std::time::{Duration, Instant};

use consortium_support::{coordinate, keygen, wait_until, Job, Kids};
use vtwin_consortium::config::{self, PartyConfig};
use vtwin_model::checkpoint::Checkpoint;

fn read(p: &std::path::Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn processes_over_quic_equal_vtwin_train_mpc_bit_for_bit() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::default();
    let c = keygen(&tmp.path().join("keys"), &job, 0);
    let mut kids = Kids::default();
    c.start_all(&mut kids);
    let out = tmp.path().join("net");
    let cfg = c.coordinator_config("coordinator-e2e.toml", &out, |_| {});
    let (status, stderr, secs) = coordinate(&cfg, &[]);
    assert!(
        status.success(),
        "coordinator failed after {secs:.1} s: {stderr}"
    );
    eprintln!("coordinator: {} iterations in {secs:.2} s", job.iters);

    let train_out = tmp.path().join("train");
    let out2 = consortium_support::bin()
        .args(["train", "--backend", "mpc", "--demo", "--out"])
        .arg(&train_out)
        .args(["--demo-rows", &job.demo_rows.to_string()])
        .args(["--components", &job.components.to_string()])
        .args(["--iters", &job.iters.to_string()])
        .args(["--batch", &job.batch.to_string()])
        .args(["--epsilon", &job.epsilon.to_string(), "--delta", "1e-5"])
        .args(["--seed", &job.seed.to_string()])
        .args(["--noise-seed", &job.noise_seed.to_string()])
        .args(["--mpc-seed", &job.mpc_seed.to_string()])
        .output()
        .unwrap();
    assert!(
        out2.status.success(),
        "train: {}",
        String::from_utf8_lossy(&out2.stderr)
    );
    for f in ["model.json", "privacy.json"] {
        assert!(
            read(&out.join(f)) == read(&train_out.join(f)),
            "{f} differs between the consortium and vtwin train"
        );
    }
    // The run did train: mu moved from its initialisation, and the ledger counts every step.
    let ck = Checkpoint::load(&out.join("checkpoint.bin")).unwrap();
    assert_eq!(ck.state.iteration, job.iters);
    assert_eq!(ck.state.ledger.as_ref().map(|l| l.steps()), Some(job.iters));
    for f in ["synthetic.csv", "train.csv", "timing.json"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
}

#[test]
fn node_killed_mid_iteration_aborts_cleanly_and_resume_matches_an_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    // A 2 ms receive delay on every node link makes one iteration last a few hundred ms,
    // so the kill lands inside an iteration.
    let job = Job {
        iters: 8,
        ..Job::default()
    };
    let c = keygen(&tmp.path().join("keys"), &job, 2);
    let mut kids = Kids::default();
    c.start_all(&mut kids);

    // The uninterrupted reference.
    let full = tmp.path().join("full");
    let cfg_full = c.coordinator_config("coordinator-full.toml", &full, |_| {});
    let (status, stderr, secs) = coordinate(&cfg_full, &[]);
    assert!(status.success(), "reference run: {stderr}");
    eprintln!("uninterrupted: {} iterations in {secs:.2} s", job.iters);

    // The interrupted run: kill node 1 right after checkpoint 3 is written.
    let part = tmp.path().join("part");
    let cfg = c.coordinator_config("coordinator-part.toml", &part, |c| {
        c.timeouts.iteration_ms = 5_000;
    });
    let mut coord = consortium_support::bin()
        .arg("coordinator")
        .arg("--config")
        .arg(&cfg)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ck_path = part.join("checkpoint.bin");
    let at_3 = || Checkpoint::load(&ck_path).is_ok_and(|ck| ck.state.iteration >= 3);
    assert!(wait_until(Duration::from_secs(60), at_3), "no checkpoint 3");
    kids.kill("node-1");
    let killed = Instant::now();
    let before = read(&ck_path);
    let status = coord.wait().unwrap();
    let to_abort = killed.elapsed().as_secs_f64();
    let mut stderr = String::new();
    std::io::Read::read_to_string(coord.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "the coordinator must fail: {stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: ") && last.contains("lost the link to node 1"),
        "the dead node is named first, whoever noticed: {last}"
    );
    // Detected through the links (QUIC idle timeout 1.5 s), before the 5 s deadline.
    assert!(to_abort < 5.0, "abort took {to_abort:.2} s");
    assert!(!last.contains("timed out after"), "{last}");
    eprintln!(
        "node kill -> clean abort: {:.0} ms ({last})",
        to_abort * 1e3
    );
    // Nothing applied or charged: the checkpoint is the one before the kill, byte for byte.
    let after = read(&ck_path);
    assert!(before == after, "the checkpoint changed after the kill");
    // An aborted run leaves no model.json or privacy.json that could pass for a finished one.
    for f in ["model.json", "privacy.json"] {
        assert!(!part.join(f).exists(), "{f} left by an aborted run");
    }
    let ck = Checkpoint::load(&ck_path).unwrap();
    let t = ck.state.iteration;
    assert!(t < job.iters);
    assert_eq!(ck.state.ledger.as_ref().map(|l| l.steps()), Some(t));

    // Restart node 1; its peers reconnect (node 0 and the parties redial once their idle
    // timeout or a stateless reset from the new process has ended the old link; node 1
    // dials node 2), then resume.
    let links_to_1 = |name: &str| {
        c.log(name)
            .lines()
            .filter(|l| l.contains("link up") && l.contains("node 1"))
            .count()
    };
    let peers = ["node-0", "node-2", "party-0", "party-1"];
    let up: Vec<usize> = peers.iter().map(|p| links_to_1(p)).collect();
    c.spawn(&mut kids, "node", "node-1b", &c.nodes[1]);
    let reconnected = || peers.iter().zip(&up).all(|(p, &n)| links_to_1(p) > n);
    assert!(
        wait_until(Duration::from_secs(20), reconnected),
        "node 1 not reconnected"
    );
    let (status, stderr, secs) = coordinate(&cfg, &["--resume"]);
    assert!(status.success(), "resume: {stderr}");
    eprintln!(
        "resume from iteration {t}: {secs:.2} s to finish {} iterations",
        job.iters - t
    );
    for f in ["model.json", "checkpoint.bin", "privacy.json"] {
        assert!(
            read(&part.join(f)) == read(&full.join(f)),
            "{f} differs from the uninterrupted run"
        );
    }
}

/// Lines of DIR/openings.log after the header: (opening, iteration).
fn openings(out: &std::path::Path) -> Vec<(u64, u64)> {
    // Read through the log's own parser (a torn last line is dropped); none yet: empty.
    vtwin_model::opening_log::OpeningLog::open(&out.join("openings.log"))
        .map(|(_, records)| records.iter().map(|r| (r.opening, r.iteration)).collect())
        .unwrap_or_default()
}

#[test]
fn coordinator_killed_after_an_opening_resumes_with_every_opening_charged() {
    let tmp = tempfile::tempdir().unwrap();
    // A 2 ms receive delay on the node links: an iteration takes a few hundred ms, so the
    // kill lands between two checkpoints.
    let job = Job {
        iters: 12,
        checkpoint_every: 4,
        ..Job::default()
    };
    let c = keygen(&tmp.path().join("keys"), &job, 2);
    let mut kids = Kids::default();
    c.start_all(&mut kids);
    let out = tmp.path().join("run");
    let cfg = c.coordinator_config("coordinator-run.toml", &out, |_| {});
    let mut coord = consortium_support::bin()
        .arg("coordinator")
        .arg("--config")
        .arg(&cfg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Openings 0..=5 recorded: the checkpoint is at 4, the next one comes after opening 7.
    assert!(
        wait_until(Duration::from_secs(60), || openings(&out).len() >= 6),
        "no sixth opening"
    );
    coord.kill().unwrap();
    coord.wait().unwrap();
    let logged = openings(&out).len() as u64;
    let ck = Checkpoint::load(&out.join("checkpoint.bin")).unwrap();
    assert!(
        logged > ck.state.openings,
        "the kill landed on a checkpoint ({logged} openings, checkpoint at {})",
        ck.state.iteration
    );
    let (status, stderr, _) = coordinate(&cfg, &["--resume"]);
    assert!(status.success(), "resume: {stderr}");
    let want = logged + (job.iters - ck.state.iteration);
    eprintln!(
        "killed after {logged} openings, checkpoint at {}: {want} openings charged",
        ck.state.iteration
    );
    let p: serde_json::Value = serde_json::from_slice(&read(&out.join("privacy.json"))).unwrap();
    assert_eq!(p["steps"], want);
    // [insecure] seeds: the guarantee is void, and said so.
    assert_eq!(p["guarantee"], "void");
    assert_eq!(p["if_seeds_were_secret"]["steps"], want);
    let end = Checkpoint::load(&out.join("checkpoint.bin")).unwrap();
    assert_eq!(end.state.iteration, job.iters);
    assert_eq!(end.state.ledger.as_ref().map(|l| l.steps()), Some(want));
    let log = openings(&out);
    assert_eq!(log.len() as u64, want);
    assert!(log.iter().enumerate().all(|(i, &(o, _))| o == i as u64));
}

#[test]
fn demo_runs_the_whole_consortium_in_process_and_writes_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("demo");
    let run = consortium_support::bin()
        .args(["demo", "--iters", "5", "--seed", "7", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("trained 5 iterations"), "{stdout}");
    let eval: serde_json::Value = serde_json::from_slice(&read(&out.join("eval.json"))).unwrap();
    assert!(
        eval["nll_test"].as_f64().is_some_and(f64::is_finite),
        "{eval}"
    );
    assert!(
        eval["tvd_1way"]
            .as_f64()
            .is_some_and(|t| (0.0..=1.0).contains(&t)),
        "{eval}"
    );
    let ck = Checkpoint::load(&out.join("checkpoint.bin")).unwrap();
    assert_eq!(ck.state.iteration, 5);
    for f in ["synthetic.csv", "model.json", "privacy.json"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    // The demo's parties hold 3600 people each, 3200 in common: the job trains and accounts
    // on the aligned N (q = B / N with the default batch of 100), and releases N rows.
    assert!(stdout.contains("3200 in common"), "{stdout}");
    let privacy: serde_json::Value =
        serde_json::from_slice(&read(&out.join("privacy.json"))).unwrap();
    assert_eq!(
        privacy["sample_rate"].as_f64(),
        Some(100.0 / 3200.0),
        "{privacy}"
    );
    let rows = String::from_utf8(read(&out.join("synthetic.csv")))
        .unwrap()
        .lines()
        .count();
    assert_eq!(rows, 1 + 3200, "header and N rows");
}

/// With `training.align = true` (the default) separate processes align their records
/// before training: the job runs, and the coordinator's log says it aligned.
#[test]
fn processes_align_their_records_before_training() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job {
        iters: 2,
        align: true,
        ..Job::default()
    };
    let c = keygen(&tmp.path().join("keys"), &job, 0);
    let mut kids = Kids::default();
    for (i, f) in c.nodes.iter().enumerate() {
        c.spawn(&mut kids, "node", &format!("node-{i}"), f);
    }
    for (p, f) in c.parties.iter().enumerate() {
        c.spawn(&mut kids, "party", &format!("party-{p}"), f);
    }
    let (status, stderr, _) = coordinate(&c.coordinator, &[]);
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("records privately before training"),
        "{stderr}"
    );
    for p in 0..2 {
        let log = std::fs::read_to_string(c.dir.join(format!("party-{p}.log"))).unwrap();
        assert!(log.contains("record alignment done"), "party {p}: {log}");
    }
}

#[test]
fn processes_train_a_schema_with_a_target() {
    // With a target every layout needs at least one component per class; `vtwin party`
    // built its statistics' layout with K = 1 and refused such a schema at start.
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::default();
    let c = keygen(&tmp.path().join("keys"), &job, 0);
    let schema = tmp.path().join("schema.toml");
    let with_target = vtwin_data::demo::demo_schema()
        .with_target(Some("condition".into()))
        .unwrap();
    std::fs::write(&schema, with_target.to_toml()).unwrap();
    for f in &c.parties {
        let mut p = PartyConfig::load(f).unwrap();
        p.schema = Some(schema.clone());
        config::write(f, &p).unwrap();
    }
    let mut kids = Kids::default();
    c.start_all(&mut kids);
    let out = tmp.path().join("net");
    let cfg = c.coordinator_config("coordinator-target.toml", &out, |t| {
        t.training.schema = Some(schema.clone());
    });
    let (status, stderr, secs) = coordinate(&cfg, &[]);
    assert!(
        status.success(),
        "coordinator failed after {secs:.1} s: {stderr}"
    );
    let ck = Checkpoint::load(&out.join("checkpoint.bin")).unwrap();
    assert_eq!(ck.state.iteration, job.iters);
    assert_eq!(ck.state.ledger.as_ref().map(|l| l.steps()), Some(job.iters));
    let model = std::fs::read_to_string(out.join("model.json")).unwrap();
    assert!(
        model.contains("\"condition\""),
        "model.json names the target"
    );
}
