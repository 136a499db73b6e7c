//! HPL (High-Performance Linpack) on the simulated fabric: the tests of an
//! HPL.dat (every combination of N, NB, grid, depth, broadcast and panel
//! variants, in HPL's order), each timed by running its iterations'
//! messages and computation (`sched.rs`) over the fabric, reported as
//! HPL prints them: Time and Gflops = (2/3 N^3 + 3/2 N^2) / Time.
//!
//! A real run has N / NB iterations of hundreds of megabytes each, too
//! many packets to simulate in minutes, so by default the iterations are
//! **sampled**: they are split into `samples` equal strata (default 8), and
//! in each a block of Q consecutive iterations (a full cycle of the
//! panel-owning process columns) is simulated after one lead-in
//! iteration. All blocks run back to back in one simulation, so the skew
//! between ranks and the look-ahead pipeline carry over from block to
//! block as they would through the iterations in between (restarting each
//! sample from a barrier instead underestimates the time: the skew takes
//! tens of iterations to build up). A block's time per iteration, averaged
//! over the ranks, is interpolated quadratically between neighbouring
//! strata and summed over every iteration (`sum_iterations`). Against
//! running every iteration (`samples = 0`), measured: -0.5 % to -1 %
//! (N = 8192 and 32768 on 2 x 4, 4 to 16 strata); in Gflops, 3 strata
//! give +0.7 % on N = 4000 and -5.5 % on N = 2000 (2 x 2, 31
//! iterations), 8 strata -0.4 % and -1.0 %. One or two
//! strata are refused: they cannot follow the quadratic fall of the
//! per-iteration time.
//!
//! The node model is a DGEMM rate per rank (`dgemm_gflops`) and a panel
//! factorisation rate (`pfact_gflops`, default a quarter of it): the
//! figures a user measures on one node, which HPL's efficiency on the
//! fabric is then relative to.
//!
//! Left out (see also `sched.rs`): the residual check (nothing is
//! solved, so the output is that of a run with a threshold of 0: "tests
//! completed without checking"), the backward substitution, and time
//! between tests. Start and end times are printed on a simulated clock
//! that starts at the Unix epoch.

pub mod dat;
pub mod sched;

use self::dat::{parse_dat, Dat, MAX_PARAMS};
use self::sched::{Bcast, Plan, Swap};
use crate::config::FabricSpec;
use crate::error::{arg_err, Result};
use crate::mpi::job::{Job, JobSpec};
use crate::mpi::patterns;
use crate::mpi::program::{Phase, Timing};
use crate::mpi::run::{run_program, ProgramSpec, Progress, RunEnv};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// HPL's options: HPL.dat's settings (given one by one, or as the text of
/// an HPL.dat in `hpl_dat`, explicit settings winning), the job, and the
/// node model.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// Text of an HPL.dat whose settings are the defaults of the rest.
    #[serde(default)]
    pub hpl_dat: Option<String>,
    /// Problem sizes N.
    #[serde(default)]
    pub n: Option<Vec<u64>>,
    /// Block sizes NB (default 192).
    #[serde(default)]
    pub nb: Option<Vec<u64>>,
    /// Process grids [P, Q] (default the most square P x Q = np with P <= Q).
    #[serde(default)]
    pub grids: Option<Vec<[u32; 2]>>,
    /// "row" (default) or "column" process mapping.
    #[serde(default)]
    pub pmap: Option<String>,
    /// Panel factorisations: left, crout, right (default right).
    #[serde(default)]
    pub pfact: Option<Vec<String>>,
    /// Recursive stopping criteria (default 4).
    #[serde(default)]
    pub nbmin: Option<Vec<u32>>,
    /// Panels in recursion (default 2).
    #[serde(default)]
    pub ndiv: Option<Vec<u32>>,
    /// Recursive panel factorisations (default crout).
    #[serde(default)]
    pub rfact: Option<Vec<String>>,
    /// Broadcasts: 1ring, 1ringM, 2ring, 2ringM, blong, blongM (or HPL's
    /// 0..5, 1rg, 1rM, 2rg, 2rM, Lng, LnM; default 1ringM).
    #[serde(default)]
    pub bcast: Option<Vec<String>>,
    /// Look-ahead depths, 0 or 1 (default 1).
    #[serde(default)]
    pub depth: Option<Vec<u32>>,
    /// "bin-exch", "long" or "mix" (default mix).
    #[serde(default)]
    pub swap: Option<String>,
    /// Mix: binary exchange up to this many columns (default 64).
    #[serde(default)]
    pub swap_threshold: Option<u64>,
    /// The job: ranks (default the largest P x Q), ranks per host, hosts,
    /// placement.
    #[serde(default)]
    pub job: JobSpec,
    /// What runs beside the job and what is recorded.
    #[serde(default)]
    pub env: RunEnv,
    /// Sustained DGEMM rate per rank, GFLOPS (default 50).
    #[serde(default)]
    pub dgemm_gflops: Option<f64>,
    /// Panel factorisation rate per rank, GFLOPS (default dgemm / 4).
    #[serde(default)]
    pub pfact_gflops: Option<f64>,
    /// Strata of sampled iterations (default 8; 0 = every iteration).
    #[serde(default)]
    pub samples: Option<u32>,
}

