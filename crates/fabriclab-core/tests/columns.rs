//! Port and QP counter tables sent as one JSON array per column hold
//! exactly what the rows hold: every field of a row is a column (so a new
//! counter cannot be left out), with the row's value at the row's place, and `null` where a row lacks a flattened group
//! (InfiniBand counters, dynamic ECN on host ports).

mod common;
use common::*;
use fabriclab_core::config::FabricSpec;
use fabriclab_core::net::{PortReport, QpReport};
use serde_json::{Map, Value};

#[derive(serde::Serialize)]
struct Tables<'a> {
    #[serde(serialize_with = "fabriclab_core::net::port_reports_as_columns")]
    ports: &'a [PortReport],
    #[serde(serialize_with = "fabriclab_core::net::qp_reports_as_columns")]
    qps: &'a [QpReport],
}

/// Checks `columns` against `rows` (each a JSON object) and returns the
/// column names.
fn same_table(rows: &[Value], columns: &Value) -> Vec<String> {
    let columns = columns.as_object().expect("an object of columns");
    // The union of the rows' keys (serde_json's maps sort their keys).
    let keys: std::collections::BTreeSet<&String> = rows
        .iter()
        .flat_map(|r| r.as_object().unwrap().keys())
        .collect();
    let names: Vec<String> = columns.keys().cloned().collect();
    assert_eq!(
        names.iter().collect::<std::collections::BTreeSet<_>>(),
        keys,
        "columns are the rows' fields"
    );
    for (name, values) in columns {
        let values = values.as_array().unwrap();
        assert_eq!(values.len(), rows.len(), "{name}");
        for (i, (r, v)) in rows.iter().zip(values).enumerate() {
            let want = r.get(name).unwrap_or(&Value::Null);
            assert_eq!(v, want, "{name} of row {i}");
        }
    }
    names
}

/// Runs `flows` on `spec` and checks both tables; returns the port columns.
fn check(spec: &FabricSpec, flows: &[fabriclab_core::traffic::flows::FlowSpec]) -> Vec<String> {
    let (sim, _) = run_flows(spec, flows, 7);
    let ports = sim.net.port_reports();
    let qps = sim.net.qp_reports();
    assert!(!ports.is_empty() && !qps.is_empty());
    let t = serde_json::to_value(Tables {
        ports: &ports,
        qps: &qps,
    })
    .unwrap();
    let rows = |v: Value| v.as_array().unwrap().clone();
    let port_rows = rows(serde_json::to_value(&ports).unwrap());
    let qp_rows = rows(serde_json::to_value(&qps).unwrap());
    // The rows carry traffic, so a swapped column would show.
    assert!(port_rows.iter().any(|r| r["tx_bytes"].as_u64() > Some(0)));
    let names = same_table(&port_rows, &t["ports"]);
    same_table(&qp_rows, &t["qps"]);
    names
}

#[test]
fn ethernet_ports_have_no_optional_columns() {
    let names = check(&one_switch(4, ""), &incast(3, 1 << 20));
    assert!(names.contains(&"drops_by_prio".to_string()));
    assert!(!names.iter().any(|n| n == "fcp_tx" || n == "ecn_kmin_bytes"));
}

#[test]
fn dynamic_ecn_columns_are_null_on_host_ports() {
    let spec = one_switch(4, "[ecn]\nmode = \"dynamic\"\n");
    let names = check(&spec, &incast(3, 1 << 20));
    assert!(names.contains(&"ecn_kmin_bytes".to_string()));
    // Host ports have no dynamic-ECN state: their rows lack the fields
    // (checked as null above), switch ports have them.
    let (sim, _) = run_flows(&spec, &incast(3, 1 << 20), 7);
    let p = sim.net.port_reports();
    assert!(p.iter().any(|r| r.dyn_ecn.is_none()) && p.iter().any(|r| r.dyn_ecn.is_some()));
}

#[test]
fn infiniband_ports_carry_their_credit_columns() {
    let spec = FabricSpec::from_toml(
        "transport = \"infiniband\"\n[topology]\nkind = \"leaf_spine\"\nspines = 2\n\
         leaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n",
    )
    .unwrap();
    let flows = [flow("h0", "h2", 1 << 20), flow("h1", "h3", 1 << 20)];
    let names = check(&spec, &flows);
    for n in [
        "credit_stalled_ps",
        "fcp_tx",
        "fcp_rx",
        "peak_vl_queue_bytes",
    ] {
        assert!(names.contains(&n.to_string()), "{n}");
    }
}

#[test]
fn an_empty_table_is_empty_columns() {
    let t = serde_json::to_value(Tables {
        ports: &[],
        qps: &[],
    })
    .unwrap();
    assert_eq!(t["ports"]["node"], Value::Array(vec![]));
    assert_eq!(t["qps"].as_object().map(Map::len), Some(16));
}

#[derive(serde::Serialize)]
struct FlowTable<'a> {
    #[serde(serialize_with = "fabriclab_core::traffic::flows::results_as_columns")]
    flows: &'a [fabriclab_core::traffic::flows::FlowResult],
}

#[test]
fn flow_results_as_columns_are_the_rows() {
    let (_, mut res) = run_flows(&one_switch(4, ""), &incast(3, 1 << 20), 7);
    // A failed flow's fields too (the run has none).
    res.push(fabriclab_core::traffic::flows::FlowResult {
        src: "h1".into(),
        dst: "h0".into(),
        bytes: 5,
        failed_ps: Some(9),
        error: Some("transport retry counter exceeded".into()),
        ..Default::default()
    });
    let t = serde_json::to_value(FlowTable { flows: &res }).unwrap();
    let rows = serde_json::to_value(&res).unwrap();
    let names = same_table(rows.as_array().unwrap(), &t["flows"]);
    assert_eq!(names.len(), 9);
    assert_eq!(t["flows"]["completed_ps"][3], Value::Null);
}
