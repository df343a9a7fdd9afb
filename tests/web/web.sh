#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# web.sh: seat-web, as it ships (its own unprivileged user, TLS), in front of a private
# seatd with two real seats (TCG). Speaks TAP.
#   - seat-web --self-signed prints the fingerprint that openssl s_client sees, and the
#     key pin a real browser (Debian's chromium, headless, playwright-core) accepts;
#   - the browser logs in with the seat's token and sees the seat's state; a wrong token is
#     403; the cookie's flags; the cookie on another seat is 403; a reset ends the session
#     and the page says so;
#   - the browser's terminal (xterm.js over a WebSocket): typed input runs in the seat, a
#     wider window resizes it, it outlives the HTTP idle timeout, a second one is its own
#     shell, another seat's is refused, a reset ends them, and the session's archive holds
#     their recording; curl's handshakes with another site's Origin or none are refused;
#   - with curl: another seat's cookie (403, logged), hostile input (sizes, types, methods,
#     duplicate cookies, an idle connection closed), the rate limits per address and per
#     seat, plain HTTP refused off loopback, seat-web refusing to run as root;
#   - the seat's web pages through forwarding (/seat/ID/port/N/, seat.forward): the browser
#     opens busybox httpd's page in the seat from the seat's page; guest-web, a hostile
#     server in the seat, logs what it is sent (never the session cookie or the token) and
#     answers malformed, oversized, truncated, slow and cookie-clobbering responses (502,
#     504, dropped), while seat-web serves on; another seat's cookie, none, a port not in
#     forward_ports, a cross-site POST are refused; the connections are in the audit log;
#     a WebSocket echo page in the seat round-trips through the proxy, and a WebSocket
#     handshake from another site, without a cookie or to another seat is refused.
#   usage: web.sh BUILD_DIR
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
WEB=$build/web/seat-web
GUEST_WEB=$build/tests/web/guest-web
need_built "$SEATD" "$CTL" "$SIGN" "$GUEST_INIT" "$WEB" "$GUEST_WEB"
need_root
need_cmd -h "apt-get install nodejs chromium openssl curl" node chromium openssl curl setpriv python3
need_libvirt
here=$(cd "$(dirname "$0")" && pwd)
need_npm_client "$here" playwright-core host_install_web_client

harness_workdir /var/tmp/seatd-web 0755
unset SEATD_TOKEN
image_build "$t/img" --guest-tool "$GUEST_WEB" # (seatd_start_sealing imports it)
# The facilitator socket's group is seat-web's: here nogroup, the group it runs as.
seatd_start_sealing facilitator_group=nogroup

"$CTL" -q --json provision --image test-image --participant alice --count 2 >"$t/prov" 2>"$t/out" || bail "provision failed: $(cat "$t/out")"
read -r S1 tok1 S2 tok2 < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["seats"]; print(s[0]["id"], s[0]["token"], s[1]["id"], s[1]["token"])' "$t/prov")
diag "seats $S1 and $S2"

# ---------------------------------------------------------------- seat-web as shipped
# Its own state directory, owned by its user (here nobody, as systemd's StateDirectory=
# gives it to User=); it reaches seatd through the participant socket only.
port=$((20000 + RANDOM % 20000))
webconf() { seat_web_conf "$@"; }
webconf "$t/web.conf" listen_port=$port login_rate_per_address=6 login_rate_per_seat=12 idle_timeout=3 \
        forward_timeout_ms=5000 forward_max_response=262144 max_dashboards=2
as_web() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

# 0. The unit as shipped (its ExecStart pointed at this build): systemd accepts it.
if command -v systemd-analyze >/dev/null; then
        sed "s|/usr/sbin/seat-web|$WEB|" "$HARNESS_SRC/web/units/seat-web.service" >"$t/seat-web.service"
        systemd-analyze verify --man=no "$t/seat-web.service" >"$t/out" 2>&1 && ! [[ -s $t/out ]] &&
                ok "systemd-analyze verify seat-web.service: no complaints" || not_ok "systemd-analyze verify seat-web.service"
        diag "$(systemd-analyze security --offline=true "$t/seat-web.service" 2>&1 | grep -o 'Overall exposure.*')"
else
        skip "systemd-analyze verify seat-web.service" "systemd-analyze is not installed"
fi
# The package's users as shipped: systemd-sysusers accepts them (a ':' in a GECOS field
# once failed the package's postinst).
if command -v systemd-sysusers >/dev/null; then
        systemd-sysusers --dry-run "$HARNESS_SRC/debian/seat-web.sysusers" "$HARNESS_SRC/debian/seat-manager.sysusers" >"$t/out" 2>&1 &&
                ! grep -qi "not a valid\|ignoring" "$t/out" && ok "systemd-sysusers accepts debian/seat-web.sysusers and seat-manager.sysusers" ||
                not_ok "systemd-sysusers accepts debian/*.sysusers"
else
        skip "systemd-sysusers --dry-run" "systemd-sysusers is not installed"
fi

# 1. --self-signed: a key and certificate in its state dir, the fingerprint printed.
as_web "$WEB" -c "$t/web.conf" --self-signed >"$t/self" 2>"$t/out" || bail "seat-web --self-signed failed: $(cat "$t/out")"
fpr=$(sed -n 's/^sha256-fingerprint: //p' "$t/self")
pin=$(sed -n 's/^spki-sha256: //p' "$t/self")
[[ $(stat -c '%U %a' "$t/web/tls/key.pem") == "nobody 600" ]] &&
        ok "--self-signed: the key in the state dir, 0600, its user's" || not_ok "--self-signed key mode/owner: $(stat -c '%U %a' "$t/web/tls/key.pem")"
as_web "$WEB" -c "$t/web.conf" --self-signed >"$t/self2" 2>&1
[[ $(sed -n 's/^sha256-fingerprint: //p' "$t/self2") == "$fpr" ]] && grep -q "(kept)" "$t/self2" &&
        ok "--self-signed again keeps the pair and prints the same fingerprint" || not_ok "--self-signed again"

# 2. Refusals at start: root; plain HTTP off loopback.
"$WEB" -c "$t/web.conf" >"$t/out" 2>&1 && not_ok "seat-web runs as root" ||
        { grep -q "refusing to serve as root" "$t/out" && ok "seat-web refuses to serve as root" || not_ok "seat-web as root: $(cat "$t/out")"; }
webconf "$t/plain-wide.conf" listen_address=0.0.0.0 listen_port=$((port + 1)) plain_http=true
as_web "$WEB" -c "$t/plain-wide.conf" >"$t/out" 2>&1 && not_ok "plain HTTP on 0.0.0.0 started" ||
        { grep -q "plain_http = true needs a loopback" "$t/out" && ok "plain HTTP on a non-loopback address: refused at start" || not_ok "plain HTTP off loopback: $(cat "$t/out")"; }
uplink_addr=$(ip -o -4 addr show scope global | awk '{print $4; exit}' | cut -d/ -f1)
if [[ -n $uplink_addr ]]; then
        webconf "$t/plain-host.conf" listen_address="$uplink_addr" listen_port=$((port + 1)) plain_http=true
        as_web "$WEB" -c "$t/plain-host.conf" >"$t/out" 2>&1 && not_ok "plain HTTP on $uplink_addr started" ||
                { grep -q "needs a loopback" "$t/out" && ok "plain HTTP on this host's address ($uplink_addr): refused" || not_ok "plain HTTP on $uplink_addr"; }
