//! The layout of the unconstrained parameter vector theta (length d) of the K-component
//! mixture, and of each party's sufficient-statistic vector T_p.
//!
//! Parametrisation (paper section 6.1, made proper):
//! - mixture weights: K full logits z, pi = softmax(z);
//! - a Categorical or binned column with C categories: per component, C full logits
//!   lambda_k, omega_k = softmax(lambda_k);
//! - a Beta column (values scaled to (0,1) by public bounds): per component
//!   (log a_k, log b_k);
//! - an integer column modelled by its W cells: per component W full logits, as a
//!   categorical column.
//!
//! Every coordinate gets the same prior: z = log g with g ~ Gamma(1, 1) (see
//! [`crate::prior`]). For the Beta parameters this is the paper's Gamma(1,1) prior in log
//! coordinates; for a block of full logits, softmax(z) of independent log-Gamma(1,1)
//! variables is exactly Dir(1), so the implied prior on pi and omega_k is the paper's
//! Dir(1), while the density on the logits stays proper (no flat shift direction).
//! Full logits keep the score in the affine form s_c = 1[x=c] - omega_{k,c}.
//!
//! A target column (the schema's `target`, a categorical or binned column with C <= K
//! classes) stratifies the mixture: component k holds class `k mod C` with probability 1.
//! Its logits are not trained: they are pinned ([`Layout::pin_target`]) to 0 for the
//! component's class and [`TARGET_LOGIT_OFF`] for the others, their score map is zero
//! (no gradient, no share of the clip), and each party's kernels give a record log-density
//! -inf (likelihood exactly 0) in the components of the other classes
//! ([`crate::kernels::local_terms`]). So within a component the target is determined, and
//! the other columns' distributions are class-conditional: the mixture is a mixture of
//! class-conditional mixtures, which keeps the target's dependence on every column.
//!
//! Order of theta: the K weight logits, then for every column in schema order, for every
//! component k, the column's `width` parameters. Each party's T_p concatenates its
//! columns in schema order: one-hot of width C for a categorical column (of width W, at the
//! cell floor(u W), for an integer column modelled by its cells), (log u, log(1-u)) for a
//! Beta column. Statistic j of party p and parameter j of that party's block in
//! component k correspond one to one, which is what makes the affine score map diagonal.

use serde::{Deserialize, Serialize};

use vtwin_data::schema::{ColumnKind, Schema};

/// How one column is modelled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ColumnModel {
    /// Beta on the unit interval; parameters (log a, log b); statistics (log u, log(1-u)).
    Beta,
    /// Categorical over `cardinality` categories (or bins); full softmax logits; one-hot statistics.
    Categorical {
        /// Number of categories, at least 1.
        cardinality: usize,
    },
    /// An integer column modelled by its `cells` values (`model = "cells"` in the schema):
    /// a categorical over the cells `j = floor(u W)` of its encoded value u, with the density
    /// `W omega_j` on u (so its likelihood compares with a Beta's); full softmax logits;
    /// one-hot statistics; the same scores and ranges as [`ColumnModel::Categorical`].
    Cells {
        /// W = max - min + 1, at least 2.
        cells: usize,
    },
}

impl ColumnModel {
    /// Number of parameters per component, equal to the number of sufficient statistics.
    pub fn width(&self) -> usize {
        match self {
            ColumnModel::Beta => 2,
            ColumnModel::Categorical { cardinality } => *cardinality,
            ColumnModel::Cells { cells } => *cells,
        }
    }

    /// Whether every statistic of this column is an integer (one-hot: 0 or 1); a Beta's
    /// (log u, log(1-u)) are not.
    pub fn integer_stats(&self) -> bool {
        !matches!(self, ColumnModel::Beta)
    }

    /// The most statistics of this column that are nonzero for one record: 2 for a Beta
    /// (log u, log(1-u)), 1 for a one-hot column.
    pub fn max_nonzero(&self) -> usize {
        match self {
            ColumnModel::Beta => 2,
            ColumnModel::Categorical { .. } | ColumnModel::Cells { .. } => 1,
        }
    }
}

/// One column's place in theta and in its party's T.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnSlot {
    /// Column name (from the schema).
    pub name: String,
    /// Index of the owning party in [`Layout::parties`].
    pub party: usize,
    /// The column's model.
    pub model: ColumnModel,
    /// Offset of the column's first statistic in its party's T.
    pub stat_offset: usize,
    /// Index in theta of the column's first parameter for component 0; component k starts
    /// at `param_offset + k * width`.
    pub param_offset: usize,
}

