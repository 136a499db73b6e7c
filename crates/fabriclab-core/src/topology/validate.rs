//! The whole check of a fabric spec: every section's values
//! ([`FabricSpec::check_sections`], in the configuration layer), then what
//! only the built graph can tell (connectivity, host links, the links that
//! `[[link_failures]]` name).
//!
//! These two methods of [`FabricSpec`] live here, above the configuration
//! layer, because they build the [`Topology`]; the configuration layer
//! never does.

use super::{failures, Topology};
use crate::config::FabricSpec;
use crate::error::Result;

impl FabricSpec {
    /// Parse a fabric file and check it whole ([`FabricSpec::parse_toml`],
    /// then [`FabricSpec::validate`]). A file that keeps a preset's name
    /// but differs from it is renamed (`config::mark_edited_copy`).
    pub fn from_toml(text: &str) -> Result<FabricSpec> {
        let mut spec = FabricSpec::parse_toml(text)?;
        spec.validate()?;
        // A preset's own text (what the front door gets for a preset name)
        // needs no second parse to know it is not an edited copy.
        if crate::config::preset_toml(&spec.name).ok() != Some(text) {
            crate::config::mark_edited_copy(&mut spec);
        }
        Ok(spec)
    }

    /// Check every value is possible and the graph is a fabric; the
    /// message names the field to change.
    pub fn validate(&self) -> Result<()> {
        self.check_sections()?;
        let topo = Topology::build(self)?;
        failures::validate(
            &self.link_failures,
            &topo,
            self.is_infiniband(),
            self.is_iwarp(),
        )
    }

    /// Names of the hosts, in order (`h0`, `h1`, ... for leaf-spine);
    /// empty when the graph cannot be built.
    pub fn host_names(&self) -> Vec<String> {
        Topology::build(self)
            .map(|t| t.host_names())
            .unwrap_or_default()
    }
}
