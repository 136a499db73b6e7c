//! Fuzzing the inputs users write (fabric TOML) and the JSON front door
//! the Python layer and the CLI call (issue 16, point 1): every input ends
//! in a result or an `Error`, never a panic, an abort or a hang.
//!
//! Each case takes a valid document (every preset, plus a few fabrics and
//! the options of every tool) and applies a few mutations: a value replaced
//! by one that breaks assumptions (negative, zero, 2^32, 2^64, 1e308, NaN,
//! infinity, a string, a table, a host name that looks like a range), a
//! key removed, an unknown key added, a table replaced by a scalar; fabric
//! texts are also cut short or given stray bytes. The case then parses,
//! builds the network and runs the tool. A run is asked to stop
//! (`interrupt::request`) after 3 s of wall time, which counts as an
//! ending (a legal input may describe a long run); a case still running
//! 60 s later aborts the process as a hang.
//!
//! CI runs 24 cases per target; the long run is
//! `PROPTEST_CASES=5000 cargo test --release -p fabriclab-core --test fuzz`
//! (figures in docs/benchmarks.md). Failing inputs are shrunk by proptest
//! and saved under `tests/fuzz.proptest-regressions`, which is replayed
//! first on every later run.

use fabriclab_core::config::{preset_names, preset_toml, FabricSpec};
use fabriclab_core::net::Net;
use fabriclab_core::{front, interrupt, Error};
use proptest::prelude::*;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

/// The interrupt flag is process-wide: cases run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Replacement values, as TOML.
const TOML_VALUES: &[&str] = &[
    "-1",
    "0",
    "1",
    "0.5",
    "-0.0",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615.0",
    "1e308",
    "-1e308",
    "1e-300",
    "nan",
    "inf",
    "-inf",
    "\"x\"",
    "\"\"",
    "\"h0-h3\"",
    "\"h99\"",
    "true",
    "[]",
    "[1, 2, 3]",
    "{}",
    "{ a = 1 }",
];

/// Replacement values, as JSON (no NaN or infinity in JSON: huge numbers
/// and strings stand in).
const JSON_VALUES: &[&str] = &[
    "-1",
    "0",
    "1",
    "0.5",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "-1e308",
    "1e-300",
    "\"nan\"",
    "\"x\"",
    "\"\"",
    "\"h0-h3\"",
    "\"h99\"",
    "true",
    "null",
    "[]",
    "[1, 2, 3]",
    "[\"h0\", \"h0\"]",
    "{}",
];

/// A mutation: (kind, which node, which value).
type Op = (u8, usize, usize);

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    }
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec((0u8..4, 0usize..1000, 0usize..1000), 1..4)
}

// ----- TOML mutation -----

fn toml_nodes(v: &toml::Value, path: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(path.clone());
    match v {
        toml::Value::Table(t) => {
            for (k, child) in t {
                let mut p = path.clone();
                p.push(k.clone());
                toml_nodes(child, p, out);
            }
        }
        toml::Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                let mut p = path.clone();
                p.push(format!("#{i}"));
                toml_nodes(child, p, out);
            }
        }
        _ => {}
    }
}

