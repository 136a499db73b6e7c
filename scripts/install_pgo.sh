#!/usr/bin/env bash
# Install fabriclab built with profile-guided optimisation (PGO): the
# packet engine is 4-10 % faster than a plain `pip install .` (most on
# the runs bound by the event loop; docs/benchmarks.md), with results
# identical to the digit.
#
# Three steps: install a build instrumented to count branches and calls
# (-Cprofile-generate), run a training set of fabriclab's own workloads on
# it (packet engine with and without DCQCN, RoCE, InfiniBand, iWARP, TCP,
# MPI collectives, the flow backend), then rebuild with those counts
# (-Cprofile-use) and install that, with the package's dependencies as
# `pip install .` would. About 2.5 minutes on a 2-core machine, against
# 50 s for the plain build. If a step fails, the plain build is installed
# back (the instrumented one is slow and writes profiles on every run).
#
# It needs llvm-profdata of the LLVM version rustc is built on: rustup's
# llvm-tools component (added here when rustup is present), or one found
# on PATH with the same major version. Without one, it says so and
# installs the plain build; with FABRICLAB_PGO_REQUIRED=1 (CI) it fails
# instead. RUSTFLAGS already set are kept and the PGO flags added.
#
# The profile is the Python extension's: it does not fit the separately
# built `fabriclab-bench` binary (other symbol hashes), so PGO figures are
# measured with `fabriclab bench`. Nothing else should run fabriclab from
# this Python environment meanwhile: it would run the instrumented build.
#
#   bash scripts/install_pgo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
  echo "install_pgo.sh: error: it takes no arguments (got '$1')" >&2
  exit 2
fi
# These would send the profiles elsewhere or override RUSTFLAGS.
unset LLVM_PROFILE_FILE CARGO_ENCODED_RUSTFLAGS

pip_install() {
  python3 -m pip install --quiet --disable-pip-version-check .
}

llvm_major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
host=$(rustc -vV | sed -n 's/^host: //p')
tool="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$tool" ] && command -v rustup >/dev/null 2>&1; then
  if command -v timeout >/dev/null 2>&1; then
    timeout 300 rustup component add llvm-tools >/dev/null 2>&1 || true
  else
    rustup component add llvm-tools >/dev/null 2>&1 || true
  fi
fi
if [ ! -x "$tool" ]; then
  tool=$(command -v "llvm-profdata-$llvm_major" || command -v llvm-profdata || true)
  if [ -n "$tool" ] && ! "$tool" merge --version 2>/dev/null | grep -q "LLVM version $llvm_major\."; then
    tool=""
  fi
fi
if [ -z "$tool" ] || [ ! -x "$tool" ]; then
  echo "install_pgo.sh: no llvm-profdata for LLVM $llvm_major (rustup component add llvm-tools)" >&2
  if [ "${FABRICLAB_PGO_REQUIRED:-0}" = 1 ]; then
    echo "install_pgo.sh: error: FABRICLAB_PGO_REQUIRED=1 and no PGO build is possible" >&2
    exit 1
  fi
  echo "install_pgo.sh: installing the plain build" >&2
  pip_install
  exit 0
fi

user_flags="${RUSTFLAGS:-}"
flags() { echo "${user_flags:+$user_flags }$1"; }
work=$(mktemp -d)
stage=start
finish() {
  status=$?
  rm -rf "$work"
  if [ "$status" != 0 ] && [ "$stage" != start ] && [ "$stage" != done ]; then
    echo "install_pgo.sh: failed after the instrumented build; installing the plain build back" >&2
    RUSTFLAGS="$user_flags" pip_install || echo "install_pgo.sh: that failed too: run pip install ." >&2
  fi
}
trap finish EXIT

echo "1/3 instrumented build"
stage=instrumented
# Without loop vectorisation: rustc 1.95's LLVM 22 crashes (SIGSEGV in
# LoopVectorizationPlanner::tryToBuildVPlanWithVPRecipes) on the
# instrumented fat-LTO build of the extension since the NCCL runtime's
# streams (nccl/streams.rs, 2026-11-28); the plain and the final builds
# compile. The counters are inserted before vectorisation, so the profile
# still fits the final build.
RUSTFLAGS=$(flags "-Cprofile-generate=$work/raw -Cllvm-args=-vectorize-loops=false") pip_install

echo "2/3 training runs"
# The package just installed, whatever `fabriclab` PATH finds; each run's
# output goes to a log, shown if the run fails.
train() {
  if ! python3 -m fabriclab.cli "$@" >"$work/train.log" 2>&1; then
    cat "$work/train.log" >&2
    echo "install_pgo.sh: error: training run 'fabriclab $*' failed" >&2
    exit 1
  fi
}
(
  cd "$work"
  train bench a2a-32 --cc none
  train bench a2a-32 --cc dcqcn
  train bench ns3-hpcc-64
  train bench a2a-128 --backend flow
  train perftest ib_write_bw --fabric heps --client h0 --server h4 --report_gbits
  train perftest ib_write_bw --fabric ihep-ib --client h0 --server h4
  train flows --fabric heps --flow h0:h4:1M --flow h1:h4:1M --flow h2:h4:1M
  train iperf -c h4 --from h0 -t 0.01 -i 0.002 -C reno
  train imb Allreduce Alltoall --fabric eantc-hpc -np 32 -npmin 32 -msglog 10:14
  train imb PingPong --fabric sandia-iwarp -np 2 --hosts h0,h12
  train osu osu_latency --fabric ihep-ib -np 2 --hosts h0,h1
  train cbench rotate_latency -np 16 --fabric sandia-ib --iterations 100
)
shopt -s nullglob
raw=("$work"/raw/*.profraw)
if [ ${#raw[@]} = 0 ]; then
  echo "install_pgo.sh: error: the training runs wrote no profile under $work/raw" >&2
  exit 1
fi
"$tool" merge -o "$work/merged.profdata" "${raw[@]}"

echo "3/3 optimised build"
RUSTFLAGS=$(flags "-Cprofile-use=$work/merged.profdata") pip_install
stage=done
echo "installed fabriclab with PGO (profile merged from ${#raw[@]} raw files)"
