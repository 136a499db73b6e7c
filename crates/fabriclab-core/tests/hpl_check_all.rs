//! Check-only mode checks every test of an HPL run, not only the first:
//! a second N whose schedules do not fit the memory is refused before the
//! run. A file of its own: it sets `FABRICLAB_MEMORY_LIMIT` for the
//! process.

use fabriclab_core::config::FabricSpec;
use fabriclab_core::interrupt;
use fabriclab_core::tools::hpl::{self, Options};

#[test]
fn every_test_is_checked() {
    std::env::set_var("FABRICLAB_MEMORY_LIMIT", "300M");
    let spec = FabricSpec::from_toml(
        "[topology]\nkind = \"leaf_spine\"\nspines = 0\nleaves = 1\nhosts_per_leaf = 4\n\
         host_link_gbps = 100\nuplink_gbps = 100\n",
    )
    .unwrap();
    let opts = |ns: &str| -> Options {
        serde_json::from_str(&format!(
            r#"{{"n":{ns},"nb":[64],"grids":[[2,2]],"samples":0}}"#
        ))
        .unwrap()
    };
    let check = |ns: &str| interrupt::check_only(|| hpl::run(&spec, &opts(ns), 1, None));
    let small = check("[2000]");
    assert!(
        matches!(small, Err(fabriclab_core::Error::Stopped(_))),
        "{small:?}"
    );
    let big = check("[2000000]").unwrap_err();
    assert!(big.is_input_error(), "{big}");
    // The big N second: refused too (it was passed when the check stopped
    // at the first test).
    let both = check("[2000, 2000000]").unwrap_err();
    assert!(both.is_input_error(), "{both}");
    assert_eq!(both.to_string(), big.to_string());
}