fn toml_at<'a>(v: &'a mut toml::Value, path: &[String]) -> Option<&'a mut toml::Value> {
    let mut cur = v;
    for seg in path {
        cur = match (cur, seg.strip_prefix('#')) {
            (toml::Value::Array(a), Some(i)) => a.get_mut(i.parse::<usize>().ok()?)?,
            (toml::Value::Table(t), None) => t.get_mut(seg)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn toml_value(s: &str) -> toml::Value {
    let t: toml::Table = format!("v = {s}").parse().expect("pool value");
    t["v"].clone()
}

fn mutate_toml(text: &str, ops: &[Op]) -> String {
    let mut doc: toml::Value = toml::Value::Table(text.parse().expect("valid base"));
    for &(kind, at, val) in ops {
        let mut nodes = Vec::new();
        toml_nodes(&doc, Vec::new(), &mut nodes);
        let path = nodes[at % nodes.len()].clone();
        match kind {
            0 | 3 => {
                if path.is_empty() {
                    continue; // the root stays a table
                }
                if let Some(v) = toml_at(&mut doc, &path) {
                    *v = toml_value(TOML_VALUES[val % TOML_VALUES.len()]);
                }
            }
            1 => {
                let Some((last, parent)) = path.split_last() else {
                    continue;
                };
                match toml_at(&mut doc, parent) {
                    Some(toml::Value::Table(t)) => {
                        t.remove(last);
                    }
                    Some(toml::Value::Array(a)) => {
                        if let Some(i) = last.strip_prefix('#').and_then(|i| i.parse().ok()) {
                            if i < a.len() {
                                a.remove(i);
                            }
                        }
                    }
                    _ => {}
                }
            }
            _ => {
                if let Some(toml::Value::Table(t)) = toml_at(&mut doc, &path) {
                    t.insert("zz_unknown".into(), toml::Value::Integer(1));
                }
            }
        }
    }
    toml::to_string(&doc).unwrap_or_else(|_| text.to_string())
}

// ----- JSON mutation -----

fn json_nodes(v: &serde_json::Value, path: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(path.clone());
    match v {
        serde_json::Value::Object(o) => {
            for (k, child) in o {
                let mut p = path.clone();
                p.push(k.clone());
                json_nodes(child, p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                let mut p = path.clone();
                p.push(format!("#{i}"));
                json_nodes(child, p, out);
            }
        }
        _ => {}
    }
}

fn json_at<'a>(v: &'a mut serde_json::Value, path: &[String]) -> Option<&'a mut serde_json::Value> {
    let mut cur = v;
    for seg in path {
        cur = match (cur, seg.strip_prefix('#')) {
            (serde_json::Value::Array(a), Some(i)) => a.get_mut(i.parse::<usize>().ok()?)?,
            (serde_json::Value::Object(o), None) => o.get_mut(seg)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn mutate_json(text: &str, ops: &[Op]) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(text).expect("valid base");
    for &(kind, at, val) in ops {
        let mut nodes = Vec::new();
        json_nodes(&doc, Vec::new(), &mut nodes);
        let path = nodes[at % nodes.len()].clone();
        match kind {
            0 | 3 => {
                if let Some(v) = json_at(&mut doc, &path) {
                    *v = serde_json::from_str(JSON_VALUES[val % JSON_VALUES.len()])
                        .unwrap_or(serde_json::Value::Null);
                }
            }
            1 => {
                let Some((last, parent)) = path.split_last() else {
                    continue;
                };
                match json_at(&mut doc, parent) {
                    Some(serde_json::Value::Object(o)) => {
                        o.remove(last);
                    }
                    Some(serde_json::Value::Array(a)) => {
                        if let Some(i) = last.strip_prefix('#').and_then(|i| i.parse().ok()) {
                            if i < a.len() {
                                a.remove(i);
                            }
                        }
                    }
                    _ => {}
                }
            }
            _ => {
                if let Some(serde_json::Value::Object(o)) = json_at(&mut doc, &path) {
                    o.insert("zz_unknown".into(), serde_json::Value::from(1));
                }
            }
        }
    }
    doc.to_string()
}

// ----- running a case -----

/// Run `f` with a watchdog: a stop is requested after 3 s, a case still
/// running 60 s later is a hang and aborts the process.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    interrupt::take();
    let (tx, rx) = mpsc::channel::<()>();
    let desc = what.chars().take(4000).collect::<String>();
    let dog = std::thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(3)) {
            interrupt::request();
            if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(60)) {
                eprintln!("fuzz: no end 63 s into this input (a hang):\n{desc}");
                std::process::abort();
            }
        }
    });
    let r = f();
    let _ = tx.send(());
    let _ = dog.join();
    interrupt::take();
    r
}

/// An error must say something.
fn check(r: Result<String, Error>) {
    if let Err(e) = r {
        assert!(
            !e.message().trim().is_empty(),
            "an error without a message: {e:?}"
        );
    }
}

fn base_fabrics() -> Vec<String> {
    let mut out: Vec<String> = preset_names()
        .iter()
        .map(|n| preset_toml(n).expect("preset").to_string())
        .collect();
    out.push(
        "[topology]\nkind = \"explicit\"\n\
         [[topology.nodes]]\nname = \"h0\"\nkind = \"host\"\n\
         [[topology.nodes]]\nname = \"h1\"\nkind = \"host\"\n\
         [[topology.nodes]]\nname = \"s0\"\nkind = \"switch\"\n\
         [[topology.links]]\na = \"h0\"\nb = \"s0\"\ngbps = 100\n\
         [[topology.links]]\na = \"h1\"\nb = \"s0\"\ngbps = 100\ndelay_ns = 500\n\
         [pfc.watchdog]\ndetection_us = 100\n\
         [[pfc_storms]]\nhost = \"h1\"\nstart_us = 5\nend_us = 50\n"
            .into(),
    );
    out.push(
        "[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n[nic]\nretry_cnt = 1\n\
         [[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 3\nup_us = 40\n\
         [routing]\nmode = \"adaptive\"\n[sim]\nbackend = \"packet\"\n"
            .into(),
    );
    out
}

