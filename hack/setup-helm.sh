#!/usr/bin/env bash
# Makes Helm available to scripts and tests: hack/helm.py drives Helm's own Go library through
# the PyPI package helm-sdkpy (Helm is not in Debian). Idempotent; prints nothing on success.
set -euo pipefail
command -v python3 >/dev/null || { echo "setup-helm: python3 is missing (apt-get install python3 python3-pip)" >&2; exit 1; }
if ! python3 -c 'import helm_sdkpy, yaml' 2>/dev/null; then
  echo "setup-helm: installing helm-sdkpy and PyYAML with pip" >&2
  # helm-sdkpy declares Python >= 3.12 but works on 3.11, which is what Debian 12 has.
  python3 -m pip install --quiet --disable-pip-version-check --ignore-requires-python helm-sdkpy pyyaml >&2
fi
python3 -c 'import helm_sdkpy' 2>/dev/null || { echo "setup-helm: helm-sdkpy does not import after installing it" >&2; exit 1; }
