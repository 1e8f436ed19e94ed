//! One DPVI iteration (Poisson batch, eta, backend gradient with noise, Adam) per backend,
//! on the demo workload (K = 20, 4000 records, batch 100) and on Adult (its default K 9, 30162
//! records, batch 100) when ../shared/data/adult is present (or VTWIN_DATA_DIR).

#![allow(missing_docs)] // criterion_group! generates undocumented items.

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use vtwin_data::{Schema, Table};
use vtwin_iteration::randomness::BatchKey;
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::{GradientBackend, NoiseRngs};
use vtwin_model::dpvi::{Dpvi, DpviConfig};
use vtwin_model::fixed_backend::{FixedBackend, Renormalise};
use vtwin_model::float_backend::FloatBackend;
use vtwin_model::layout::Layout;
use vtwin_model::party_data::PartyData;

fn adult() -> Option<(Schema, Table)> {
    let dir = std::env::var_os("VTWIN_DATA_DIR")
        .map(|d| PathBuf::from(d).join("adult"))
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/adult")
        });
    let schema_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/adult/schema.toml");
    if !dir.join("adult.data").is_file() {
        eprintln!("Adult data not found: benchmarking the demo workload only");
        return None;
    }
    let schema = Schema::load(&schema_path).ok()?;
    let table = Table::read_joined(&schema, &dir.join("adult.data")).ok()?;
    Some((schema, table))
}

fn bench_workload(c: &mut Criterion, name: &str, schema: &Schema, table: &Table) {
    // The default K for the schema (20 for the demo, 9 for the shipped Adult).
    let k = vtwin_model::components::default_components(schema).unwrap();
    let layout = Layout::from_schema(schema, k).unwrap();
    let data = PartyData::from_table(table, &layout).unwrap();
    let q = 100.0 / table.n_rows() as f64;
    for backend in ["float", "fixed"] {
        let b: Box<dyn GradientBackend> = match backend {
            "float" => Box::new(FloatBackend::new().unwrap()),
            _ => Box::new(FixedBackend::new(Renormalise::ClosedForm).unwrap()),
        };
        let cfg = DpviConfig {
            sample_rate: q,
            clip: 1.0,
            sigma: 2.042,
            adam: AdamConfig::default(),
            seed: 1,
            tempering: vtwin_model::tempering::Tempering::Off,
        };
        let mut dpvi = Dpvi::new(
            cfg,
            layout.clone(),
            data.clone(),
            b,
            NoiseRngs::seeded(1, 2),
            BatchKey::from_os(),
        )
        .unwrap();
        c.bench_function(&format!("iteration/{name}/{backend}"), |bench| {
            bench.iter(|| dpvi.step().unwrap())
        });
    }
}

fn iteration(c: &mut Criterion) {
    let demo = vtwin_data::demo::demo_table(vtwin_data::demo::DEMO_ROWS, 1);
    bench_workload(c, "demo", &vtwin_data::demo::demo_schema(), &demo);
    if let Some((schema, table)) = adult() {
        bench_workload(c, "adult", &schema, &table);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = iteration
}
criterion_main!(benches);