/// Upper bound on a Beta log-parameter in a planned theta: ln 1000 ([`Layout::cap_beta_params`]).
/// Beta(1000, 1000) already has standard deviation 0.011 on the unit interval.
pub const LOG_BETA_PARAM_MAX: f64 = 6.907_755_278_982_137;

/// The Beta log-parameter cap for batches padded to `padded` records: the smaller of
/// [`LOG_BETA_PARAM_MAX`] and ln(0.99 (2^22 / B - 1) / 15). Why: a Beta column's score map
/// has scale a and offset a (psi(a+b) - psi(a)) <= 1 + b (psi(a+b) - psi(a) <= 1/a +
/// ln(1 + b/a)), so with a, b <= c every such map has 14 |A| + |b| <= 15 c + 1, and the
/// fixed-point circuit's bound B (14 |A| + |b|) < 2^22 holds for every theta (1% margin for
/// the maps' f64 rounding). Public (B is public). Padded batches up to 276 records keep ln 1000;
/// an expected batch of 1000 (B ~ 1100) gets a <= ~250 (Beta(250, 250) has sd 0.022 on the
/// unit interval). Cost O(1).
pub fn beta_log_cap(padded: usize) -> f64 {
    let fit = 0.99 * ((1u64 << 22) as f64 / padded.max(1) as f64 - 1.0) / 15.0;
    LOG_BETA_PARAM_MAX.min(fit.ln())
}

/// Errors building a layout.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// K must be at least 1.
    #[error("the number of mixture components K must be at least 1")]
    NoComponents,
    /// A categorical column declared no categories.
    #[error("column {0}: a categorical column needs at least one category")]
    EmptyCategorical(String),
    /// A column names a party index outside the party list.
    #[error("column {column}: party index {party} out of range")]
    UnknownParty {
        /// Column name.
        column: String,
        /// The bad index.
        party: usize,
    },
    /// A party holds no column.
    #[error("party {0} holds no column")]
    EmptyParty(String),
    /// The target names no column of the layout.
    #[error("target {0}: not a column")]
    UnknownTarget(String),
    /// The target column is not categorical (or binned).
    #[error("target {0}: must be a categorical or binned column")]
    TargetNotCategorical(String),
    /// More target classes than components.
    #[error(
        "target {column}: {classes} classes need at least as many components (K = {components})"
    )]
    TargetClasses {
        /// Column name.
        column: String,
        /// Its number of classes C.
        classes: usize,
        /// K.
        components: usize,
    },
}

/// The pinned logit of a target class that a component does not hold: softmax gives it
/// probability exactly 0 in f64 (e^-1000 underflows), so a model file's parameters say what
/// the kernels compute; the kernels themselves apply the exact mask (-inf), whatever the
/// tempering.
pub const TARGET_LOGIT_OFF: f64 = -1000.0;

/// The parameter layout: a pure function of the public schema and K.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Number of mixture components K.
    pub components: usize,
    /// Party names, in the order of [`ColumnSlot::party`].
    pub parties: Vec<String>,
    /// Columns in schema order.
    pub columns: Vec<ColumnSlot>,
    /// |T_p| per party.
    stat_width: Vec<usize>,
    /// For party p and statistic j: (column index, position within the column).
    stat_owner: Vec<Vec<(usize, usize)>>,
    /// d.
    dim: usize,
    /// Index of the target column (module docs), if any. Always written: checkpoints are
    /// postcard, which cannot skip a field (a model file without it reads as no target).
    #[serde(default)]
    target: Option<usize>,
}

impl Layout {
    /// Builds the layout from (column name, party index, model) in schema order.
    /// Cost O(d).
    pub fn new(
        components: usize,
        parties: Vec<String>,
        columns: Vec<(String, usize, ColumnModel)>,
    ) -> Result<Layout, LayoutError> {
        if components == 0 {
            return Err(LayoutError::NoComponents);
        }
        let mut stat_width = vec![0usize; parties.len()];
        let mut stat_owner = vec![Vec::new(); parties.len()];
        let mut slots = Vec::with_capacity(columns.len());
        let mut next = components;
        for (ci, (name, party, model)) in columns.into_iter().enumerate() {
            if party >= parties.len() {
                return Err(LayoutError::UnknownParty {
                    column: name,
                    party,
                });
            }
            let w = model.width();
            if w == 0 {
                return Err(LayoutError::EmptyCategorical(name));
            }
            let stat_offset = stat_width[party];
            stat_width[party] += w;
            stat_owner[party].extend((0..w).map(|j| (ci, j)));
            slots.push(ColumnSlot {
                name,
                party,
                model,
                stat_offset,
                param_offset: next,
            });
            next += components * w;
        }
        if let Some(p) = stat_width.iter().position(|&w| w == 0) {
            return Err(LayoutError::EmptyParty(parties[p].clone()));
        }
        Ok(Layout {
            components,
            parties,
            columns: slots,
            stat_width,
            stat_owner,
            dim: next,
            target: None,
        })
    }

