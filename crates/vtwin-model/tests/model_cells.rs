//! Integer columns modelled by their cells (`model = "cells"`): the parties' kernels, the
//! released model's likelihood and synthesis agree on one density, and the model learns a
//! heap that a Beta cannot hold.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_data::codec::{unit_cell, unit_from_value};
use vtwin_data::demo::demo_schema;
use vtwin_data::params::{ColumnParams, MixtureParams};
use vtwin_data::schema::{ColumnKind, ContinuousModel, Schema};
use vtwin_data::synth::sample_table;
use vtwin_data::table::{Column, Table};
use vtwin_iteration::randomness::BatchKey;
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::NoiseRngs;
use vtwin_model::dpvi::{Dpvi, DpviConfig};
use vtwin_model::float_backend::FloatBackend;
use vtwin_model::kernels::{local_terms, Device, PartyMaps};
use vtwin_model::layout::{ColumnModel, Layout};
use vtwin_model::model_file::natural_params;
use vtwin_model::party_data::PartyData;

/// The demo schema with its integer columns (age 18..90, visits 0..30) set to `model`.
fn demo_with(model: ContinuousModel) -> Schema {
    let mut columns = demo_schema().columns;
    for c in &mut columns {
        if let ColumnKind::Continuous {
            integer: true,
            model: m,
            ..
        } = &mut c.kind
        {
            *m = model;
        }
    }
    let d = demo_schema();
    Schema::new(d.id, d.csv, Some(d.parties), columns).unwrap()
}

/// A 3-component truth on the cells schema: visits heaped (60% on 4, 12 and 20 by
/// component), age uniform on 18..90 but for a heap on 40; the other columns the demo's.
fn heaped_truth(schema: &Schema) -> MixtureParams {
    let mut truth = vtwin_data::demo::demo_truth();
    for (spec, cp) in schema.columns.iter().zip(&mut truth.columns) {
        let (Some(w), ColumnKind::Continuous { min, .. }) = (spec.kind.cells(), &spec.kind) else {
            continue;
        };
        let heap = |k: usize| match spec.name.as_str() {
            "visits" => 4 + 8 * k,
            _ => 40 - *min as usize,
        };
        *cp = ColumnParams::Categorical {
            probs: (0..3)
                .map(|k| {
                    let mut row = vec![0.4 / (w - 1) as f64; w];
                    row[heap(k)] = 0.6;
                    row
                })
                .collect(),
        };
    }
    truth
}

fn heaped_table(rows: usize, seed: u64) -> Table {
    let schema = demo_with(ContinuousModel::Cells);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    sample_table(&heaped_truth(&schema), &schema, rows, &mut rng).unwrap()
}

/// The same records under another schema (the encoding of an integer column does not depend
/// on its model).
fn relabel(table: &Table, schema: &Schema) -> Table {
    Table {
        schema: schema.clone(),
        ids: table.ids.clone(),
        columns: table.columns.clone(),
    }
}

