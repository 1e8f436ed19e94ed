//! keygen output: files, modes, configurations that load, identities with the right roles,
//! seal keys that match, refusals; configuration errors that name the file and field. The
//! certificate-request flow: requests signed without private keys, bad requests refused
//! naming the file, seal keys the CA did not bind refused, keys that do not match their
//! certificate refused naming both files.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateSigningRequestDer;
use vtwin_consortium::config::{
    ConfigError, CoordinatorConfig, DataSource, Insecure, NodeConfig, PartyConfig, PartyPolicy,
    TrainingSettings,
};
use vtwin_consortium::keygen::{
    self, keygen, verify, KeygenError, KeygenSpec, RequestRole, Setting,
};
use vtwin_net::pki::{check_seal_binding, Ca, CertRequest, Identity, PkiError};
use vtwin_net::seal::{seal, unseal, SealContext, SealKey};
use vtwin_net::{Backoff, Endpoint, Role, TransportOptions};

fn training() -> TrainingSettings {
    TrainingSettings {
        schema: None,
        components: 5,
        iters: 10,
        epsilon: Some(1.0),
        delta: 1e-5,
        sigma: None,
        batch: 50,
        clip: 1.0,
        lr: 0.01,
        seed: 3,
        renormalise: "closed-form".into(),
        checkpoint_every: 5,
        align: true,
        average: "ema".into(),
        average_half_life: None,
        temper_start: None,
        temper_until: None,
    }
}

