#!/usr/bin/env bash
# The consortium across real network stacks (issue 15): the coordinator, three nodes and two
# parties, each a separate `vtwin` process in its own Linux network namespace, joined by a
# bridge (veth pairs, 10.77.0.0/24), with a one-way delay of RTT / 2 on every link. Each RTT
# runs a fresh job of ITERS iterations on the Adult workload (K, expected batch 100) and
# reports the coordinator's median ms per iteration (timing.json) against the model
# (R + 2) x RTT / 2 + the no-delay time, R = MPC rounds per iteration (the 2 extra one-way
# hops: request, the parties' upload to the nodes; R + 3 before wire version 15, when the
# coordinator relayed the uploads).
#
#   sudo bench/netns.sh VTWIN OUT [RTT_MS ...]      (default RTTs: 0 1 10 50)
#
# Delay: `tc qdisc ... netem delay` on each namespace's interface where the kernel has netem;
# otherwise vtwin's own receive delay line (`timeouts.receive_delay_ms`, fractional ms, on
# every frame each process receives). The parties' per-party CSVs (with a row-number id
# column, aligned privately at the start of each job) and the keys are written under OUT,
# never in the repository. ADULT (default ../shared/data/adult beside the repository) holds
# adult.data; ITERS defaults to 20; K (default 9: `vtwin train`'s default for the shipped
# schema, vtwin_model::components; 20 with the paper's Betas) is the job's and every
# policy's number of components; ROUNDS (default 98) is R for the model column. RATE (e.g.
# 100mbit; default none) caps every namespace's sending rate with a token bucket (`tc tbf`,
# 64 KB burst, beneath netem where the kernel has it): each role's uplink, so a party's upload
# to two nodes shares its RATE. Needs root (ip netns) and python3. Prints one JSON line per
# RTT and writes OUT/netns.json.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 VTWIN OUT [RTT_MS ...]" >&2; exit 2; }
vtwin=$(realpath "$1")
out=$(mkdir -p "$2" && realpath "$2")
shift 2
rtts=("$@")
[ ${#rtts[@]} -gt 0 ] || rtts=(0 1 10 50)
iters=${ITERS:-20}
components=${K:-9}
rounds=${ROUNDS:-98}
rate=${RATE:-}
here=$(cd "$(dirname "$0")/.." && pwd)
adult=${ADULT:-$here/../shared/data/adult}
[ -f "$adult/adult.data" ] || { echo "$0: no $adult/adult.data (set ADULT)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$0: needs root for ip netns" >&2; exit 2; }

roles=(coord n0 n1 n2 p0 p1)
ips=(10.77.0.2 10.77.0.10 10.77.0.11 10.77.0.12 10.77.0.20 10.77.0.21)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for r in "${roles[@]}"; do ip netns del "vt-$r" 2>/dev/null || true; done
  ip link del vt-br 2>/dev/null || true
}
trap cleanup EXIT
cleanup

ip link add vt-br type bridge
ip link set vt-br up
for i in "${!roles[@]}"; do
  r=${roles[$i]}
  ip netns add "vt-$r"
  ip link add "vt-$r" type veth peer name eth0 netns "vt-$r"
  ip link set "vt-$r" master vt-br up
  ip netns exec "vt-$r" ip addr add "${ips[$i]}/24" dev eth0
  ip netns exec "vt-$r" ip link set eth0 up
  ip netns exec "vt-$r" ip link set lo up
done
netem=0
if ip netns exec vt-coord tc qdisc add dev eth0 root netem delay 1ms 2>/dev/null; then
  ip netns exec vt-coord tc qdisc del dev eth0 root
  netem=1
fi

# Per-party files with an id column; the schema names it.
python3 - "$here/examples/adult/schema.toml" "$adult/adult.data" "$out" <<'EOF'
import csv, sys, tomllib
schema_path, data, out = sys.argv[1:]
text = open(schema_path).read()
schema = tomllib.loads(text)
open(f"{out}/schema.toml", "w").write('id = "row"\n' + text)
rows = list(csv.reader(open(data), skipinitialspace=True))
header, rows = [h.strip() for h in rows[0]], [r for r in rows[1:] if r]
for party in schema["parties"]:
    cols = [c["name"] for c in schema["column"] if c["party"] == party]
    idx = [header.index(c) for c in cols]
    with open(f"{out}/{party}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row"] + cols)
        for n, r in enumerate(rows, 1):
            w.writerow([n] + [r[i].strip() for i in idx])
EOF

