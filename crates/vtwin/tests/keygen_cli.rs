//! `vtwin keygen`: files and modes, configs that load, one-line errors naming the flag; the
//! certificate-request steps' errors; a node refusing a seal key its certificate does not bind.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{assert_one_line_error, stdout, vtwin};
use vtwin_consortium::config::{CoordinatorConfig, NodeConfig, PartyConfig};
use vtwin_net::Role;

#[test]
fn writes_a_consortium() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("keys");
    let o = vtwin(&[
        "keygen",
        "--out",
        out.to_str().unwrap(),
        "--parties",
        "health,retail",
        "--base-port",
        "17400",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let listed: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    // CA (2) + coordinator (3) + 3 nodes (4 each) + 2 parties (3 each).
    assert_eq!(listed.len(), 2 + 3 + 12 + 6, "{listed:?}");
    for file in &listed {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        let secret = file.ends_with(".key") || file.ends_with(".seal");
        assert_eq!(mode, if secret { 0o600 } else { 0o644 }, "{file}");
    }
    let coord = CoordinatorConfig::load(&out.join("coordinator.toml")).unwrap();
    assert_eq!(coord.nodes[2].port(), 17402);
    assert_eq!(coord.parties[0].name, "health");
    assert_eq!(coord.parties[1].address.port(), 17404);
    let node = NodeConfig::load(&out.join("node-2.toml")).unwrap();
    assert_eq!(node.tls.load().unwrap().role(), Role::Node(2));
    let party = PartyConfig::load(&out.join("party-retail.toml")).unwrap();
    assert_eq!(party.tls.load().unwrap().role(), Role::Party(1));
    assert!(party.node_publics().is_ok());

    // A second run into the same directory refuses and changes nothing.
    let before = std::fs::read(out.join("node-0.seal")).unwrap();
    let o = vtwin(&[
        "keygen",
        "--out",
        out.to_str().unwrap(),
        "--parties",
        "health,retail",
    ]);
    assert_one_line_error(&o, "exists already");
    assert_eq!(std::fs::read(out.join("node-0.seal")).unwrap(), before);
}

#[test]
fn bad_arguments_are_one_line_errors_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    for (args, flag) in [
        (vec!["--parties", "a,b", "--nodes", "4"], "--nodes"),
        (vec!["--parties", "solo"], "--parties"),
        (vec!["--parties", "a,a"], "--parties"),
        (vec!["--parties", "a,../b"], "--parties"),
        (
            vec!["--parties", "a,b", "--base-port", "65534"],
            "--base-port",
        ),
    ] {
        let mut full = vec!["keygen", "--out", out];
        full.extend(args);
        assert_one_line_error(&vtwin(&full), flag);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn csr_steps_refuse_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = |f: &str| dir.path().join(f).to_str().unwrap().to_string();
    // A role that is no role (clap's usage error, which names the flag and the value).
    let o = vtwin(&["keygen", "request", "--role", "node-3", "--out", &d("x")]);
    let e = common::stderr(&o);
    assert!(
        !o.status.success() && e.contains("--role") && e.contains("\"node-3\" is not a role"),
        "{e}"
    );
    assert!(!dir.path().join("x").exists());
    // sign without the CA's files names the missing file.
    let o = vtwin(&["keygen", "request", "--role", "node-0", "--out", &d("n0")]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let e = assert_one_line_error(
        &vtwin(&[
            "keygen",
            "sign",
            "--ca",
            &d("noca"),
            "--parties",
            "a,b",
            "--request",
            &d("n0/node-0.csr"),
            "--out",
            &d("signed"),
        ]),
        "ca.pem",
    );
    assert!(e.contains("noca"), "{e}");
    // The request lists the role's fingerprints, as `show` does.
    let shown = stdout(&vtwin(&["keygen", "show", &d("n0/node-0.csr")]));
    for line in stdout(&o).lines().filter(|l| l.contains("SHA256:")) {
        let fp = line.rsplit(' ').next().unwrap();
        assert!(shown.contains(fp), "{fp} not in {shown}");
    }
}

#[test]
fn a_node_refuses_a_seal_key_its_certificate_does_not_bind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let o = vtwin(&["keygen", "--out", out.to_str().unwrap(), "--parties", "a,b"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    // node-0's config pointed at node-1's seal key.
    let cfg = out.join("node-0.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text.replace("node-0.seal", "node-1.seal")).unwrap();
    let e = assert_one_line_error(
        &vtwin(&["node", "--config", cfg.to_str().unwrap()]),
        "node-1.seal",
    );
    assert!(e.contains("node-0.pem") && e.contains("not the one"), "{e}");
}