fn spec(parties: &[&str]) -> KeygenSpec {
    KeygenSpec {
        parties: parties.iter().map(|s| s.to_string()).collect(),
        nodes: 3,
        base_port: 47000,
        training: training(),
        data: parties
            .iter()
            .map(|_| DataSource::Demo { rows: 400, seed: 1 })
            .collect(),
        insecure: Some(Insecure {
            mpc_seed: 5,
            noise_seed: 6,
        }),
        policy: PartyPolicy {
            epsilon: 1.0,
            delta: 1e-5,
            sigma: 1.5,
            clip: 1.0,
            components: 3,
            sample_rate: 0.25,
            openings: 10,
            align: true,
        },
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn writes_keys_0600_and_configs_that_load() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("consortium");
    let written = keygen(&out, &spec(&["health", "retail"])).unwrap();
    verify(&written).unwrap();
    let mut names: Vec<String> = written
        .files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = [
        "ca.pem",
        "ca.key",
        "coordinator.pem",
        "coordinator.key",
        "coordinator.toml",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for stem in ["node-0", "node-1", "node-2"] {
        for ext in ["pem", "key", "seal", "toml"] {
            expected.push(format!("{stem}.{ext}"));
        }
    }
    for stem in ["party-health", "party-retail"] {
        for ext in ["pem", "key", "toml"] {
            expected.push(format!("{stem}.{ext}"));
        }
    }
    expected.sort();
    assert_eq!(names, expected);
    for p in &written.files {
        let ext = p.extension().unwrap().to_str().unwrap();
        let want = if ext == "key" || ext == "seal" {
            0o600
        } else {
            0o644
        };
        assert_eq!(mode(p), want, "{}", p.display());
    }
    // No temporary files left behind.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), expected.len());

    let coord = CoordinatorConfig::load(&written.coordinator).unwrap();
    assert_eq!(coord.tls.load().unwrap().role(), Role::Coordinator);
    assert_eq!(coord.parties.len(), 2);
    assert_eq!(coord.parties[1].name, "retail");
    assert_eq!(coord.parties[1].address.port(), 47004);
    assert_eq!(coord.training, training());
    assert_eq!(coord.out, out.join("run"));
    let mut seal_publics = Vec::new();
    for (i, file) in written.nodes.iter().enumerate() {
        let node = NodeConfig::load(file).unwrap();
        assert_eq!(node.id as usize, i);
        assert_eq!(node.listen, coord.nodes[i]);
        assert_eq!(node.listen.port(), 47000 + i as u16);
        assert!(node.listen.ip().is_loopback());
        assert_eq!(node.tls.load().unwrap().role(), Role::Node(i as u8));
        assert_eq!(
            node.insecure,
            Some(Insecure {
                mpc_seed: 5,
                noise_seed: 6
            })
        );
        assert_eq!((node.policy.sigma, node.policy.clip), (1.5, 1.0));
        seal_publics.push(SealKey::read_file(&node.seal_key).unwrap());
    }
    for (j, file) in written.parties.iter().enumerate() {
        let party = PartyConfig::load(file).unwrap();
        assert_eq!(party.index as usize, j);
        assert_eq!(party.listen, coord.parties[j].address);
        assert_eq!(party.tls.load().unwrap().role(), Role::Party(j as u16));
        assert_eq!(party.data, DataSource::Demo { rows: 400, seed: 1 });
        assert_eq!(party.policy, spec(&["health", "retail"]).policy);
        let stem = if j == 0 { "health" } else { "retail" };
        assert_eq!(party.ledger, out.join(format!("party-{stem}.ledger")));
        // A share sealed with the party's configured public opens with the node's key.
        let publics = party.node_publics().unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(j as u64);
        for (i, key) in seal_publics.iter().enumerate() {
            assert_eq!(publics[i], key.public());
            let ctx = SealContext {
                session: [1; 16],
                iteration: 0,
                party: j as u16,
                node: i as u8,
            };
            let sealed = seal(&publics[i], &ctx, b"share", &mut rng).unwrap();
            assert_eq!(&*unseal(key, &ctx, &sealed).unwrap(), b"share");
        }
    }
    // Distinct seal keys.
    assert_ne!(seal_publics[0].public(), seal_publics[1].public());
    assert_ne!(seal_publics[1].public(), seal_publics[2].public());
}

#[tokio::test]
async fn generated_identities_connect() {
    let dir = tempfile::tempdir().unwrap();
    let written = keygen(dir.path(), &spec(&["a", "b"])).unwrap();
    let coord = CoordinatorConfig::load(&written.coordinator).unwrap();
    let node = NodeConfig::load(&written.nodes[2]).unwrap();
    let any = "127.0.0.1:0".parse().unwrap();
    let server = Endpoint::bind(
        any,
        &node.tls.load().unwrap(),
        &[
            Role::Coordinator.into(),
            Role::Node(0).into(),
            Role::Node(1).into(),
        ],
        node.timeouts.transport(),
    )
    .unwrap();
    let client = Endpoint::bind(
        any,
        &coord.tls.load().unwrap(),
        &[],
        TransportOptions::default(),
    )
    .unwrap();
    let addr = server.local_addr().unwrap();
    let (c, s) = tokio::join!(
        client.connect(addr, Role::Node(2), Backoff::default()),
        server.accept()
    );
    assert_eq!(c.unwrap().peer(), Role::Node(2));
    assert_eq!(s.unwrap().peer(), Role::Coordinator);
}

#[test]
fn refuses_bad_settings_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(KeygenSpec, Setting)> = vec![
        (
            KeygenSpec {
                nodes: 4,
                ..spec(&["a", "b"])
            },
            Setting::Nodes,
        ),
        (spec(&["a"]), Setting::Parties),
        (spec(&["a", "a"]), Setting::Parties),
        (spec(&["a", "b/c"]), Setting::Parties),
        (spec(&["a", ""]), Setting::Parties),
        (
            KeygenSpec {
                base_port: 65533,
                ..spec(&["a", "b"])
            },
            Setting::BasePort,
        ),
        (
            KeygenSpec {
                base_port: 0,
                ..spec(&["a", "b"])
            },
            Setting::BasePort,
        ),
    ];
    for (s, setting) in cases {
        let err = keygen(dir.path(), &s).unwrap_err();
        assert!(
            matches!(err, KeygenError::Invalid { setting: got, .. } if got == setting),
            "{setting}: {err}"
        );
        // The library names the setting, not a flag of the CLI (which adds its own).
        assert!(err.to_string().starts_with(&setting.to_string()), "{err}");
        assert!(!err.to_string().contains("--"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("node-1.seal"), "keep me").unwrap();
    let err = keygen(dir.path(), &spec(&["a", "b"])).unwrap_err();
    assert!(
        matches!(err, KeygenError::Exists { ref file } if file.ends_with("node-1.seal")),
        "{err}"
    );
    // Nothing else was written, the existing file is intact.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("node-1.seal")).unwrap(),
        "keep me"
    );
}

/// Writes `text` over `name` in a fresh keygen directory and loads it as `T`.
fn edited<T>(
    name: &str,
    edit: impl Fn(String) -> String,
    load: fn(&Path) -> Result<T, ConfigError>,
) -> String
where
    T: std::fmt::Debug,
{
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path(), &spec(&["a", "b"])).unwrap();
    let file = dir.path().join(name);
    let text = std::fs::read_to_string(&file).unwrap();
    let changed = edit(text.clone());
    assert_ne!(changed, text, "edit of {name} changed nothing");
    std::fs::write(&file, changed).unwrap();
    // With its causes, as the CLI prints it.
    let err = vtwin_host::error_chain::Chain(&load(&file).unwrap_err()).to_string();
    assert!(err.contains(name), "{err}");
    eprintln!("{err}");
    err
}

#[test]
fn config_errors_name_file_and_field() {
    let replace = |from: &'static str, to: &'static str| move |t: String| t.replacen(from, to, 1);
    let e = edited("node-1.toml", replace("id = 1", "id = 7"), NodeConfig::load);
    assert!(e.contains("`id`"), "{e}");
    let e = edited(
        "node-1.toml",
        replace("id = 1", "id = \"one\""),
        NodeConfig::load,
    );
    assert!(e.contains("`id`") && e.contains(":1:"), "{e}");
    let e = edited("node-1.toml", replace("id = 1\n", ""), NodeConfig::load);
    assert!(e.contains("missing field `id`"), "{e}");
    let e = edited(
        "node-1.toml",
        replace("id = 1", "id = 1\nlisten_port = 3"),
        NodeConfig::load,
    );
    assert!(e.contains("listen_port"), "{e}");
    let e = edited(
        "node-1.toml",
        replace("listen = \"127.0.0.1:47001\"", "listen = \"localhost\""),
        NodeConfig::load,
    );
    assert!(e.contains("`listen`"), "{e}");
    let e = edited(
        "party-b.toml",
        replace("openings = 10", "openings = 0"),
        PartyConfig::load,
    );
    assert!(e.contains("policy.openings"), "{e}");
    let e = edited(
        "party-b.toml",
        replace("sigma = 1.5", "sigma = 0.0"),
        PartyConfig::load,
    );
    assert!(e.contains("policy.sigma"), "{e}");
    let e = edited(
        "party-b.toml",
        replace("sample_rate = 0.25", "sample_rate = 1.5"),
        PartyConfig::load,
    );
    assert!(e.contains("policy.sample_rate"), "{e}");
    let e = edited(
        "party-b.toml",
        replace("ledger = ", "x = "),
        PartyConfig::load,
    );
    assert!(e.contains("ledger") || e.contains("`x`"), "{e}");
    // Switching the demo data to one's own CSV without deleting the demo's fields (the
    // onboarding report of 2026-11-23), or the schema put under [data]: the error says
    // what to do.
    let e = edited(
        "party-b.toml",
        replace("kind = \"demo\"", "kind = \"csv\"\npath = \"b.csv\""),
        PartyConfig::load,
    );
    assert!(
        e.contains("does not take `rows`") && e.contains("delete it"),
        "{e}"
    );
    let e = edited(
        "party-b.toml",
        replace("kind = \"demo\"", "kind = \"demo\"\nschema = \"s.toml\""),
        PartyConfig::load,
    );
    assert!(e.contains("top level"), "{e}");
    let e = edited(
        "party-b.toml",
        replace("kind = \"demo\"", "kind = \"parquet\""),
        PartyConfig::load,
    );
    assert!(e.contains("expected \"csv\""), "{e}");
    let e = edited(
        "node-1.toml",
        replace("clip = 1.0", "clip = -1.0"),
        NodeConfig::load,
    );
    assert!(e.contains("policy.clip"), "{e}");
    let e = edited(
        "coordinator.toml",
        replace("clip = 1.0", "clip = -1.0"),
        CoordinatorConfig::load,
    );
    assert!(e.contains("training.clip"), "{e}");
    let e = edited(
        "coordinator.toml",
        replace(
            "renormalise = \"closed-form\"",
            "renormalise = \"sometimes\"",
        ),
        CoordinatorConfig::load,
    );
    assert!(e.contains("training.renormalise"), "{e}");
    for (extra, field) in [
        ("temper_start = 0.0", "training.temper_start"),
        ("temper_start = 1.5", "training.temper_start"),
        ("temper_until = 11", "training.temper_until"),
    ] {
        let to = format!("renormalise = \"closed-form\"\n{extra}");
        let e = edited(
            "coordinator.toml",
            move |t: String| t.replacen("renormalise = \"closed-form\"", &to, 1),
            CoordinatorConfig::load,
        );
        assert!(e.contains(field), "{extra}: {e}");
    }
    let e = edited(
        "coordinator.toml",
        replace("epsilon = 1.0", "sigma = 1.0\nepsilon = 1.0"),
        CoordinatorConfig::load,
    );
    assert!(e.contains("training.epsilon"), "{e}");
    let e = edited(
        "coordinator.toml",
        replace("name = \"b\"", "name = \"a\""),
        CoordinatorConfig::load,
    );
    assert!(e.contains("parties[1].name"), "{e}");
    let e = edited(
        "coordinator.toml",
        replace("iteration_ms = 600000", "iteration_ms = 0"),
        CoordinatorConfig::load,
    );
    assert!(e.contains("timeouts.iteration_ms"), "{e}");
    let e = edited(
        "node-1.toml",
        replace("connect_attempts = 10", "connect_attempts = -1"),
        NodeConfig::load,
    );
    assert!(e.contains("`timeouts.connect_attempts`"), "{e}");
    let missing = NodeConfig::load(Path::new("/nonexistent/node-9.toml"))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("/nonexistent/node-9.toml"), "{missing}");
}

