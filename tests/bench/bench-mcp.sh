#!/usr/bin/env bash
# tests/bench/mcp: seatctl mcp against seatctl exec on one seat of a private seatd (TCG),
# measured by tests/mcp/bench.mjs with the official MCP SDK's client. Prints
#   mcp: exec_true_p50_ms=N exec_over_seatctl=R first_progress_ms=N
# Asserts nothing about time.
#   usage: bench-mcp.sh BUILD_DIR [ROUNDS]
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR [ROUNDS]}"
need_cmd -h "apt-get install nodejs npm" node
mcp_dir=$HARNESS_SRC/tests/mcp
[[ -f $mcp_dir/node_modules/@modelcontextprotocol/sdk/package.json ]] ||
  skip_all "the MCP SDK is not installed (. scripts/lib/host.sh; host_install_mcp_client)"
harness_workdir /var/tmp/seatd-bench-mcp 0755
bench_seatd warm_reset=false network=false
S=$(provision_id --participant bench)
node "$mcp_dir/bench.mjs" "$CTL" "$S" "${2:-15}"
