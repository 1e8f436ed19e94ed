//! `vtwin coordinator --config FILE [--resume]`: drives the consortium's training job
//! (INTERFACE.md) and writes what `vtwin train` writes, through the same functions
//! (`train::write_outputs`, `train::privacy_json`, the same sigma calibration and resume
//! check): DIR/model.json, DIR/privacy.json, DIR/train.csv (no test NLL: the coordinator
//! holds no data), DIR/timing.json, DIR/checkpoint.bin (at the start, every
//! `checkpoint_every` iterations and at the end; private: it holds the secret batch key),
//! DIR/openings.log (every opening, appended and synced before its shares are combined) and
//! DIR/synthetic.csv (N records sampled from the posterior-mean model with the public seed).
//! The released model is the EMA of the iterates unless `[training] average = "none"`
//! (`vtwin_model::averaging`, as `vtwin train --average`).
//!
//! On any failure (a peer unreachable at start after the retries, a refused upload, a
//! failed or lost peer, the iteration deadline) it aborts the iteration (every reachable
//! peer gets `Abort`), applies and charges nothing, leaves the last checkpoint as it was,
//! and exits non-zero with one line naming the peer. `--resume` continues from the
//! checkpoint and charges every opening of DIR/openings.log (openings after the checkpoint
//! were seen: charged, and their iterations replayed with fresh batches); with the same
//! insecure seeds and no lost opening the result equals an uninterrupted run. `[insecure]`
//! seeds void the privacy guarantee (privacy.json says so).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_consortium::config::{CoordinatorConfig, TrainingSettings};
use vtwin_consortium::coordinator::HookError;
use vtwin_consortium::coordinator::Timeouts;
use vtwin_consortium::service::{run_coordinator, CoordinatorHooks, CoordinatorRun};
use vtwin_data::synth::sample_table;
use vtwin_data::Schema;
use vtwin_host::atomic::{self, Mode};
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_model::adam::AdamConfig;
use vtwin_model::checkpoint::{Checkpoint, HistoryRow, RunSettings};
use vtwin_model::dpvi::DpviConfig;
use vtwin_model::layout::Layout;
use vtwin_model::model_file::ModelFile;
use vtwin_model::opening_log::{OpeningLog, OpeningRecord};
use vtwin_model::tempering::{Tempering, DEFAULT_START};
use vtwin_model::trainer::Trainer;
use vtwin_net::Role;

use super::node::{init_logging, randomness, runtime};
use super::train::{
    averaging, check_resume, epsilon_line, epsilon_now, median, noise_multiplier, opening_log,
    privacy_json, write_outputs, AverageKind, Outputs,
};

/// Drive the consortium's training job and write the model.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The coordinator's configuration (written by `vtwin keygen`).
    #[arg(long)]
    config: PathBuf,
    /// Continue from OUT/checkpoint.bin.
    #[arg(long)]
    resume: bool,
}

/// The coordinator's files and progress; builds the trainer once the parties agree on N.
pub(crate) struct Driver {
    out: PathBuf,
    schema: Schema,
    layout: Layout,
    training: TrainingSettings,
    resume: bool,
    randomness: SecretRandomness,
    log: Option<OpeningLog>,
    settings: Option<RunSettings>,
    history: Vec<HistoryRow>,
    iter_ms: Vec<f64>,
    bar: Option<indicatif::ProgressBar>,
}

impl Driver {
    /// A driver writing to `out` (created); `randomness` is the job's (the batch key of a
    /// fresh run comes from it; an insecure seed voids privacy).
    pub(crate) fn new(
        out: &Path,
        schema: Schema,
        layout: Layout,
        training: TrainingSettings,
        resume: bool,
        randomness: SecretRandomness,
    ) -> anyhow::Result<Driver> {
        if training.renormalise != "closed-form" {
            bail!(
                "training.renormalise = \"{}\": the consortium runs closed-form only (paper and off are for `vtwin train`)",
                training.renormalise
            );
        }
        if training.checkpoint_every == 0 || training.iters == 0 {
            bail!("training.checkpoint_every and training.iters must be at least 1");
        }
        std::fs::create_dir_all(out).with_context(|| format!("out {}", out.display()))?;
        Ok(Driver {
            out: out.to_owned(),
            schema,
            layout,
            training,
            resume,
            randomness,
            log: None,
            settings: None,
            history: Vec::new(),
            iter_ms: Vec::new(),
            bar: None,
        })
    }