/// Parse, build and (when small) run a short perftest on a fabric text.
fn exercise_fabric(text: &str) {
    guarded(text, || {
        let Ok(spec) = FabricSpec::from_toml(text) else {
            return;
        };
        let Ok(topo) = fabriclab_core::topology::Topology::build(&spec) else {
            return;
        };
        if topo.nodes.len() > 5000 {
            return; // legal, but too large to build in a fuzz case
        }
        if Net::new(&spec, 1).is_err() {
            return;
        }
        if topo.n_hosts >= 2 {
            let opts = r#"{"test": "ib_write_bw", "client": "h0", "server": "h1", "size": 65536, "iters": 20}"#;
            check(front::perftest_json(text, opts, 1, None));
        }
    });
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fabric_files_end_in_a_result_or_an_error(base in 0usize..64, ops in ops()) {
        let bases = base_fabrics();
        let text = mutate_toml(&bases[base % bases.len()], &ops);
        exercise_fabric(&text);
    }

    #[test]
    fn broken_fabric_text_is_a_parse_error(base in 0usize..64, cut in 0usize..4000, junk in "[ -~\\n]{0,12}") {
        let bases = base_fabrics();
        let text = &bases[base % bases.len()];
        let mut at = cut % (text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let broken = format!("{}{junk}", &text[..at]);
        exercise_fabric(&broken);
    }

    #[test]
    fn tool_options_end_in_a_result_or_an_error(tool in 0usize..8, ops in ops(), seed in 0u64..4) {
        let fabric = "leaf-spine";
        let (name, base) = TOOLS[tool];
        let opts = mutate_json(base, &ops);
        let what = format!("{name} {opts}");
        guarded(&what, || {
            let r = match name {
                "perftest" => front::perftest_json(fabric, &opts, seed, None),
                "imb" => front::imb_json(fabric, &opts, seed, None),
                "osu" => front::osu_json(fabric, &opts, seed, None),
                "cbench" => front::cbench_json(fabric, &opts, seed, None),
                "hpl" => front::hpl_json(fabric, &opts, seed, None),
                "fio" => front::fio_json(fabric, &opts, seed, None),
                "iperf" => front::iperf_json(fabric, &opts, seed),
                _ => front::flows_json(fabric, &opts, seed, None, Some(2000.0), None),
            };
            check(r);
        });
    }
}

/// Every tool's options as the Python layer sends them.
const TOOLS: [(&str, &str); 8] = [
    (
        "perftest",
        r#"{"test": "ib_write_bw", "client": "h0", "server": "h1", "all_sizes": false, "bidirectional": false, "report_gbits": false, "qps": 1, "size": 4096, "iters": 5}"#,
    ),
    (
        "imb",
        r#"{"benchmarks": ["PingPong"], "job": {"np": 2, "placement": "block"}, "msglog": [0, 3], "iter": 2, "root_shift": false}"#,
    ),
    (
        "osu",
        r#"{"test": "osu_latency", "job": {"np": 2, "placement": "block"}, "sizes": [1, 64], "iterations": 2, "warmup": 1, "full": false}"#,
    ),
    (
        "cbench",
        r#"{"test": "rotate_latency", "job": {"np": 4, "placement": "block"}, "iterations": 2}"#,
    ),
    (
        "hpl",
        r#"{"n": [2000], "nb": [200], "grids": [[1, 2]], "job": {"placement": "block"}}"#,
    ),
    (
        "fio",
        r#"{"name": "fio", "rw": "randwrite", "bs": 4096, "iodepth": 2, "numjobs": 1, "runtime_s": 0.001, "ramp_time_s": 0.0, "clients": ["h0"], "targets": ["h1"]}"#,
    ),
    (
        "iperf",
        r#"{"client": "h0", "server": "h1", "parallel": 1, "bitrate_bps": 0.0, "time_s": 0.001, "interval_s": 0.001, "length": 131072}"#,
    ),
    (
        "flows",
        r#"[{"src": "h0", "dst": "h1", "bytes": 1000, "op": "write", "start_us": 0.0, "repeat": false}, {"src": "h2", "dst": "h1", "bytes": 70000, "op": "read", "start_us": 1.5, "repeat": true}]"#,
    ),
];

#[test]
fn the_bases_are_valid_and_run() {
    for text in base_fabrics() {
        let spec = FabricSpec::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        Net::new(&spec, 1).unwrap();
    }
    for (name, opts) in TOOLS {
        let r = guarded(name, || match name {
            "perftest" => front::perftest_json(&leaf_spine_toml(), opts, 1, None),
            "imb" => front::imb_json(&leaf_spine_toml(), opts, 1, None),
            "osu" => front::osu_json(&leaf_spine_toml(), opts, 1, None),
            "cbench" => front::cbench_json(&leaf_spine_toml(), opts, 1, None),
            "hpl" => front::hpl_json(&leaf_spine_toml(), opts, 1, None),
            "fio" => front::fio_json(&leaf_spine_toml(), opts, 1, None),
            "iperf" => front::iperf_json(&leaf_spine_toml(), opts, 1),
            _ => front::flows_json(&leaf_spine_toml(), opts, 1, None, Some(2000.0), None),
        });
        r.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// The `leaf-spine` preset's TOML text (the front door takes fabric text).
fn leaf_spine_toml() -> String {
    fabriclab_core::config::preset_toml("leaf-spine")
        .unwrap()
        .to_string()
}
