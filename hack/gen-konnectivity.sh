#!/usr/bin/env bash
# Regenerates crates/konnectivity/src/proto/generated.rs from the vendored apiserver-network-proxy
# protocol files with tonic-prost-build (the versions the crate uses). Needs `protoc`
# (Debian: protobuf-compiler). The output is committed, so an ordinary build needs neither.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || { echo "protoc missing: apt-get install -y protobuf-compiler" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/out"
cat >"$work/Cargo.toml" <<'TOML'
[package]
name = "gen-konnectivity"
version = "0.1.0"
edition = "2021"
[dependencies]
tonic-prost-build = "0.14"
TOML
proto=$(pwd)/crates/konnectivity/proto
cat >"$work/src/main.rs" <<RUST
fn main() -> Result<(), Box<dyn std::error::Error>> {
    // No transport constructor on the clients: AgentServiceClient::connect is the RPC.
    tonic_prost_build::configure().build_transport(false).out_dir("$work/out").compile_protos(
        &["$proto/konnectivity-client/proto/client/client.proto", "$proto/proto/agent/agent.proto"],
        &["$proto"],
    )?;
    Ok(())
}
RUST
(cd "$work" && CARGO_TARGET_DIR="$work/target" cargo run -q)
cp "$work/out/_.rs" crates/konnectivity/src/proto/generated.rs
echo "wrote crates/konnectivity/src/proto/generated.rs"
