//! Built-in fabric presets, kept as TOML files next to the crate
//! (`presets/*.toml`) so that their calibration notes sit beside the values
//! they explain. `fabriclab fabric show NAME --toml` prints one to copy.

use super::FabricSpec;
use crate::error::{Error, Result};

const PRESETS: &[(&str, &str)] = &[
    ("heps", include_str!("../../presets/heps.toml")),
    ("leaf-spine", include_str!("../../presets/leaf-spine.toml")),
    ("fat-tree", include_str!("../../presets/fat-tree.toml")),
    ("eantc-hpc", include_str!("../../presets/eantc-hpc.toml")),
    (
        "eantc-hpc-dynamic",
        include_str!("../../presets/eantc-hpc-dynamic.toml"),
    ),
    (
        "eantc-storage",
        include_str!("../../presets/eantc-storage.toml"),
    ),
    (
        "eantc-storage-dynamic",
        include_str!("../../presets/eantc-storage-dynamic.toml"),
    ),
    ("ihep-roce", include_str!("../../presets/ihep-roce.toml")),
    (
        "stackhpc-roce",
        include_str!("../../presets/stackhpc-roce.toml"),
    ),
    (
        "stackhpc-ib",
        include_str!("../../presets/stackhpc-ib.toml"),
    ),
    ("ihep-ib", include_str!("../../presets/ihep-ib.toml")),
    ("sandia-ib", include_str!("../../presets/sandia-ib.toml")),
    (
        "sandia-iwarp",
        include_str!("../../presets/sandia-iwarp.toml"),
    ),
    (
        "h100-rail-ib",
        include_str!("../../presets/h100-rail-ib.toml"),
    ),
    (
        "h100-rail-roce",
        include_str!("../../presets/h100-rail-roce.toml"),
    ),
    (
        "h100-rail-only-ib",
        include_str!("../../presets/h100-rail-only-ib.toml"),
    ),
    (
        "bench-a2a-32",
        include_str!("../../presets/bench-a2a-32.toml"),
    ),
    (
        "bench-a2a-128",
        include_str!("../../presets/bench-a2a-128.toml"),
    ),
];

/// Names of the built-in presets.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// The TOML text of a preset, comments included.
pub fn preset_toml(name: &str) -> Result<&'static str> {
    PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "no preset named {name:?}; the presets are: {}",
                preset_names().join(", ")
            ))
        })
}

/// A preset, parsed with each section checked. Every preset's graph is
/// checked too, once, by this module's tests (the configuration layer
/// does not build graphs).
pub fn preset(name: &str) -> Result<FabricSpec> {
    FabricSpec::parse_toml(preset_toml(name)?)
}

/// A fabric that keeps a preset's `name` but differs from that preset (a
/// preset's TOML saved and edited) is renamed `"<name> (edited)"`, and its
/// description says what it was copied from, so that reports and headers
/// never call it by the preset's name. A fabric identical to the preset,
/// or named otherwise, is left as it is; so is one that differs only in
/// `[sim]` (how it is simulated, such as `backend = "flow"`, is not a
/// different fabric).
pub fn mark_edited_copy(spec: &mut FabricSpec) {
    let Ok(mut original) = preset(&spec.name) else {
        return;
    };
    original.sim = spec.sim.clone();
    if original.to_toml() == spec.to_toml() {
        return;
    }
    spec.description = format!(
        "edited copy of preset {}; the preset: {}",
        spec.name, spec.description
    );
    spec.name = format!("{} (edited)", spec.name);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_validates() {
        for name in preset_names() {
            let spec = preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(spec.name, name);
            spec.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn an_edited_preset_is_not_called_by_the_preset_name() {
        let mut same = preset("heps").unwrap();
        same.sim.backend = crate::config::Backend::Flow;
        mark_edited_copy(&mut same);
        assert_eq!(same.name, "heps", "another backend is the same fabric");
        let text = preset_toml("heps")
            .unwrap()
            .replace("kmax_bytes = ", "kmax_bytes = 1");
        let mut edited = FabricSpec::parse_toml(&text).unwrap();
        mark_edited_copy(&mut edited);
        assert_eq!(edited.name, "heps (edited)");
        assert!(edited
            .description
            .starts_with("edited copy of preset heps; the preset: "));
        // Renamed by its user: left alone.
        let mut own =
            FabricSpec::parse_toml(&text.replace("name = \"heps\"", "name = \"mine\"")).unwrap();
        mark_edited_copy(&mut own);
        assert_eq!(own.name, "mine");
    }
}
