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

/// A preset, parsed and validated.
pub fn preset(name: &str) -> Result<FabricSpec> {
    FabricSpec::from_toml(preset_toml(name)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_validates() {
        for name in preset_names() {
            let spec = preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(spec.name, name);
        }
    }
}