/// Sum over the parties of the kernels' log-densities plus ln pi_k plus the cells' constants
/// (ln 73 + ln 31, which the kernels leave out: the same for every component) equals the
/// released model's joint log-density (the density W omega_j of the encoded value) for every
/// record and component; the cells' densities integrate to 1 over (0,1); sampled values are
/// the columns' integers, encoded at their cells' centres.
#[test]
fn kernels_likelihood_and_synthesis_agree_on_the_cells_density() {
    let schema = demo_with(ContinuousModel::Cells);
    let layout = Layout::from_schema(&schema, 4).unwrap();
    assert_eq!(layout.columns[0].model, ColumnModel::Cells { cells: 73 });
    assert_eq!(layout.columns[5].model, ColumnModel::Cells { cells: 31 });
    let table = heaped_table(300, 1);
    for (spec, col) in schema.columns.iter().zip(&table.columns) {
        if let (Some(w), ColumnKind::Continuous { min, max, .. }, Column::Unit(u)) =
            (spec.kind.cells(), &spec.kind, col)
        {
            for &x in u {
                let j = unit_cell(x, w);
                assert!(j < w);
                assert_eq!(x, unit_from_value(*min, *max, true, min + j as f64));
            }
        }
    }
    let data = PartyData::from_table(&table, &layout).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    for _ in 0..5 {
        let theta: Vec<f64> = (0..layout.dim())
            .map(|_| rng.random_range(-2.0..2.0))
            .collect();
        let params = natural_params(&layout, &theta);
        let joint = params.joint_log_densities(&table).unwrap();
        let k_n = layout.components;
        let cells_constant = 73f64.ln() + 31f64.ln();
        let mut sum: Vec<f64> = (0..table.n_rows())
            .flat_map(|_| params.weights.iter().map(|w| w.ln() + cells_constant))
            .collect();
        for (p, d) in data.iter().enumerate() {
            let maps = PartyMaps::new(&theta, &layout, p);
            let all = d.all();
            let out = local_terms(&Device::Cpu, &maps, &all.stats, all.rows, false).unwrap();
            for (s, l) in sum.iter_mut().zip(&out.log_density) {
                *s += l;
            }
        }
        for (i, (a, b)) in sum.iter().zip(&joint).enumerate() {
            assert!(
                (a - b).abs() < 1e-9 * (1.0 + b.abs()),
                "record {} component {}: kernels {a} model {b}",
                i / k_n,
                i % k_n
            );
        }
    }
    // The density W omega_j of the encoded value integrates to 1 over (0,1): on a grid of
    // the 31 visit values (every other field fixed), the visits term of the log-likelihood
    // against uniform cells (whose term is ln(31 / 31) = 0) is ln(31 p_j).
    let probs: Vec<f64> = (0..31).map(|j| (j as f64 + 1.0) / 496.0).collect();
    let point = |visits: Vec<f64>| MixtureParams {
        weights: vec![1.0],
        columns: schema
            .columns
            .iter()
            .map(|c| match c.kind.levels() {
                Some(31) if c.name == "visits" => ColumnParams::Categorical {
                    probs: vec![visits.clone()],
                },
                Some(n) => ColumnParams::Categorical {
                    probs: vec![vec![1.0 / n as f64; n]],
                },
                None => ColumnParams::Beta {
                    a: vec![1.0],
                    b: vec![1.0],
                },
            })
            .collect(),
    };
    let one = heaped_table(1, 3);
    let grid = Table {
        schema: schema.clone(),
        ids: (0..31).map(|j| j.to_string()).collect(),
        columns: one
            .columns
            .iter()
            .enumerate()
            .map(|(c, col)| match col {
                Column::Unit(_) if c == 5 => Column::Unit(
                    (0..31)
                        .map(|j| unit_from_value(0.0, 30.0, true, j as f64))
                        .collect(),
                ),
                Column::Unit(u) => Column::Unit(vec![u[0]; 31]),
                Column::Index(i) => Column::Index(vec![i[0]; 31]),
            })
            .collect(),
    };
    let heaped = point(probs.clone()).log_likelihood(&grid).unwrap();
    let flat = point(vec![1.0 / 31.0; 31]).log_likelihood(&grid).unwrap();
    let mut mass = 0.0;
    for j in 0..31 {
        let term = heaped[j] - flat[j];
        assert!(
            (term - (31.0 * probs[j]).ln()).abs() < 1e-12,
            "cell {j}: {term}"
        );
        mass += term.exp() / 31.0;
    }
    assert!((mass - 1.0).abs() < 1e-12, "{mass}");
}

/// Trained without noise on a table whose visits heap (60% of each component on one value),
/// the cells model writes synthetic tables with the heaps' shares (within 0.03) and has a
/// lower test NLL (the same density of the encoded value) than the Beta model of the same
/// records, whose components cannot put 60% of their mass on one integer and spread the rest.
#[test]
fn cells_learn_a_heap_that_a_beta_cannot_hold() {
    let train = heaped_table(3000, 11);
    let test = heaped_table(2000, 12);
    let truth_share = |t: &Table| -> f64 {
        let Column::Unit(u) = &t.columns[5] else {
            unreachable!()
        };
        let heaps = [4usize, 12, 20];
        u.iter()
            .filter(|&&x| heaps.contains(&unit_cell(x, 31)))
            .count() as f64
            / u.len() as f64
    };
    let mut nll = Vec::new();
    for model in [ContinuousModel::Cells, ContinuousModel::Beta] {
        let schema = demo_with(model);
        let (train, test) = (relabel(&train, &schema), relabel(&test, &schema));
        let layout = Layout::from_schema(&schema, 3).unwrap();
        let data = PartyData::from_table(&train, &layout).unwrap();
        let cfg = DpviConfig {
            sample_rate: 0.05,
            clip: 1.0,
            sigma: 0.0,
            adam: AdamConfig::default(),
            seed: 3,
            tempering: vtwin_model::tempering::Tempering::Off,
        };
        let mut d = Dpvi::new(
            cfg,
            layout.clone(),
            data,
            Box::new(FloatBackend::new().unwrap()),
            NoiseRngs::seeded(5, layout.n_parties()),
            BatchKey::insecure(5),
        )
        .unwrap();
        for _ in 0..3000 {
            d.step().unwrap();
        }
        let params = natural_params(&layout, d.mu());
        nll.push(params.mean_nll(&test).unwrap());
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let synthetic = sample_table(&params, &schema, 5000, &mut rng).unwrap();
        let (real, synth) = (truth_share(&train), truth_share(&synthetic));
        eprintln!(
            "{model:?}: test NLL {:.4}, heap share real {real:.3} synthetic {synth:.3}",
            nll.last().unwrap()
        );
        if model == ContinuousModel::Cells {
            assert!(
                (real - synth).abs() < 0.03,
                "cells: real {real} synthetic {synth}"
            );
        }
    }
    assert!(
        nll[0] < nll[1] - 0.1,
        "cells {} against beta {}",
        nll[0],
        nll[1]
    );
}
