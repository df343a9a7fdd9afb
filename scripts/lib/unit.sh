# Start a service the way its systemd unit does, on a machine where systemd is not PID 1
# (these build machines, the fresh root). What is taken from the unit file itself, so the
# unit as installed is what runs: ExecStart, Type=notify (wait for READY=1 on a
# NOTIFY_SOCKET of ours), UMask, RuntimeDirectory/StateDirectory/ConfigurationDirectory
# with their modes. What is not reproduced: the sandboxing directives (namespaces,
# seccomp, capability bounding), which only systemd applies; `systemd-analyze verify`
# and `systemd-analyze security` check those.
#
#   unit_start UNIT_FILE LOG_FILE   sets UNIT_MAIN_PID; fails if READY=1 does not come

unit_key() { # FILE KEY: the last value of KEY in [Service]
  awk -v k="$2" '
    /^\[/ { sec = $0; next }
    sec == "[Service]" && index($0, k "=") == 1 { v = substr($0, length(k) + 2) }
    END { print v }' "$1"
}

unit_start() {
  local unit=$1 log=$2
  [[ -f $unit ]] || die "unit file '$unit' is missing"
  local exec type umask_ rt rtmode st stmode cfg
  exec=$(unit_key "$unit" ExecStart) type=$(unit_key "$unit" Type) umask_=$(unit_key "$unit" UMask)
  rt=$(unit_key "$unit" RuntimeDirectory) rtmode=$(unit_key "$unit" RuntimeDirectoryMode)
  st=$(unit_key "$unit" StateDirectory) stmode=$(unit_key "$unit" StateDirectoryMode)
  cfg=$(unit_key "$unit" ConfigurationDirectory)
  [[ -n $exec ]] || die "no ExecStart= in '$unit'"
  # systemd makes these directories (owned by the service's user, root here) with the
  # unit's modes (default 0755), before ExecStart.
  if [[ -n $rt ]]; then mkdir -p "/run/$rt"; chmod "${rtmode:-0755}" "/run/$rt"; fi
  if [[ -n $st ]]; then mkdir -p "/var/lib/$st"; chmod "${stmode:-0755}" "/var/lib/$st"; fi
  if [[ -n $cfg ]]; then mkdir -p "/etc/$cfg"; fi
  local notify=/run/unit-start-notify.$$.sock
  rm -f "$notify"
  # The service manager's side of sd_notify: one datagram socket, READY=1 awaited.
  python3 - "$notify" >"$log.notify" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); s.settimeout(900)
t0 = time.monotonic()
print("bound", flush=True)
while True:
    msg = s.recv(4096).decode(errors="replace")
    print("%.0f ms: %s" % ((time.monotonic() - t0) * 1000, msg.replace("\n", " ")), flush=True)
    if "READY=1" in msg.split("\n"):
        break
PY
  local listener=$!
  for _ in $(seq 1 100); do grep -q bound "$log.notify" 2>/dev/null && break; sleep 0.05; done
  # shellcheck disable=SC2086 # ExecStart is a command line: its words split
  ( umask "${umask_:-0022}"; NOTIFY_SOCKET=$notify exec $exec ) 2>>"$log" &
  UNIT_MAIN_PID=$!
  if [[ $type == notify ]]; then
    local waited=0
    while kill -0 "$listener" 2>/dev/null; do
      kill -0 "$UNIT_MAIN_PID" 2>/dev/null || { kill "$listener" 2>/dev/null; tail -20 "$log" >&2; die "${unit##*/}: the service exited before READY=1"; }
      sleep 0.1; waited=$((waited + 1))
      ((waited < 9000)) || { kill "$listener"; die "${unit##*/}: no READY=1 in 15 minutes"; }
    done
    wait "$listener" 2>/dev/null || true
    echo "    ${unit##*/}: $(grep 'READY=1' "$log.notify" | head -1) (main pid $UNIT_MAIN_PID, Type=notify)"
  fi
  rm -f "$notify"
}