/// One simulated iteration of a sampled test.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IterSample {
    /// First measured iteration (panel index).
    pub k: u64,
    /// Consecutive iterations measured from k.
    pub measured: u64,
    /// Order of the trailing matrix at k, N - k NB.
    pub n_left: u64,
    /// Time per iteration over the measured ones, averaged over the
    /// ranks, s.
    pub time_s: f64,
    /// Iterations of the stratum it stands for.
    pub weight: u64,
}

/// One HPL test (a T/V line).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TestResult {
    /// HPL's encoded variant ("WR11C2R4").
    pub variant: String,
    /// N.
    pub n: u64,
    /// NB.
    pub nb: u64,
    /// P.
    pub p: u32,
    /// Q.
    pub q: u32,
    /// Broadcast name.
    pub bcast: String,
    /// Look-ahead depth.
    pub depth: u32,
    /// Time to solve, s.
    pub time_s: f64,
    /// (2/3 N^3 + 3/2 N^2) / time / 1e9.
    pub gflops: f64,
    /// P x Q x dgemm_gflops: the rate with a free network and no panel
    /// work.
    pub peak_gflops: f64,
    /// gflops / peak_gflops.
    pub efficiency: f64,
    /// Start on the simulated clock, s.
    pub start_s: f64,
    /// Iterations (panels), ceil(N / NB).
    pub iterations: u64,
    /// Iterations simulated (warm-ups included).
    pub simulated_iterations: u64,
    /// The sampled iterations (empty when every iteration ran).
    pub samples: Vec<IterSample>,
    /// Bytes the MPI job moved over the network in the simulated
    /// iterations.
    pub net_bytes: u64,
    /// Events processed.
    pub events: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

/// An HPL run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The settings, as HPL lists them.
    pub settings: Settings,
    /// Per test, in HPL's order (those that ended, when `interrupted`).
    pub tests: Vec<TestResult>,
    /// The run was stopped (Ctrl-C) after `tests` ended and before the
    /// rest: the text then ends after the last of them, as real HPL's
    /// output does when it is killed.
    pub interrupted: bool,
    /// Host of every rank of the largest grid.
    pub rank_hosts: Vec<String>,
    /// Port counters of the last test; in JSON one array per column.
    #[serde(serialize_with = "crate::net::port_reports_as_columns")]
    pub ports: Vec<crate::net::PortReport>,
    /// Port telemetry (with `telemetry_us`) of the last test; in JSON one
    /// array per column.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "crate::net::port_rows_as_columns"
    )]
    pub port_samples: Vec<crate::net::PortSampleRow>,
    /// QP counters of the last test.
    pub qps: Vec<crate::net::QpReport>,
    /// MPI runtime counters of the last test.
    pub mpi: crate::mpi::runtime::MpiCounters,
    /// Background iperf runs of the last test.
    pub iperf: Vec<crate::traffic::iperf::Report>,
}