const ROLES: [&str; 5] = ["coordinator", "node-0", "node-1", "node-2", "party-a"];

fn role(s: &str) -> RequestRole {
    s.parse().unwrap()
}

/// A CA in DIR/ca and one request per role in DIR/ROLE (parties `a` and `b`).
fn requests(dir: &Path) -> Vec<std::path::PathBuf> {
    keygen::ca(&dir.join("ca")).unwrap();
    ROLES
        .iter()
        .chain(&["party-b"])
        .map(|r| keygen::request(&dir.join(r), &role(r)).unwrap().request)
        .collect()
}

#[test]
fn csr_flow_signs_without_private_keys_and_binds_seal_keys() {
    let dir = tempfile::tempdir().unwrap();
    let reqs = requests(dir.path());
    for (r, file) in ROLES.iter().zip(&reqs) {
        let stem = dir.path().join(r).join(r);
        assert_eq!(mode(&stem.with_extension("key")), 0o600);
        assert_eq!(mode(file), 0o644);
        if r.starts_with("node-") {
            assert_eq!(mode(&stem.with_extension("seal")), 0o600);
        }
    }
    let out = dir.path().join("signed");
    let signed = keygen::sign(&out, &dir.path().join("ca"), &reqs, &spec(&["a", "b"])).unwrap();
    verify(&signed.output).unwrap();
    for f in &signed.output.files {
        let ext = f.extension().unwrap();
        assert!(ext == "pem" || ext == "toml", "{}", f.display());
        assert_eq!(mode(f), 0o644);
    }
    // Each role copies the public files beside its keys; everything loads and matches.
    let copy = |r: &str, f: &str| {
        std::fs::copy(out.join(f), dir.path().join(r).join(f)).unwrap();
    };
    for r in ROLES.iter().chain(&["party-b"]) {
        for f in [
            "ca.pem".to_string(),
            format!("{r}.pem"),
            format!("{r}.toml"),
        ] {
            copy(r, &f);
        }
    }
    let mut seal_publics = Vec::new();
    for i in 0..3u8 {
        let r = format!("node-{i}");
        let node = NodeConfig::load(&dir.path().join(&r).join(format!("{r}.toml"))).unwrap();
        let id = node.tls.load().unwrap();
        assert_eq!(id.role(), Role::Node(i));
        let seal = SealKey::read_file(&node.seal_key).unwrap();
        check_seal_binding(&id, &node.tls.cert, &seal, &node.seal_key).unwrap();
        seal_publics.push(seal.public());
        // The fingerprints sign reports are those of the role's own keys.
        let s = &signed.signed[1 + i as usize];
        assert_eq!(s.role, r);
        assert_eq!(
            s.seal_fingerprint.as_deref(),
            Some(vtwin_net::pki::fingerprint(&seal.public()).as_str())
        );
    }
    let pdir = dir.path().join("party-a");
    for i in 0..3 {
        copy("party-a", &format!("node-{i}.pem"));
    }
    let party = PartyConfig::load(&pdir.join("party-a.toml")).unwrap();
    assert_eq!(party.tls.load().unwrap().role(), Role::Party(0));
    assert_eq!(party.node_publics().unwrap().to_vec(), seal_publics);
    let coord = CoordinatorConfig::load(&dir.path().join("coordinator/coordinator.toml")).unwrap();
    assert_eq!(coord.tls.load().unwrap().role(), Role::Coordinator);
    // The request's key fingerprint is the certificate's.
    let req = CertRequest::load(&reqs[0]).unwrap();
    assert_eq!(req.key_fingerprint(), signed.signed[0].key_fingerprint);
    let shown = keygen::describe(&out.join("coordinator.pem")).unwrap();
    assert!(
        shown.contains(&("tls key".into(), req.key_fingerprint())),
        "{shown:?}"
    );
}

