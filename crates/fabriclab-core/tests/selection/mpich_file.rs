//! MPICH's flattened JSON: `=== collective=X` then rules
//! `cond & cond & ...  =>  MPIR_Name`, first match wins. Only the
//! `mpir/generic.json` sections count (ch4 and posix rules pick
//! compositions that end in the mpir rules for a flat communicator).

use std::collections::BTreeMap;

pub struct Rule {
    pub conds: Vec<String>,
    pub alg: String,
}

pub fn parse(text: &str, out: &mut BTreeMap<String, Vec<Rule>>) {
    let mut in_mpir = false;
    let mut coll = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("#####") {
            in_mpir = h.contains("mpir/generic.json");
            coll = None;
        } else if let Some(c) = line.strip_prefix("=== collective=") {
            coll = Some(c.trim().to_string());
        } else if in_mpir && line.contains("=>") {
            let (lhs, rhs) = line.split_once("=>").unwrap();
            let rule = Rule {
                conds: lhs.split('&').map(|c| c.trim().to_string()).collect(),
                alg: rhs.split_whitespace().next().unwrap().to_string(),
            };
            let c = coll.clone().expect("rule before === header");
            out.entry(c).or_default().push(rule);
        }
    }
}

/// What the conditions look at, computed the way MPICH's csel does.
pub struct Call {
    pub p: u32,
    /// `avg_msg_size`: type size x count (bcast, allreduce, reduce), x
    /// sendcount (alltoall).
    pub avg: u64,
    /// `total_msg_size`: type size x sum of receive counts (allgather(v),
    /// reduce_scatter).
    pub total: u64,
    /// `count` of `count<pow2` (allreduce, reduce).
    pub count: u64,
    pub commutative: bool,
    /// All reduce_scatter blocks equal.
    pub regular: bool,
}

fn num(s: &str) -> u64 {
    s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

pub fn holds(cond: &str, c: &Call) -> bool {
    let pow2 = c.p & (c.p - 1) == 0;
    // All predefined MPI reduction operators commute: a
    // non-commutative one is user-defined.
    let builtin = c.commutative;
    let (key, op, val) = if let Some((k, v)) = cond.split_once("<=") {
        (k, "<=", v)
    } else if let Some((k, v)) = cond.split_once('<') {
        (k, "<", v)
    } else {
        let (k, v) = cond.split_once('=').expect("key=value");
        (k, "=", v)
    };
    match (key, op, val) {
        (_, "=", "any") => true,
        ("comm_type", "=", "intra") => true,
        ("comm_type", "=", "inter") => false,
        // A flat multi-node communicator: never the parent of a
        // node-level hierarchy, never the size of one node.
        ("comm_hierarchy", "=", "parent") => false,
        ("comm_size", "=", "node_comm_size") => false,
        ("comm_size", "<", n) => (c.p as u64) < num(n),
        ("comm_size", "<=", n) => (c.p as u64) <= num(n),
        ("comm_size", "=", "pow2") => pow2,
        ("avg_msg_size", "<=", n) => c.avg <= num(n),
        ("avg_msg_size", "<", n) => c.avg < num(n),
        ("total_msg_size", "<=", n) => c.total <= num(n),
        ("total_msg_size", "<", n) => c.total < num(n),
        ("count", "<", "pow2") => c.count < super::pof2(c.p),
        ("is_commutative", "=", v) => c.commutative == (v == "yes"),
        ("is_op_built_in", "=", v) => builtin == (v == "yes"),
        ("is_sendbuf_inplace", "=", v) => v == "no",
        ("is_block_regular", "=", v) => c.regular == (v == "yes"),
        _ => panic!("unknown MPICH condition {cond:?}"),
    }
}

/// The MPICH algorithm of the first rule whose conditions all hold.
pub fn eval<'a>(rules: &'a [Rule], c: &Call) -> &'a str {
    rules
        .iter()
        .find(|r| r.conds.iter().all(|k| holds(k, c)))
        .map(|r| r.alg.as_str())
        .expect("no MPICH rule matched")
}

/// Every numeric threshold of the rules.
pub fn thresholds(rules: &[Rule], out: &mut Vec<u64>) {
    for r in rules {
        for k in &r.conds {
            if k.starts_with("avg_msg_size") || k.starts_with("total_msg_size") {
                let n = k.trim_start_matches(|c: char| !c.is_ascii_digit());
                if let Ok(n) = n.parse() {
                    out.push(n);
                }
            }
        }
    }
}