/// The resolved settings (what HPL's header lists).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Settings {
    /// Ns.
    pub n: Vec<u64>,
    /// NBs.
    pub nb: Vec<u64>,
    /// Row-major mapping.
    pub row_major: bool,
    /// (P, Q).
    pub grids: Vec<[u32; 2]>,
    /// PFACTs, 0 left, 1 Crout, 2 right.
    pub pfact: Vec<u32>,
    /// NBMINs.
    pub nbmin: Vec<u32>,
    /// NDIVs.
    pub ndiv: Vec<u32>,
    /// RFACTs.
    pub rfact: Vec<u32>,
    /// BCASTs, 0..5.
    pub bcast: Vec<u32>,
    /// DEPTHs.
    pub depth: Vec<u32>,
    /// SWAP, 0..2.
    pub swap: u32,
    /// Swapping threshold.
    pub swap_threshold: u64,
    /// L1 no-transposed.
    pub l1_notrans: bool,
    /// U no-transposed.
    pub u_notrans: bool,
    /// Equilibration.
    pub equil: bool,
    /// Alignment.
    pub align: u32,
    /// Ranks.
    pub np: u32,
    /// DGEMM GFLOPS per rank.
    pub dgemm_gflops: f64,
    /// Panel GFLOPS per rank.
    pub pfact_gflops: f64,
    /// Strata (0: every iteration).
    pub samples: u32,
}

fn fact_code(s: &str) -> Result<u32> {
    match s.to_ascii_lowercase().as_str() {
        "0" | "left" => Ok(0),
        "1" | "crout" => Ok(1),
        "2" | "right" => Ok(2),
        _ => arg_err(format!(
            "unknown panel factorisation {s:?}; use left, crout or right (HPL's 0, 1, 2)"
        )),
    }
}

/// Parse a broadcast name or number.
pub fn bcast_code(s: &str) -> Result<u32> {
    match s.to_ascii_lowercase().as_str() {
        "0" | "1ring" | "1rg" => Ok(0),
        "1" | "1ringm" | "1rm" => Ok(1),
        "2" | "2ring" | "2rg" => Ok(2),
        "3" | "2ringm" | "2rm" => Ok(3),
        "4" | "blong" | "long" | "lng" => Ok(4),
        "5" | "blongm" | "longm" | "lnm" => Ok(5),
        _ => arg_err(format!(
            "unknown broadcast {s:?}; use 1ring, 1ringM, 2ring, 2ringM, blong or blongM \
             (HPL's 0..5)"
        )),
    }
}

fn swap_code(s: &str) -> Result<u32> {
    match s.to_ascii_lowercase().replace('_', "-").as_str() {
        "0" | "bin-exch" | "binary-exchange" | "binexch" => Ok(0),
        "1" | "long" | "spread-roll" => Ok(1),
        "2" | "mix" => Ok(2),
        _ => arg_err(format!(
            "unknown swap {s:?}; use bin-exch, long or mix (HPL's 0, 1, 2)"
        )),
    }
}

fn pick<T: Clone>(explicit: &Option<T>, dat: Option<T>, default: T) -> T {
    explicit.clone().or(dat).unwrap_or(default)
}

fn codes(v: &Option<Vec<String>>, f: fn(&str) -> Result<u32>) -> Result<Option<Vec<u32>>> {
    v.as_ref()
        .map(|xs| xs.iter().map(|s| f(s)).collect())
        .transpose()
}

/// The most square P x Q = np with P <= Q.
pub fn square_grid(np: u32) -> [u32; 2] {
    let mut p = (np as f64).sqrt() as u32;
    while p > 1 && np % p != 0 {
        p -= 1;
    }
    [p.max(1), np / p.max(1)]
}

