//! keygen output: files, modes, configurations that load, identities with the right roles,
//! seal keys that match, refusals; configuration errors that name the file and field.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_net::config::{
    ConfigError, CoordinatorConfig, DataSource, Insecure, NodeConfig, PartyConfig, PartyPolicy,
    TrainingSettings,
};
use vtwin_net::keygen::{keygen, verify, KeygenError, KeygenSpec};
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
        &[Role::Coordinator, Role::Node(0), Role::Node(1)],
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
fn refuses_bad_arguments_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(KeygenSpec, &str)> = vec![
        (
            KeygenSpec {
                nodes: 4,
                ..spec(&["a", "b"])
            },
            "--nodes",
        ),
        (spec(&["a"]), "--parties"),
        (spec(&["a", "a"]), "--parties"),
        (spec(&["a", "b/c"]), "--parties"),
        (spec(&["a", ""]), "--parties"),
        (
            KeygenSpec {
                base_port: 65533,
                ..spec(&["a", "b"])
            },
            "--base-port",
        ),
        (
            KeygenSpec {
                base_port: 0,
                ..spec(&["a", "b"])
            },
            "--base-port",
        ),
    ];
    for (s, flag) in cases {
        let err = keygen(dir.path(), &s).unwrap_err();
        assert!(
            matches!(err, KeygenError::Invalid { flag: f, .. } if f == flag),
            "{flag}: {err}"
        );
        assert!(err.to_string().starts_with(flag), "{err}");
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
    let err = load(&file).unwrap_err().to_string();
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
        |t: String| {
            let at = t.find("node_seal_publics").unwrap();
            let q = t[at..].find('"').unwrap() + at + 1;
            format!("{}zz{}", &t[..q], &t[q + 2..])
        },
        PartyConfig::load,
    );
    assert!(e.contains("node_seal_publics[0]"), "{e}");
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
