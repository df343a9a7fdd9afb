# Shared by scripts/test, scripts/demo and scripts/bench: make this Debian 12 machine
# ready, idempotently. Installs only what dpkg says is missing; starts virtlogd and
# libvirtd only when they are not running (nothing starts them here, CI included).

# Every package seatd, its scripts and its tests call at build or run time. Run time
# counts: libvirt only *recommends* dnsmasq-base, yet libvirtd segfaults on restart with
# active networks when it is missing, so --no-install-recommends must not lose it.
SEATD_PACKAGES=(
  # build
  meson ninja-build pkg-config gcc clang libclang-rt-14-dev git ca-certificates
  libjson-c-dev libcmocka-dev libvirt-dev libsodium-dev libnftables-dev
  libcurl4-openssl-dev libguestfs-dev libseccomp-dev libpcap-dev liblzma-dev scdoc bash-completion
  # seat-web: libwebsockets (its OpenSSL backend) and OpenSSL for the self-signed pair;
  # libqrencode for the QR codes of the facilitator's handout
  libwebsockets-dev libssl-dev libqrencode-dev
  # run: libvirt, QEMU (TCG), the seat network, libguestfs' appliance
  qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients dnsmasq-base
  libguestfs-tools supermin linux-image-amd64 nftables iproute2 libseccomp2
  # the tests: conntrack only observes (seatd speaks ctnetlink itself); curl (web)
  conntrack curl
  # the pty suite: asciinema reads the sealed terminal recordings (a player nobody here wrote);
  # the concurrent suite drives seatctl shell in tmux windows
  asciinema tmux
  # the capture suite reads the sealed pcapng with a real reader
  tcpdump
  # the test image recipe and the scripts
  busybox-static e2fsprogs cpio xz-utils zstd kmod file python3 minisign openssl
  # seat-image build (images/seat-image): the Debian root of a systemd image; a compose range's file check
  mmdebstrap python3-yaml
  bsdutils util-linux procps coreutils
)

# The fresh-root check (scripts/fresh-root): builds a clean Debian root to run the
# README's commands in.
SEATD_FRESH_PACKAGES=(mmdebstrap util-linux git iproute2 systemd-container)

# Debian packages the fresh root downloads (apt-get download, while it has the network)
# but does not install, into /var/cache/seatd-fresh-downloads in the root: Debian's own
# seatd (wlroots' seat daemon), which scripts/installed-journey tries to install beside
# seat-manager to show the Conflicts: at work.
SEATD_FRESH_DOWNLOADS=(seatd)
SEATD_FRESH_DOWNLOADS_DIR=/var/cache/seatd-fresh-downloads

# What scripts/build-debs needs: debian/control's Build-Depends (keep the two in step;
# debhelper itself provides dh-sequence-installsysusers, minisign is for the signing
# suite), plus dpkg-buildpackage, fakeroot and lintian.
SEATD_DEB_PACKAGES=(
  debhelper dpkg-dev fakeroot lintian build-essential minisign
  meson ninja-build pkg-config scdoc bash-completion
  libjson-c-dev libcmocka-dev libvirt-dev libsodium-dev libnftables-dev
  libcurl4-openssl-dev libguestfs-dev libseccomp-dev libpcap-dev liblzma-dev libwebsockets-dev libssl-dev libqrencode-dev
)

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

