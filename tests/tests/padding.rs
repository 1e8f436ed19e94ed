//! Batches padded to a public size: the padding rows add exactly nothing on every backend,
//! so a backend given the padded batch releases what it releases for the real records, and
//! the compute nodes see only the public size.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_model::backend::{GradientBackend, NoiseRngs};
use vtwin_model::fixed_backend::{FixedBackend, Renormalise};
use vtwin_model::float_backend::FloatBackend;
use vtwin_model::mpc_backend::MpcBackend;
use vtwin_model::party_data::PartyBatch;

use vtwin_tests::{demo, input};

#[test]
fn padding_rows_add_exactly_nothing_on_every_backend() {
    let (layout, data, _) = demo(300, 4, 7);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    for trial in 0..3u64 {
        let theta: Vec<f64> = (0..layout.dim())
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let rows: Vec<usize> = (0..17).map(|_| rng.random_range(0..300)).collect();
        let plain: Vec<PartyBatch> = data.iter().map(|p| p.batch(&rows)).collect();
        let padded: Vec<PartyBatch> = data
            .iter()
            .map(|p| p.padded_batch(&rows, 30).unwrap())
            .collect();
        assert_eq!((padded[0].rows, padded[0].real), (30, 17));
        assert!(padded[0].stats[17 * padded[0].width..]
            .iter()
            .all(|&v| v == 0.0));
        let (a, b) = (
            input(&layout, &theta, &plain, 1.0, 0.0),
            input(&layout, &theta, &padded, 1.0, 0.0),
        );
        let noise = NoiseRngs::seeded(trial, layout.n_parties());
        let mut fixed = FixedBackend::new(Renormalise::ClosedForm).unwrap();
        let fa = fixed.gradient(&a, &mut noise.clone()).unwrap();
        let fb = fixed.gradient(&b, &mut noise.clone()).unwrap();
        assert_eq!(fa.gradient, fb.gradient, "fixed, trial {trial}");
        assert_eq!(fb.diagnostics.records, 17);
        // Party 0 zeroes its padding rows (den = 0 there): not counted as real zero dens.
        assert_eq!(fb.diagnostics.den_zero, fa.diagnostics.den_zero);
        let mut float = FloatBackend::new().unwrap();
        let ga = float.gradient(&a, &mut noise.clone()).unwrap().gradient;
        let gb = float.gradient(&b, &mut noise.clone()).unwrap().gradient;
        assert_eq!(ga, gb, "float, trial {trial}");
        // Through the three in-memory nodes: the circuit's rounding differs from the floor
        // reference, not the padding (party 0's zero mat and the flags make the padding rows
        // add exactly nothing).
        let mut mpc = MpcBackend::seeded(Renormalise::ClosedForm, trial).unwrap();
        let costs = mpc.costs();
        let mb = mpc.gradient(&b, &mut noise.clone()).unwrap().gradient;
        let worst = mb
            .iter()
            .zip(&fa.gradient)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-3, "mpc vs fixed, trial {trial}: {worst}");
        assert_eq!(costs.snapshot().len(), 1);
    }
    // More records than the public size is refused (the trainer trims before padding).
    assert!(data[0].padded_batch(&[1, 2, 3], 2).is_err());
}
