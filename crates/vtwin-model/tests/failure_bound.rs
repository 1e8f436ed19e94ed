//! The per-opening failure probability charged to delta on the Adult schema (the public padded
//! batch size at q = 100/30162): with theta at its initialisation scale, and with every Beta
//! parameter at its public cap (the largest score maps the planned theta can have), for the
//! shipped schema (age and hours by their cells, no Beta; K 9, its default, and K 20) and for
//! the paper's model (both Beta, K 20). Over the paper's 20000 openings every case stays far
//! below delta = 1e-5.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_data::schema::Schema;
use vtwin_model::fixed_backend::Renormalise;
use vtwin_model::layout::{ColumnModel, Layout, LOG_BETA_PARAM_MAX};
use vtwin_model::mpc_backend::{circuit_public_for, input_bounds};

#[test]
fn adult_failure_per_opening_is_far_below_delta_over_a_run() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/adult/schema.toml"),
    )
    .unwrap();
    // The shipped schema (age and hours by their cells) at its default K and at 20, and the
    // paper's model (both Beta) at 20.
    let paper = text.replace("model = \"cells\"\n", "");
    let shipped_k =
        vtwin_model::components::default_components(&Schema::from_toml(&text).unwrap()).unwrap();
    for (name, text, k) in [
        ("shipped", text.clone(), shipped_k),
        ("shipped", text.clone(), 20),
        ("paper", paper, 20),
    ] {
        let schema = Schema::from_toml(&text).unwrap();
        let layout = Layout::from_schema(&schema, k).unwrap();
        let betas = layout
            .columns
            .iter()
            .filter(|c| c.model == ColumnModel::Beta)
            .count();
        assert_eq!(betas, if name == "paper" { 2 } else { 0 }, "{name}");
        let (b, overflow) =
            vtwin_dp::padded_batch_size(30162, 100.0 / 30162.0, vtwin_dp::BATCH_OVERFLOW_TAIL);
        let bounds = input_bounds(Renormalise::ClosedForm, layout.n_parties());
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let mut theta: Vec<f64> = (0..layout.dim())
            .map(|_| rng.random_range(-0.3..0.3))
            .collect();
        let init = circuit_public_for(&layout, &theta, 1.0, b)
            .unwrap()
            .truncation_failure_bound(&bounds);
        for col in layout
            .columns
            .iter()
            .filter(|c| c.model == ColumnModel::Beta)
        {
            for i in 0..layout.components * col.model.width() {
                theta[col.param_offset + i] = LOG_BETA_PARAM_MAX;
            }
        }
        let capped = circuit_public_for(&layout, &theta, 1.0, b)
            .unwrap()
            .truncation_failure_bound(&bounds);
        let run = |per: f64| 20000.0 * (per + overflow);
        println!(
            "MEASURED {name} (K = {k}, d = {}), B = {b}: per opening {init:.3e} (init), {capped:.3e} \
             (Beta at cap), overflow {overflow:.3e}; 20000 openings: {:.3e} to {:.3e}",
            layout.dim(),
            run(init),
            run(capped)
        );
        if betas > 0 {
            assert!(capped > init, "{name}: the cap is the worse case");
        } else {
            assert_eq!(capped, init, "{name}: no Beta to cap");
        }
        assert!(run(capped) < 1e-6, "{name}: {}", run(capped));
    }
}
