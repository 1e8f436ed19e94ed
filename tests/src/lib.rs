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
