#!/usr/bin/env bash
# Builds llama-cpp-python with CUDA for ONE GPU architecture into a venv of its own, installs this
# project there too, and prints how long it took. The build line is the README's (GPU builds):
#   CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90" pip install --force-reinstall --no-cache-dir llama-cpp-python
# with PyPI's sdist unpacked into a folder of its own (built in place, so a rerun is incremental);
# one architecture instead of llama.cpp's default list of seven (a fraction of the CUDA compile);
# LLAVA_BUILD=OFF skips the multimodal library awl never loads.
#
# Usage, from anywhere:
#   bench/cuda_build.sh [VENV]          # VENV defaults to /tmp/awl-cuda-venv (made anew)
#   nohup bench/cuda_build.sh > /tmp/awl-cuda-build.log 2>&1 &     # 2 cores: about an hour
# Environment:
#   CUDA_ARCH       the one architecture to build for: 90 (H100, H200), 89 (L4, RTX 40xx), 86 (A10,
#                   RTX 30xx), 80 (A100), 75 (T4), ... Default: the first GPU's compute capability
#                   (nvidia-smi), else 90.
#   JOBS            parallel compile jobs (default: all cores, `nproc`).
#   LLAMA_VERSION   (default 0.3.36); LLAMA_SRC: an sdist .tar.gz or an unpacked source folder to
#                   build instead of PyPI's sdist.
#   SYSTEM_SITE=1   a venv with --system-site-packages, pip --no-build-isolation --no-deps for the
#                   build (reuse an image's numpy, scikit-build-core, cmake: bench/gpu_check.sh).
#   WHEELHOUSE      a folder of wheels: pip installs from it alone (offline), never from an index.
#   BUILD_DIR       where the sources are unpacked (BUILD_DIR/src-VERSION) and CMake builds
#                   (BUILD_DIR/cmake); default VENV.build, kept: a second run recompiles only what
#                   changed (and llama.cpp uses ccache by itself when it is on PATH).
#   EXTRA_CMAKE_ARGS  more -D options, appended to CMAKE_ARGS.
#   LOGS            where pip's output goes: LOGS"build.log", LOGS"install.log"... (default "VENV.";
#                   "DIR/" puts them in a folder).
# A CUDA toolkit installed from pip wheels (nvidia-cuda-nvcc...) may lack cuBLAS and the driver
# stub libcuda.so that ggml-cuda links against; the script then fetches cuBLAS of the toolkit's
# version into VENV/cuda-extras (a pip wheel) and writes a libcuda.so stub there, as NVIDIA's own
# toolkit ships in lib64/stubs (it only satisfies the linker: at run time the real driver's
# libcuda.so.1 is needed, and without one `import llama_cpp` fails; `awl doctor` says so).
# The last line is "built in Ns" or "FAIL: ...".
set -uo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-${VENV:-/tmp/awl-cuda-venv}}"
LLAMA_VERSION="${LLAMA_VERSION:-0.3.36}"
JOBS="${JOBS:-$(nproc)}"
BUILD_DIR="${BUILD_DIR:-$VENV.build}"
PY="${PYTHON:-python3}"
LOGS="${LOGS:-$VENV.}"
mkdir -p "$(dirname "${LOGS}x")"
started=$SECONDS
step() { echo; echo "== [$((SECONDS - started))s] $*"; }
fail() { echo "FAIL: $*"; exit 1; }

step "CUDA toolkit"
CUDA_HOME="${CUDA_HOME:-${CUDA_PATH:-}}"
if [[ -z "$CUDA_HOME" ]]; then
    if [[ -x /usr/local/cuda/bin/nvcc ]]; then CUDA_HOME=/usr/local/cuda
    else nvcc_path="$(command -v nvcc)" || fail "no nvcc: install the CUDA toolkit (or set CUDA_HOME)"
        CUDA_HOME="$(dirname "$(dirname "$(readlink -f "$nvcc_path")")")"
    fi
fi
export CUDACXX="${CUDACXX:-$CUDA_HOME/bin/nvcc}"
[[ -x "$CUDACXX" ]] || fail "no nvcc at $CUDACXX (set CUDA_HOME or CUDACXX)"
"$CUDACXX" --version | tail -2
release="$("$CUDACXX" --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')"
read -r cuda_major cuda_minor <<< "$release"
[[ -n "${cuda_major:-}" ]] || fail "cannot read nvcc's release"