/// Resolve and check the settings.
pub fn settings(o: &Options) -> Result<Settings> {
    let dat: Option<Dat> = o.hpl_dat.as_deref().map(parse_dat).transpose()?;
    let d = dat.as_ref();
    let n = match (&o.n, d) {
        (Some(n), _) => n.clone(),
        (None, Some(d)) => d.n.clone(),
        (None, None) => {
            return arg_err("HPL needs a problem size: give n (N) or an HPL.dat");
        }
    };
    let grids = match (&o.grids, d, o.job.np) {
        (Some(g), _, _) => g.clone(),
        (None, Some(d), _) => d.grids.clone(),
        (None, None, Some(np)) => vec![square_grid(np)],
        (None, None, None) => {
            return arg_err("HPL needs a process grid: give grids ([[P, Q]]), np or an HPL.dat");
        }
    };
    let s = Settings {
        n,
        nb: pick(&o.nb, d.map(|d| d.nb.clone()), vec![192]),
        row_major: match o.pmap.as_deref().map(str::to_ascii_lowercase).as_deref() {
            Some("row" | "0" | "row-major") => true,
            Some("column" | "col" | "1" | "column-major") => false,
            Some(x) => return arg_err(format!("pmap {x:?} is unknown; use row or column")),
            None => d.is_none_or(|d| d.pmap == 0),
        },
        grids,
        pfact: pick(
            &codes(&o.pfact, fact_code)?,
            d.map(|d| d.pfact.clone()),
            vec![2],
        ),
        nbmin: pick(&o.nbmin, d.map(|d| d.nbmin.clone()), vec![4]),
        ndiv: pick(&o.ndiv, d.map(|d| d.ndiv.clone()), vec![2]),
        rfact: pick(
            &codes(&o.rfact, fact_code)?,
            d.map(|d| d.rfact.clone()),
            vec![1],
        ),
        bcast: pick(
            &codes(&o.bcast, bcast_code)?,
            d.map(|d| d.bcast.clone()),
            vec![1],
        ),
        depth: pick(&o.depth, d.map(|d| d.depth.clone()), vec![1]),
        swap: match &o.swap {
            Some(s) => swap_code(s)?,
            None => d.map_or(2, |d| d.swap),
        },
        swap_threshold: pick(&o.swap_threshold, d.map(|d| d.swap_threshold), 64),
        l1_notrans: d.is_some_and(|d| d.l1 != 0),
        u_notrans: d.is_some_and(|d| d.u != 0),
        equil: d.is_none_or(|d| d.equil != 0),
        align: d.map_or(8, |d| d.align),
        np: 0,
        dgemm_gflops: o.dgemm_gflops.unwrap_or(50.0),
        pfact_gflops: 0.0,
        samples: o.samples.unwrap_or(8),
    };
    check(s, o)
}

fn check(mut s: Settings, o: &Options) -> Result<Settings> {
    let lists: [(&str, usize); 9] = [
        ("n", s.n.len()),
        ("nb", s.nb.len()),
        ("grids", s.grids.len()),
        ("pfact", s.pfact.len()),
        ("nbmin", s.nbmin.len()),
        ("ndiv", s.ndiv.len()),
        ("rfact", s.rfact.len()),
        ("bcast", s.bcast.len()),
        ("depth", s.depth.len()),
    ];
    for (name, len) in lists {
        if len == 0 || len > MAX_PARAMS {
            return arg_err(format!(
                "HPL takes 1..{MAX_PARAMS} values of {name}, got {len}"
            ));
        }
    }
    if let Some(&n) = s.n.iter().find(|&&n| n == 0) {
        return arg_err(format!("N = {n}: the matrix order must be at least 1"));
    }
    if let Some(&nb) = s.nb.iter().find(|&&nb| nb == 0 || nb > 4096) {
        return arg_err(format!("NB = {nb}: use a block size of 1..4096"));
    }
    if let Some(g) = s.grids.iter().find(|g| g[0] == 0 || g[1] == 0) {
        return arg_err(format!(
            "grid {}x{}: P and Q must be at least 1",
            g[0], g[1]
        ));
    }
    if let Some(&d) = s.depth.iter().find(|&&d| d > 1) {
        return arg_err(format!(
            "look-ahead depth {d} is not modelled; use 0 or 1 (HPL's usual settings)"
        ));
    }
    for (name, v, max) in [
        ("pfact", &s.pfact, 2),
        ("rfact", &s.rfact, 2),
        ("bcast", &s.bcast, 5),
    ] {
        if let Some(x) = v.iter().find(|&&x| x > max) {
            return arg_err(format!("{name} {x} is not one of HPL's 0..{max}"));
        }
    }
    if s.swap > 2 {
        return arg_err(format!("swap {} is not one of HPL's 0, 1, 2", s.swap));
    }
    // One or two strata can only scale a sample by its weight, which
    // misses the quadratic fall of the per-iteration time (the middle
    // iteration is a quarter of the first, the mean a third): 1 stratum
    // gave 112 % of peak on N = 4000, 2 x 2.
    if s.samples == 1 || s.samples == 2 {
        return arg_err(format!(
            "samples {}: sampling needs at least 3 strata (the per-iteration time is \
             interpolated quadratically between them); use 3 or more, or 0 to simulate \
             every iteration",
            s.samples
        ));
    }
    if let Some(&x) = s.nbmin.iter().chain(&s.ndiv).find(|&&x| x == 0) {
        return arg_err(format!("NBMIN and NDIV must be at least 1, got {x}"));
    }
    if let Some(g) = s.grids.iter().find(|g| g[0].checked_mul(g[1]).is_none()) {
        return arg_err(format!(
            "grid {}x{} is {} processes, more than the 4,294,967,295 an MPI job can have; \
             use a smaller grid",
            g[0],
            g[1],
            g[0] as u64 * g[1] as u64
        ));
    }
    let need = s.grids.iter().map(|g| g[0] * g[1]).max().unwrap_or(1);
    s.np = o.job.np.unwrap_or(need);
    if s.np < need {
        let g = s.grids.iter().find(|g| g[0] * g[1] == need).unwrap();
        return arg_err(format!(
            "grid {}x{} needs {need} processes but np is {}; raise np or use a smaller grid",
            g[0], g[1], s.np
        ));
    }
    let ok = |x: f64| x.is_finite() && x > 0.0;
    if !ok(s.dgemm_gflops) {
        return arg_err(format!(
            "dgemm_gflops must be a positive rate, got {}",
            s.dgemm_gflops
        ));
    }
    s.pfact_gflops = o.pfact_gflops.unwrap_or(s.dgemm_gflops / 4.0);
    if !ok(s.pfact_gflops) {
        return arg_err(format!(
            "pfact_gflops must be a positive rate, got {}",
            s.pfact_gflops
        ));
    }
    // The simulated clock holds 213 days of picoseconds; a factorisation
    // taking more (at the DGEMM rate alone, a lower bound) cannot be timed.
    let min_rate = s.dgemm_gflops.min(s.pfact_gflops) * 1e9;
    for &n in &s.n {
        let days = hpl_flops(n) / (min_rate * s.np as f64) / 86_400.0;
        if days > 100.0 {
            let g = |x: f64| crate::numfmt::fmt_g(x, 4);
            return arg_err(format!(
                "N = {n} on {} processes at {} GFLOPS each would take about {} days \
                 of simulated time, beyond what the simulator's clock holds (213 days); use \
                 a smaller N, more processes or a faster dgemm_gflops",
                s.np,
                g(s.dgemm_gflops),
                g(days.round())
            ));
        }
    }
    Ok(s)
}

