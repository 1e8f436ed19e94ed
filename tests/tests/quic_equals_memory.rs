//! A whole consortium over loopback QUIC (mutual TLS, sealing, node-to-node links) in one
//! process equals the in-memory mpc backend bit for bit.

use std::time::Duration;

use vtwin_consortium::loopback::{run, LoopbackSettings};
use vtwin_iteration::randomness::BatchKey;
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::NoiseRngs;
use vtwin_model::dpvi::{Dpvi, DpviConfig};
use vtwin_model::fixed_backend::Renormalise;
use vtwin_model::layout::Layout;
use vtwin_model::mpc_backend::MpcBackend;
use vtwin_model::party_data::PartyData;
use vtwin_model::tempering::Tempering;

#[test]
fn loopback_quic_equals_the_in_memory_mpc_backend() {
    let rows = 150;
    let schema = vtwin_data::demo::demo_schema();
    let layout = Layout::from_schema(&schema, 3).unwrap();
    let config = DpviConfig {
        sample_rate: 0.1,
        clip: 1.0,
        sigma: 1.0,
        adam: AdamConfig::default(),
        seed: 3,
        // beta 0.3, 0.65, 1 over the three iterations: the job terms carry the schedule to
        // the party processes, which must temper exactly as the in-memory backend does.
        tempering: Tempering::Linear {
            start: 0.3,
            iterations: 2,
        },
    };
    let parties = ["health", "retail"]
        .iter()
        .map(|name| PartyData::from_demo(&layout, name, rows, 1).unwrap())
        .collect();
    let iters = 3;
    let report = run(LoopbackSettings {
        schema: schema.clone(),
        parties,
        components: 3,
        config: config.clone(),
        iters,
        renormalise: Renormalise::ClosedForm,
        mpc_seed: Some(21),
        noise_seed: Some(22),
        receive_delay: None,
        iteration_timeout: Duration::from_secs(60),
        policy: vtwin_consortium::party::policy_for_plan(&vtwin_net::JobTerms {
            sigma: config.sigma,
            clip: config.clip,
            components: 3,
            sample_rate: config.sample_rate,
            iterations: iters,
            delta: 1e-5,
            // A policy bounds neither the rows nor the tempering.
            rows: [0; 32],
            tempering_start: 1.0,
            tempering_iterations: 0,
        })
        .unwrap(),
        delta: 1e-5,
        align: false,
    })
    .unwrap();
    assert_eq!(report.iteration_ms.len(), iters as usize);

    let table = vtwin_data::demo::demo_table(rows, 1);
    let data = PartyData::from_table(&table, &layout).unwrap();
    let backend = MpcBackend::seeded(Renormalise::ClosedForm, 21).unwrap();
    let mut dpvi = Dpvi::new(
        config,
        layout,
        data,
        Box::new(backend),
        NoiseRngs::seeded(22, 2),
        BatchKey::insecure(21),
    )
    .unwrap();
    for _ in 0..iters {
        dpvi.step().unwrap();
    }
    assert_eq!(report.trainer.state(), dpvi.state());
}
