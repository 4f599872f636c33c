#!/usr/bin/env bash
# Prints the resident memory (the RSS of every process in the pod's cgroup, as ps shows it) of
# every pod of a shoot on the local seed: its control plane (shoot--<project>--<shoot>) and its machines
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
    rss=0
    for status in /proc/[0-9]*/status; do
      pid=${status#/proc/}; pid=${pid%/status}
      grep -q "pod$uid" "/proc/$pid/cgroup" 2>/dev/null || continue
      kb=$(awk '$1 == "VmRSS:" {print $2}' "$status" 2>/dev/null || true)
      rss=$((rss + ${kb:-0} * 1024))
    done
    printf '%-40s %-50s %6d MiB\n' "$ns" "$name" $((rss / 1048576))
    total=$((total + rss))
  done < <("$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$ns" get pods -o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.uid}{"\n"}{end}')
  printf '%-40s %-50s %6d MiB\n' "$ns" "(total)" $((total / 1048576))
done
