//! The cross-crate suites of vtwin (in `tests/tests/`): the `mpc` backend against the
//! `fixed` reference bit for bit, `float` against `fixed`, padding across backends, and the
//! consortium over loopback QUIC against the in-memory `mpc` backend. Each crate's own
//! tests stay in the crate; what needs several crates at once lives here.
//!
//! This library holds the fixtures those suites share: a demo data set split across the
//! parties and a gradient input built from it.

use vtwin_data::demo::{demo_schema, demo_table};
use vtwin_data::Table;
use vtwin_model::backend::{GradientInput, NoiseConfig};
use vtwin_model::layout::Layout;
use vtwin_model::party_data::{PartyBatch, PartyData};

/// The demo table (`rows` rows from seed `seed`), its layout with `k` components and the
/// parties' data.
pub fn demo(rows: usize, k: usize, seed: u64) -> (Layout, Vec<PartyData>, Table) {
    let table = demo_table(rows, seed);
    let layout = Layout::from_schema(&demo_schema(), k).unwrap();
    let data = PartyData::from_table(&table, &layout).unwrap();
    (layout, data, table)
}

/// [`demo`] with every column one-hot: the integer columns (age, visits) modelled by their
/// cells and the real column bmi by six equal public bins over its bounds; so each party
/// inputs integer statistics (`Layout::integer_stats`).
pub fn demo_one_hot(rows: usize, k: usize, seed: u64) -> (Layout, Vec<PartyData>, Table) {
    use vtwin_data::schema::{ColumnKind, ContinuousModel, Schema};
    use vtwin_data::table::Column;
    const BINS: u32 = 6;
    let mut table = demo_table(rows, seed);
    let mut schema = demo_schema();
    for (c, values) in schema.columns.iter_mut().zip(&mut table.columns) {
        match (&mut c.kind, &*values) {
            (
                ColumnKind::Continuous {
                    integer: true,
                    model,
                    ..
                },
                _,
            ) => {
                *model = ContinuousModel::Cells;
            }
            (ColumnKind::Continuous { min, max, .. }, Column::Unit(u)) => {
                let step = (*max - *min) / f64::from(BINS);
                let edges = (0..=BINS).map(|i| *min + step * f64::from(i)).collect();
                // A unit value u in (0, 1) lies in bin floor(BINS u).
                let bins = u
                    .iter()
                    .map(|v| ((v * f64::from(BINS)) as u32).min(BINS - 1));
                *values = Column::Index(bins.collect());
                c.kind = ColumnKind::Binned {
                    edges,
                    integer: false,
                };
            }
            _ => {}
        }
    }
    let schema = Schema::new(schema.id, schema.csv, Some(schema.parties), schema.columns)
        .expect("a valid one-hot schema");
    table.schema = schema.clone();
    let layout = Layout::from_schema(&schema, k).unwrap();
    let data = PartyData::from_table(&table, &layout).unwrap();
    (layout, data, table)
}

/// A gradient input with clip bound `clip` and noise scale `sigma`, untempered (beta 1).
pub fn input<'a>(
    layout: &'a Layout,
    theta: &'a [f64],
    parties: &'a [PartyBatch],
    clip: f64,
    sigma: f64,
) -> GradientInput<'a> {
    GradientInput {
        layout,
        iteration: 0,
        theta,
        parties,
        clip,
        noise: NoiseConfig { sigma },
        beta: 1.0,
    }
}