    /// The same layout with the column named `column` as its target (module docs): a
    /// categorical column with at most K classes. Cost O(columns).
    pub fn with_target(mut self, column: &str) -> Result<Layout, LayoutError> {
        let ci = self
            .columns
            .iter()
            .position(|c| c.name == column)
            .ok_or_else(|| LayoutError::UnknownTarget(column.to_owned()))?;
        let ColumnModel::Categorical { cardinality } = self.columns[ci].model else {
            return Err(LayoutError::TargetNotCategorical(column.to_owned()));
        };
        if cardinality > self.components {
            return Err(LayoutError::TargetClasses {
                column: column.to_owned(),
                classes: cardinality,
                components: self.components,
            });
        }
        self.target = Some(ci);
        Ok(self)
    }

    /// Index of the target column, if any.
    pub fn target(&self) -> Option<usize> {
        self.target
    }

    /// The class of the target that component k holds (`k mod C`), if there is a target.
    pub fn target_class(&self, k: usize) -> Option<usize> {
        self.target.map(|ci| k % self.columns[ci].model.width())
    }

    /// The theta indices of the target's pinned logits (empty without a target).
    pub fn pinned(&self) -> std::ops::Range<usize> {
        match self.target {
            Some(ci) => {
                let c = &self.columns[ci];
                c.param_offset..c.param_offset + self.components * c.model.width()
            }
            None => 0..0,
        }
    }

    /// Writes the target's pinned logits into `theta` (a no-op without a target): 0 for the
    /// component's class, [`TARGET_LOGIT_OFF`] for the others. The trainer applies it to every
    /// planned theta and to mu. Posterior sampling does not: `model_file::natural_params`
    /// ignores theta in the target's block (each component's class has probability exactly 1),
    /// so a draw's noise there changes nothing. Cost O(K C).
    pub fn pin_target(&self, theta: &mut [f64]) {
        let Some(ci) = self.target else { return };
        let c = &self.columns[ci];
        let w = c.model.width();
        for k in 0..self.components {
            for j in 0..w {
                theta[c.param_offset + k * w + j] = if j == k % w { 0.0 } else { TARGET_LOGIT_OFF };
            }
        }
    }

    /// The layout of a schema's model with K components: continuous columns are Beta (or
    /// their cells, with `model = "cells"`), categorical and binned columns Categorical over
    /// their categories or bins; the schema's target, if any, stratifies the mixture
    /// ([`Layout::with_target`]).
    pub fn from_schema(schema: &Schema, components: usize) -> Result<Layout, LayoutError> {
        let parties = schema.parties.clone();
        let columns = schema
            .columns
            .iter()
            .map(|c| {
                let party = parties
                    .iter()
                    .position(|p| *p == c.party)
                    .unwrap_or(usize::MAX);
                let model = match &c.kind {
                    kind @ ColumnKind::Continuous { .. } => match kind.cells() {
                        Some(cells) => ColumnModel::Cells { cells },
                        None => ColumnModel::Beta,
                    },
                    kind => ColumnModel::Categorical {
                        cardinality: kind.cardinality().unwrap_or(0),
                    },
                };
                (c.name.clone(), party, model)
            })
            .collect();
        let layout = Layout::new(components, parties, columns)?;
        match &schema.target {
            Some(t) => layout.with_target(t),
            None => Ok(layout),
        }
    }

    /// d, the length of theta.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of parties P.
    pub fn n_parties(&self) -> usize {
        self.parties.len()
    }

    /// |T_p|, the number of sufficient statistics (and of parameters per component) of party p.
    pub fn stat_width(&self, party: usize) -> usize {
        self.stat_width[party]
    }

    /// The most nonzero statistics one record of `party` has: the sum of its columns'
    /// [`ColumnModel::max_nonzero`] (the target's one-hot included). Cost O(columns).
    pub fn stat_nonzeros(&self, party: usize) -> usize {
        self.columns_of(party)
            .map(|ci| self.columns[ci].model.max_nonzero())
            .sum()
    }