#[test]
fn sign_refuses_bad_requests_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let reqs = requests(dir.path());
    let ca = dir.path().join("ca");
    let out = dir.path().join("signed");
    // With its causes, as the CLI prints it.
    let sign_with = |reqs: &[std::path::PathBuf], parties: &[&str]| {
        let e = keygen::sign(&out, &ca, reqs, &spec(parties)).unwrap_err();
        vtwin_host::error_chain::Chain(&e).to_string()
    };
    // Tampered: one base64 character inside node-1's seal key changed in its request.
    let pem = std::fs::read_to_string(&reqs[2]).unwrap();
    let der = CertificateSigningRequestDer::from_pem_slice(pem.as_bytes()).unwrap();
    let at = der
        .windows(18)
        .position(|w| w == b"vtwin-seal-x25519:")
        .unwrap()
        + 24;
    let mut body: Vec<u8> = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .flat_map(|l| l.bytes())
        .collect();
    let c = &mut body[at / 3 * 4 + 1];
    *c = if *c == b'A' { b'B' } else { b'A' };
    let mut text = String::from("-----BEGIN CERTIFICATE REQUEST-----\n");
    for line in body.chunks(64) {
        text.push_str(std::str::from_utf8(line).unwrap());
        text.push('\n');
    }
    text.push_str("-----END CERTIFICATE REQUEST-----\n");
    let tampered = dir.path().join("tampered.csr");
    std::fs::write(&tampered, text).unwrap();
    let mut list = reqs.clone();
    list[2] = tampered.clone();
    let e = sign_with(&list, &["a", "b"]);
    assert!(
        e.starts_with(&tampered.display().to_string()) && e.contains("signature does not verify"),
        "{e}"
    );
    // A party the consortium does not list.
    let e = sign_with(&reqs, &["a", "c"]);
    assert!(
        e.contains("party-b.csr") && e.contains("not a role of this consortium"),
        "{e}"
    );
    // Twice the same role; a role missing.
    let mut list = reqs.clone();
    list[3] = reqs[2].clone();
    let e = sign_with(&list, &["a", "b"]);
    assert!(e.contains("node-1.csr: a second request for node-1"), "{e}");
    let e = sign_with(&reqs[1..], &["a", "b"]);
    assert!(e.contains("no request for coordinator"), "{e}");
    // A node request without a seal key, a coordinator request with one.
    let (csr, _) = CertRequest::generate("node-1", None).unwrap();
    let f = dir.path().join("noseal.csr");
    std::fs::write(&f, csr).unwrap();
    let mut list = reqs.clone();
    list[2] = f;
    let e = sign_with(&list, &["a", "b"]);
    assert!(
        e.contains("noseal.csr") && e.contains("carries no seal key"),
        "{e}"
    );
    let (csr, _) = CertRequest::generate("coordinator", Some(&[7; 32])).unwrap();
    let f = dir.path().join("sealed-coordinator.csr");
    std::fs::write(&f, csr).unwrap();
    let mut list = reqs.clone();
    list[0] = f;
    let e = sign_with(&list, &["a", "b"]);
    assert!(
        e.contains("sealed-coordinator.csr") && e.contains("only nodes"),
        "{e}"
    );
    // Not a role at all.
    let (csr, _) = CertRequest::generate("mallory", None).unwrap();
    let f = dir.path().join("mallory.csr");
    std::fs::write(&f, csr).unwrap();
    let mut list = reqs.clone();
    list.push(f);
    let e = sign_with(&list, &["a", "b"]);
    assert!(
        e.contains("mallory.csr: the request names no vtwin role"),
        "{e}"
    );
    // Nothing was written.
    assert!(!out.exists());
}

