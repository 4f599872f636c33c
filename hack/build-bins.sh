#!/usr/bin/env bash
# Builds every binary of the workspace and prints the directory they are in.
#
# One build (docs/testing.md): `make test` compiles the whole workspace with every test target,
# which turns on the features the tests add (the crates' `testing` fixtures; tokio's `test-util`
# is on in every build, see Cargo.toml). A binary built with fewer features would make cargo
# compile the libraries below it a second time; so every binary the images, `make local-up` and
# `make e2e` run is built here, from the whole workspace with the same features, and is the one
# `make test` already built.
#
# Usage: hack/build-bins.sh [PROFILE]   (default dev; `release` for a real install)
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-dev}"
cargo build -q --profile "$profile" --workspace --bins --features admission/testing,extension-sdk/testing,scheduler/testing >&2
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
echo "$target_dir/$([ "$profile" = dev ] && echo debug || echo "$profile")"
