#!/usr/bin/env bash
# Builds two copies of this checkout with one CARGO_TARGET_DIR, deletes the
# first, and builds the second again: cargo shares the build-script binary
# between them, so anything the build script bakes in at compile time (a
# path) must not point into the deleted copy. `cargo check --lib` is enough
# to run the build script and compile what it generates.
#
# The target dir persists between runs (only this crate's own artefacts
# rebuild), at $SHARED_TARGET_CHECK_DIR or target/shared-target-check.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${SHARED_TARGET_CHECK_DIR:-$PWD/target/shared-target-check}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The working tree as git sees it (tracked and untracked-but-not-ignored).
copy() {
    mkdir -p "$1"
    git ls-files -z --cached --others --exclude-standard |
        xargs -0 tar -cf - | tar -xf - -C "$1"
}
copy "$work/first"
copy "$work/second"

build() {
    (cd "$1" && CARGO_TARGET_DIR="$target" cargo check --lib --quiet)
}
build "$work/first"
build "$work/second"
rm -rf "$work/first"
# Make the second copy's kernels newer, as an edit would, so the build
# script runs again from the shared binary.
touch "$work/second/kernels"/*
build "$work/second"
echo "shared target dir: ok"