if [[ -z "${CUDA_ARCH:-}" ]]; then
    CUDA_ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')"
    [[ "$CUDA_ARCH" =~ ^[0-9]+$ ]] || CUDA_ARCH=90
fi
echo "architecture: $CUDA_ARCH (CUDA_ARCH=NN for another)"

step "venv at $VENV"
rm -rf "$VENV"
venv_args=()
[[ "${SYSTEM_SITE:-0}" == 1 ]] && venv_args+=(--system-site-packages)
"$PY" -m venv "${venv_args[@]}" "$VENV" || fail "venv"
VPY="$VENV/bin/python"
PIP=("$VPY" -m pip install --disable-pip-version-check)
BUILD_PIP=()
if [[ -n "${WHEELHOUSE:-}" && -d "${WHEELHOUSE:-}" ]]; then
    PIP+=(--no-index --find-links "$WHEELHOUSE")  # offline: an index would only be waited on
fi
if [[ "${SYSTEM_SITE:-0}" == 1 ]]; then
    PIP+=(--no-build-isolation)
    BUILD_PIP+=(--no-deps)
    # Without build isolation, what the two builds need must be here: scikit-build-core for
    # llama-cpp-python, setuptools>=68 and wheel for this project (a venv starts with an older setuptools).
    "${PIP[@]}" "scikit-build-core>=0.9.2" "setuptools>=68" wheel > "${LOGS}build-tools.log" 2>&1 \
        || { tail -5 "${LOGS}build-tools.log"; fail "scikit-build-core, setuptools, wheel"; }
fi