    /// Whether every statistic of `party` is an integer (only one-hot columns): the party
    /// then inputs T_p at scale 1 and the circuit forms its G_p with one truncation
    /// (`vtwin_mpc::gradient::PartyMap::integer_stats`). Public: a property of the schema.
    /// Cost O(columns).
    pub fn integer_stats(&self, party: usize) -> bool {
        self.columns_of(party)
            .all(|ci| self.columns[ci].model.integer_stats())
    }

    /// Index in theta of the weight logit of component k.
    pub fn weight_index(&self, k: usize) -> usize {
        k
    }

    /// Index in theta of the parameter that pairs with statistic `stat` of `party` in component `k`.
    pub fn param_index(&self, party: usize, k: usize, stat: usize) -> usize {
        let (ci, j) = self.stat_owner[party][stat];
        let col = &self.columns[ci];
        col.param_offset + k * col.model.width() + j
    }

    /// Caps every Beta log-parameter (log a, log b) of `theta` at `max_log` (a public
    /// projection of the parameter space, applied to each planned theta; the trainer passes
    /// [`beta_log_cap`] of its padded batch). Why: the party's score map for a Beta column has
    /// scale a and offset a (psi(a+b) - psi(a)), and the fixed-point circuit needs
    /// B (14 |scale| + |offset|) < 2^22, so a rare large draw of theta no longer aborts
    /// training. Cost O(d).
    pub fn cap_beta_params(&self, theta: &mut [f64], max_log: f64) {
        for col in self.columns.iter().filter(|c| c.model == ColumnModel::Beta) {
            let w = col.model.width();
            for k in 0..self.components {
                for j in 0..w {
                    let t = &mut theta[col.param_offset + k * w + j];
                    *t = t.min(max_log);
                }
            }
        }
    }

