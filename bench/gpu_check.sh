#!/usr/bin/env bash
# GPU check for `awl doctor`, the offload plan and `--gpu-layers auto`, on a machine with an
# NVIDIA GPU and the CUDA toolkit (nvcc):
#   1. builds llama-cpp-python with CUDA for this GPU's architecture into a fresh venv and installs
#      this project there: bench/cuda_build.sh (CMAKE_ARGS="-DGGML_CUDA=on ...", the README's line);
#   2. writes the tiny GGUF fixtures;
#   3. runs `awl doctor --json` and `awl models info FIXTURE --plan --json`;
#   4. runs a short `awl run --gpu-layers auto --verbose` on the qwen35moe fixture and checks
#      llama.cpp's "offloaded N/M layers to GPU" line (N > 0);
#   5. asks for a context whose KV cache cannot fit in GPU memory with `--gpu-layers all`, and
#      checks that the load retries once with a smaller plan and says so;
#   6. bench/offload_speed.py on a wide qwen35moe fixture and on Gemma 3 270M (when a copy is
#      here: $GEMMA, tests/.cache/gguf/, or the Hugging Face cache): tokens per second for the CPU,
#      a layer split, experts in RAM (--cpu-moe, --n-cpu-moe) and full offload, with and without
#      flash attention; checks that llama.cpp placed the experts in RAM as asked;
#   7. bench/speculation.py and bench/session_loop.py with every layer on the GPU: whether
#      `--speculate auto` pays there, and awl's Python work per token at GPU speeds.
# Everything it prints and writes lands in $OUT_DIR; the last line is PASS or FAIL.
#
# Usage, from the repository root:
#   bench/gpu_check.sh                  # needs network for pip (llama-cpp-python sdist, missing deps)
#   bench/gpu_check.sh prepare          # here, with network: write .gpucheck/ (a trimmed
#                                       # llama-cpp-python sdist + wheels of pure-Python deps), so that
#   bench/gpu_check.sh                  # runs offline on a machine that has .gpucheck/ (carry it)
# Environment: LLAMA_SRC (sdist .tar.gz or unpacked dir; default .gpucheck/llama-src.tar.gz, else PyPI),
#   WHEELHOUSE (default .gpucheck/wheels), VENV (default /tmp/awl-gpu-venv), OUT_DIR (default
#   ${OUT:-/tmp/awl-gpu-check}), JOBS (default: all cores). Budget: under 10 minutes on 16 cores.
set -uo pipefail

LLAMA_VERSION="${LLAMA_VERSION:-0.3.36}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
cd "$HERE"
CACHE="$HERE/.gpucheck"
PY="${PYTHON:-python3}"