    fn setup(&mut self, rows: u64) -> anyhow::Result<Trainer> {
        let t = &self.training;
        let n = rows as usize;
        if t.batch == 0 || t.batch > n {
            bail!(
                "training.batch {}: must be between 1 and the number of records ({n})",
                t.batch
            );
        }
        let q = t.batch as f64 / n as f64;
        let (sigma, delta) = noise_multiplier(t.epsilon, Some(t.delta), t.sigma, q, t.iters, n)
            .context("coordinator config [training]")?;
        let mut config = DpviConfig {
            sample_rate: q,
            clip: t.clip,
            sigma,
            adam: AdamConfig {
                lr: t.lr,
                ..AdamConfig::default()
            },
            seed: t.seed,
            tempering: Tempering::from_settings(
                t.temper_start.unwrap_or(DEFAULT_START),
                t.temper_until,
                t.iters,
            )
            .context("coordinator config [training] temper_start, temper_until")?,
        };
        let mut settings = RunSettings {
            backend: "mpc".into(),
            renormalise: t.renormalise.clone(),
            layout: self.layout.clone(),
            config: config.clone(),
            train_rows: n,
            iters: t.iters,
            delta,
            // The [insecure] table seeds both the MPC and the parties' noise.
            insecure_seeds: if self.randomness.is_insecure() {
                vec!["mpc".into(), "noise".into()]
            } else {
                Vec::new()
            },
        };
        let ck_path = self.out.join("checkpoint.bin");
        let mut trainer = if self.resume {
            let ck = Checkpoint::load(&ck_path).context("--resume")?;
            if t.temper_start.is_none() && t.temper_until.is_none() {
                // The default schedule follows iters; a resumed job keeps the one it
                // started with, as `vtwin train --resume` does.
                config.tempering = ck.settings.config.tempering;
                settings.config.tempering = config.tempering;
            }
            check_resume(&ck, &settings, &ck_path)?;
            if self.randomness.is_insecure() && ck.state.batch_key != self.randomness.batch_key() {
                bail!(
                    "--resume: {}: its batches were not drawn from this [insecure] seed",
                    ck_path.display()
                );
            }
            self.history = ck.history;
            Trainer::resume(config, self.layout.clone(), n, ck.state)?
        } else {
            self.history = vec![HistoryRow {
                iteration: 0,
                epsilon: 0.0,
                test_nll: None,
            }];
            Trainer::new(config, self.layout.clone(), n, self.randomness.batch_key())?
        };
        let kind = match t.average.as_str() {
            "ema" => AverageKind::Ema,
            "none" => AverageKind::None,
            other => bail!("training.average = \"{other}\": ema or none"),
        };
        let saved = self.resume.then(|| trainer.averaging());
        trainer
            .set_averaging(averaging(kind, t.average_half_life, t.iters, saved))
            .context("coordinator config [training] average")?;
        self.log = Some(opening_log(&self.out, self.resume, &mut trainer)?);
        if !self.resume {
            // A checkpoint from the start: any crash can be resumed with its openings charged.
            write_outputs(
                &self.out,
                &trainer,
                None,
                &self.schema,
                &self.history,
                &settings,
                Outputs::Checkpoint,
            )?;
        }
        self.settings = Some(settings);
        self.bar = std::io::stderr().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new(t.iters);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{bar:40} iteration {pos}/{len} {msg}")
            {
                b.set_style(style);
            }
            b.set_position(trainer.iteration());
            b
        });
        Ok(trainer)
    }

    fn record(&mut self, trainer: &Trainer, elapsed: Duration) -> anyhow::Result<()> {
        let Some(settings) = &self.settings else {
            bail!("no run settings");
        };
        self.iter_ms.push(elapsed.as_secs_f64() * 1e3);
        let t = trainer.iteration();
        let every = self.training.checkpoint_every;
        if t.is_multiple_of(every) || t == self.training.iters {
            let epsilon = epsilon_now(trainer, settings.delta)?;
            self.history.push(HistoryRow {
                iteration: t,
                epsilon,
                test_nll: None,
            });
            if let Some(b) = &self.bar {
                b.set_message(epsilon_line(settings, epsilon));
            }
            // The coordinator holds no noise generator: nothing to record about the noise.
            // The last iteration's files are written once, by `finish`.
            if t < self.training.iters {
                write_outputs(
                    &self.out,
                    trainer,
                    None,
                    &self.schema,
                    &self.history,
                    settings,
                    Outputs::Checkpoint,
                )?;
            }
        }
        if let Some(b) = &self.bar {
            b.set_position(t);
        }
        Ok(())
    }

    /// After the last iteration: the final files, privacy.json, timing.json and
    /// synthetic.csv (N records from the posterior-mean model, public seed).
    pub(crate) fn finish(&mut self, trainer: &Trainer) -> anyhow::Result<()> {
        if let Some(b) = self.bar.take() {
            b.finish();
        }
        let Some(settings) = &self.settings else {
            bail!("no run settings");
        };
        write_outputs(
            &self.out,
            trainer,
            None,
            &self.schema,
            &self.history,
            settings,
            Outputs::Release,
        )?;
        let privacy = privacy_json(settings, trainer)?;
        atomic::write(
            &self.out.join("privacy.json"),
            serde_json::to_string_pretty(&privacy)?.as_bytes(),
            Mode::Public,
        )?;
        let timing = serde_json::json!({
            "backend": "mpc over QUIC",
            "iterations_timed": self.iter_ms.len(),
            "median_ms": { "iteration": median(&mut self.iter_ms.clone()) },
        });
        atomic::write(
            &self.out.join("timing.json"),
            serde_json::to_string_pretty(&timing)?.as_bytes(),
            Mode::Public,
        )?;
        let model = ModelFile::new(
            self.schema.clone(),
            trainer.layout().clone(),
            trainer.model_mu().to_vec(),
            trainer.model_log_sigma().to_vec(),
        );
        let mut rng = ChaCha20Rng::seed_from_u64(self.training.seed);
        sample_table(&model.mean_params(), &self.schema, trainer.rows(), &mut rng)
            .context("sampling synthetic.csv")?
            .write_csv(&self.out.join("synthetic.csv"))?;
        Ok(())
    }
}

