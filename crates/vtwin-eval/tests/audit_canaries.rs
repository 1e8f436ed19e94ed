//! The black-box inserted-canary attack: a noiseless training gives the canaries away (AUC
//! well above 1/2, a one-run bound above 0); heavy noise hides them (bound 0).

use vtwin_data::demo::demo_table;
use vtwin_eval::audit::inserted_canaries::{inserted_canary_attack, InsertedCanarySettings};
use vtwin_eval::audit::training::{fit_mixture, FitSettings, TrainBackend};
use vtwin_model::tempering::Tempering;

fn fit(sigma: f64) -> FitSettings {
    FitSettings {
        components: 20,
        iterations: 1000,
        sample_rate: 0.2,
        clip: 1.0,
        sigma,
        lr: 0.05,
        backend: TrainBackend::Float,
        seed: 3,
        noise_seed: 4,
        // A power test of the attack: the training that memorises single records most.
        // (Tempered training, the default, spreads each record over more components; the
        // attack's AUC without noise is then about 0.64.)
        tempering: Tempering::Off,
    }
}

#[test]
fn noiseless_training_leaks_the_canaries_and_noise_hides_them() {
    let members = demo_table(300, 1);
    let released = fit_mixture(&members, &fit(0.0)).unwrap();
    let attack = |sigma: f64| {
        inserted_canary_attack(
            &members,
            &released,
            &InsertedCanarySettings {
                canaries: 100,
                guess_fraction: 0.1,
                fit: fit(sigma),
                seed: 9,
                delta: 1e-5,
                confidence: 0.95,
            },
        )
        .unwrap()
    };
    let leaky = attack(0.0);
    assert_eq!(leaky.canaries, 100);
    assert_eq!(leaky.guesses, 20);
    assert_eq!(leaky.scores_in.len() + leaky.scores_out.len(), 100);
    // A mixture of 20 components memorises little of single outliers even without noise:
    // the signal is real but small (docs/audit.md).
    let auc = |o: &vtwin_eval::audit::inserted_canaries::InsertedCanaryOutcome| {
        vtwin_eval::audit::roc::auc(&o.scores_in, &o.scores_out).unwrap()
    };
    assert!(auc(&leaky) > 0.65, "{}", auc(&leaky));
    assert!(leaky.epsilon_lower_bound > 0.0, "{leaky:?}");
    let private = attack(200.0);
    assert!(auc(&private) < 0.6, "{}", auc(&private));
    assert_eq!(private.epsilon_lower_bound, 0.0);
}
