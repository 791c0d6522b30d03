#!/usr/bin/env bash
# The .deb end to end: build it (cargo-deb), install it with dpkg, commission it (licence, API
# key, the NIC), run the installed `pn-device check-config` and the installed daemon the way
# the installed unit runs them (its User/Group, ExecStart, capabilities, NoNewPrivileges, read
# from /lib/systemd/system/pn-device.service, through setpriv: CI has no running systemd), wait
# for GET /api/status, stop it, purge the package.
#
# Needs root, cargo-deb (.ci/run installs it), dpkg, iproute2, setpriv (util-linux), python3.
# It runs in a network namespace of its own whose NIC is called eth1 (the name the shipped
# settings use): the daemon's 127.0.0.1:18840 is that namespace's, so nothing on the host or
# in parallel tests is touched. Any installed pn-device package is purged first and
# /etc/pn-device/licence.json is replaced and removed (this script owns the package and
# /etc/pn-device on the machine it runs on: not for a machine with a real installation); the
# service user is removed at the end when this run created it (the package itself keeps it on
# purge, as Debian packages do).
#
# Usage: ci/deb.sh               build the package, then install, run and purge it
#        ci/deb.sh build FILE    only build it (no root needed) and write its path to FILE;
#                                ci/test.sh builds it this way while the tests run
#        PN_DEB=PKG ci/deb.sh    install, run and purge the package PKG built before
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "ci/deb.sh: FAILED: $*" >&2
  exit 1
}

command -v cargo-deb >/dev/null || fail "cargo-deb missing: cargo install cargo-deb --locked --version 3.8.0"

# Prints the path of the package it built as its last line.
build_deb() {
  local log
  log="$(mktemp -t pn-deb-build.XXXXXX)"
  echo "-- cargo deb -p pn-device --strip"
  local start
  start=$(date +%s)
  # --strip removes the debug information the release profile keeps (for developers'
  # backtraces), so do not generate it for this build: the package loses nothing, the build is
  # shorter.
  CARGO_PROFILE_RELEASE_DEBUG=0 cargo deb -p pn-device --strip | tee "$log"
  echo "-- built $(tail -n 1 "$log") in $(($(date +%s) - start)) s"
  tail -n 1 "$log"
  rm -f "$log"
}

if [ "${1:-}" = build ]; then
  [ -n "${2:-}" ] || fail "usage: ci/deb.sh build FILE"
  # Through a file, not `tee /dev/stderr`: that reopens stderr and, when it is a log file,
  # truncates what the caller wrote to it before.
  out="$(mktemp -t pn-deb-out.XXXXXX)"
  build_deb | tee "$out"
  tail -n 1 "$out" >"$2"
  rm -f "$out"
  [ -f "$(cat "$2")" ] || fail "no package at '$(cat "$2")'"
  exit 0
fi

[ "$(id -u)" = 0 ] || fail "needs root (dpkg, namespaces)"

NS="pndeb$$"
WORK="$(mktemp -d /tmp/pn-deb.XXXXXX)"
DAEMON_PID=""
USER_EXISTED=no
getent passwd pn-device >/dev/null && USER_EXISTED=yes