impl CoordinatorHooks for Driver {
    fn agreed(&mut self, rows: u64) -> Result<Trainer, HookError> {
        Ok(self.setup(rows)?)
    }

    fn charge(&mut self, opening: OpeningRecord) -> Result<(), HookError> {
        let log = self.log.as_mut().ok_or("no opening log")?;
        Ok(log.append(opening)?)
    }

    fn applied(&mut self, trainer: &Trainer, _: u64, elapsed: Duration) -> Result<(), HookError> {
        Ok(self.record(trainer, elapsed)?)
    }
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    init_logging();
    let cfg = CoordinatorConfig::load(&a.config)?;
    let file = a.config.display().to_string();
    let identity = cfg.tls.load()?;
    if identity.role() != Role::Coordinator {
        bail!(
            "{file}: the certificate {} is for {}, not the coordinator",
            cfg.tls.cert.display(),
            identity.role()
        );
    }
    let t = &cfg.training;
    let schema = match &t.schema {
        Some(p) => Schema::load(p)?,
        None => vtwin_data::demo::demo_schema(),
    };
    let layout = Layout::from_schema(&schema, t.components)?;
    let names: Vec<&str> = cfg.parties.iter().map(|p| p.name.as_str()).collect();
    if names
        != layout
            .parties
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    {
        bail!(
            "{file}: parties {names:?} do not match the schema's parties {:?} (same names, same order)",
            layout.parties
        );
    }
    let randomness = randomness(&cfg.insecure, &a.config);
    let mut driver = Driver::new(&cfg.out, schema, layout, t.clone(), a.resume, randomness)?;
    let mut transport = cfg.timeouts.transport();
    transport.insecure = cfg.insecure.is_some();
    let run = CoordinatorRun {
        identity,
        bind: if cfg.nodes[0].is_ipv6() {
            "[::]:0".parse()?
        } else {
            "0.0.0.0:0".parse()?
        },
        nodes: cfg.nodes,
        parties: cfg.parties.iter().map(|p| p.address).collect(),
        transport,
        backoff: cfg.timeouts.backoff(),
        timeouts: Timeouts {
            handshake: cfg.timeouts.iteration(),
            iteration: cfg.timeouts.iteration(),
        },
        randomness,
        iters: t.iters,
        delta: t.delta,
        align: t.align,
    };
    let rt = runtime()?;
    // Errors name peers by role ("party 1", "node 2", as certificates do); the operator also
    // gets the parties' configured names.
    let names = cfg
        .parties
        .iter()
        .enumerate()
        .map(|(p, e)| format!("party {p} = {} at {}", e.name, e.address))
        .collect::<Vec<_>>()
        .join(", ");
    let trainer = rt
        .block_on(run_coordinator(run, &mut driver))
        .map_err(|e| anyhow::anyhow!("{:#} ({names})", anyhow::Error::new(e)))?;
    driver.finish(&trainer)?;
    let epsilon = driver.history.last().map_or(f64::NAN, |r| r.epsilon);
    let line = match &driver.settings {
        Some(s) => epsilon_line(s, epsilon),
        None => format!("epsilon {epsilon}"),
    };
    println!(
        "trained {} iterations (mpc over QUIC, {} openings), {line}; wrote {}",
        trainer.iteration(),
        trainer.openings(),
        cfg.out.display()
    );
    Ok(())
}