/// HPL's T/V code: W, R or C, depth, broadcast, RFACT, NDIV, PFACT, NBMIN.
pub fn variant(
    row_major: bool,
    depth: u32,
    bcast: u32,
    rfact: u32,
    ndiv: u32,
    pfact: u32,
    nbmin: u32,
) -> String {
    let f = |x: u32| ['L', 'C', 'R'][x as usize];
    format!(
        "W{}{depth}{bcast}{}{ndiv}{}{nbmin}",
        if row_major { 'R' } else { 'C' },
        f(rfact),
        f(pfact)
    )
}

/// HPL's operation count for order n.
pub fn hpl_flops(n: u64) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n + 1.5 * n * n
}

/// Run every test of `o` on `spec`.
pub fn run(
    spec: &FabricSpec,
    o: &Options,
    seed: u64,
    mut progress: Option<Progress<'_>>,
) -> Result<Report> {
    let s = settings(o)?;
    let topo = Topology::build(spec)?;
    let job = |np: u32| JobSpec {
        np: Some(np),
        ..o.job.clone()
    };
    let placed = Job::place(&topo, &job(s.np))?;
    let names = topo.host_names();
    let mut tests = Vec::new();
    let mut clock = 0.0;
    let mut last = None;
    let mut interrupted = false;
    for c in combos(&s) {
        let plan = Plan {
            n: c.n,
            nb: c.nb,
            p: c.p,
            q: c.q,
            row_major: s.row_major,
            bcast: Bcast::ALL[c.bcast as usize],
            swap: [Swap::BinExch, Swap::Long, Swap::Mix][s.swap as usize],
            swap_threshold: s.swap_threshold,
            depth: c.depth,
            update_ps_per_flop: 1e3 / s.dgemm_gflops,
            pfact_ps_per_flop: 1e3 / s.pfact_gflops,
        };
        let v = variant(
            s.row_major,
            c.depth,
            c.bcast,
            c.rfact,
            c.ndiv,
            c.pfact,
            c.nbmin,
        );
        let cb: Option<Progress<'_>> = match progress.as_mut() {
            Some(f) => Some(&mut **f),
            None => None,
        };
        let (t, run) = match run_test(spec, &plan, &job(c.p * c.q), &s, o, seed, v, clock, cb) {
            // Check-only mode: each test checks its input and stops, and
            // the next is checked.
            Ok(None) if crate::interrupt::checking() => continue,
            // Stopped (Ctrl-C): the tests that ended are the report, as
            // the lines real HPL printed before it was stopped.
            Ok(None) => {
                interrupted = true;
                break;
            }
            r => r?.expect("a test that was not stopped"),
        };
        clock += t.time_s;
        tests.push(t);
        last = Some(run);
    }
    let Some(run) = last else {
        return Err(crate::Error::Stopped(
            "HPL was stopped before its first test ended".into(),
        ));
    };
    Ok(Report {
        settings: s,
        tests,
        interrupted,
        rank_hosts: placed
            .rank_host
            .iter()
            .map(|&h| names[h as usize].clone())
            .collect(),
        ports: run.summary.ports,
        port_samples: run.summary.port_samples,
        qps: run.summary.qps,
        mpi: run.summary.mpi,
        iperf: run.summary.iperf,
    })
}

