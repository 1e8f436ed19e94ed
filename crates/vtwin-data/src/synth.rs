//! Synthesis: sample records from a mixture. Each record draws its component
//! `z ~ Cat(weights)` once, then every column (of every party) from component `z`, which is
//! what carries the cross-party dependence into the synthetic table.
//!
//! Sampled values go through the same public encoding as loaded data ([`crate::codec`]): a
//! Beta draw `u` is decoded to original units (integer columns to the integer whose cell
//! holds `u`) and re-encoded, a cell j of a column modelled by its cells is the integer
//! `min + j` (encoded as its cell's centre), so the returned table is exactly what reading its
//! [`Table::write_csv`] output gives back, bit for bit.

use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::Rng;
use rand_distr::Beta;

use crate::codec::{unit_from_value, value_from_unit};
use crate::params::{ColumnParams, ColumnParamsError, MixtureParams, ParamsError};
use crate::schema::{ColumnKind, Schema};
use crate::table::{Column, Table};

/// Samples `rows` records from `params` (checked against `schema` first). Ids are "1" to
/// `rows`. Deterministic given the RNG state: the components are drawn first, then the
/// columns in schema order. Cost O(rows * columns) samples plus O(K * columns) setup.
pub fn sample_table<R: Rng + ?Sized>(
    params: &MixtureParams,
    schema: &Schema,
    rows: usize,
    rng: &mut R,
) -> Result<Table, ParamsError> {
    params.check(schema)?;
    let pick = WeightedIndex::new(&params.weights).map_err(ParamsError::WeightSampling)?;
    let z: Vec<usize> = (0..rows).map(|_| pick.sample(rng)).collect();
    let mut columns = Vec::with_capacity(schema.columns.len());
    for (spec, cp) in schema.columns.iter().zip(&params.columns) {
        let column_error = |problem: ColumnParamsError| ParamsError::Column {
            column: spec.name.clone(),
            problem,
        };
        let col = match (&spec.kind, cp) {
            (
                &ColumnKind::Continuous {
                    min, max, integer, ..
                },
                ColumnParams::Beta { a, b },
            ) => {
                let dists = a
                    .iter()
                    .zip(b)
                    .enumerate()
                    .map(|(component, (&a, &b))| {
                        Beta::new(a, b).map_err(|source| {
                            column_error(ColumnParamsError::Beta { component, source })
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Column::Unit(
                    z.iter()
                        .map(|&k| {
                            let u: f64 = dists[k].sample(rng);
                            unit_from_value(
                                min,
                                max,
                                integer,
                                value_from_unit(min, max, integer, u),
                            )
                        })
                        .collect(),
                )
            }
            (kind, ColumnParams::Categorical { probs }) => {
                let dists = probs
                    .iter()
                    .enumerate()
                    .map(|(component, p)| {
                        WeightedIndex::new(p).map_err(|source| {
                            column_error(ColumnParamsError::Sampling { component, source })
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let drawn = z.iter().map(|&k| dists[k].sample(rng));
                match *kind {
                    // A cell j is the integer min + j, written as its cell's centre.
                    ColumnKind::Continuous { min, max, .. } => Column::Unit(
                        drawn
                            .map(|j| unit_from_value(min, max, true, min + j as f64))
                            .collect(),
                    ),
                    _ => Column::Index(drawn.map(|c| c as u32).collect()),
                }
            }
            _ => unreachable!("check() matched parameter kinds to column kinds"),
        };
        columns.push(col);
    }
    Ok(Table {
        schema: schema.clone(),
        ids: (1..=rows).map(|i| i.to_string()).collect(),
        columns,
    })
}
