//! The certificate-request flow over separate processes: `vtwin keygen ca`, one
//! `vtwin keygen request` per role in its own directory (its "host"), `vtwin keygen sign`,
//! each role assembling its directory from its own keys and the signed public files, then
//! three `vtwin node`, two `vtwin party` and `vtwin coordinator` run a short job on them.
//! The CA operator's directories never hold a role's private key.

mod consortium_support;

use std::path::{Path, PathBuf};
use std::process::Output;

use consortium_support::{bin, configure, coordinate, Job, Kids};
use vtwin_model::checkpoint::Checkpoint;

const ROLES: [&str; 6] = [
    "coordinator",
    "node-0",
    "node-1",
    "node-2",
    "party-health",
    "party-retail",
];

fn vtwin(args: &[&str], dir: &Path) -> Output {
    let o = bin()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run vtwin");
    assert!(
        o.status.success(),
        "vtwin {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The `SHA256:` fingerprint on the line of `out` that starts with `prefix`.
fn fingerprint(out: &Output, prefix: &str) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in {text}"));
    let fp = line.rsplit(' ').next().unwrap().to_string();
    assert!(fp.starts_with("SHA256:") && fp.len() == 7 + 64, "{line}");
    fp
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn csr_flow_over_processes_runs_a_consortium_job() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // CA operator.
    let ca = vtwin(&["keygen", "ca", "--out", "ca"], root);
    let ca_fp = fingerprint(&ca, "ca.pem certificate");
    // Each role, on its own host: keys stay in root/ROLE.
    let mut requested = Vec::new();
    for role in ROLES {
        let o = vtwin(&["keygen", "request", "--role", role, "--out", role], root);
        let tls = fingerprint(&o, &format!("{role} tls key"));
        let seal = role
            .starts_with("node-")
            .then(|| fingerprint(&o, &format!("{role} seal key")));
        requested.push((tls, seal));
    }
    // The CA operator signs the requests (public files only).
    let requests: Vec<String> = ROLES.iter().map(|r| format!("{r}/{r}.csr")).collect();
    let signed = vtwin(
        &[
            "keygen",
            "sign",
            "--ca",
            "ca",
            "--parties",
            "health,retail",
            "--request",
            &requests.join(","),
            "--out",
            "signed",
        ],
        root,
    );
    // Every fingerprint the CA prints equals the one its role printed.
    assert_eq!(fingerprint(&signed, "ca.pem certificate"), ca_fp);
    for (role, (tls, seal)) in ROLES.iter().zip(&requested) {
        assert_eq!(&fingerprint(&signed, &format!("{role} tls key")), tls);
        if let Some(seal) = seal {
            assert_eq!(&fingerprint(&signed, &format!("{role} seal key")), seal);
        }
    }
    // No role's private key is in the CA operator's hands.
    assert_eq!(names(&root.join("ca")), ["ca.key", "ca.pem"]);
    assert!(
        names(&root.join("signed"))
            .iter()
            .all(|n| n.ends_with(".pem") || n.ends_with(".toml")),
        "{:?}",
        names(&root.join("signed"))
    );
    // Each role assembles its directory: ca.pem, its certificate and config (a party also
    // the node certificates) beside the keys it made.
    for role in ROLES {
        let mut files = vec![
            "ca.pem".to_string(),
            format!("{role}.pem"),
            format!("{role}.toml"),
        ];
        if role.starts_with("party-") {
            files.extend((0..3).map(|i| format!("node-{i}.pem")));
        }
        for f in files {
            std::fs::copy(root.join("signed").join(&f), root.join(role).join(&f)).unwrap();
        }
    }
    // The job, on free loopback ports.
    let toml = |role: &str| -> PathBuf { root.join(role).join(format!("{role}.toml")) };
    let job = Job {
        iters: 3,
        ..Job::default()
    };
    std::fs::create_dir(root.join("run")).unwrap();
    let c = configure(
        &root.join("run"),
        toml("coordinator"),
        ROLES[1..4].iter().map(|r| toml(r)).collect(),
        ROLES[4..].iter().map(|r| toml(r)).collect(),
        &job,
        0,
    );
    let mut kids = Kids::default();
    c.start_all(&mut kids);
    let (status, stderr, secs) = coordinate(&c.coordinator, &[]);
    assert!(
        status.success(),
        "coordinator failed after {secs:.1} s: {stderr}"
    );
    let ck = Checkpoint::load(&root.join("run/out/checkpoint.bin")).unwrap();
    assert_eq!(ck.state.iteration, job.iters);
    assert_eq!(ck.state.ledger.as_ref().map(|l| l.steps()), Some(job.iters));
}
