# Entry points for developers and CI. `make test` is all a fresh machine needs.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

.PHONY: test envtest lint fmt crds local-up local-down images e2e conformance

## Provision the control-plane binaries (cached) and run every test, integration tests included.
test:
	@hack/setup-helm.sh
	@assets=$$(hack/setup-envtest.sh); \
	export KUBEBUILDER_ASSETS="$$assets"; \
	if cargo nextest --version >/dev/null 2>&1; then \
		cargo nextest run --workspace --exclude e2e --all-targets --no-fail-fast; \
		echo "The 15 longest tests (start: seconds after the first test started):"; \
		python3 hack/junit-timeline.py --slowest 15 "$${CARGO_TARGET_DIR:-target}/nextest/default/junit.xml" || true; \
	else \
		cargo test --workspace --exclude e2e --all-targets --no-fail-fast; \
	fi

## Print the KUBEBUILDER_ASSETS directory (provisioning it first if needed).
envtest:
	@hack/setup-envtest.sh

## Formatting, lints and the code's shape (no import circle, no file over 600 lines, no function
## over 120 lines: hack/structure.py), as CI enforces them.
lint:
	cargo fmt --all -- --check
	python3 hack/structure.py --check
	cargo clippy --workspace --all-targets -- -D warnings

fmt:
	cargo fmt --all

## Regenerate crds/ from the API types.
crds:
	cargo run -q -p api --bin crdgen

## Build the images the local cluster runs (buildah; cached under ~/.cache/gardener-rs/images).
images:
	@hack/setup-local.sh
	@assets=$$(hack/setup-envtest.sh --node); hack/images.sh "$$assets" >/dev/null

## Start (or repair) the local cluster and install the garden on it (charts/, with Helm);
## writes .local/kubeconfig. See docs/local-setup.md and docs/deployment.md.
local-up:
	@hack/setup-local.sh
	@assets=$$(hack/setup-envtest.sh --node); \
	images=$$(hack/images.sh "$$assets"); \
	bins=$$(hack/build-bins.sh); \
	"$$bins/local-cluster" up --assets "$$assets" --images "$$images"; \
	mkdir -p .local/bin && ln -sf "$$assets/kubectl" .local/bin/kubectl; \
	hack/local-garden.sh

## Remove the local cluster and restore the host.
local-down:
	@"$$(hack/build-bins.sh)/local-cluster" down

## End-to-end tests: bring the local cluster up, test it, tear it down, check the host is as before.
## E2E_CONCURRENCY: how many cases run side by side in the first phase (docs/testing.md).
E2E_CONCURRENCY ?= 3
e2e:
	@E2E_CONCURRENCY=$(E2E_CONCURRENCY) hack/e2e.sh

## The upstream Kubernetes conformance suite against a new two-node shoot of the running local
## garden (`make local-up` first); docs/conformance.md. FOCUS narrows it to a subset (a regexp).
conformance:
	@hack/conformance.sh $(if $(FOCUS),--focus '$(FOCUS)')
