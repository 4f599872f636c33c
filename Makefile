# Entry points for developers and CI. `make test` is all a fresh machine needs.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

.PHONY: test envtest lint fmt crds

## Provision the control-plane binaries (cached) and run every test, integration tests included.
test:
	@assets=$$(hack/setup-envtest.sh); \
	export KUBEBUILDER_ASSETS="$$assets"; \
	if cargo nextest --version >/dev/null 2>&1; then \
		cargo nextest run --workspace --all-targets --no-fail-fast; \
	else \
		cargo test --workspace --all-targets --no-fail-fast; \
	fi

## Print the KUBEBUILDER_ASSETS directory (provisioning it first if needed).
envtest:
	@hack/setup-envtest.sh

## Formatting and lints, as CI enforces them.
lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

fmt:
	cargo fmt --all

## Regenerate crds/ from the API types.
crds:
	cargo run -q -p api --bin crdgen
