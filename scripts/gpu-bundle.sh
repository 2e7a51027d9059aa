#!/usr/bin/env bash
# Builds the release test executables, benches and examples and stages them,
# stripped, with a runner in .gpu/ of the repository this is run from, for a
# GPU machine that has a CUDA driver but no Rust toolchain:
#
#   scripts/gpu-bundle.sh            # then copy .gpu/ over and run
#   bash .gpu/run.sh                 # on the GPU machine, from the repo root
#
# run.sh runs every test executable with --include-ignored and
# TENSOR_REDUCE_REQUIRE_CUDA=1, compute-sanitizer (memcheck, racecheck,
# synccheck) over a few small GPU tests, the quickstart and cudarc_interop
# examples, random cases against torch on the CPU and the GPU
# (scripts/differential.py), and ends with a summary. Logs are packed into $OUT/gpu-logs.tar.gz
# ($OUT unset: .gpu/gpu-logs.tar.gz).
#
# bench.sh regenerates one benchmark table (ours next to the peers):
#
#   bash .gpu/bench.sh gpu sweep sum     # or: cpu, suite, another op
set -euo pipefail

root=$(pwd)
dest="$root/.gpu"
rm -rf "$dest"
mkdir -p "$dest/bin"

stage() { # stage KIND PATH
  local kind=$1 path=$2 name
  name="$kind-$(basename "$path")"
  cp "$path" "$dest/bin/$name"
  strip "$dest/bin/$name" 2>/dev/null || true
  echo "$name"
}

executables() { # JSON on stdin -> executable paths of test/bench targets
  python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        print(m["executable"])
'
}

