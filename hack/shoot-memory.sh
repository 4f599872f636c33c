#!/usr/bin/env bash
# Prints the resident memory (RSS from the memory cgroup, page cache excluded) of every pod of a
# shoot on the local seed: its control plane (shoot--<project>--<shoot>) and its machines
# (…--machines, which include everything running on the shoot's nodes), and the totals.
# Usage: hack/shoot-memory.sh <project> <shoot>. Reads /sys/fs/cgroup (cgroup v1), so run it as
# root on the machine that runs the local cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
project="${1:?usage: hack/shoot-memory.sh <project> <shoot>}"
shoot="${2:?usage: hack/shoot-memory.sh <project> <shoot>}"
KUBECONFIG_FILE="${KUBECONFIG_FILE:-.local/kubeconfig}"
KUBECTL="${KUBECTL:-.local/bin/kubectl}"
for ns in "shoot--$project--$shoot" "shoot--$project--$shoot--machines"; do
  total=0
  while read -r name uid; do
    [ -n "$uid" ] || continue
    dir=$(find /sys/fs/cgroup/memory/kubepods -maxdepth 2 -type d -name "pod$uid" | head -1)
    rss=0
    [ -n "$dir" ] && rss=$(awk '$1 == "total_rss" {print $2}' "$dir/memory.stat")
    printf '%-40s %-50s %6d MiB\n' "$ns" "$name" $((rss / 1048576))
    total=$((total + rss))
  done < <("$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$ns" get pods -o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.uid}{"\n"}{end}')
  printf '%-40s %-50s %6d MiB\n' "$ns" "(total)" $((total / 1048576))
done