/// One test's choices.
struct Combo {
    p: u32,
    q: u32,
    n: u64,
    nb: u64,
    depth: u32,
    bcast: u32,
    rfact: u32,
    pfact: u32,
    nbmin: u32,
    ndiv: u32,
}

/// Every test, in HPL_pddriver's loop order: grid, N, NB, depth,
/// broadcast, RFACT, PFACT, NBMIN, NDIV.
fn combos(s: &Settings) -> Vec<Combo> {
    let mut v = Vec::new();
    for &[p, q] in &s.grids {
        for &n in &s.n {
            for &nb in &s.nb {
                for &depth in &s.depth {
                    for &bcast in &s.bcast {
                        for &rfact in &s.rfact {
                            for &pfact in &s.pfact {
                                for &nbmin in &s.nbmin {
                                    for &ndiv in &s.ndiv {
                                        v.push(Combo {
                                            p,
                                            q,
                                            n,
                                            nb,
                                            depth,
                                            bcast,
                                            rfact,
                                            pfact,
                                            nbmin,
                                            ndiv,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    v
}

/// Iterations run before a stratum's measured block, to absorb the jump
/// from the previous block's larger iterations.
const LEAD_IN: u64 = 1;

/// Strata of the iterations 0..k_all: (first iteration, iterations).
pub fn strata(k_all: u64, samples: u32) -> Vec<(u64, u64)> {
    let s = (samples as u64).min(k_all);
    (0..s)
        .map(|i| {
            let (lo, hi) = (k_all * i / s, k_all * (i + 1) / s);
            (lo, hi - lo)
        })
        .collect()
}

/// The iterations measured in stratum (lo, w): `m` consecutive ones
/// (at most w) centred in it; (first, count).
pub fn measured(lo: u64, w: u64, m: u64) -> (u64, u64) {
    let m = m.clamp(1, w);
    (lo + (w - m) / 2, m)
}

/// Total time of every iteration from the sampled ones: within each
/// stratum, the quadratic through the nearest three samples (its own and
/// its neighbours', the end ones at the ends) summed over the stratum's
/// iterations. Per-iteration time is close to a quadratic in the iteration
/// index (the update's flops fall as the square of the trailing order), so
/// this is exact for a quadratic, where the stratum's own sample times its
/// weight undershoots by about 1 / (4 S^2). Fewer than three samples:
/// sample times weight.
pub fn sum_iterations(samples: &[IterSample]) -> f64 {
    let n = samples.len();
    if n < 3 {
        return samples.iter().map(|x| x.time_s * x.weight as f64).sum();
    }
    let mut lo = 0u64;
    let mut total = 0.0;
    for (i, s) in samples.iter().enumerate() {
        let j = i.saturating_sub(1).min(n - 3);
        let pts: Vec<(f64, f64)> = samples[j..j + 3]
            .iter()
            .map(|x| (x.k as f64 + (x.measured - 1) as f64 / 2.0, x.time_s))
            .collect();
        let q = |x: f64| {
            (0..3)
                .map(|a| {
                    let l: f64 = (0..3)
                        .filter(|&b| b != a)
                        .map(|b| (x - pts[b].0) / (pts[a].0 - pts[b].0))
                        .product();
                    pts[a].1 * l
                })
                .sum::<f64>()
        };
        total += (lo..lo + s.weight).map(|k| q(k as f64)).sum::<f64>();
        lo += s.weight;
    }
    total
}

#[allow(clippy::too_many_arguments)]
fn run_test(
    spec: &FabricSpec,
    plan: &Plan,
    job: &JobSpec,
    s: &Settings,
    o: &Options,
    seed: u64,
    variant: String,
    start_s: f64,
    progress: Option<Progress<'_>>,
) -> Result<Option<(TestResult, crate::mpi::run::ProgramRun)>> {
    let k_all = plan.panels();
    let np = plan.p * plan.q;
    let every = s.samples == 0 || s.samples as u64 >= k_all;
    // Call 0 is the prologue; then either every iteration, or for each
    // stratum its sampled iteration after the one before it, all back to
    // back: the ranks' skew and the pipeline of look-ahead carry over from
    // one sample to the next, as they would through the iterations between.
    let plan_strata = if every {
        Vec::new()
    } else {
        strata(k_all, s.samples)
    };
    let mut order: Vec<u64> = Vec::new();
    if every {
        order.extend(0..k_all);
    } else {
        for &(lo, w) in &plan_strata {
            let (k0, m) = measured(lo, w, plan.q as u64);
            let next = order.last().map_or(0, |&x| x + 1);
            order.extend(k0.saturating_sub(LEAD_IN).max(next)..k0 + m);
        }
    }
    let mut scheds = vec![plan.prologue()];
    scheds.extend(order.iter().map(|&k| plan.iteration(k)));
    let calls = scheds.len() as u32;
    let phases = vec![Phase {
        scheds: (0..calls).collect(),
        setup: None,
        n: np,
        warmup: 0,
        reps: calls,
        timing: Timing::Loop,
        label: format!(
            "HPL N={} NB={} {}x{}, {} of {k_all} iterations",
            plan.n,
            plan.nb,
            plan.p,
            plan.q,
            order.len()
        ),
    }];
    let program = ProgramSpec {
        scheds,
        sync: patterns::sync_barrier(np),
        phases,
        keep_samples: true,
        executor: None,
    };
    let run = run_program(spec, job, &o.env, program, seed, progress)?;
    if run.summary.interrupted {
        // HPL's figures need the whole test; a stopped one has none.
        return Ok(None);
    }
    let ph = &run.phases[0];
    // Time of call i (i >= 1), averaged over the ranks: from each rank's
    // end of the call before to its end of this one.
    let call_s = |i: usize| {
        ph.call_ends
            .iter()
            .map(|e| (e[i] - e[i - 1]).as_secs_f64())
            .sum::<f64>()
            / np as f64
    };
    let prologue_s = ph
        .call_ends
        .iter()
        .map(|e| e[0].as_secs_f64())
        .fold(0.0, f64::max);
    let (time_s, samples) = if every {
        let total = ph.rank_total.iter().max().map_or(0.0, |t| t.as_secs_f64());
        (total, Vec::new())
    } else {
        let samples: Vec<IterSample> = plan_strata
            .iter()
            .map(|&(lo, w)| {
                let (k, m) = measured(lo, w, plan.q as u64);
                let call = 1 + order.iter().position(|&x| x == k).expect("sampled");
                let t: f64 = (call..call + m as usize).map(call_s).sum();
                IterSample {
                    k,
                    measured: m,
                    n_left: plan.n - k * plan.nb,
                    time_s: t / m as f64,
                    weight: w,
                }
            })
            .collect();
        (prologue_s + sum_iterations(&samples), samples)
    };
    let simulated = order.len() as u64;
    let gflops = hpl_flops(plan.n) / time_s / 1e9;
    let peak = np as f64 * s.dgemm_gflops;
    let t = TestResult {
        variant,
        n: plan.n,
        nb: plan.nb,
        p: plan.p,
        q: plan.q,
        bcast: plan.bcast.name().to_string(),
        depth: plan.depth,
        time_s,
        gflops,
        peak_gflops: peak,
        efficiency: gflops / peak,
        start_s,
        iterations: k_all,
        simulated_iterations: simulated,
        samples,
        net_bytes: run.summary.mpi.net_bytes,
        events: run.summary.events,
        wall_s: run.summary.wall_s,
    };
    Ok(Some((t, run)))
}
