#!/usr/bin/env bash
# The SLURM step of CI: start a single-node Slurm on this machine (munged, slurmctld and slurmd,
# all started here on 127.0.0.1 with private sockets, state and ports, and stopped on exit), run
# the headline ablation through `hydra/launcher=slurm`, run it again locally, and check that the
# collected tables have the same row counts and content checksums.
#
# Needs root (apt-get and the daemons) on a Debian-like machine; installs slurm-wlm and munge
# when they are missing, and the [slurm] extra.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
fi
python -m pip install --quiet -e '.[slurm]'

work="$(mktemp -d /tmp/cavbench-slurm.XXXXXX)"
chmod 700 "$work"
mkdir -p "$work/state" "$work/spool" "$work/munge"
chmod 700 "$work/munge"

stop() {
  local status=$?
  for pidfile in "$work/slurmd.pid" "$work/slurmctld.pid" "$work/munge/munged.pid"; do
    if [ -s "$pidfile" ]; then
      pid="$(cat "$pidfile")"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  if [ "$status" -ne 0 ]; then
    echo "--- slurmctld.log" >&2; tail -30 "$work/slurmctld.log" >&2 2>/dev/null || true
    echo "--- slurmd.log" >&2; tail -30 "$work/slurmd.log" >&2 2>/dev/null || true
  fi
  rm -rf "$work"
  exit "$status"
}
trap stop EXIT

# munge: a private key and socket (never the system's /run/munge).
mungekey --create --keyfile="$work/munge/munge.key"
munged --force --socket="$work/munge/munge.sock" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
  --seed-file="$work/munge/munged.seed"

# Two free ports on 127.0.0.1 (Slurm needs fixed ports: ask the kernel for unused ones).
read -r ctld_port slurmd_port < <(python - <<'PY'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
for s in socks:
    s.close()
PY
)
host="$(hostname -s)"
cat > "$work/slurm.conf" <<CONF
ClusterName=cavbenchci
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
CommunicationParameters=NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${work}/munge/munge.sock
StateSaveLocation=${work}/state
SlurmdSpoolDir=${work}/spool
SlurmctldPidFile=${work}/slurmctld.pid
SlurmdPidFile=${work}/slurmd.pid
SlurmctldLogFile=${work}/slurmctld.log
SlurmdLogFile=${work}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=${host} NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2048 State=UNKNOWN
PartitionName=ci Nodes=${host} Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"

slurmctld -i
slurmd
for _ in $(seq 1 100); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qx idle; then break; fi
  sleep 0.2
done
sinfo -h -o '%T' | grep -qx idle || { echo "the Slurm node did not come up" >&2; exit 1; }

(cd "$work" && cavbench-sweep -m experiment=ablation hydra/launcher=slurm \
  hydra.launcher.partition=ci hydra.launcher.mem_gb=1 hydra.launcher.timeout_min=15 \
  output.root="$work/slurm" output.progress=false)
(cd "$work" && cavbench-sweep -m experiment=ablation output.root="$work/local" output.progress=false)
cavbench collect "$work/slurm/ablation" > /dev/null
cavbench collect "$work/local/ablation" > /dev/null

python - "$work/slurm/ablation/collected/manifest.json" "$work/local/ablation/collected/manifest.json" \
  artifacts/ablation/manifest.json <<'PY'
import json
import sys

def tables(path):
    return {n: (t["rows"], t["sha256"]) for n, t in json.load(open(path))["tables"].items()}

slurm, local, frozen = (tables(p) for p in sys.argv[1:])
assert slurm == local, f"SLURM and local tables differ:\n{slurm}\n{local}"
assert slurm == frozen, f"SLURM tables differ from artifacts/ablation:\n{slurm}\n{frozen}"
cells = json.load(open(sys.argv[1]))["n_cells"]
from pathlib import Path
logs = list((Path(sys.argv[1]).parents[1] / ".submitit").rglob("*_log.out"))
assert len(logs) == cells, f"expected {cells} Slurm job logs, found {len(logs)}"
print(f"slurm step: {cells} cells ran as Slurm jobs ({len(logs)} job logs); {len(slurm)} tables "
      "equal the local run's and the frozen artifacts' (rows and content checksums)")
PY