if [[ "${1:-}" == "prepare" ]]; then
    set -e
    mkdir -p "$CACHE/wheels"
    grep -qx '/.gpucheck/' "$HERE/.git/info/exclude" 2>/dev/null || echo '/.gpucheck/' >> "$HERE/.git/info/exclude"
    src="${LLAMA_SRC:-}"
    if [[ -z "$src" ]]; then
        "$PY" -m pip download --no-deps --no-binary :all: -d "$CACHE" "llama-cpp-python==$LLAMA_VERSION"
        src="$CACHE/llama_cpp_python-$LLAMA_VERSION.tar.gz"
    fi
    work="$(mktemp -d)"
    if [[ -d "$src" ]]; then cp -r "$src" "$work/"; else tar -xzf "$src" -C "$work"; fi
    top="$(ls "$work")"
    # What the CUDA build never reads: git history, model files, docs, media, tests, examples,
    # the server's web UI, other GPU backends (the sdist is 290 MB unpacked; this leaves ~30 MB).
    rm -rf "$work/$top/.git"
    (cd "$work/$top/vendor/llama.cpp" && rm -rf .git models docs media benches tests examples pocs .github \
        tools/ui tools/server && cd ggml/src && ls -d ggml-*/ | grep -vE '^ggml-(cpu|cuda|blas)/$' | xargs rm -rf)
    tar -czf "$CACHE/llama-src.tar.gz" -C "$work" "$top"
    rm -rf "$work" "$CACHE/llama_cpp_python-$LLAMA_VERSION.tar.gz"
    # Pure-Python dependencies that a CUDA image may lack (numpy, jinja2, typer, rich... it usually has),
    # and the build tools bench/cuda_build.sh installs into its venv (SYSTEM_SITE=1: no build isolation).
    "$PY" -m pip download --no-deps --only-binary=:all: -d "$CACHE/wheels" \
        diskcache gguf platformdirs tomli-w typing-extensions "setuptools>=68" wheel "scikit-build-core>=0.9.2" pathspec
    du -sh "$CACHE"/* && echo "carry .gpucheck with the working tree"
    exit 0
fi

OUT_DIR="${OUT_DIR:-${OUT:-/tmp/awl-gpu-check}}"
VENV="${VENV:-/tmp/awl-gpu-venv}"
JOBS="${JOBS:-$(nproc)}"
WHEELHOUSE="${WHEELHOUSE:-$CACHE/wheels}"
LLAMA_SRC="${LLAMA_SRC:-$CACHE/llama-src.tar.gz}"
mkdir -p "$OUT_DIR"
LOG="$OUT_DIR/gpu_check.log"
exec > >(tee "$LOG") 2>&1
started=$SECONDS
step() { echo; echo "== [$((SECONDS - started))s] $*"; }
fail() { echo "FAIL: $*"; exit 1; }

step "machine"
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version,compute_cap --format=csv || fail "no nvidia-smi"
command -v nvcc >/dev/null && nvcc --version | tail -2 || fail "no nvcc (the CUDA toolkit is needed to build)"

step "build llama-cpp-python $LLAMA_VERSION with CUDA and install agentworld-local: bench/cuda_build.sh ($JOBS jobs)"
# A venv with the system site-packages (the image's numpy, jinja2, typer, rich, scikit-build-core,
# cmake); pip's output in $OUT_DIR/build.log and install.log.
build_env=(SYSTEM_SITE=1 JOBS="$JOBS" LLAMA_VERSION="$LLAMA_VERSION" LOGS="$OUT_DIR/" PYTHON="$PY")
[[ -e "$LLAMA_SRC" ]] && build_env+=(LLAMA_SRC="$LLAMA_SRC")
[[ -d "$WHEELHOUSE" ]] && build_env+=(WHEELHOUSE="$WHEELHOUSE")
env "${build_env[@]}" "$HERE/bench/cuda_build.sh" "$VENV" || fail "CUDA build (bench/cuda_build.sh)"
VPY="$VENV/bin/python"
AWL=("$VPY" -m agentworld_local.cli.main)
export AWL_HOME="$OUT_DIR/home"

step "fixtures"
"$VPY" -m agentworld_local.fixtures.tiny_gguf "$OUT_DIR/fixtures" || fail "fixtures"
QWEN="$(ls "$OUT_DIR"/fixtures/tiny-qwen35moe-*.gguf | head -1)"

step "awl doctor"
"${AWL[@]}" doctor
"${AWL[@]}" doctor --json > "$OUT_DIR/doctor.json" || fail "doctor --json"
"$VPY" - "$OUT_DIR/doctor.json" <<'PY' || fail "doctor does not see a CUDA build with a device"
import json, sys
facts = json.load(open(sys.argv[1]))
build = facts["build"]
print("gpu_offload:", build["gpu_offload"], "backend:", build["gpu_backend"], "devices:", [d["name"] for d in build["devices"]])
assert build["gpu_offload"] and build["gpu_backend"] == "CUDA" and build["devices"], build
assert build["devices"][0]["free_bytes"], "llama.cpp reports no free memory"
PY

step "awl models info --plan"
"${AWL[@]}" models info "$QWEN" --plan --ctx 4096
"${AWL[@]}" models info "$QWEN" --plan --ctx 4096 --json > "$OUT_DIR/plan.json" || fail "models info --plan"
planned="$("$VPY" -c "import json,sys; p=json.load(open(sys.argv[1]))['plan']; print(p['gpu_layers'], p['max_layers'])" "$OUT_DIR/plan.json")"
echo "plan: $planned (gpu_layers max_layers)"

# A short session with `--gpu-layers auto`; prints llama.cpp's "offloaded N/M layers to GPU" line.
run_auto() {
    local model="$1" tag="$2"
    echo "ls -la" | "${AWL[@]}" run --model "$model" --gpu-layers auto --verbose --think 4 --max-tokens 16 \
        --ctx 4096 --out "$OUT_DIR/session-$tag.jsonl" > "$OUT_DIR/run-$tag.out" 2> "$OUT_DIR/run-$tag.log"
    local rc=$?
    grep -E "^awl: |offloaded [0-9]+/[0-9]+ layers|CUDA0 model buffer|CUDA0 KV buffer|CUDA0 RS buffer|CUDA0 compute buffer|llama_kv_cache: size" \
        "$OUT_DIR/run-$tag.log"
    tail -3 "$OUT_DIR/run-$tag.log"
    [[ $rc -eq 0 ]] || fail "awl run ($tag) exited $rc"
    line="$(grep -oE "offloaded [0-9]+/[0-9]+ layers to GPU" "$OUT_DIR/run-$tag.log" | tail -1)"
    [[ -n "$line" ]] || fail "$tag: no 'offloaded N/M layers to GPU' line in llama.cpp's log"
    local n="${line#offloaded }"; n="${n%%/*}"
    [[ "$n" -gt 0 ]] || fail "$tag: auto offloaded no layer: $line"
    echo "evidence ($tag): $line"
}

step "awl run --gpu-layers auto --verbose: plain attention (llama fixture)"
run_auto "$(ls "$OUT_DIR"/fixtures/tiny-llama-*.gguf | head -1)" llama
step "awl run --gpu-layers auto --verbose: hybrid DeltaNet + MoE (qwen35moe fixture)"
run_auto "$QWEN" qwen35moe
echo "plan said: $planned (gpu_layers max_layers)"

step "out of memory on the GPU: one retry with a smaller plan"
"$VPY" - "$OUT_DIR" <<'PY' > "$OUT_DIR/oom.log" 2>&1
import sys
from pathlib import Path
sys.path.insert(0, ".")
from tests.wide_kv_gguf import write_wide_kv_llama
from agentworld_local.engine.llama import LlamaBackend, build_devices
out = Path(sys.argv[1])
model = out / "wide-kv.gguf"
per_token = write_wide_kv_llama(model)
free = sum(d.free_bytes or 0 for d in build_devices())
n_ctx = (2 * free // per_token + 4095) // 4096 * 4096  # a KV cache twice the free GPU memory
notes = []
backend = LlamaBackend(model, n_ctx=n_ctx, gpu_layers="all", notice=notes.append)
print("asked", n_ctx, "got", backend.n_ctx, "gpu_layers", backend.gpu_layers)
print("notices:", notes)
assert backend.n_ctx < n_ctx and len(notes) == 1 and "retrying once" in notes[0], notes
PY
rc=$?
grep -vE "^(llama|load|print_info|graph|sched|create_tensor)" "$OUT_DIR/oom.log" | tail -8
[[ $rc -eq 0 ]] || fail "out-of-memory retry"

step "offload speed: CPU, layer split, experts in RAM, full offload (tokens per second)"
models=()
gemma="${GEMMA:-$(ls "$HERE"/tests/.cache/gguf/gemma-3-270m*.gguf ~/.cache/huggingface/hub/models--*gemma-3-270m*/snapshots/*/*.gguf 2>/dev/null | head -1)}"
if [[ -n "$gemma" && -f "$gemma" ]]; then models+=(--model "$gemma"); else echo "Gemma 3 270M: no copy here (set GEMMA=FILE.gguf); the fixture only"; fi
fixture="$("$VPY" -c "
import sys; from pathlib import Path; sys.path.insert(0, 'bench')
from offload_speed import BENCH_SIZES
from agentworld_local.fixtures.tiny_gguf import write_qwen35moe_fixture
print(write_qwen35moe_fixture(Path(sys.argv[1]) / 'bench-qwen35moe-moe.gguf', **BENCH_SIZES))" "$OUT_DIR")" || fail "bench fixture"
"$VPY" bench/offload_speed.py --model "$fixture" "${models[@]}" --prompt 512 --decode 128 | tee "$OUT_DIR/offload_speed.txt"
[[ ${PIPESTATUS[0]} -eq 0 ]] || fail "offload speed benchmark"
# The fixture's "experts in RAM" row: every layer on the GPU, 3 expert tensors per layer placed in RAM.
grep -E "^  experts in RAM +[0-9]+/[0-9]+ +24 " "$OUT_DIR/offload_speed.txt" >/dev/null \
    || fail "--cpu-moe: llama.cpp did not keep the fixture's 24 expert tensors in RAM with every layer on the GPU"

step "speed where users wait, on the GPU: prompt-lookup drafting (auto against off and on), a whole session against an ideal loop"
# Ratios to read (docs/PERFORMANCE.md has the CPU's); only a crash fails the check.
AWL_BENCH_GPU_LAYERS=all "$VPY" bench/speculation.py | tee "$OUT_DIR/speculation.md"
[[ ${PIPESTATUS[0]} -eq 0 ]] || fail "speculation benchmark"
AWL_BENCH_GPU_LAYERS=all "$VPY" bench/session_loop.py | tee "$OUT_DIR/session_loop.md"
[[ ${PIPESTATUS[0]} -eq 0 ]] || fail "session loop benchmark"

echo
echo "PASS in $((SECONDS - started))s: qwen35moe fixture $line"
