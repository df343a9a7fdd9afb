# SPDX-License-Identifier: LGPL-2.1-or-later
"""TAP for the Python test drivers: check() prints one numbered line, end() the plan."""
import sys

n = 0
failed = 0


def check(cond, what, why=""):
    global n, failed
    n += 1
    if not cond:
        failed += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, what), flush=True)
    if not cond and why:
        print("# " + str(why)[:600], flush=True)


def end():
    """Prints the plan; the exit status a driver returns: 1 when a check failed."""
    print("1..%d" % n, flush=True)
    return 1 if failed else 0