fi
webconf "$t/plain-lo.conf" listen_port=$((port + 1)) plain_http=true
# setpriv itself in the background, not the function: $! is then seat-web (setpriv execs
# it), which kill_wait stops; killing a backgrounded function's subshell orphaned it.
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$WEB" -c "$t/plain-lo.conf" >"$t/plain.log" 2>&1 &
plain_pid=$!
harness_on_exit 'kill_wait $plain_pid'
wait_until 'curl -s -o /dev/null "http://127.0.0.1:$((port + 1))/" || ! kill -0 "$plain_pid"'
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((port + 1))/")
[[ $code == 200 ]] && ok "plain HTTP on loopback when the config says so" || not_ok "plain HTTP on loopback: $code"
kill_wait "$plain_pid"; plain_pid=

# 3. The TLS server.
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$WEB" -c "$t/web.conf" -l debug >"$t/web.log" 2>&1 &
web_pid=$!
harness_on_exit 'kill_wait $web_pid; [[ -f $t/web.log ]] && cp $t/web.log $build/web-seat-web.log'
url=https://127.0.0.1:$port
wait_until 'curl -s -o /dev/null --cacert "$t/web/tls/cert.pem" "$url/" || ! kill -0 "$web_pid"'
seen=$(openssl s_client -connect "127.0.0.1:$port" -servername localhost </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256 | sed 's/^sha256 Fingerprint=//I')
[[ -n $fpr && $seen == "$fpr" ]] && ok "openssl s_client sees the fingerprint --self-signed printed ($fpr)" ||
        { echo "printed $fpr, seen $seen" >"$t/out"; not_ok "s_client fingerprint matches"; }
curl -s -o /dev/null --cacert "$t/web/tls/cert.pem" "$url/" && ok "curl verifies seat-web against the certificate (SAN 127.0.0.1)" || not_ok "curl --cacert"
tls1=$(openssl s_client -connect "127.0.0.1:$port" -tls1_1 </dev/null 2>&1 | grep -c "Cipher is (NONE)\|alert\|no protocols")
((tls1 > 0)) && ok "TLS 1.1 refused" || not_ok "TLS 1.1 refused"

# The terminal's xterm.js as shipped (web/assets/vendor/) is what the pinned lock installs.
"$HARNESS_SRC/scripts/update-web-vendor" --check >"$t/out" 2>&1 &&
        ok "web/assets/vendor/ is byte for byte what web/xterm/package-lock.json installs" ||
        not_ok "web/assets/vendor/ matches the pinned xterm.js (scripts/update-web-vendor)"

# ---------------------------------------------------------------- the browser
browser() { # SCENARIO SEAT TOKEN OTHER_SEAT: its TAP lines become ours (RESET_CMD resets SEAT)
        FAC_NAME=${FAC_NAME-} FAC_PASSWORD=${FAC_PASSWORD-} node "$here/browser.mjs" "$1" "$url" "$pin" "$2" "$3" "$4" "$build" \
                env "SEATD_SOCKET=$SEATD_SOCKET" "$CTL" -q reset "$2" >"$t/browser-$1" 2>"$t/browser-$1.err" </dev/null
        tap_relay "$t/browser-$1" "browser: " "browser.mjs $1"
}
# One-time links: root makes one for S2 with its token (checked with seatd first); the
# browser opens it into the seat's page; it works once.
token_file "$t/tok2" "$tok2" "" 0600
token_file "$t/tok1" "$tok1" "" 0600
link=$("$WEB" -c "$t/web.conf" --link "$S2" --token-file "$t/tok2" --url "$url" 2>"$t/out")
[[ $link == "$url/l/"* && $(stat -c '%U %a' "$t/web/links/${link##*/}") == "nobody 600" ]] &&
        ok "seat-web --link prints a one-time URL; its record is seat-web's user's, 0600" || not_ok "seat-web --link: '$link'"
"$WEB" -c "$t/web.conf" --link "$S2" --token-file "$t/tok1" >"$t/out" 2>&1 && not_ok "a link for another seat's token was made" ||
        { grep -q "seatd does not accept this token for seat '$S2'" "$t/out" && ok "no link for a token seatd refuses, and it says so" ||
                not_ok "a link for a wrong token: $(cat "$t/out")"; }
# The state dir is seat-web's user's: a link it plants there (a compromised seat-web) must
# not steer root's --link into another directory (root becomes that user first).
mkdir -m 0755 "$t/victim"
as_web mv "$t/web/links" "$t/web/links.real" && as_web ln -s "$t/victim" "$t/web/links"
"$WEB" -c "$t/web.conf" --link "$S2" --token-file "$t/tok2" --url "$url" >"$t/out" 2>&1 && not_ok "--link wrote through a planted symbolic link" ||
        { [[ $(stat -c '%U' "$t/victim") == root && -z $(ls -A "$t/victim") ]] &&
                ok "--link does not write or chown through a link seat-web's user planted in its state dir ($(head -c 160 "$t/out"))" ||
                not_ok "--link through a planted link: $(stat -c '%U' "$t/victim") $(ls -A "$t/victim") $(cat "$t/out")"; }