results=()
for rtt in "${rtts[@]}"; do
  run="$out/rtt-$rtt"
  rm -rf "$run"
  "$vtwin" keygen --out "$run" --parties demographics,finance >/dev/null
  oneway=$(python3 -c "print($rtt / 2)")
  python3 - "$run" "$out" "$iters" "$oneway" "$netem" "$components" <<'EOF'
import re, sys
run, out, iters, oneway, netem, components = sys.argv[1:]
addr = {"7400": "10.77.0.10", "7401": "10.77.0.11", "7402": "10.77.0.12",
        "7403": "10.77.0.20", "7404": "10.77.0.21"}
delay = "0" if netem == "1" else oneway
for name in ["coordinator", "node-0", "node-1", "node-2", "party-demographics", "party-finance"]:
    p = f"{run}/{name}.toml"
    s = open(p).read()
    s = re.sub(r"127\.0\.0\.1:(74\d\d)", lambda m: f"{addr[m.group(1)]}:{m.group(1)}", s)
    s = re.sub(r"(?m)^receive_delay_ms = .*$", f"receive_delay_ms = {delay}", s)
    # Timing only: a low noise floor so the short job's terms pass every policy.
    s = re.sub(r"(?m)^sigma = .*$", "sigma = 1.0", s)
    s = re.sub(r"(?m)^components = .*$", f"components = {components}", s)
    if name.startswith("party-"):
        party = name[len("party-"):]
        s = f'schema = "{out}/schema.toml"\n' + s
        s = re.sub(r"\[data\]\nkind = \"demo\"\nrows = \d+\nseed = \d+",
                   f'[data]\nkind = "csv"\npath = "{out}/{party}.csv"', s)
        s = re.sub(r"(?m)^sample_rate = .*$", "sample_rate = 0.01", s)
    if name == "coordinator":
        s = re.sub(r"(?m)^iters = .*$", f"iters = {iters}", s)
        s = re.sub(r"(?m)^epsilon = .*$", "sigma = 1.0", s)
        s = s.replace("[training]\n", f'[training]\nschema = "{out}/schema.toml"\n')
        s = re.sub(r"(?m)^checkpoint_every = .*$", f"checkpoint_every = {iters}", s)
    open(p, "w").write(s)
EOF
  for r in "${roles[@]}"; do
    parent=root
    if [ "$netem" = 1 ]; then
      ip netns exec "vt-$r" tc qdisc replace dev eth0 root handle 1: netem delay "${oneway}ms"
      parent="parent 1:"
    fi
    # A queue of 2 s at the rate: the bucket delays, it does not drop.
    [ -z "$rate" ] || ip netns exec "vt-$r" tc qdisc replace dev eth0 $parent handle 2: \
      tbf rate "$rate" burst 64kb latency 2s
  done
  pids=()
  for i in 0 1 2; do
    ip netns exec "vt-n$i" "$vtwin" node --config "$run/node-$i.toml" 2>"$run/node-$i.log" &
    pids+=($!)
  done
  ip netns exec vt-p0 "$vtwin" party --config "$run/party-demographics.toml" 2>"$run/party-0.log" &
  pids+=($!)
  ip netns exec vt-p1 "$vtwin" party --config "$run/party-finance.toml" 2>"$run/party-1.log" &
  pids+=($!)
  (cd "$run" && ip netns exec vt-coord "$vtwin" coordinator --config coordinator.toml \
    >"$run/coordinator.out" 2>"$run/coordinator.log") || {
    echo "$0: the coordinator failed at RTT $rtt ms; see $run/coordinator.log" >&2
    tail -5 "$run/coordinator.log" >&2
    exit 1
  }
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  for r in "${roles[@]}"; do ip netns exec "vt-$r" tc qdisc del dev eth0 root 2>/dev/null || true; done
  line=$(python3 - "$run" "$rtt" "$netem" "$rounds" "${base:-}" "$rate" <<'EOF'
import json, sys
run, rtt, netem, rounds, base, rate = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4]), sys.argv[5], sys.argv[6]
t = json.load(open(f"{run}/run/timing.json"))
m = t["median_ms"]["iteration"]
r = {"rtt_ms": rtt, "delay": "netem" if netem else "vtwin receive delay line",
     "iterations_timed": t["iterations_timed"], "median_ms": m, "rounds": rounds}
if rate:
    r["rate"] = rate
if base:
    r["model_ms"] = float(base) + (rounds + 2) * rtt / 2
print(json.dumps(r))
EOF
)
  # The no-delay run is the model's base.
  [ "$rtt" != 0 ] || base=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['median_ms'])" "$line")
  echo "$line"
  results+=("$line")
done
printf '%s\n' "${results[@]}" | python3 -c '
import json, sys
print(json.dumps([json.loads(l) for l in sys.stdin], indent=1))' >"$out/netns.json"
