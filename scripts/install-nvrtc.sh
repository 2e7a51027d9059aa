#!/usr/bin/env bash
# Installs NVRTC (libnvrtc.so.13 and its builtins) from PyPI into .nvrtc/ of
# the repository, with no CUDA toolkit and no GPU, so the NVRTC compile tests
# (tests/nvrtc_compile.rs) can run in CI. Prints the directory to put on
# LD_LIBRARY_PATH as the last line of its output.
#
#   dir=$(scripts/install-nvrtc.sh | tail -n1)
#   LD_LIBRARY_PATH=$dir cargo test --release --test nvrtc_compile -- --include-ignored
#
# The version is pinned to the CUDA 13.0 line, the driver generation the
# crate targets (cudarc feature cuda-13000). Override with NVRTC_VERSION.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.nvrtc"
version="${NVRTC_VERSION:-13.0.88}"
python="${PYTHON:-python3}"

if [ ! -e "$dest/lib/libnvrtc.so.13" ] || [ "$(cat "$dest/VERSION" 2>/dev/null)" != "$version" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$python" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 \
    --platform manylinux2010_x86_64 --python-version 3.12 --implementation py \
    -d "$tmp" "nvidia-cuda-nvrtc==$version" >&2
  wheel=$(ls "$tmp"/nvidia_cuda_nvrtc-*.whl)
  rm -rf "$dest"
  mkdir -p "$dest/lib"
  # The wheel keeps the libraries under nvidia/cu13/lib/.
  (cd "$tmp" && "$python" -m zipfile -e "$wheel" unpacked >&2)
  cp "$tmp"/unpacked/nvidia/cu*/lib/libnvrtc* "$dest/lib/"
  echo "$version" >"$dest/VERSION"
fi
ls "$dest/lib" >&2
echo "$dest/lib"