host_install_packages() { # [PACKAGE...]: default, every package of SEATD_PACKAGES
  if (($#)); then host_apt_install "$@"; else host_apt_install "${SEATD_PACKAGES[@]}"; fi
}

host_install_deb_tools() {
  host_apt_install "${SEATD_DEB_PACKAGES[@]}"
}

# Install the named packages that dpkg says are missing (--no-install-recommends).
host_apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  [[ $(id -u) == 0 ]] || die "missing packages (${missing[*]}); run as root or install them: apt-get install ${missing[*]}"
  say "installing ${missing[*]}"
  local rc=0
  with_network_for_apt bash -c 'DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null' _ "${missing[@]}" || rc=$?
  ((rc == 0)) || die "apt-get could not install ${missing[*]}"
}

# Run a command that needs the package mirror. The test guard drops the uplink's traffic
# to private and test ranges, where this machine's resolver and package mirror may live.
# The command runs in a cgroup (v2) of its own, and a rule ahead of the guard's drop lets
# only that cgroup's sockets through (nftables' "socket cgroupv2"), for as long as it runs:
# everything else stays guarded meanwhile, so suites that run beside a download (the lanes
# of scripts/test) never see the guard lifted. Where no cgroup v2 hierarchy can be used,
# the guard is lifted for the command and put back after (whatever the command did).
with_network_for_apt() {
  local rc=0
  # (SEATD_DOWNLOAD_CGROUP: this runs inside such a command already, a chroot's apt say,
  # whose sockets are let out; lifting the guard here would lift it for everything)
  if [[ -n ${SEATD_DOWNLOAD_CGROUP:-} ]] || ! command -v nft >/dev/null || ! nft list table inet seat_guard >/dev/null 2>&1; then
    "$@"
    return
  fi
  local top rel cg handle
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    top=/sys/fs/cgroup rel=                  # the unified hierarchy alone
  elif [[ -f /sys/fs/cgroup/unified/cgroup.controllers ]]; then
    top=/sys/fs/cgroup/unified rel=unified/  # a hybrid one (systemd's "unified" mount)
  fi
  cg=seatd-download-$$-$RANDOM
  # (nft names the cgroup by its path under /sys/fs/cgroup; level 1 is a child of the root
  # of the v2 hierarchy, wherever that is mounted)
  if [[ -n ${top:-} ]] && mkdir "$top/$cg" 2>/dev/null &&
     handle=$(nft -e -a insert rule inet seat_guard guard_output socket cgroupv2 level 1 "\"$rel$cg\"" accept 2>/dev/null |
              sed -n 's/.*# handle \([0-9]*\)$/\1/p') && [[ -n $handle ]]; then
    (echo "$BASHPID" >"$top/$cg/cgroup.procs" && SEATD_DOWNLOAD_CGROUP=$cg "$@") || rc=$?
    nft delete rule inet seat_guard guard_output handle "$handle" 2>/dev/null || true
    rmdir "$top/$cg" 2>/dev/null || true # (a daemon the command left keeps it; harmless)
    return $rc
  fi
  [[ -n ${top:-} ]] && rmdir "$top/$cg" 2>/dev/null
  nft delete table inet seat_guard
  "$@" || rc=$?
  host_load_guard
  return $rc
}

# npm ci in DIR (a test client pinned by DIR/package-lock.json) when its lockfile changed
# since the last install (a stamp of its digest); the registry sits behind the guard like
# apt's mirror. Node.js and npm from Debian when the machine has none.
host_npm_ci() { # DIR WHAT
  local dir=$1 want
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    host_apt_install nodejs npm
  fi
  want=$(sha256sum <"$dir/package-lock.json")
  [[ -f $dir/node_modules/.seatd-lock && $(cat "$dir/node_modules/.seatd-lock") == "$want" ]] && return 0
  say "installing $2 (npm ci in ${dir#*/../../})"
  with_network_for_apt npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null ||
    die "npm ci in $dir failed (is the npm registry reachable?)"
  echo "$want" >"$dir/node_modules/.seatd-lock"
}

# The MCP suite's client: the official MCP TypeScript SDK (tests/mcp).
host_install_mcp_client() {
  host_npm_ci "$(dirname "${BASH_SOURCE[0]}")/../../tests/mcp" "the MCP SDK for the tests"
}

# The web suite's browser: Debian's chromium (a test tool, so not in SEATD_PACKAGES: the
# fresh root and the demo do not need it), driven by playwright-core (tests/web), which
# downloads no browser of its own. promtool (Debian's prometheus) checks /metrics.
host_install_web_client() {
  host_apt_install chromium prometheus
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 host_npm_ci "$(dirname "${BASH_SOURCE[0]}")/../../tests/web" "playwright-core for the web tests"
}

host_start_libvirt() {
  # /var/lib/libvirt/dnsmasq belongs to no package: libvirt makes it only when it runs
  # dnsmasq for a network (never, for seat networks) yet writes their MAC files there.
  # (The seat-manager package's tmpfiles.d makes it too.)
  mkdir -p /var/lib/libvirt/dnsmasq
  # Seat QEMUs run as uids of their own (qemu_uid_range), outside libvirt-qemu's group:
  # they must traverse (not list) libvirt's state to their own per-domain directories
  # (master key, agent socket). Debian ships these 0750. (seat-manager.tmpfiles does too.)
  local d
  for d in /var/lib/libvirt/qemu /var/lib/libvirt/qemu/channel /var/lib/libvirt/qemu/channel/target; do
    [[ -d $d ]] && chmod o+x "$d"
  done
  if virsh -c qemu:///system version >/dev/null 2>&1; then
    return 0
  fi
  say "starting virtlogd and libvirtd"
  mkdir -p /var/log/libvirt /var/run/libvirt
  pgrep -x virtlogd >/dev/null || virtlogd -d
  pgrep -x libvirtd >/dev/null || libvirtd -d
  local i
  for i in $(seq 1 100); do
    virsh -c qemu:///system version >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "libvirtd did not answer on qemu:///system (see /var/log/libvirt)"
}

# The system user the package makes for collecting guest files (debian/seat-manager.sysusers:
# evidence_collect_user, whose libguestfs appliance parses the guest's filesystem, never as
# root). A seatd run from the build tree, by the suites and the demo, needs it as the
# installed one does; made the way the package makes it.
host_make_users() {
  getent passwd seatd-collect >/dev/null && return 0
  [[ $(id -u) == 0 ]] || die "the user 'seatd-collect' is missing: run as root, or install the seat-manager package (it makes it)"
  local conf lines=()
  conf="$(dirname "${BASH_SOURCE[0]}")/../../debian/seat-manager.sysusers"
  mapfile -t lines < <(grep -E '^[um] seatd-collect ' "$conf")
  ((${#lines[@]})) || die "$conf has no seatd-collect user"
  say "making the system user seatd-collect ($conf)"
  if command -v systemd-sysusers >/dev/null; then
    systemd-sysusers --inline "${lines[@]}" || die "systemd-sysusers could not make seatd-collect"
  else
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
      --comment "seatd guest file collection" seatd-collect || die "useradd could not make seatd-collect"
    getent group kvm >/dev/null && usermod -a -G kvm seatd-collect
  fi
}

# The guard from ENVIRONMENT.md: even a broken egress filter cannot send a test packet
# off this machine. Loaded before any test that may send packets, and left loaded.
host_load_guard() {
  command -v nft >/dev/null || die "nft is missing (apt-get install nftables)"
  local h uplink
  if nft list table inet seat_guard >/dev/null 2>&1; then
    # A download killed before its cleanup (with_network_for_apt) leaves its accept rule.
    # Once its cgroup is gone nft lists the rule by the cgroup's number, not its path: such
    # a rule matches nothing now, but could match a later cgroup given the same number.
    for h in $(nft -a list chain inet seat_guard guard_output 2>/dev/null |
               sed -n 's/.*socket cgroupv2 level 1 [0-9][0-9]* accept # handle \([0-9]*\)$/\1/p'); do
      nft delete rule inet seat_guard guard_output handle "$h" 2>/dev/null || true
    done
    return 0
  fi
  uplink=$(ip -o route show default 2>/dev/null | awk '{print $5; exit}')
  uplink=${uplink:-eth0}
  nft -f - <<NFT
table inet seat_guard {
  chain guard_forward {
    type filter hook forward priority -300; policy accept;
    oifname "$uplink" drop
  }
  chain guard_output {
    type filter hook output priority -300; policy accept;
    oifname "$uplink" ip daddr { 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 169.254.0.0/16, 198.51.100.0/24, 203.0.113.0/24 } drop
  }
}
NFT
}

# Configure (once) and build a meson tree. $1 = build dir, rest = meson options.
build_tree() {
  local dir=$1; shift
  if [[ ! -f $dir/build.ninja ]]; then
    meson setup "$dir" "$@" >/dev/null || die "meson setup $dir failed"
  fi
  ninja -C "$dir" >/dev/null || { ninja -C "$dir"; die "build in $dir failed"; }
}