    /// Indices of the columns of `party`, in schema order.
    pub fn columns_of(&self, party: usize) -> impl Iterator<Item = usize> + '_ {
        self.columns
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.party == party)
            .map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_touches_only_beta_parameters_above_the_bound() {
        let l = Layout::new(
            2,
            vec!["a".into(), "b".into()],
            vec![
                ("x".into(), 0, ColumnModel::Beta),
                ("c".into(), 1, ColumnModel::Categorical { cardinality: 3 }),
            ],
        )
        .unwrap();
        let mut theta = vec![50.0; l.dim()];
        l.cap_beta_params(&mut theta, LOG_BETA_PARAM_MAX);
        for k in 0..2 {
            assert_eq!(theta[l.weight_index(k)], 50.0, "weights are not capped");
            for j in 0..2 {
                assert_eq!(theta[l.param_index(0, k, j)], LOG_BETA_PARAM_MAX);
            }
            for j in 0..3 {
                assert_eq!(theta[l.param_index(1, k, j)], 50.0, "logits are not capped");
            }
        }
        let mut low = vec![-3.0; l.dim()];
        l.cap_beta_params(&mut low, LOG_BETA_PARAM_MAX);
        assert!(low.iter().all(|&t| t == -3.0));
        assert!((LOG_BETA_PARAM_MAX - 1000f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn beta_cap_keeps_the_score_maps_in_range_for_every_batch() {
        use crate::kernels::PartyMaps;
        // Small batches keep ln 1000 (Adult's padded 178 among them); large ones get less.
        assert_eq!(beta_log_cap(178), LOG_BETA_PARAM_MAX);
        assert_eq!(beta_log_cap(276), LOG_BETA_PARAM_MAX);
        assert!(beta_log_cap(277) < LOG_BETA_PARAM_MAX);
        assert!(beta_log_cap(1130) < 250f64.ln() && beta_log_cap(1130) > 240f64.ln());
        let l = Layout::new(
            1,
            vec!["a".into()],
            vec![("x".into(), 0, ColumnModel::Beta)],
        )
        .unwrap();
        for padded in [100, 178, 400, 1130, 5000, 40_000] {
            let cap = beta_log_cap(padded);
            // Both parameters at the cap, and one at the cap with the other tiny: the extremes
            // of 14 |A| + |b|.
            for (la, lb) in [(50.0, 50.0), (50.0, -20.0), (-20.0, 50.0)] {
                let mut theta = vec![0.0; l.dim()];
                theta[l.param_index(0, 0, 0)] = la;
                theta[l.param_index(0, 0, 1)] = lb;
                l.cap_beta_params(&mut theta, cap);
                let m = PartyMaps::new(&theta, &l, 0);
                let worst = m
                    .scale
                    .iter()
                    .zip(&m.offset)
                    .map(|(a, b)| 14.0 * a.abs() + b.abs())
                    .fold(0.0, f64::max);
                let at = padded as f64 * worst;
                assert!(at < (1u64 << 22) as f64, "B {padded}: {at}");
            }
        }
    }

    fn two_party() -> Layout {
        Layout::new(
            3,
            vec!["a".into(), "b".into()],
            vec![
                ("x".into(), 0, ColumnModel::Beta),
                ("y".into(), 1, ColumnModel::Categorical { cardinality: 4 }),
                ("z".into(), 0, ColumnModel::Categorical { cardinality: 2 }),
            ],
        )
        .unwrap()
    }

    #[test]
    fn indices_are_a_bijection_onto_theta() {
        let l = two_party();
        assert_eq!(l.dim(), 3 + 3 * (2 + 4 + 2));
        let mut seen = vec![false; l.dim()];
        for k in 0..3 {
            seen[l.weight_index(k)] = true;
            for p in 0..2 {
                for j in 0..l.stat_width(p) {
                    let i = l.param_index(p, k, j);
                    assert!(!seen[i], "index {i} used twice");
                    seen[i] = true;
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(l.stat_width(0), 4);
        assert_eq!(l.stat_width(1), 4);
        // Party 0's T is (log u, log(1-u), z one-hot): statistic 2 is z's first category.
        assert_eq!(l.param_index(0, 1, 2), l.columns[2].param_offset + 2);
    }

    #[test]
    fn rejects_bad_shapes() {
        assert_eq!(
            Layout::new(
                0,
                vec!["a".into()],
                vec![("x".into(), 0, ColumnModel::Beta)]
            ),
            Err(LayoutError::NoComponents)
        );
        assert!(matches!(
            Layout::new(2, vec!["a".into(), "b".into()], vec![("x".into(), 0, ColumnModel::Beta)]),
            Err(LayoutError::EmptyParty(p)) if p == "b"
        ));
    }

    #[test]
    fn a_target_pins_one_class_per_component_and_nothing_else() {
        let l = two_party().with_target("z").unwrap();
        assert_eq!(l.target(), Some(2));
        let classes: Vec<_> = (0..3).filter_map(|k| l.target_class(k)).collect();
        assert_eq!(classes, [0, 1, 0]);
        let z = &l.columns[2];
        assert_eq!(l.pinned(), z.param_offset..z.param_offset + 3 * 2);
        let mut theta = vec![7.0; l.dim()];
        l.pin_target(&mut theta);
        for (i, &t) in theta.iter().enumerate() {
            if !l.pinned().contains(&i) {
                assert_eq!(t, 7.0, "index {i} is not the target's");
            }
        }
        for k in 0..3 {
            let block = &theta[z.param_offset + 2 * k..z.param_offset + 2 * k + 2];
            let class = l.target_class(k).unwrap();
            assert_eq!(block[class], 0.0);
            assert_eq!(block[1 - class], TARGET_LOGIT_OFF);
            // Its softmax is exactly one-hot in f64.
            assert_eq!((block[1 - class] - block[class]).exp(), 0.0);
        }
        // Without a target nothing is pinned.
        let plain = two_party();
        assert_eq!(plain.pinned(), 0..0);
        assert_eq!(plain.target_class(0), None);
        let mut theta = vec![7.0; plain.dim()];
        plain.pin_target(&mut theta);
        assert!(theta.iter().all(|&t| t == 7.0));
    }

    #[test]
    fn a_target_must_be_a_categorical_column_with_at_most_k_classes() {
        assert_eq!(
            two_party().with_target("w"),
            Err(LayoutError::UnknownTarget("w".into()))
        );
        assert_eq!(
            two_party().with_target("x"),
            Err(LayoutError::TargetNotCategorical("x".into()))
        );
        assert_eq!(
            two_party().with_target("y"),
            Err(LayoutError::TargetClasses {
                column: "y".into(),
                classes: 4,
                components: 3
            })
        );
    }

    #[test]
    fn the_schemas_target_reaches_the_layout() {
        let schema = vtwin_data::demo::demo_schema();
        assert_eq!(Layout::from_schema(&schema, 4).unwrap().target(), None);
        let schema = schema.with_target(Some("condition".into())).unwrap();
        let l = Layout::from_schema(&schema, 4).unwrap();
        assert_eq!(l.target(), schema.column_index("condition"));
        assert!(matches!(
            Layout::from_schema(&schema, 3),
            Err(LayoutError::TargetClasses { classes: 4, .. })
        ));
    }
}