cleanup() {
  set +e
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -KILL "$DAEMON_PID"
    wait "$DAEMON_PID" 2>/dev/null
  fi
  ip netns del "$NS" 2>/dev/null
  # The licence is the administrator's file, not the package's: purge leaves it.
  rm -f /etc/pn-device/licence.json
  dpkg --purge pn-device >/dev/null 2>&1
  rmdir /etc/pn-device 2>/dev/null
  if [ "$USER_EXISTED" = no ] && getent passwd pn-device >/dev/null; then
    userdel pn-device
    getent group pn-device >/dev/null && groupdel pn-device
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

if dpkg -s pn-device >/dev/null 2>&1; then
  echo "-- purging the pn-device package an earlier run or a developer installed"
  dpkg --purge pn-device
fi

if [ -n "${PN_DEB:-}" ]; then
  DEB="$PN_DEB"
  echo "-- the package built before: $DEB"
else
  build_deb | tee "$WORK/build.log"
  DEB="$(tail -n 1 "$WORK/build.log")"
fi
[ -f "$DEB" ] || fail "no package at '$DEB'"

echo "-- dpkg -i"
if ! dpkg -i "$DEB"; then
  apt-get install -f -y -qq
fi
dpkg -s pn-device | grep -q '^Status: install ok installed' || fail "pn-device not installed"

echo "-- installed layout"
for f in /usr/bin/pn-device /usr/bin/pn-gsdml /usr/bin/pn-licence /usr/bin/pnctl; do
  [ -x "$f" ] || fail "$f missing"
  "$f" --version
done
for f in /lib/systemd/system/pn-device.service /usr/lib/sysusers.d/pn-device.conf \
  /etc/pn-device/settings.json /etc/pn-device/device.xml \
  /usr/share/doc/pn-device/README.md /usr/share/doc/pn-device/decisions.md; do
  [ -f "$f" ] || fail "$f missing"
done
ls /usr/share/pn-device/gsdml/GSDML-*.xml >/dev/null || fail "no GSDML in /usr/share/pn-device/gsdml"
getent passwd pn-device >/dev/null || fail "postinst did not create the user pn-device"
[ "$(stat -c '%U:%G %a' /etc/pn-device/settings.json)" = "root:pn-device 640" ] ||
  fail "settings.json is $(stat -c '%U:%G %a' /etc/pn-device/settings.json), want root:pn-device 640"
[ "$(stat -c '%U %a' /var/lib/pn-device)" = "pn-device 750" ] || fail "/var/lib/pn-device not the service's"
grep -qx '/etc/pn-device/settings.json' /var/lib/dpkg/info/pn-device.conffiles || fail "settings.json not a conffile"
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify /lib/systemd/system/pn-device.service
fi

echo "-- the unit's user, command and capabilities"
UNIT=/lib/systemd/system/pn-device.service
unit_value() { sed -n "s/^$1=//p" "$UNIT" | tail -n 1; }
RUN_USER="$(unit_value User)"
RUN_GROUP="$(unit_value Group)"
read -r -a EXEC <<<"$(unit_value ExecStart)"
# CAP_NET_RAW CAP_NET_ADMIN ... -> +net_raw,+net_admin,... (setpriv's spelling).
CAPS="$(unit_value AmbientCapabilities | tr 'A-Z' 'a-z' | sed 's/cap_/+/g' | tr -s ' ' ',')"
BOUND="$(unit_value CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed 's/cap_/+/g' | tr -s ' ' ',')"
NNP=()
[ "$(unit_value NoNewPrivileges)" = yes ] && NNP=(--no-new-privs)
echo "User=$RUN_USER Group=$RUN_GROUP ExecStart=${EXEC[*]} caps=$CAPS bounding=$BOUND ${NNP[*]}"
[ -n "$RUN_USER" ] && [ -n "$CAPS" ] && [ "${EXEC[0]}" = /usr/bin/pn-device ] || fail "unexpected unit"
AS_UNIT=(setpriv --reuid="$RUN_USER" --regid="$RUN_GROUP" --init-groups
  --inh-caps="-all,$CAPS" --ambient-caps="$CAPS" --bounding-set="-all,$BOUND" "${NNP[@]}")

echo "-- commissioning: NIC eth1 in namespace $NS, a licence, an API key"
ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add eth1 type veth peer name eth1peer
ip -n "$NS" link set eth1peer up
ip -n "$NS" link set eth1 up
# A licence signed with the development key, which the shipped settings trust (check-config
# warns about that).
pn-licence issue --key device/testdata/dev-licence-private-key.txt --licensee ci-deb \
  --days 30 --any --out /etc/pn-device/licence.json
chgrp pn-device /etc/pn-device/licence.json
chmod 0640 /etc/pn-device/licence.json
KEY="ci-deb-$$"
python3 - "$KEY" <<'EOF'
import json, sys
p = "/etc/pn-device/settings.json"
s = json.load(open(p))
s.setdefault("Api", {})["ApiKey"] = sys.argv[1]
open(p, "w").write(json.dumps(s, indent=2))
EOF

echo "-- pn-device check-config, run as the unit runs the daemon"
set +e
ip netns exec "$NS" "${AS_UNIT[@]}" "${EXEC[@]}" check-config | tee "$WORK/check.txt"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || fail "check-config exit $rc"
grep -q "^OK    capabilities  uid $(id -u pn-device) has CAP_NET_RAW" "$WORK/check.txt" ||
  fail "check-config did not see the unit's user and capabilities"
grep -q "^OK    licence" "$WORK/check.txt" || fail "licence not OK"

echo "-- the installed daemon, as the unit runs it"
ip netns exec "$NS" "${AS_UNIT[@]}" "${EXEC[@]}" >"$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
status() { ip netns exec "$NS" pnctl --json --api-key "$KEY" status 2>/dev/null; }
deadline=$(($(date +%s) + 30))
state=""
while [ "$(date +%s)" -lt "$deadline" ]; do
  kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$WORK/daemon.log"; fail "daemon exited"; }
  state="$(status | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null || true)"
  [ "$state" = Initialized ] && break
  sleep 0.2 # poll interval of a bounded wait, not synchronisation
done
[ "$state" = Initialized ] || { cat "$WORK/daemon.log"; fail "state '$state', want Initialized"; }
status
# Without the key the API refuses (pnctl: exit 3 = unreachable or HTTP 401).
set +e
ip netns exec "$NS" env -u PN_API_KEY pnctl status >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 3 ] || fail "status without the API key: pnctl exit $rc, want 3 (HTTP 401)"
uid="$(awk '/^Uid:/ {print $3}' "/proc/$DAEMON_PID/status")"
[ "$uid" = "$(id -u pn-device)" ] || fail "daemon runs as uid $uid"
grep -q "running as uid $uid with CAP_NET_RAW" "$WORK/daemon.log" || { cat "$WORK/daemon.log"; fail "capabilities not logged"; }
if grep -q "missing capability" "$WORK/daemon.log"; then
  cat "$WORK/daemon.log"
  fail "a capability is missing"
fi

echo "-- stop (SIGTERM)"
kill -TERM "$DAEMON_PID"
deadline=$(($(date +%s) + 10))
while kill -0 "$DAEMON_PID" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do
  sleep 0.1 # poll interval of a bounded wait
done
kill -0 "$DAEMON_PID" 2>/dev/null && fail "daemon still running 10 s after SIGTERM"
wait "$DAEMON_PID" || fail "daemon exit status $?"
DAEMON_PID=""
tail -n 3 "$WORK/daemon.log"

echo "-- dpkg --purge"
rm -f /etc/pn-device/licence.json
dpkg --purge pn-device
[ ! -e /usr/bin/pn-device ] && [ ! -e /etc/pn-device/settings.json ] && [ ! -e /var/lib/pn-device ] ||
  fail "purge left files behind"
echo "ci/deb.sh: OK"