as_web rm "$t/web/links" && as_web mv "$t/web/links.real" "$t/web/links"
browser link "$S2" "$link" "$S1" # (the link stands where a token goes)
short=$("$WEB" -c "$t/web.conf" --link "$S2" --token-file "$t/tok2" --expires 1 --url "$url" 2>"$t/out")
sleep 2
code=$(curl -s --cacert "$t/web/tls/cert.pem" -o "$t/body" -w '%{http_code}' "$short")
[[ $code == 410 ]] && grep -q "expired" "$t/body" && ok "an expired link: 410, it says so" || not_ok "an expired link: $code $(cat "$t/body")"
[[ ! -e $t/web/links/${short##*/} ]] && ok "and its record is gone" || not_ok "the expired link's record is gone"
# A link opened while seatd cannot be reached is put back (it was taken before seatd was
# asked), and opens the seat once afterwards. The unreachable seatd: a second seat-web on
# the same state dir (plain HTTP on loopback) whose participant socket is not there.
relink=$("$WEB" -c "$t/web.conf" --link "$S2" --token-file "$t/tok2" --url "$url" 2>"$t/out")
webconf "$t/down.conf" listen_port=$((port + 2)) plain_http=true
sed -i "s|^participant_socket = .*|participant_socket = $t/nowhere.sock|" "$t/down.conf"
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$WEB" -c "$t/down.conf" >"$t/down.log" 2>&1 &
down_pid=$!
harness_on_exit 'kill_wait $down_pid'
wait_until 'curl -s -o /dev/null "http://127.0.0.1:$((port + 2))/" || ! kill -0 "$down_pid"'
code=$(curl -s -o "$t/body" -w '%{http_code}' "http://127.0.0.1:$((port + 2))/l/${relink##*/}")
kill_wait "$down_pid"; down_pid=
[[ $code == 503 && -e $t/web/links/${relink##*/} ]] && grep -q "it still works once" "$t/body" &&
        ok "a link opened while seatd cannot be reached: 503, and the link is put back" ||
        not_ok "a link while seatd is unreachable: $code, record $(ls "$t/web/links/${relink##*/}" 2>&1), $(head -c 200 "$t/body") $(tail -3 "$t/down.log")"
code=$(curl -s --interface 127.0.0.51 --cacert "$t/web/tls/cert.pem" -o /dev/null -w '%{http_code}' "$relink")
[[ $code == 303 && ! -e $t/web/links/${relink##*/} ]] && ok "then it opens the seat ($code), and is gone" ||
        not_ok "the link put back then: $code"

browser main "$S1" "$tok1" "$S2"
browser wrong-pin "$S1" "$tok1" "$S2"

# The seat's web pages (forward_ports: the default, 80 and 8080). In S2: busybox httpd on
# its loopback's port 80 with two pages, guest-web on 8080 logging each request's head;
# the exec ends once both listen (netstat in the guest; two minutes at most).
"$CTL" exec "$S2" -- sh -c 'ip link set lo up && mkdir -p /tmp/www/sub &&
        echo "<!doctype html><title>range</title><p id=msg>busybox-page-in-the-seat</p><a id=rel href=sub/two.html>two</a>" >/tmp/www/index.html &&
        echo "<!doctype html><p id=msg>second page</p>" >/tmp/www/sub/two.html &&
        { setsid busybox httpd -f -p 127.0.0.1:80 -h /tmp/www </dev/null >/dev/null 2>&1 &
          setsid /bin/guest-web 8080 /tmp/guest-web.log </dev/null >/dev/null 2>&1 & } &&
        i=0 && until [ "$(netstat -ltn | grep -oE ":(80|8080) " | sort -u | wc -l)" -ge 2 ]; do
                [ $i -lt 1200 ] || { echo "not listening: $(netstat -ltn)"; exit 1; }; sleep 0.1; i=$((i + 1)); done' >"$t/out" 2>&1 ||
        bail "cannot start the guest's web servers: $(cat "$t/out")"
browser forward "$S2" "$tok2" "$S1"

# The browser's terminals were recorded like every terminal, and sealed with the session
# the reset ended.
for _ in $(seq 1 1800); do [[ -n $(ls "$t/state/evidence/archives/$S1-g1-"*.seatdev 2>/dev/null) ]] && break; sleep 0.1; done
a1=$(ls "$t/state/evidence/archives/$S1-g1-"*.seatdev 2>/dev/null | head -1)
: >"$t/out"
[[ -n $a1 ]] && "$CTL" evidence open "$a1" --key "$t/facilitator.key" --out "$t/open1" --host-key "$t/state/trust/host.pub" >>"$t/out" 2>&1 &&
        grep -l "web-42" "$t/open1/"*rec-*.cast >>"$t/out" 2>&1 &&
        ok "the browser terminal's session is in the sealed archive as a recording (rec-*.cast)" ||
        { ls "$t/open1" >>"$t/out" 2>&1; not_ok "the browser terminal's recording is sealed"; }

# ---------------------------------------------------------------- curl: sessions and input
C=(curl -s --cacert "$t/web/tls/cert.pem" --interface 127.0.0.2)
# login SEAT TOKEN [CURL ARGS]: the status code; headers in $t/h.
login() { "${C[@]}" -D "$t/h" -o "$t/body" -w '%{http_code}' --data-urlencode "seat=$1" --data-urlencode "token=$2" "${@:3}" "$url/login"; }
code=$(login "$S2" "$tok2")
cookie2=$(sed -n 's/^set-cookie: __Host-seatweb=\([^;]*\);.*/\1/Ip' "$t/h" | tr -d '\r')
setc=$(grep -i '^set-cookie:' "$t/h" | tr -d '\r')
[[ $code == 303 && -n $cookie2 && $setc == *"; HttpOnly"* && $setc == *"; Secure"* && $setc == *"; SameSite=Strict"* && $setc == *"; Path=/"* ]] &&
        ok "login (curl): 303 to the seat, Set-Cookie HttpOnly; Secure; SameSite=Strict; Path=/" || { echo "$code $setc" >"$t/out"; not_ok "login with curl"; }
code=$("${C[@]}" -o "$t/body" -w '%{http_code}' -b "__Host-seatweb=$cookie2" "$url/api/seat/$S2/status")
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["id"]==sys.argv[2] and d["state"]=="ready" and "token" not in d and "domain" not in d else 1)' "$t/body" "$S2" 2>/dev/null &&
        [[ $code == 200 ]] && ok "its status: the seat's record from seatd, without the token or the domain" || { cat "$t/body" >"$t/out"; not_ok "status of $S2: $code"; }
# The terminal's WebSocket opens only with seat-web's own Origin (cookies ride on a
# WebSocket from any site's page: without it another site could open a shell in the
# participant's seat) and only for the cookie's own seat.
ws() { # ORIGIN SEAT: the handshake's status code (101: a terminal; curl then stops after 3 s)
        "${C[@]}" --http1.1 -o /dev/null -w '%{http_code}' -m 3 -b "__Host-seatweb=$cookie2" \
                -H "Connection: Upgrade" -H "Upgrade: websocket" -H "Sec-WebSocket-Version: 13" \
                -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" -H "Sec-WebSocket-Protocol: seat-terminal" \
                ${1:+-H "Origin: $1"} "$url/ws/seat/$2/terminal"
}
c_evil=$(ws https://evil.example "$S2") c_none=$(ws "" "$S2") c_other=$(ws "$url" "$S1") c_own=$(ws "$url" "$S2")
[[ $c_evil != 101 && $c_none != 101 && $c_other != 101 && $c_own == 101 ]] &&
        ok "terminal WebSocket: another site's Origin ($c_evil), no Origin ($c_none), another seat ($c_other) refused; its own page's opens ($c_own)" ||
        not_ok "terminal WebSocket handshakes: evil $c_evil, none $c_none, other seat $c_other, own $c_own"
grep -q "refused: a terminal WebSocket without seat-web's own Origin (seat '$S2'" "$t/web.log" && ok "and the refusal is logged" ||
        not_ok "the cross-site terminal refusal is logged"
# "mcp-child" is seat-web's own protocol for the pipes of MCP sessions' seatctl: no client
# gets a WebSocket on it, with or without a cookie and Origin, on any path.
mws() { # PATH COOKIE: the handshake's status code
        "${C[@]}" --http1.1 -o /dev/null -w '%{http_code}' -m 3 ${2:+-b "$2"} -H "Origin: $url" \
                -H "Connection: Upgrade" -H "Upgrade: websocket" -H "Sec-WebSocket-Version: 13" \
                -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" -H "Sec-WebSocket-Protocol: mcp-child" "$url$1"
}
m_root=$(mws / "") m_term=$(mws "/ws/seat/$S2/terminal" "__Host-seatweb=$cookie2") m_mcp=$(mws "/mcp/$S2" "__Host-seatweb=$cookie2")
c_after=$(ws "$url" "$S2")
[[ $m_root != 101 && $m_term != 101 && $m_mcp != 101 && $c_after == 101 ]] &&
        ok "a WebSocket on the internal protocol mcp-child is refused (/ $m_root, a terminal's path with its cookie $m_term, /mcp $m_mcp); the terminal still opens ($c_after)" ||
        not_ok "mcp-child WebSocket handshakes: / $m_root, terminal path $m_term, /mcp $m_mcp; terminal after $c_after"
# A terminal has no idle timeout: TCP keepalive (60 s, then 4 probes 15 s apart) finds a
# peer gone without a word (a laptop closed), whose slot it held until seat-web restarted.
# The terminal is held open (curl itself, in the background: up to 120 s) until ss shows
# its connection, however slowly it opens.
ka=0
"${C[@]}" --http1.1 -o /dev/null -m 120 -b "__Host-seatweb=$cookie2" -H "Origin: $url" \
        -H "Connection: Upgrade" -H "Upgrade: websocket" -H "Sec-WebSocket-Version: 13" \
        -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" -H "Sec-WebSocket-Protocol: seat-terminal" \
        "$url/ws/seat/$S2/terminal" & held=$!
wait_until 'ka=$(ss -tnoH state established "( sport = :$port )" | grep -c "timer:(keepalive"); ((ka >= 1)) || ! kill -0 "$held" 2>/dev/null'
kill_wait "$held"
((ka >= 1)) && ok "TCP keepalive is on for seat-web's connections, an open terminal's too ($ka)" ||
        not_ok "TCP keepalive on seat-web's connections: $(ss -tnoH state established "( sport = :$port )" | head -3)"
# Uploads: only from seat-web's own page (a forged cross-site POST with the cookie is
# refused), of their own type and size.
up() { # ORIGIN CONTENT-TYPE BODY-FILE: the status code of one upload chunk into $S2
        "${C[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$cookie2" ${1:+-H "Origin: $1"} -H "Content-Type: $2" \
                --data-binary "@$3" "$url/api/seat/$S2/file?path=/tmp/curl-up&offset=0&final=1"
}
printf 'hello\n' >"$t/small"
head -c $((600 * 1024)) /dev/zero >"$t/large"
u_evil=$(up https://evil.example application/octet-stream "$t/small") u_type=$(up "$url" text/plain "$t/small")
u_big=$(up "$url" application/octet-stream "$t/large") u_own=$(up "$url" application/octet-stream "$t/small")
[[ $u_evil == 403 && $u_type == 415 && $u_big == 413 && $u_own == 200 ]] &&
        ok "uploads: another site's Origin 403, another type 415, a chunk over 512 KiB 413; its own 200" ||
        not_ok "uploads: evil $u_evil, type $u_type, big $u_big, own $u_own"
[[ $("$CTL" exec "$S2" -- cat /tmp/curl-up 2>/dev/null) == hello ]] && ok "and only its own reached the guest" ||
        not_ok "the upload reached the guest"
# ---------------------------------------------------------------- curl: the seat's web pages
fw() { # PATH [CURL ARGS]: the status code of a request under S2's forwarded pages; headers in $t/h, body in $t/body
        "${C[@]}" -D "$t/h" -o "$t/body" -w '%{http_code}' -b "__Host-seatweb=$cookie2; app=kept-for-guest" "${@:2}" "$url/seat/$S2/port/$1"
}
code=$(fw 8080/hello -H "X-Seat-Web-Secret: $tok2" -H "Origin: $url")
hdrs=$(tr -d '\r' <"$t/h")
[[ $code == 200 ]] && grep -q guest-web-hello "$t/body" && ok "curl: guest-web's page through the proxy (200)" || not_ok "forwarded page: $code $(head -c 300 "$t/body")"
! grep -qi '^access-control-\|^x-guest:\|^set-cookie: __Host-seatweb' <<<"$hdrs" && grep -qi "^set-cookie: app=guest-cookie; HttpOnly; Path=/seat/$S2/port/8080/\$" <<<"$hdrs" &&
        ok "the guest's response headers filtered: no CORS, no headers of its own, no __Host- cookie; its cookie scoped to the prefix" ||
        { echo "$hdrs" >"$t/out"; not_ok "the guest's response headers are filtered"; }
"$CTL" exec "$S2" -- cat /tmp/guest-web.log >"$t/guest-log" 2>&1
grep -q "^Host: 127.0.0.1:8080" "$t/guest-log" && grep -q "^Cookie: app=kept-for-guest" "$t/guest-log" &&
        grep -q "^GET /hello HTTP/1.0" "$t/guest-log" && ! grep -q "$cookie2\|__Host-seatweb\|$tok2\|$tok1\|X-Seat-Web-Secret\|^Origin:" "$t/guest-log" &&
        ok "the guest got GET /hello with its own Host and cookie: never the session cookie, a token or other headers" ||
        { cp "$t/guest-log" "$t/out"; not_ok "what reached the guest"; }
# The facilitator's session cookie has Path=/: a browser holding it sends it here too. The
# seat's pages (the seat's own scripts, under seat-web's origin) are not served to it, and
# no __Host-/__Secure- cookie ever reaches the guest.
code=$("${C[@]}" -o "$t/body" -w '%{http_code}' -b "__Host-seatweb=$cookie2; __Host-seatfac=dashboard-session" "$url/seat/$S2/port/8080/hello")
[[ $code == 403 ]] && grep -q "logged in to the facilitator dashboard" "$t/body" &&
        grep -q "refused: a seat's forwarded page to a browser with a facilitator session (seat '$S2'" "$t/web.log" &&
        ok "a browser with a facilitator session gets no seat page (403, says why, logged)" ||
        not_ok "a forwarded page with the facilitator's cookie: $code $(head -c 200 "$t/body")"
w_fac=$("${C[@]}" --http1.1 -o /dev/null -w '%{http_code}' -m 3 -b "__Host-seatweb=$cookie2; __Host-seatfac=dashboard-session" \
        -H "Connection: Upgrade" -H "Upgrade: websocket" -H "Sec-WebSocket-Version: 13" \
        -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" -H "Origin: $url" "$url/seat/$S2/port/8080/echo")
[[ $w_fac != 101 ]] && ok "nor a forwarded WebSocket ($w_fac)" || not_ok "a forwarded WebSocket with the facilitator's cookie opened"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$cookie2; __Secure-probe=1; __host-other=2; app=second" \
        -H "Authorization: Basic c2VjcmV0OnNlY3JldA==" "$url/seat/$S2/port/8080/hello")
"$CTL" exec "$S2" -- cat /tmp/guest-web.log >"$t/guest-log" 2>&1
[[ $code == 200 ]] && grep -q "^Cookie: app=second" "$t/guest-log" && ! grep -qi "__Secure-probe\|__host-other\|^Authorization" "$t/guest-log" &&
        ok "__Host- and __Secure- cookies and Authorization never reach the guest" ||
        { cp "$t/guest-log" "$t/out"; not_ok "prefixed cookies or Authorization reached the guest ($code)"; }
code=$(fw 8080/redirect)
[[ $code == 302 ]] && grep -qi "^location: /seat/$S2/port/8080/hello" "$t/h" && ok "a root-relative redirect is put under the prefix" ||
        not_ok "redirect: $code $(grep -i location "$t/h")"
printf 'posted-%s' "$RANDOM" >"$t/post"
code=$(fw 8080/echo -H "Origin: $url" -H "Content-Type: text/plain" --data-binary "@$t/post")
[[ $code == 200 ]] && cmp -s "$t/body" "$t/post" && ok "a POST's body reaches the guest and its answer comes back" || not_ok "POST through the proxy: $code"
code=$(fw 8080/echo -H "Origin: https://evil.example" -H "Content-Type: text/plain" --data-binary "@$t/post")
[[ $code == 403 ]] && ok "a POST to a seat's page from another site: 403" || not_ok "cross-site POST to the proxy: $code"
codes=""
for p in malformed hugehead garbage short huge; do codes+="$p=$(fw "8080/$p") "; done
[[ $codes == "malformed=502 hugehead=502 garbage=502 short=502 huge=502 " ]] &&
        ok "hostile responses (a header without a colon, 32 KiB of headers, not HTTP, cut short, over forward_max_response): 502 each" ||
        not_ok "hostile responses: $codes"
grep -q "forward to seat '$S2' port 8080: .*malformed" "$t/web.log" && ok "and logged" || not_ok "the bad response is logged"
code=$(fw 8080/slow)
[[ $code == 504 ]] && ok "a guest that does not answer within forward_timeout_ms: 504" || not_ok "slow guest: $code"
code=$(fw 8081/)
[[ $code == 403 ]] && grep -q "refused: forwarding to port 8081, which is not in forward_ports (seat '$S2'" "$t/web.log" &&
        ok "a port not in forward_ports: 403, logged" || not_ok "port not in the list: $code"
code=$(fw 80/nothing-here.html)
[[ $code == 404 ]] && ok "busybox httpd's own 404 passes" || not_ok "guest 404: $code"
code=$(fw 80)
[[ $code == 308 ]] && grep -qi "^location: /seat/$S2/port/80/" "$t/h" && ok "the prefix without '/': 308 to it with one (relative links)" || not_ok "prefix redirect: $code"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$url/seat/$S2/port/80/")
[[ $code == 401 ]] && ok "no session cookie: 401" || not_ok "forward without a cookie: $code"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$cookie2" "$url/seat/$S1/port/80/")
[[ $code == 403 ]] && grep -q "refused: a session cookie of another seat on its forwarded pages (seat '$S1'" "$t/web.log" &&
        ok "$S2's cookie on $S1's forwarded page: 403, logged" || not_ok "another seat's forwarded page: $code"
# WebSockets under the prefix: only with seat-web's own Origin and that seat's cookie, to a
# port in forward_ports (cross-site WebSocket hijacking, as for the terminal).
fws() { # ORIGIN PATH [COOKIE]: the handshake's status code (101: relayed; curl then stops after 3 s)
        "${C[@]}" --http1.1 -o /dev/null -w '%{http_code}' -m 3 ${3:+-b "__Host-seatweb=$3"} \
                -H "Connection: Upgrade" -H "Upgrade: websocket" -H "Sec-WebSocket-Version: 13" \
                -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" ${1:+-H "Origin: $1"} "$url$2"
}
w_own=$(fws "$url" "/seat/$S2/port/8080/echo" "$cookie2") w_evil=$(fws https://evil.example "/seat/$S2/port/8080/echo" "$cookie2")
w_none=$(fws "" "/seat/$S2/port/8080/echo" "$cookie2") w_anon=$(fws "$url" "/seat/$S2/port/8080/echo")
w_other=$(fws "$url" "/seat/$S1/port/8080/echo" "$cookie2") w_port=$(fws "$url" "/seat/$S2/port/8081/echo" "$cookie2")
w_page=$(fws "$url" "/seat/$S2" "$cookie2")
[[ $w_own == 101 && $w_evil != 101 && $w_none != 101 && $w_anon != 101 && $w_other != 101 && $w_port != 101 && $w_page != 101 ]] &&
        ok "forwarded WebSocket: another site's Origin ($w_evil), none ($w_none), no cookie ($w_anon), another seat ($w_other), a port not listed ($w_port), not a seat's page ($w_page) refused; its own opens ($w_own)" ||
        not_ok "forwarded WebSocket handshakes: own $w_own evil $w_evil none $w_none anon $w_anon other $w_other port $w_port page $w_page"
grep -q "refused: a forwarded WebSocket without seat-web's own Origin (seat '$S2'" "$t/web.log" && ok "and the cross-site one is logged" ||
        not_ok "the cross-site forwarded WebSocket is logged"
code=$(fw 80/)
[[ $code == 200 ]] && grep -q busybox-page-in-the-seat "$t/body" && ok "seat-web forwards on after all that" || not_ok "forward after the hostile answers: $code"
# seatd recorded each connection in the seat's audit log (forward.start, forward.end).
audit=$(ls "$t/state/seats/$S2"/audit-g*.log 2>/dev/null | tail -1)
python3 - "$audit" >"$t/out" 2>&1 <<'PY' && ok "the seat's audit log holds the forwarded connections: $(cat "$t/out")" || not_ok "forward.start/forward.end in the audit log"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def data(r): return r.get("data", r)
starts = [data(r) for r in recs if r.get("type") == "forward.start"]
ends = [data(r) for r in recs if r.get("type") == "forward.end"]
p80 = [s for s in starts if s.get("port") == 80 and s.get("host") == "127.0.0.1" and not s.get("operator")]
p8080 = [s for s in starts if s.get("port") == 8080]
print("%d starts (%d to port 80, %d to 8080), %d ends" % (len(starts), len(p80), len(p8080), len(ends)))
sys.exit(0 if p80 and p8080 and len(ends) >= 1 else 1)
PY

code=$("${C[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$cookie2" "$url/api/seat/$S1/status")
[[ $code == 403 ]] && ok "a cookie of $S2 on $S1's status: 403" || not_ok "cross-seat cookie: $code"
grep -q "refused: a session cookie of another seat (seat '$S1'" "$t/web.log" && ok "and logged" || not_ok "the cross-seat refusal is logged"
code=$(login "$S2" "$tok1")
[[ $code == 403 ]] && ok "$S1's token on $S2: 403" || not_ok "another seat's token: $code"
grep -q "refused: login with a token seatd refused (seat '$S2'" "$t/web.log" && ok "and logged" || not_ok "the refused login is logged"

code=$("${C[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$cookie2; __Host-seatweb=$cookie2" "$url/api/seat/$S2/status")
[[ $code == 401 ]] && ok "a cookie given twice opens nothing (401)" || not_ok "duplicate cookie: $code"
# One character changed (to another one: a cookie that ends in A gets a B).
guess=${cookie2%?}A; [[ $guess == "$cookie2" ]] && guess=${cookie2%?}B
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$guess" "$url/api/seat/$S2/status")
[[ $code == 401 ]] && ok "a guessed cookie opens nothing (401)" || not_ok "guessed cookie: $code"
code=$("${C[@]}" -D "$t/h" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$cookie2" --data '' "$url/logout")
cleared=$(grep -ci '^set-cookie: __Host-seatweb=;.*Max-Age=0' "$t/h")
code2=$("${C[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$cookie2" "$url/api/seat/$S2/status")
[[ $code == 303 && $cleared == 1 && $code2 == 401 ]] && ok "logout: 303, the cookie cleared, the session gone (then 401)" ||
        not_ok "logout: $code, cleared $cleared, then $code2"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/x-www-form-urlencoded' --data-binary @<(head -c 100000 /dev/zero | tr '\0' a) "$url/login")
[[ $code == 413 ]] && ok "a 100 kB login form: 413" || not_ok "oversized form: $code"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data '{"seat":"x"}' "$url/login")
[[ $code == 415 ]] && ok "a JSON login: 415" || not_ok "wrong content type: $code"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$url/login")
[[ $code == 405 ]] && ok "GET /login: 405" || not_ok "GET /login: $code"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' --path-as-is "$url/static/../../../etc/passwd")
[[ $code == 404 || $code == 400 || $code == 403 ]] && ok "/static/../../etc/passwd: $code" || not_ok "path traversal: $code"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' --data 'seat=%zz&token=1' "$url/login")
[[ $code == 400 ]] && ok "a malformed form escape: 400" || not_ok "bad escape: $code"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -H "Origin: https://evil.example" --data-urlencode "seat=$S2" --data-urlencode "token=$tok2" "$url/login")
[[ $code == 403 ]] && ok "a login POST from another origin: 403" || not_ok "cross-origin POST: $code"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)" "$url/")
[[ $code != 200 ]] && ok "a 9 kB header is refused ($code)" || not_ok "9 kB header accepted"
# An idle connection (TLS up, no request) is closed by seat-web (idle_timeout = 3 s).
python3 - "$port" "$t/web/tls/cert.pem" >"$t/out" 2>&1 <<'PY' && ok "an idle connection is closed by seat-web" || not_ok "idle connection closed"
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="127.0.0.1")
s.settimeout(120)
sys.exit(0 if s.recv(1) == b"" else 1)
PY
# Slow-loris: headers trickled one line a second, or a body promised and never sent: the
# connection is closed long before the client is done (60 s).
for mode in headers body; do
        python3 - "$port" "$t/web/tls/cert.pem" "$mode" >"$t/out" 2>&1 <<'PY' && ok "a trickle ($mode): $(cat "$t/out")" || not_ok "a trickle ($mode) is cut off"
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="127.0.0.1")
if sys.argv[3] == "headers":
    s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
else:
    s.sendall(b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
              b"Content-Length: 100\r\n\r\nseat=")
for i in range(60):
    time.sleep(1)
    try:
        if sys.argv[3] == "headers":
            s.sendall(b"X-Slow-%d: a\r\n" % i)
        s.settimeout(0.01)
        try:
            if s.recv(1) == b"":
                print("closed by seat-web after %d s" % (i + 1)); sys.exit(0)
        except (socket.timeout, ssl.SSLWantReadError):
            pass
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
        print("closed by seat-web after %d s" % (i + 1)); sys.exit(0)
print("still open after 60 s"); sys.exit(1)
PY
done
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$url/")
[[ $code == 200 ]] && ok "seat-web still serves after all that" || not_ok "seat-web serves after the bad input: $code"

# ---------------------------------------------------------------- rate limits
# Per address: 6 a minute from 127.0.0.3, whatever the seat.
codes=()
for i in $(seq 1 12); do codes+=("$(curl -s --cacert "$t/web/tls/cert.pem" --interface 127.0.0.3 -o "$t/body" -w '%{http_code}' \
        --data-urlencode "seat=$S2" --data-urlencode "token=$(printf '%064d' "$i")" "$url/login")"); done
[[ ${codes[0]} == 403 && " ${codes[*]} " == *" 429 "* ]] && grep -q "this address" "$t/body" &&
        ok "login rate limit per address: ${codes[*]}" || not_ok "rate limit per address: ${codes[*]}"
code=$(login "$S2" "$tok2" --interface 127.0.0.4)
[[ $code == 303 ]] && ok "another address still logs in" || not_ok "another address after the limit: $code"
# Per seat: many addresses, one seat (12 failures a minute). Once the seat's are spent, an
# address with a full bucket of its own may still try it, staking that whole bucket (issue
# 35 #6: wrong tokens from elsewhere must not lock the participant out): 31 fresh addresses
# are each 403, an address that failed once lately (127.0.0.41, on S1) is refused for the
# seat (tried until the seat's bucket is empty: it may have refilled by one meanwhile), and
# the seat's own token from a fresh address logs in.
code=$(login "$S1" "$(printf '%064d' 41)" --interface 127.0.0.41)
codes=()
for i in $(seq 10 40); do codes+=("$(curl -s --cacert "$t/web/tls/cert.pem" --interface "127.0.0.$i" -o "$t/body" -w '%{http_code}' \
        --data-urlencode "seat=$S2" --data-urlencode "token=$(printf '%064d' "$i")" "$url/login")"); done
codes41=()
for _ in 1 2 3; do
        codes41+=("$(login "$S2" "$(printf '%064d' 42)" --interface 127.0.0.41)")
        [[ ${codes41[-1]} == 429 ]] && break
done
[[ $code == 403 && " ${codes[*]} " != *" 429 "* && ${codes41[-1]} == 429 ]] && grep -q "this seat" "$t/body" &&
        ok "login rate limit per seat, across addresses: fresh addresses ${codes[*]}; one that failed lately ${codes41[*]}" ||
        not_ok "rate limit per seat: $code; fresh addresses ${codes[*]}; one that failed lately ${codes41[*]}"
grep -q "refused: login over the rate limit for this seat (seat '$S2'" "$t/web.log" && ok "and logged" || not_ok "the rate limit is logged"
code=$(login "$S2" "$tok2" --interface 127.0.0.42)
[[ $code == 303 ]] && ok "the seat's own token still logs in (from a fresh address) while wrong ones from elsewhere hold its bucket empty" ||
        not_ok "the seat's own token while its bucket is empty: $code"

# ---------------------------------------------------------------- the facilitator
# seat-web passwd (as root, like --link): the hash in the facilitators file, seat-web's
# user's, 0600; other names kept.
FAC_NAME=alice FAC_PASSWORD="correct horse $RANDOM"
export FAC_NAME FAC_PASSWORD
printf '%s\n' "other pw" | "$WEB" passwd -c "$t/web.conf" bob >"$t/out" 2>&1 &&
        printf '%s\n' "$FAC_PASSWORD" | "$WEB" passwd -c "$t/web.conf" alice >>"$t/out" 2>&1 &&
        [[ $(stat -c '%U %a' "$t/web/facilitators") == "nobody 600" ]] && grep -q '^alice:\$argon2id\$v=19\$m=65536,t=3,p=1\$' "$t/web/facilitators" &&
        grep -q '^bob:\$argon2id\$' "$t/web/facilitators" && ! grep -q "$FAC_PASSWORD" "$t/web/facilitators" &&
        ok "seat-web passwd: argon2id hashes (64 MiB, 3 passes) in the facilitators file, 0600, seat-web's user's; other names kept" ||
        { cat "$t/web/facilitators" >>"$t/out" 2>&1; not_ok "seat-web passwd"; }
# From a terminal: asked twice, never echoed; two that differ change nothing.
tty_passwd() { # NAME PW1 PW2: seat-web passwd on a pseudo-terminal; what it printed in $t/tty
        python3 - "$WEB" "$t/web.conf" "$@" >"$t/tty" 2>&1 <<'PY'
import os, pty, sys, time
web, conf, name, pw1, pw2 = sys.argv[1:6]
pid, fd = pty.fork()
if pid == 0:
    os.execv(web, [web, "passwd", "-c", conf, name])
out = b""
def expect(what):
    global out
    end = time.time() + 10
    while what not in out and time.time() < end:
        try:
            out += os.read(fd, 1024)
        except OSError:
            break
    return what in out
asked = expect(b"Password: ")
os.write(fd, pw1.encode() + b"\n")
asked = asked and expect(b"Again: ")
os.write(fd, pw2.encode() + b"\n")
while True:
    try:
        d = os.read(fd, 1024)
    except OSError:
        break
    if not d:
        break
    out += d
_, st = os.waitpid(pid, 0)
print(out.decode(errors="replace"))
sys.exit(0 if asked and pw1.encode() not in out and os.waitstatus_to_exitcode(st) == (0 if pw1 == pw2 else 1) else 1)
PY
}
tty_passwd carol "tty pw $RANDOM" "typo" && grep -q "the two passwords differ: nothing changed" "$t/tty" && ! grep -q '^carol:' "$t/web/facilitators" &&
        tty_passwd carol "tty pw" "tty pw" && grep -q '^carol:\$argon2id\$' "$t/web/facilitators" && grep -q '^alice:' "$t/web/facilitators" &&
        ok "seat-web passwd on a terminal: asked twice without echo; two that differ change nothing, two alike set it" ||
        { cat "$t/tty" >"$t/out"; not_ok "seat-web passwd on a terminal"; }
F=(curl -s --cacert "$t/web/tls/cert.pem")
# fac_login ADDRESS NAME PASSWORD [CURL ARGS]: the status code; headers in $t/h.
fac_login() { "${F[@]}" --interface "$1" -D "$t/h" -o "$t/body" -w '%{http_code}' -H "Origin: $url" \
        --data-urlencode "name=$2" --data-urlencode "password=$3" "${@:4}" "$url/facilitator/login"; }
code=$(fac_login 127.0.0.50 alice "$FAC_PASSWORD")
fcookie=$(sed -n 's/^set-cookie: __Host-seatfac=\([^;]*\);.*/\1/Ip' "$t/h" | tr -d '\r')
setc=$(grep -i '^set-cookie:' "$t/h" | tr -d '\r')
[[ $code == 303 && -n $fcookie && $setc == *"; HttpOnly"* && $setc == *"; Secure"* && $setc == *"; SameSite=Strict"* ]] &&
        ok "facilitator login (curl): 303, Set-Cookie __Host-seatfac HttpOnly; Secure; SameSite=Strict" || not_ok "facilitator login: $code $setc"
csrf=$("${F[@]}" -b "__Host-seatfac=$fcookie" "$url/facilitator/api/session" | python3 -c 'import json,sys; print(json.load(sys.stdin)["csrf"])' 2>/dev/null)
[[ ${#csrf} == 43 ]] && ok "the session's CSRF token comes from /facilitator/api/session" || not_ok "CSRF token: '$csrf'"
code=$(fac_login 127.0.0.50 "" "x")
[[ $code == 400 ]] && ok "a login without a name: 400" || not_ok "login without a name: $code"
code=$("${F[@]}" --interface 127.0.0.51 -o /dev/null -w '%{http_code}' --data-urlencode "name=alice" --data-urlencode "password=$FAC_PASSWORD" "$url/facilitator/login")
[[ $code == 403 ]] && ok "a facilitator login without an Origin: 403" || not_ok "login without Origin: $code"

# Each kind of cookie opens nothing of the other kind (a participant's fresh session on
# $S2: the per-seat limit above has had the seconds since to refill).
sleep 6
code=$(login "$S2" "$tok2" --interface 127.0.0.49)
pcookie=$(sed -n 's/^set-cookie: __Host-seatweb=\([^;]*\);.*/\1/Ip' "$t/h" | tr -d '\r')
[[ $code == 303 && -n $pcookie ]] || not_ok "a participant's login on $S2 for the cookie checks: $code"
c1=$("${F[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$fcookie" "$url/facilitator/api/session")
c2=$("${F[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatweb=$pcookie" "$url/facilitator/api/call/seat.list")
c3=$("${F[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatfac=$fcookie" "$url/api/seat/$S2/status")
c4=$("${F[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatfac=$fcookie" "$url/seat/$S2")
[[ $c1 == 401 && $c2 == 401 && $c3 == 401 && $c4 == 303 ]] &&
        ok "a facilitator's cookie opens no seat ($c3, page $c4), a participant's opens no dashboard call ($c2), nor as the other's name ($c1)" ||
        not_ok "cookie separation: $c1 $c2 $c3 $c4"

# CSRF: every POST needs the Origin and the session's token.
fpost() { # ORIGIN TOKEN PATH: status code
        "${F[@]}" -o "$t/body" -w '%{http_code}' -X POST -b "__Host-seatfac=$fcookie" ${1:+-H "Origin: $1"} ${2:+-H "X-CSRF-Token: $2"} "$url$3"
}
x_evil=$(fpost https://evil.example "$csrf" "/facilitator/api/seat/$S1/release") x_none=$(fpost "" "$csrf" "/facilitator/api/seat/$S1/release")
x_notok=$(fpost "$url" "" "/facilitator/api/seat/$S1/release") x_wrong=$(fpost "$url" "${csrf%?}$([[ ${csrf: -1} == A ]] && echo B || echo A)" "/facilitator/api/seat/$S1/release")
x_form=$("${F[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatfac=$fcookie" -H "Origin: https://evil.example" --data "csrf=$csrf" "$url/facilitator/logout")
[[ $x_evil == 403 && $x_none == 403 && $x_notok == 403 && $x_wrong == 403 && $x_form == 403 ]] &&
        ok "cross-site POSTs refused (403): another Origin ($x_evil), none ($x_none), no CSRF token ($x_notok), a wrong one ($x_wrong), a cross-site form with the right one ($x_form)" ||
        not_ok "CSRF: evil $x_evil, none $x_none, no token $x_notok, wrong $x_wrong, form $x_form"
[[ $("$CTL" -q --json status "$S1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null) == ready ]] &&
        ok "and $S1 is still there, ready" || not_ok "$S1 after the refused POSTs"
grep -q "refused: a facilitator POST without seat-web's own Origin" "$t/web.log" && grep -q "refused: a facilitator POST without its session's CSRF token" "$t/web.log" &&
        ok "the refusals are logged" || not_ok "the CSRF refusals are logged"

# The dashboard's WebSocket: a facilitator's cookie and seat-web's own Origin, both.
dws() { # ORIGIN COOKIE: the handshake's status code (101: open; curl then stops after 3 s)
        "${F[@]}" --http1.1 -o /dev/null -w '%{http_code}' -m 3 ${2:+-b "$2"} \
                -H "Connection: Upgrade" -H "Upgrade: websocket" -H "Sec-WebSocket-Version: 13" \
                -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" -H "Sec-WebSocket-Protocol: seat-dashboard" \
                ${1:+-H "Origin: $1"} "$url/ws/facilitator/events"
}
d_evil=$(dws https://evil.example "__Host-seatfac=$fcookie") d_none=$(dws "" "__Host-seatfac=$fcookie")
d_part=$(dws "$url" "__Host-seatweb=$pcookie") d_anon=$(dws "$url" "") d_own=$(dws "$url" "__Host-seatfac=$fcookie")
[[ $d_evil != 101 && $d_none != 101 && $d_part != 101 && $d_anon != 101 && $d_own == 101 ]] &&
        ok "dashboard WebSocket: another Origin ($d_evil), none ($d_none), a participant's cookie ($d_part), no cookie ($d_anon) refused; the facilitator's opens ($d_own)" ||
        not_ok "dashboard WebSocket handshakes: evil $d_evil, none $d_none, participant $d_part, anonymous $d_anon, own $d_own"
grep -q "refused: a dashboard WebSocket without seat-web's own Origin" "$t/web.log" && ok "and the cross-site one is logged" ||
        not_ok "the cross-site dashboard refusal is logged"
# A browser with both sessions: a page of the seat opened before the facilitator logged in
# runs the seat's own scripts under seat-web's address; the dashboard refuses it (its API
# would hand those scripts the CSRF token), the facilitator's cookie alone still works.
both="__Host-seatfac=$fcookie; __Host-seatweb=$pcookie"
b1=$("${F[@]}" -o "$t/body" -w '%{http_code}' -b "$both" "$url/facilitator/api/session")
b2=$(dws "$url" "$both") b3=$("${F[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatfac=$fcookie" "$url/facilitator/api/session")
[[ $b1 == 403 && $b2 != 101 && $b3 == 200 ]] && grep -q "also logged in to a seat" "$t/body" &&
        ok "a browser that holds a seat's session too gets no dashboard ($b1, WebSocket $b2), saying why; the facilitator's cookie alone does ($b3)" ||
        not_ok "both cookies: api $b1, WebSocket $b2, alone $b3: $(head -c 200 "$t/body")"
# max_dashboards = 2: a third while two are open is refused. The two are held open (curl
# itself in the background, up to 120 s; their status lines in dws1.h, dws2.h) until both
# are seen open, then the third is tried, then the two are closed.
dash_hold() { # HEADERS-FILE: a dashboard WebSocket held open by curl, in the background (pid in held)
        "${F[@]}" --http1.1 -o /dev/null -D "$1" -m 120 -b "__Host-seatfac=$fcookie" -H "Origin: $url" \
                -H "Connection: Upgrade" -H "Upgrade: websocket" -H "Sec-WebSocket-Version: 13" \
                -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" -H "Sec-WebSocket-Protocol: seat-dashboard" \
                "$url/ws/facilitator/events" >/dev/null 2>&1 &
        held=$!
}
dash_status() { sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$1" 2>/dev/null; } # HEADERS-FILE
dash_hold "$t/dws1.h"; dws1=$held
dash_hold "$t/dws2.h"; dws2=$held
wait_until '[[ -s $t/dws1.h && -s $t/dws2.h ]] || ! kill -0 "$dws1" 2>/dev/null || ! kill -0 "$dws2" 2>/dev/null'
d_third=$(dws "$url" "__Host-seatfac=$fcookie")
kill_wait "$dws1" "$dws2"
dash_status "$t/dws1.h" >"$t/dws1"; dash_status "$t/dws2.h" >"$t/dws2"
[[ $(cat "$t/dws1") == 101 && $(cat "$t/dws2") == 101 && $d_third != 101 ]] &&
        grep -q "refused: a dashboard WebSocket over max_dashboards" "$t/web.log" &&
        ok "max_dashboards = 2: two open, a third refused ($d_third) and logged" ||
        not_ok "max_dashboards: $(cat "$t/dws1") $(cat "$t/dws2") then $d_third"

# Wrong passwords: slow (argon2id, unknown names alike) and rate-limited per address and per name.
s0=$(date +%s%N); code=$(fac_login 127.0.0.52 alice wrong); s1=$(date +%s%N); code_u=$(fac_login 127.0.0.52 nobody-here wrong); s2=$(date +%s%N)
ms_k=$(((s1 - s0) / 1000000)) ms_u=$(((s2 - s1) / 1000000))
[[ $code == 403 && $code_u == 403 ]] && ((ms_k >= 50 && ms_u >= 50)) &&
        ok "a wrong password (${ms_k} ms) and an unknown name (${ms_u} ms): 403, each after a full argon2id verify" ||
        not_ok "wrong password $code (${ms_k} ms), unknown name $code_u (${ms_u} ms)"
codes=()
for i in $(seq 1 8); do codes+=("$(fac_login 127.0.0.53 "guess$i" "pw$i")"); done
[[ ${codes[0]} == 403 && " ${codes[*]} " == *" 429 "* ]] && grep -q "from this address" "$t/body" &&
        ok "facilitator logins per address (5 a minute): ${codes[*]}" || not_ok "facilitator rate limit per address: ${codes[*]}"
codes=()
for i in $(seq 60 70); do codes+=("$(fac_login "127.0.0.$i" bob "guess$i")"); done
[[ ${codes[0]} == 403 && " ${codes[*]} " == *" 429 "* ]] && grep -q "for this facilitator name" "$t/body" &&
        ok "facilitator logins per name, across addresses (5 a minute): ${codes[*]}" || not_ok "facilitator rate limit per name: ${codes[*]}"
grep -q "refused: facilitator login over the rate limit for the name 'bob'" "$t/web.log" && ok "and logged" || not_ok "the name's rate limit is logged"
code=$(fac_login 127.0.0.54 alice "$FAC_PASSWORD")
[[ $code == 303 ]] && ok "alice still logs in meanwhile (another address, another name)" || not_ok "alice after the limits: $code"

# /metrics: Prometheus text from seatd's metrics, for loopback; promtool accepts it.
code=$("${F[@]}" -o "$t/metrics" -w '%{http_code}' "$url/metrics")
if command -v promtool >/dev/null; then
        [[ $code == 200 ]] && promtool check metrics <"$t/metrics" >"$t/out" 2>&1 && grep -q '^seatd_seats{state="ready"} ' "$t/metrics" &&
                grep -q '^seatd_provision_seconds_bucket{le="+Inf"} ' "$t/metrics" && grep -q '^# TYPE seatd_reset_seconds histogram' "$t/metrics" &&
                grep -q '^seatd_host_memory_total_bytes ' "$t/metrics" &&
                ok "/metrics: seatd's metrics as Prometheus text, accepted by promtool check metrics" ||
                { cat "$t/metrics" >>"$t/out"; not_ok "/metrics ($code) passes promtool"; }
else
        skip "/metrics passes promtool" "promtool is not installed (apt-get install prometheus; scripts/lib/host.sh does)"
fi

# The browser: the dashboard live, a reset from it ends the participant's session, a
# second origin's POST is refused, a handout for two participants, logout.
browser facilitator "$S2" "$tok2" "$S1"
hs=$(sed -n 's/^# handout seats: //p' "$t/browser-facilitator")
for h in $hs; do
        "$CTL" -q --json status "$h" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["participant"] in ("carol","dave") else 1)' ||
                not_ok "handout seat $h belongs to its participant"
done
[[ $(wc -w <<<"$hs") == 2 ]] && ok "seatd holds the handout's two seats, each its participant's ($hs)" || not_ok "the handout's seats: '$hs'"
# The handout's page is kept for the facilitator who made it (reloads, printing), and
# only for them: another facilitator (carol, made by 'seat-web passwd' above), no session,
# an ID never handed out all find nothing.
hpage=$(sed -n 's/^# handout page: //p' "$t/browser-facilitator")
code=$(fac_login 127.0.0.52 carol "tty pw")
ccookie=$(sed -n 's/^set-cookie: __Host-seatfac=\([^;]*\);.*/\1/Ip' "$t/h" | tr -d '\r')
h_alice=$("${F[@]}" -o "$t/hp" -w '%{http_code}' -b "__Host-seatfac=$fcookie" "$url$hpage")
h_carol=$("${F[@]}" -o "$t/body" -w '%{http_code}' -b "__Host-seatfac=$ccookie" "$url$hpage")
h_none=$("${F[@]}" -o /dev/null -w '%{http_code}' "$url$hpage")
h_other=$("${F[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatfac=$fcookie" "$url/facilitator/handout/$(head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')")
h_short=$("${F[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatfac=$fcookie" "$url/facilitator/handout/abc")
[[ -n $hpage && $h_alice == 200 && $(grep -c 'class="card"' "$t/hp") == 2 && $code == 303 && -n $ccookie && $h_carol == 404 &&
   $(cat "$t/body") == *"kept for an hour after it is made, for the facilitator who made it"* && $h_none == 401 && $h_other == 404 && $h_short == 404 ]] &&
        ok "the made handout is kept for its facilitator ($h_alice, two cards); another facilitator $h_carol, no session $h_none, an unknown ID $h_other, a malformed one $h_short" ||
        not_ok "the kept handout: '$hpage' alice $h_alice, carol login $code $h_carol, none $h_none, unknown $h_other, short $h_short"
a2=""
for _ in $(seq 1 1800); do a2=$(ls "$t/state/evidence/archives/$S2-g1-"*.seatdev 2>/dev/null | head -1); [[ -n $a2 ]] && break; sleep 0.1; done
"$CTL" evidence open "$a2" --key "$t/facilitator.key" --out "$t/open2" --host-key "$t/state/trust/host.pub" >"$t/out" 2>&1 &&
        grep -rq '"facilitator":"alice"\|"facilitator": "alice"' "$t/open2" &&
        ok "the reset's audit record names the facilitator who pressed it (alice)" || not_ok "the audit names the facilitator"
# An archive downloads through the dashboard, byte for byte the sealed file.
code=$("${F[@]}" -o "$t/dl" -w '%{http_code}' -b "__Host-seatfac=$fcookie" "$url/facilitator/evidence/$(basename "$a2")")
[[ $code == 200 ]] && cmp -s "$t/dl" "$a2" && ok "an evidence archive downloads through seat-web, byte for byte the sealed file ($(stat -c %s "$a2") bytes)" ||
        not_ok "evidence download: $code"
code=$("${F[@]}" -o /dev/null -w '%{http_code}' -b "__Host-seatfac=$fcookie" "$url/facilitator/evidence/..%2f..%2fetc%2fpasswd")
[[ $code == 404 || $code == 422 || $code == 400 ]] && ok "an archive name with a path: refused ($code)" || not_ok "evidence path traversal: $code"

kill -0 "$web_pid" 2>/dev/null && ok "seat-web is still running" || not_ok "seat-web died"
tap_end
