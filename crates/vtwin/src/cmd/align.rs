//! `vtwin align`: private record alignment of parties that never shared their ids. Each
//! party's file is read and validated on its own (its incomplete rows dropped by its own
//! `missing` rules), then the parties run the PSI protocol of vtwin-psi
//! (`protocols/psi.md`) as separate roles in this process: each role holds only its own
//! ids and sees only the protocol's messages. Every party's output file holds its rows of
//! the intersection in the common order (row r is the same person in every file), with its
//! id column kept, ready for `vtwin train --data`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use serde::Serialize;
use vtwin_data::csv_table::{read_party_alone, PartyColumns};
use vtwin_data::Schema;
use vtwin_host::atomic::{self, Mode};
use vtwin_psi::AlignError;

use super::training_data::parse_party_files;

/// Align the parties' records by a private set intersection of their ids.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Public schema (TOML); it must name the id column.
    #[arg(long)]
    schema: PathBuf,
    /// A party's CSV: its id column and its own columns (repeat for every schema party).
    #[arg(long = "data", value_name = "PARTY=FILE")]
    data: Vec<String>,
    /// Output directory: PARTY.csv per party and align.json.
    #[arg(long)]
    out: PathBuf,
}

/// `align.json`.
#[derive(Debug, Serialize)]
struct AlignReport {
    command: &'static str,
    date_utc: String,
    protocol: &'static str,
    /// People every party holds.
    intersection: usize,
    /// Sequential message rounds of the protocol.
    rounds: u16,
    /// Wall-clock seconds of the protocol alone (reading and writing excluded).
    protocol_seconds: f64,
    /// Wall-clock seconds of the whole command.
    seconds: f64,
    parties: Vec<PartyReport>,
}

#[derive(Debug, Serialize)]
struct PartyReport {
    name: String,
    input: String,
    output: String,
    /// Records in the file that passed the party's own validation (the ids it contributed).
    rows_in: usize,
    /// Rows of its output (the intersection).
    rows_out: usize,
    bytes_sent: u64,
    bytes_received: u64,
    messages_sent: u64,
    messages_received: u64,
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let schema = Schema::load(&a.schema)?;
    if schema.id.is_none() {
        bail!(
            "--schema {}: names no id column (add `id = \"COLUMN\"`); alignment matches records by id",
            a.schema.display()
        );
    }
    let files = parse_party_files("--data", &a.data)?;
    let parties = schema.parties();
    for (name, path) in &files {
        if !parties.contains(name) {
            bail!(
                "--data {name}={}: party \"{name}\" is not in the schema (its parties: {})",
                path.display(),
                parties.join(", ")
            );
        }
        if files.iter().filter(|(n, _)| n == name).count() > 1 {
            bail!("--data {name}: given more than once");
        }
    }
    if let Some(missing) = parties.iter().find(|p| !files.iter().any(|(n, _)| n == *p)) {
        bail!("--data: no file for party \"{missing}\" (every schema party takes part)");
    }
    // Schema order, so party indices in the protocol follow the schema.
    let inputs: Vec<(String, PathBuf, PartyColumns)> = parties
        .iter()
        .map(|p| {
            let path = files
                .iter()
                .find(|(n, _)| n == p)
                .expect("checked")
                .1
                .clone();
            let cols = read_party_alone(&schema, p, &path)?;
            Ok((p.clone(), path, cols))
        })
        .collect::<anyhow::Result<_>>()?;
    let ids: Vec<Vec<&[u8]>> = inputs
        .iter()
        .map(|(_, _, c)| c.ids.iter().map(|id| id.as_bytes()).collect())
        .collect();
    let t_protocol = Instant::now();
    let aligned = vtwin_psi::align(&ids).map_err(|e| explain(e, &inputs))?;
    let protocol_seconds = t_protocol.elapsed().as_secs_f64();
    std::fs::create_dir_all(&a.out).with_context(|| format!("--out {}", a.out.display()))?;
    let mut reports = Vec::new();
    for (p, (name, input, cols)) in inputs.iter().enumerate() {
        let output = a.out.join(format!("{name}.csv"));
        cols.select(&aligned.rows[p]).write_csv(&schema, &output)?;
        let s = aligned.stats[p];
        reports.push(PartyReport {
            name: name.clone(),
            input: input.display().to_string(),
            output: output.display().to_string(),
            rows_in: cols.ids.len(),
            rows_out: aligned.len(),
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            messages_sent: s.messages_sent,
            messages_received: s.messages_received,
        });
    }
    let report = AlignReport {
        command: "vtwin align",
        date_utc: vtwin_host::clock::utc_now(),
        protocol: "Diffie-Hellman PSI over ristretto255 (protocols/psi.md)",
        intersection: aligned.len(),
        rounds: aligned.rounds,
        protocol_seconds,
        seconds: t0.elapsed().as_secs_f64(),
        parties: reports,
    };
    let json = a.out.join("align.json");
    atomic::write(
        &json,
        serde_json::to_string_pretty(&report)?.as_bytes(),
        Mode::Public,
    )
    .with_context(|| json.display().to_string())?;
    println!(
        "aligned {} parties: {} records in common ({}), {:.2} s, {} rounds; wrote {}",
        inputs.len(),
        aligned.len(),
        inputs
            .iter()
            .map(|(n, _, c)| format!("{n} {}", c.ids.len()))
            .collect::<Vec<_>>()
            .join(", "),
        protocol_seconds,
        aligned.rounds,
        a.out.display()
    );
    Ok(())
}

/// The protocol's error in terms of the files and ids.
fn explain(e: AlignError, inputs: &[(String, PathBuf, PartyColumns)]) -> anyhow::Error {
    let file = |p: usize| -> &Path { &inputs[p].1 };
    match e {
        AlignError::EmptyIntersection => anyhow::anyhow!(
            "no id is held by every party ({}): nothing to align",
            inputs
                .iter()
                .map(|(n, f, c)| format!("{n}: {} ids in {}", c.ids.len(), f.display()))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        AlignError::Input {
            party,
            source: vtwin_psi::InputError::Duplicate { first, second },
        } => anyhow::anyhow!(
            "{}: id \"{}\" appears twice (records {} and {} after sorting)",
            file(party).display(),
            inputs[party].2.ids[second],
            first + 1,
            second + 1
        ),
        AlignError::Input { party, source } => {
            anyhow::anyhow!("{}: {source}", file(party).display())
        }
        e => anyhow::Error::new(e).context("private set intersection"),
    }
}
