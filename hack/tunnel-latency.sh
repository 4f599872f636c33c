#!/usr/bin/env bash
# Measures what the tunnel (docs/networking.md) costs a user of a shoot of the local garden:
# the round trip of `kubectl exec <pod> -- sh -c :` (median of N, default 50) and the throughput of
# `kubectl port-forward` for 100 MiB from a pod, and the delay of `kubectl logs -f` (a container
# prints the kernel's uptime every 200 ms; the machine is a Pod on this host, so the same kernel
# clock tells when each line arrives: median of N lines). Prints one line per figure.
#   hack/tunnel-latency.sh <shoot kubeconfig> [N]
# It creates the pod `tunnel-latency` (busybox, in `default`) and deletes it at the end. Every
# loop is bounded; nothing leaves the machine (the pod serves the bytes itself).
set -euo pipefail
cd "$(dirname "$0")/.."
kubeconfig="${1:?usage: hack/tunnel-latency.sh <shoot kubeconfig> [N]}"
n="${2:-50}"
KUBECTL="${KUBECTL:-.local/bin/kubectl}"
k() { "$KUBECTL" --kubeconfig "$kubeconfig" "$@"; }
# median: the median of the numbers on standard input, one per line.
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
trap 'k delete pod tunnel-latency --wait=false >/dev/null 2>&1 || true; [ -n "${pf:-}" ] && kill "$pf" 2>/dev/null || true' EXIT
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: tunnel-latency, namespace: default}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: serve
    image: gardener-rs.local/busybox:1.35.0
    # 100 MiB to each connection on port 8080, as long as the pod lives.
    command: ["sh", "-c", "while true; do head -c 104857600 /dev/zero | nc -l -p 8080; done"]
  - name: tick
    image: gardener-rs.local/busybox:1.35.0
    command: ["sh", "-c", "while true; do cat /proc/uptime; sleep 0.2; done"]
YAML
k wait --for=condition=Ready pod/tunnel-latency --timeout=120s >/dev/null
times=()
for _ in $(seq 1 "$n"); do
  t0=$(date +%s%N)
  k exec tunnel-latency -- sh -c :
  times+=($(( ($(date +%s%N) - t0) / 1000000 )))
done
exec_median=$(printf '%s\n' "${times[@]}" | median)
echo "exec round trip: median ${exec_median} ms of $n (min $(printf '%s\n' "${times[@]}" | sort -n | head -1), max $(printf '%s\n' "${times[@]}" | sort -n | tail -1))"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
forwarding=$(mktemp)
k port-forward pod/tunnel-latency "$port:8080" >"$forwarding" 2>&1 &
pf=$!
# Ready when it says so (a probe connection would take the pod's one listener).
for _ in $(seq 1 50); do grep -q "^Forwarding from" "$forwarding" && break; sleep 0.2; done
rm -f "$forwarding"
# Reads 100 MiB from the forwarded port (bounded by 120 s) and prints "<bytes> <ms>".
read_all() {
  python3 - "$port" <<'PY'
import socket, sys, time
want = 100 * 1024 * 1024
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=120)
t0, got = time.monotonic(), 0
while got < want:
    chunk = s.recv(1 << 20)
    if not chunk:
        break
    got += len(chunk)
print(got, int((time.monotonic() - t0) * 1000))
PY
}
read -r bytes ms < <(read_all)
echo "port-forward: $bytes bytes in $ms ms ($(python3 -c "print(round($bytes / 1048576 / max($ms, 1) * 1000, 1))") MiB/s)"
# logs -f: the delay of each line (host uptime at arrival - uptime the line carries), N lines,
# bounded by 30 s.
delays=$(timeout 30 "$KUBECTL" --kubeconfig "$kubeconfig" logs -f tunnel-latency -c tick --tail=0 | python3 -c '
import sys
n, out = int(sys.argv[1]), []
for line in sys.stdin:
    now = float(open("/proc/uptime").read().split()[0])
    out.append(round((now - float(line.split()[0])) * 1000))
    if len(out) >= n:
        break
print(" ".join(map(str, out)))
' "$n" || true)
[ -n "$delays" ] || { echo "logs -f: no line arrived within 30 s" >&2; exit 1; }
echo "logs -f delay: median $(printf '%s\n' $delays | median) ms of $(echo $delays | wc -w) lines (resolution 10 ms)"