#[test]
fn party_refuses_seal_keys_the_ca_did_not_bind() {
    let dir = tempfile::tempdir().unwrap();
    let written = keygen(dir.path(), &spec(&["a", "b"])).unwrap();
    let party = PartyConfig::load(&written.parties[0]).unwrap();
    assert!(party.node_publics().is_ok());
    let write_cert = |name: &str, pem: &str| {
        let f = dir.path().join(name);
        std::fs::write(&f, pem).unwrap();
        f
    };
    let refused = |slot: usize, cert: std::path::PathBuf| {
        let mut p = party.clone();
        p.node_certs[slot] = cert;
        p.node_publics().unwrap_err().to_string()
    };
    // Node 1's certificate where node 0's belongs.
    let e = refused(0, dir.path().join("node-1.pem"));
    assert!(
        e.contains("node-1.pem") && e.contains("is for node 1, expected node 0"),
        "{e}"
    );
    // A node certificate binding a seal key, from another CA.
    let rogue = Ca::generate().unwrap();
    let other = rogue.issue_sealed(Role::Node(0), Some(&[9; 32])).unwrap();
    let e = refused(0, write_cert("rogue-node-0.pem", &other.cert_pem));
    assert!(
        e.contains("rogue-node-0.pem") && e.contains("not valid under"),
        "{e}"
    );
    // A node certificate from the right CA that binds no seal key.
    let ca = Ca::load(&dir.path().join("ca.pem"), &dir.path().join("ca.key")).unwrap();
    let bare = ca.issue(Role::Node(2)).unwrap();
    let e = refused(2, write_cert("bare-node-2.pem", &bare.cert_pem));
    assert!(
        e.contains("bare-node-2.pem") && e.contains("binds no seal key"),
        "{e}"
    );
}