# What ggml-cuda links against and this toolkit may lack (a toolkit from pip wheels has no
# cuBLAS and no driver stub): CMake is told where the stand-ins are.
extras="$VENV/cuda-extras"
toolkit_libs=("$CUDA_HOME"/lib64 "$CUDA_HOME"/lib "$CUDA_HOME"/targets/*/lib)
has_lib() {  # has_lib NAME: libNAME.so, unversioned as CMake looks for it, in the toolkit or the loader's cache
    local dir
    for dir in "${toolkit_libs[@]}" "${toolkit_libs[@]/%//stubs}"; do
        [[ -e "$dir/lib$1.so" ]] && return 0
    done
    ldconfig -p 2>/dev/null | grep -q "[[:space:]]lib$1\.so[[:space:]]"
}
cmake_extra=()
if ! has_lib cublas; then
    if [[ "$cuda_major" -ge 13 ]]; then package="nvidia-cublas==$cuda_major.$cuda_minor.*"
    else package="nvidia-cublas-cu$cuda_major==$cuda_major.$cuda_minor.*"; fi
    step "this toolkit has no cuBLAS: $package into $extras"
    "${PIP[@]}" --no-deps --target "$extras/pip" "$package" > "${LOGS}cublas.log" 2>&1 \
        || { tail -5 "${LOGS}cublas.log"; fail "cuBLAS ($package)"; }
    cublas="$(find "$extras/pip" -name 'libcublas.so.*' | head -1)"
    cublas_lt="$(find "$extras/pip" -name 'libcublasLt.so.*' | head -1)"
    [[ -n "$cublas" && -n "$cublas_lt" ]] || fail "no libcublas in $package"
    cmake_extra+=("-DCUDA_cublas_LIBRARY=$cublas" "-DCUDA_cublasLt_LIBRARY=$cublas_lt"
                  "-DCMAKE_CUDA_FLAGS=-I$(dirname "$(dirname "$cublas")")/include")
fi
if ! has_lib cuda; then
    step "this toolkit has no libcuda.so (the driver's stub): writing one to $extras/stubs"
    mkdir -p "$extras/stubs"
    # The driver functions ggml-cuda calls (its virtual memory pool), each a stub that fails
    # (CUDA_ERROR_STUB_LIBRARY). Named libcuda.so, with no libcuda.so.1 beside it, as in
    # NVIDIA's lib64/stubs: the loader never picks it at run time.
    {
        for fn in cuDeviceGet cuDeviceGetAttribute cuGetErrorString cuMemAddressFree cuMemAddressReserve \
                  cuMemCreate cuMemGetAllocationGranularity cuMemMap cuMemRelease cuMemSetAccess cuMemUnmap; do
            echo "int $fn(void) { return 34; }"
        done
    } > "$extras/stubs/libcuda.c"
    cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$extras/stubs/libcuda.so" "$extras/stubs/libcuda.c" \
        || fail "libcuda.so stub"
    cmake_extra+=("-DCUDA_cuda_driver_LIBRARY=$extras/stubs/libcuda.so")
fi

step "build llama-cpp-python $LLAMA_VERSION with CUDA for sm_$CUDA_ARCH ($JOBS jobs, in $BUILD_DIR)"
# The sdist is unpacked into a folder of its own, which pip builds in place: the same paths on
# every run, so CMake's folder stays valid and a rerun is incremental.
if [[ -n "${LLAMA_SRC:-}" && -d "${LLAMA_SRC:-}" ]]; then target="$LLAMA_SRC"
else
    tarball="${LLAMA_SRC:-}"
    if [[ -z "$tarball" ]]; then
        fetch=("$VPY" -m pip download --disable-pip-version-check --no-deps --no-binary :all: -d "$BUILD_DIR/sdist")
        [[ -n "${WHEELHOUSE:-}" && -d "${WHEELHOUSE:-}" ]] && fetch+=(--no-index --find-links "$WHEELHOUSE")
        "${fetch[@]}" "llama-cpp-python==$LLAMA_VERSION" > "${LOGS}sdist.log" 2>&1 \
            || { tail -5 "${LOGS}sdist.log"; fail "llama-cpp-python $LLAMA_VERSION's sources"; }
        tarball="$(ls "$BUILD_DIR"/sdist/llama_cpp_python-"$LLAMA_VERSION".tar.gz)"
    fi
    target="$BUILD_DIR/src-$(basename "$tarball" .tar.gz)"
    if [[ ! -f "$target/pyproject.toml" ]]; then
        rm -rf "$target" && mkdir -p "$target" && tar -xzf "$tarball" -C "$target" --strip-components=1 \
            || fail "unpack $tarball"
    fi
fi
export CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH -DLLAVA_BUILD=OFF ${cmake_extra[*]} ${EXTRA_CMAKE_ARGS:-}"
export CMAKE_BUILD_PARALLEL_LEVEL="$JOBS"
export SKBUILD_BUILD_DIR="$BUILD_DIR/cmake"
command -v ccache > /dev/null && echo "ccache: $(command -v ccache) (llama.cpp's GGML_CCACHE picks it up)"
echo "CMAKE_ARGS=\"$CMAKE_ARGS\" pip install --force-reinstall --no-cache-dir ${BUILD_PIP[*]} $target"
build_started=$SECONDS
"${PIP[@]}" --verbose --force-reinstall --no-cache-dir "${BUILD_PIP[@]}" "$target" > "${LOGS}build.log" 2>&1 \
    || { tail -40 "${LOGS}build.log"; fail "llama-cpp-python build (log: ${LOGS}build.log)"; }
grep -oE "^ *\[[0-9]+/[0-9]+\]" "${LOGS}build.log" | tail -1 | sed 's/^ */build steps: /'
echo "llama-cpp-python compiled and installed in $((SECONDS - build_started))s"

step "install agentworld-local into $VENV"
{
    if [[ ${#BUILD_PIP[@]} -gt 0 ]]; then  # built with --no-deps: whatever of its requirements the image lacks
        mapfile -t needs < <("$VPY" -c "import importlib.metadata as m
print('\n'.join(r.split(';')[0].replace(' ', '') for r in m.requires('llama-cpp-python') or [] if 'extra' not in r))")
        [[ ${#needs[@]} -eq 0 ]] || "${PIP[@]}" "${needs[@]}"
    fi && "${PIP[@]}" -e "$HERE"
} > "${LOGS}install.log" 2>&1 || { tail -20 "${LOGS}install.log"; fail "pip install -e $HERE"; }
"$VPY" -m pip list 2>/dev/null | grep -iE "^(llama.cpp.python|agentworld.local) "

step "what the build links against"
lib="$(ls "$VENV"/lib/python3*/site-packages/llama_cpp/lib/libggml-cuda.so 2>/dev/null | head -1)"
[[ -n "$lib" ]] || fail "no libggml-cuda.so in the venv: the build is not a CUDA build"
ldd "$lib" | grep -E "cuda|cublas" || true
if "$VPY" -c "import llama_cpp" 2> "${LOGS}import.log"; then
    echo "import llama_cpp: ok"
else
    echo "import llama_cpp fails here (expected on a machine without the NVIDIA driver): $(tail -1 "${LOGS}import.log")"
fi
echo
echo "built in $((SECONDS - started))s: $VENV/bin/awl (llama-cpp-python $LLAMA_VERSION, CUDA sm_$CUDA_ARCH)"
