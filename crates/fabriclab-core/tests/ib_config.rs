//! Bad InfiniBand input gets an `InvalidFabric` error that says what to
//! change: an unknown transport, a VL count outside 1..15, an impossible
//! SL-to-VL map, MTU or buffer, and Ethernet-only options (PFC, ECN,
//! DCQCN, VLAN tags, the RoCE MTU, the shared-buffer MMU) on an IB fabric.

use fabriclab_core::config::FabricSpec;
use fabriclab_core::Error;

const TOPO: &str =
    "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 2\nhosts_per_leaf = 2\n\
                    host_link_gbps = 100\nuplink_gbps = 100\n";

fn ib(extra: &str) -> Result<FabricSpec, Error> {
    FabricSpec::from_toml(&format!("transport = \"infiniband\"\n{TOPO}{extra}"))
}

fn invalid(r: Result<FabricSpec, Error>, needles: &[&str]) {
    let e = r.unwrap_err();
    assert!(matches!(e, Error::InvalidFabric(_)), "{e:?}");
    for n in needles {
        assert!(e.to_string().contains(n), "{n:?} not in: {e}");
    }
}

#[test]
fn an_unknown_transport_names_the_two_that_exist() {
    let e = FabricSpec::from_toml(&format!("transport = \"omnipath\"\n{TOPO}"));
    invalid(e, &["\"omnipath\"", "\"roce\"", "\"infiniband\""]);
    // The spellings that exist parse.
    for t in ["roce", "infiniband", "ib", "InfiniBand"] {
        FabricSpec::from_toml(&format!("transport = \"{t}\"\n{TOPO}")).unwrap();
    }
}

#[test]
fn vl_counts_outside_1_to_15_and_bad_sl_maps_are_rejected() {
    invalid(ib("[ib]\nvls = 0\n"), &["ib.vls = 0", "1 to 15"]);
    invalid(ib("[ib]\nvls = 16\n"), &["ib.vls = 16", "1 to 15"]);
    ib("[ib]\nvls = 15\n").unwrap();
    ib("[ib]\nvls = 1\n").unwrap();
    let map = "sl_to_vl = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 4]\n";
    invalid(
        ib(&format!("[ib]\nvls = 4\n{map}")),
        &["SL 15 to VL 4", "ib.vls = 4"],
    );
    invalid(ib("[ib]\nsl_to_vl = [0, 1]\n"), &["16 SLs"]);
}

#[test]
fn mtu_buffers_and_congestion_control_values_are_checked() {
    invalid(ib("[ib]\nmtu = 1500\n"), &["ib.mtu = 1500", "4096"]);
    // A 4 KB packet (4138 B with RETH) needs 65 credits of 64 B.
    invalid(
        ib("[ib]\nswitch_vl_buffer_bytes = 4096\n"),
        &["switch_vl_buffer_bytes", "4160"],
    );
    invalid(ib("[ib]\nhca_drain_gbps = 0\n"), &["hca_drain_gbps"]);
    invalid(
        ib("[ib]\nhca_drain_gbps = 1e-300\n"),
        &["hca_drain_gbps", "below 1 kb/s"],
    );
    invalid(
        ib("[ib.cc]\nccti_limit = 200\n"),
        &["ccti_limit = 200", "128 entries"],
    );
    invalid(ib("[ib.cc]\ncct = [[4, 1]]\nccti_limit = 0\n"), &["2 bits"]);
}

#[test]
fn ethernet_only_options_on_an_ib_fabric_say_what_to_use_instead() {
    invalid(
        ib("[pfc]\nenabled = true\n"),
        &["[pfc]", "credit-based", "remove [pfc]"],
    );
    invalid(
        ib("[ecn]\nenabled = true\n"),
        &["[ecn]", "[ib.cc] enabled = true"],
    );
    invalid(ib("[cc]\nalgorithm = \"dcqcn\"\n"), &["dcqcn", "[ib.cc]"]);
    invalid(ib("[nic]\nvlan = true\n"), &["nic.vlan"]);
    invalid(ib("[nic]\nroce_mtu = 2048\n"), &["nic.roce_mtu", "ib.mtu"]);
    invalid(
        ib("[switch]\nbuffer_bytes = 1000000\n"),
        &["shared-buffer MMU", "ib.switch_vl_buffer_bytes"],
    );
    // Said off explicitly, they are fine.
    ib("[pfc]\nenabled = false\n[ecn]\nenabled = false\n[cc]\nalgorithm = \"none\"\n").unwrap();
    // An [ib] section needs an InfiniBand fabric.
    invalid(
        FabricSpec::from_toml(&format!("{TOPO}[ib]\nmtu = 2048\n")),
        &["[ib]", "transport = \"infiniband\""],
    );
}