#[test]
fn mismatched_keys_name_both_files() {
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path(), &spec(&["a", "b"])).unwrap();
    let p = |f: &str| dir.path().join(f);
    // A TLS key that is not its certificate's.
    let e = Identity::load(&p("ca.pem"), &p("node-0.pem"), &p("node-1.key")).unwrap_err();
    assert!(matches!(e, PkiError::KeyMismatch { .. }), "{e}");
    let e = e.to_string();
    assert!(e.contains("node-1.key") && e.contains("node-0.pem"), "{e}");
    // A seal key that is not the one the certificate binds.
    let id = Identity::load(&p("ca.pem"), &p("node-0.pem"), &p("node-0.key")).unwrap();
    let other = SealKey::read_file(&p("node-1.seal")).unwrap();
    let e = check_seal_binding(&id, &p("node-0.pem"), &other, &p("node-1.seal"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("node-1.seal") && e.contains("node-0.pem"), "{e}");
    // A CA key that is not the CA certificate's.
    let e = Ca::load(&p("ca.pem"), &p("coordinator.key"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("coordinator.key") && e.contains("ca.pem"), "{e}");
}

/// The default job keygen writes trains as long as, with as many components as, and tempers
/// as `vtwin train` does by default on its schema (the demo's).
#[test]
fn the_default_job_follows_the_iteration_rule() {
    let d = TrainingSettings::default();
    assert_eq!(d.iters, vtwin_model::adam::default_iterations(d.lr));
    assert!(d.schema.is_none(), "the default job runs the demo schema");
    let demo = vtwin_data::demo::demo_schema();
    assert_eq!(
        d.components,
        vtwin_model::components::default_components(&demo).unwrap()
    );
    // Unset: the coordinator uses vtwin_model::tempering::DEFAULT_START and default_until(iters), as
    // `vtwin train` does, and a config file written before tempering existed reads the same.
    assert_eq!((d.temper_start, d.temper_until), (None, None));
    let text = toml::to_string(&d).unwrap();
    assert!(!text.contains("temper"), "{text}");
    let back: TrainingSettings = toml::from_str(&text).unwrap();
    assert_eq!(back, d);
}