# With the README's test features; the benches and examples take the same
# ones, so the library builds once.
features=(--features ndarray)
echo "building release tests..." >&2
cargo test --release "${features[@]}" --no-run --message-format=json 2>/dev/null | executables | sort -u >"$dest/tests.list.src"
echo "building benches..." >&2
# The commit the bench tables name, baked in (see benches/common/mod.rs).
TENSOR_REDUCE_BUILD_COMMIT=$(git rev-parse --short=12 HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || TENSOR_REDUCE_BUILD_COMMIT+="+dirty"
export TENSOR_REDUCE_BUILD_COMMIT
# (the library's own bench target has no benchmarks: left out)
cargo bench "${features[@]}" --no-run --message-format=json 2>/dev/null | executables | grep -v '/tensor_reduce-' | sort -u >"$dest/benches.list.src" || true
echo "building examples..." >&2
cargo build --release "${features[@]}" --examples --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        m = json.loads(line)
        if m.get("reason") == "compiler-artifact" and m.get("executable") and "example" in m.get("target", {}).get("kind", []):
            print(m["executable"])
' | sort -u >"$dest/examples.list.src"

: >"$dest/tests.list"; : >"$dest/benches.list"; : >"$dest/examples.list"
while read -r p; do [ -n "$p" ] && stage test "$p" >>"$dest/tests.list"; done <"$dest/tests.list.src"
while read -r p; do [ -n "$p" ] && stage bench "$p" >>"$dest/benches.list"; done <"$dest/benches.list.src"
while read -r p; do [ -n "$p" ] && stage example "$p" >>"$dest/examples.list"; done <"$dest/examples.list.src"
rm -f "$dest"/*.list.src
# The device tool carries at most 64 MiB; the executables are ~10x that
# compressed, so they travel as one xz archive that run.sh unpacks. Most of
# each executable is the same library code: a dictionary larger than one
# executable lets xz find it again in the next (80 MB with xz's default 8
# MiB dictionary, 37 MB with this one, a few minutes on two cores).
tar -C "$dest" -cf - bin | xz --lzma2=preset=6,dict=192MiB >"$dest/bin.tar.xz" && rm -rf "$dest/bin"

cat >"$dest/run.sh" <<'RUNNER'
#!/usr/bin/env bash
# Runs the staged executables on a GPU machine; see scripts/gpu-bundle.sh.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$here/bin" ] || tar -C "$here" -xJf "$here/bin.tar.xz"
# Per-run logs; at the end they are packed into one archive under $OUT
# (the GPU tool brings back only a few files).
logs=$(mktemp -d)
export TENSOR_REDUCE_REQUIRE_CUDA=1
export TENSOR_REDUCE_CACHE_DIR="${TENSOR_REDUCE_CACHE_DIR:-/tmp/tensor-reduce-cache}"
export RUST_BACKTRACE=1
# Limits: seconds per test executable, per sanitizer run, and for the whole
# script (test executables and sanitizer runs that would go past it are
# skipped or stopped, and reported as such, never as passed). Set DEADLINE
# below the device call's limit, so that the summary is printed. On a fresh
# machine the kernel cache is cold: the warm stage compiles every kernel
# first, one NVRTC compile per core (the precompile example), where
# gpu_paths alone took 385-470 s compiling them one at a time. If the whole
# script does not fit one device call, split it with ONLY and STAGES ("warm
# tests" first: later calls on the same machine find the kernels cached).
TEST_TIMEOUT=${TEST_TIMEOUT:-500}
SAN_TIMEOUT=${SAN_TIMEOUT:-120}
DEADLINE=${DEADLINE:-3600}
# Threads per test executable: 1 keeps each test's GPU timing and memory to
# itself; more finish sooner where the kernel cache is cold.
TEST_THREADS=${TEST_THREADS:-1}
# Optional: ONLY, a grep -E pattern selecting test executables; STAGES, a
# subset of "warm tests sanitizers examples differential"; SAN_TOOLS, a
# subset of "memcheck racecheck synccheck"; DIFF_CASES and DIFF_SEED for
# the differential stage.
ONLY=${ONLY:-.}
STAGES=${STAGES:-warm tests sanitizers examples differential}
SECONDS=0
summary=()

# cudarc loads libnvrtc.so.13 by name: find one if the loader does not.
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so\.13'; then
  lib=$(find /usr/local /usr/lib /opt "$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)" \
    -name 'libnvrtc.so.13*' 2>/dev/null | head -1)
  [ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "libnvrtc: ${lib:-NOT FOUND}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2

# Stage 0: every kernel into the cache, compiles on every core at once.
pre=$(grep -m1 precompile "$here/examples.list" || true)
if [[ " $STAGES " == *" warm "* ]] && [ -n "$pre" ]; then
  "$here/bin/$pre" --threads "$(nproc)" 2>&1 | tee "$logs/precompile.log" | tail -3
  summary+=("warm: $(tail -1 "$logs/precompile.log")")
fi

# Stage 1: every test executable, ignored (GPU) tests included. Each runs
# for at most TEST_TIMEOUT and never past DEADLINE: one that would start
# with under 10 s left, or is stopped by the deadline rather than by its own
# limit, counts as not run for time, neither passed nor failed, so that the
# summary is printed before the device call's own limit ends the script.
pass=0; fail=0; failed=(); cut=()
[[ " $STAGES " == *" tests "* ]] && while read -r t; do
  [ -n "$t" ] || continue
  left=$((DEADLINE - SECONDS))
  if [ "$left" -lt 10 ]; then cut+=("$t"); echo "test $t: not run, deadline"; continue; fi
  limit=$(( left < TEST_TIMEOUT ? left : TEST_TIMEOUT ))
  start=$(date +%s)
  timeout "$limit" "$here/bin/$t" --include-ignored --test-threads="$TEST_THREADS" >"$logs/$t.log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1)); status=ok
  elif [ "$rc" -eq 124 ] && [ "$limit" -lt "$TEST_TIMEOUT" ]; then
    cut+=("$t"); status="cut short by the deadline"
  else
    fail=$((fail + 1)); failed+=("$t"); status=FAILED
  fi
  echo "test $t: $status ($(( $(date +%s) - start ))s) $(grep -E '^test result' "$logs/$t.log" | tail -1)"
  grep -E '^test .*(FAILED|ignored)|SKIPPED|panicked' "$logs/$t.log" | head -20
done < <( (grep gpu_paths "$here/tests.list"; grep -v gpu_paths "$here/tests.list") | grep -E "$ONLY")
[[ " $STAGES " == *" tests "* ]] && summary+=("tests: $pass passed, $fail failed${failed[*]:+ (${failed[*]})}, ${#cut[@]} not run or cut short for time${cut[*]:+ (${cut[*]})}")

# Stage 2: compute-sanitizer over a few small GPU tests.
san_tests="${SAN_TESTS:-ragged_short_rows short_rows_strategy packed_short_rows_are_staged row_per_warp_strategy vectorized_dims_strategy misaligned_views_take_the_head_and_tail_paths output_vectorized_columns ragged_columns_strategy warp_split_block_y_reduce cta_split_global_reduce tall_columns_strategy kept_dims_in_the_input_order value_ops_on_every_path stateful_ops_on_every_path}"
gp=$(grep -E '^test-gpu_paths' "$here/tests.list" | head -1)
if [[ " $STAGES " != *" sanitizers "* ]]; then
  :
elif command -v compute-sanitizer >/dev/null && [ -n "$gp" ]; then
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
    log="$logs/sanitizer-$tool.log"
    : >"$log"
    rc_all=0; skipped=0
    for name in $san_tests; do
      if [ $((SECONDS + SAN_TIMEOUT)) -gt "$DEADLINE" ]; then skipped=$((skipped + 1)); continue; fi
      timeout "$SAN_TIMEOUT" compute-sanitizer --tool "$tool" --error-exitcode 99 --target-processes all \
        "$here/bin/$gp" --include-ignored --exact "$name" --test-threads=1 >>"$log" 2>&1 || rc_all=$?
    done
    errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$log" | awk '{s += $3} END {print s + 0}')
    hazards=$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazard' "$log" | awk '{s += $3} END {print s + 0}')
    # A run that matched no test (a name the staged gpu_paths lacks) ran
    # nothing under the tool: it is counted apart, never as ok.
    passed=$(grep -cE 'test result: ok\. [1-9][0-9]* passed' "$log" || true)
    unmatched=$(grep -c '^running 0 tests' "$log" || true)
    echo "sanitizer $tool: $errors errors, $hazards racecheck hazards, $passed test runs ok, $unmatched named no test, $skipped skipped for time, last rc $rc_all"
    summary+=("sanitizer $tool: $errors errors (${hazards} hazards), $passed/$(echo $san_tests | wc -w) test runs ok, $unmatched named no test, $skipped skipped for time")
  done
else
  summary+=("sanitizers: not run (compute-sanitizer or gpu_paths missing)")
fi

# Stage 3: examples that run without arguments and check themselves.
expass=0; exfail=0
[[ " $STAGES " == *" examples "* ]] && while read -r e; do
  [ -n "$e" ] || continue
  case "$e" in *quickstart*|*cudarc_interop*) ;; *) continue ;; esac
  if timeout 300 "$here/bin/$e" >"$logs/$e.log" 2>&1; then expass=$((expass + 1)); else exfail=$((exfail + 1)); fi
  tail -5 "$logs/$e.log"
done <"$here/examples.list"
[[ " $STAGES " == *" examples "* ]] && summary+=("examples: $expass passed, $exfail failed")

# The quickstart's PyTorch twin, where torch is installed: same lines?
qs=$(grep -m1 quickstart "$here/examples.list" || true)
if [[ " $STAGES " == *" examples "* ]] && [ -n "$qs" ] && [ -f "$here/../scripts/quickstart_torch.py" ] && python3 -c 'import torch' 2>/dev/null; then
  python3 "$here/../scripts/quickstart_torch.py" >"$logs/quickstart_torch.log" 2>&1
  if diff <(grep -v '^device' "$logs/$qs.log") <(grep -v '^device' "$logs/quickstart_torch.log") >"$logs/quickstart.diff"; then
    summary+=("quickstart vs torch: identical")
  else
    summary+=("quickstart vs torch: $(grep -c '^<' "$logs/quickstart.diff") lines differ (see quickstart.diff)")
  fi
fi

# Display's expected strings (tests/fixtures/display.txt) against torch's
# own printing of the same expressions, where torch is installed.
if [[ " $STAGES " == *" examples "* ]] && [ -f "$here/../scripts/display_torch_check.py" ] && python3 -c 'import torch' 2>/dev/null; then
  if python3 "$here/../scripts/display_torch_check.py" 2>&1 | diff "$here/../tests/fixtures/display.txt" - >"$logs/display.diff"; then
    summary+=("display fixture vs torch: identical")
  else
    summary+=("display fixture vs torch: $(grep -c '^>' "$logs/display.diff") lines differ (see display.diff)")
  fi
fi

# Random cases against torch on both devices (scripts/differential.py).
diff_ex=$(grep -m1 differential "$here/examples.list" || true)
if [[ " $STAGES " == *" differential "* ]] && [ -n "$diff_ex" ] && python3 -c 'import torch' 2>/dev/null; then
  dd=$(mktemp -d)
  python3 "$here/../scripts/differential.py" gen "$dd" --cases "${DIFF_CASES:-2000}" --seed "${DIFF_SEED:-1}" >/dev/null &&
    timeout 400 "$here/bin/$diff_ex" "$dd" >"$logs/differential.log" 2>&1 &&
    python3 "$here/../scripts/differential.py" check "$dd" --messages >>"$logs/differential.log" 2>&1
  echo "differential: $(grep -m1 '^differential: .*compared' "$logs/differential.log" || echo 'did not finish, see differential.log')"
  grep '^DIFF' "$logs/differential.log" | head -30
  summary+=("$(grep -m1 '^differential: .*compared' "$logs/differential.log" || echo 'differential: did not finish')")
fi

echo "==== summary ===="
printf '%s\n' "${summary[@]}" | tee "$logs/summary.txt"
dest_logs="${OUT:-$here}"
tar -czf "$dest_logs/gpu-logs.tar.gz" -C "$logs" . && echo "logs: $dest_logs/gpu-logs.tar.gz"
RUNNER
chmod +x "$dest/run.sh"

cat >"$dest/bench.sh" <<'BENCH'
#!/usr/bin/env bash
# Regenerates one benchmark table on the GPU machine; see scripts/gpu-bundle.sh
# and docs/PERFORMANCE.md ("How to reproduce").
#
#   bash .gpu/bench.sh gpu|cpu [suite|sweep|FILE.json] [OP] [more arguments for compare_*.py]
#
# gpu: our staged gpu_reduce bench, then torch and CuPy on the same cases
# (scripts/compare_gpu.py); cpu: our staged cpu_reduce bench and torch on
# the CPU, in alternating rounds case by case, with the same threads and
# protocol (scripts/compare_cpu.py). Writes
# BACKEND_SET_OP.md (the table, geometric mean last), .json (ours),
# _peers.json and .log under $OUT ($OUT unset: .gpu/results). Exits non-zero
# when a result of ours failed its check.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$here/bin" ] || tar -C "$here" -xJf "$here/bin.tar.xz"
backend=${1:?usage: bench.sh gpu|cpu [suite|sweep|FILE.json] [OP] [ARGS...]}
set_=${2:-suite}
op=${3:-sum}
shift $(( $# < 3 ? $# : 3 ))
case "$backend" in gpu|cpu) ;; *) echo "bench.sh: backend is gpu or cpu, got $backend" >&2; exit 2 ;; esac
out=${OUT:-$here/results}
mkdir -p "$out"
export TENSOR_REDUCE_CACHE_DIR="${TENSOR_REDUCE_CACHE_DIR:-/tmp/tensor-reduce-cache}"
# A case file is named by its file name.
name="${backend}_$(basename "${set_%.json}")_${op}"
cd "$here/.."
python3 "scripts/compare_$backend.py" --run-ours auto --op "$op" --cases "$set_" \
  --ours "$out/$name.json" --peers-json "$out/${name}_peers.json" --out "$out/$name.md" "$@" \
  2> >(tee "$out/$name.log" >&2)
rc=$?
echo "table: $out/$name.md (exit $rc)"
exit $rc
BENCH
chmod +x "$dest/bench.sh"
du -sh "$dest" >&2
cat "$dest/tests.list" "$dest/benches.list" "$dest/examples.list" >&2
