//! The default number of mixture components K, a function of the public schema alone.
//!
//! Why a budget on d rather than a fixed K: each record's gradient is clipped to norm C
//! however many coordinates it has, and every one of the d released coordinates carries
//! its own noise of standard deviation sigma C, so the noise's norm per step grows as
//! sqrt(d) against a signal that does not. The MPC's work and traffic grow with d too
//! (the `M_p = W^T T_p` layer and the parties' kernels are B K |T_p|, the released sums d).
//! A schema with wider columns (a categorical over many values, an integer column modelled
//! by its cells) therefore gets fewer components, so that both stay where the paper's
//! setting put them. Measured on Adult in `docs/utility-levers.md`.

use vtwin_data::schema::Schema;

use crate::layout::{Layout, LayoutError};

/// The most components a default run uses: the paper's K (Tajeddine et al. 2022, 6.1).
pub const MAX_COMPONENTS: usize = 20;

/// The largest d a default run chooses K for: the paper's Adult model (per component, its
/// weight, two Betas' four parameters and 145 categories and bins: 150) at K = 20.
pub const PARAMETER_BUDGET: usize = 3000;

/// K for `schema` when the user names none: the largest K <= [`MAX_COMPONENTS`] whose
/// d = K (1 + sum of the columns' widths) is at most [`PARAMETER_BUDGET`], but never
/// fewer than the target's classes (one component per class) nor fewer than 1.
///
/// Examples: the shipped Adult schema, age and hours modelled by their cells (319
/// parameters per component), gets 9; the demo schema and any schema of at most 150
/// parameters per component get 20. Errors: the schema's layout errors (an unknown or
/// non-categorical target). Cost O(d) for one probe layout.
pub fn default_components(schema: &Schema) -> Result<usize, LayoutError> {
    let classes = schema
        .target
        .as_ref()
        .and_then(|t| schema.columns.iter().find(|c| &c.name == t))
        .and_then(|c| c.kind.cardinality())
        .unwrap_or(1)
        .max(1);
    // The probe validates the schema (the target among it) at the smallest K it allows.
    let probe = Layout::from_schema(schema, classes)?;
    let per_component = probe.dim() / classes;
    Ok((PARAMETER_BUDGET / per_component)
        .clamp(1, MAX_COMPONENTS)
        .max(classes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vtwin_data::demo::demo_schema;

    #[test]
    fn the_demo_schema_keeps_the_papers_k() {
        let s = demo_schema();
        let per_component = Layout::from_schema(&s, 1).unwrap().dim();
        assert!(per_component <= PARAMETER_BUDGET / MAX_COMPONENTS);
        assert_eq!(default_components(&s).unwrap(), MAX_COMPONENTS);
    }

    #[test]
    fn wider_schemas_get_fewer_components_within_the_budget() {
        let adult = Schema::from_toml(include_str!("../../../examples/adult/schema.toml")).unwrap();
        let k = default_components(&adult).unwrap();
        let d = Layout::from_schema(&adult, k).unwrap().dim();
        let d_next = Layout::from_schema(&adult, k + 1).unwrap().dim();
        assert!(
            d <= PARAMETER_BUDGET && d_next > PARAMETER_BUDGET,
            "K {k}: d {d}, {d_next}"
        );
        assert!(k < MAX_COMPONENTS);
    }

    #[test]
    fn a_target_keeps_one_component_per_class_however_wide_the_schema() {
        // A categorical of 4000 categories leaves the budget room for no component; the
        // target's two classes still get one each.
        let mut s = demo_schema();
        let spec = s.columns[0].clone();
        s.columns.push(vtwin_data::schema::ColumnSpec {
            name: "wide".into(),
            kind: vtwin_data::schema::ColumnKind::Categorical {
                categories: (0..4000).map(|i| format!("c{i}")).collect(),
            },
            ..spec
        });
        s.target = None;
        assert_eq!(default_components(&s).unwrap(), 1);
        s.target = Some("smoker".into());
        assert_eq!(default_components(&s).unwrap(), 2);
        Layout::from_schema(&s, 2).unwrap();
        s.target = Some("nope".into());
        assert!(matches!(
            default_components(&s),
            Err(LayoutError::UnknownTarget(_))
        ));
    }
}
