#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pty-drive.py: run seatctl on a real pseudo-terminal, as a person at a terminal would,
and check what the terminal shows and how it is left. Prints one line per check:
"PASS what" or "FAIL what: why" (pty.sh turns them into TAP). Waits on output have a
generous deadline (TCG guests are slow); nothing here asserts how long anything took.

  pty-drive.py session  -- SEATCTL ARGS...   an interactive shell: tty, stty size (initial
                                             and after a resize), read, Ctrl-C, exit 7
  pty-drive.py status   -- SEATCTL ARGS...   a command that prints its tty and exits 3
  pty-drive.py sigterm  -- SEATCTL ARGS...   kill -TERM of seatctl while in raw mode
  pty-drive.py detach   -- SEATCTL ARGS...   "~." after Enter
What the terminal showed, and what was typed, is appended to $PTY_TRANSCRIPT when set.
"""
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

WAIT = 180  # seconds: a deadline for output to come, not a measurement
ROWS, COLS = 30, 100


def say(ok, what, why=""):
    print(("PASS " if ok else "FAIL ") + what + ("" if ok else ": " + why), flush=True)
    return ok


class Term:
    def __init__(self, argv, transcript):
        self.log = open(transcript, "ab") if transcript else None
        self.master, self.slave = os.openpty()
        self.set_size(ROWS, COLS)
        self.orig = termios.tcgetattr(self.slave)
        self.out = b""

        def child():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.p = subprocess.Popen(argv, stdin=self.slave, stdout=self.slave, stderr=self.slave,
                                  preexec_fn=child, close_fds=True)

    def set_size(self, rows, cols):
        # On the master: the kernel sends SIGWINCH to the terminal's foreground group.
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def read_some(self, timeout):
        r, _, _ = select.select([self.master], [], [], timeout)
        if r:
            try:
                d = os.read(self.master, 65536)
            except OSError:
                d = b""
            self.out += d
            if self.log:
                self.log.write(d)
                self.log.flush()
            # A terminal answers a query of the cursor's position (busybox's line editor
            # asks after each prompt): as a real one would.
            if b"\x1b[6n" in d:
                os.write(self.master, b"\x1b[1;1R")
            return bool(d)
        return False

    def expect(self, pattern, start=0):
        """The first match of pattern in the output after offset start; None at the deadline."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + WAIT
        while True:
            m = rx.search(self.out, start)
            if m:
                return m
            if time.monotonic() > deadline or self.p.poll() is not None and not self.read_some(0.2):
                return None
            self.read_some(0.5)

    def send(self, data):
        if self.log:
            self.log.write(b"\n<<<SENT %r>>>\n" % data)
        os.write(self.master, data)

    def raw(self):
        return not (termios.tcgetattr(self.slave)[3] & termios.ICANON)

    def wait_raw(self):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and self.p.poll() is None:
            if self.raw():
                return True
            self.read_some(0.1)
        return False

    def wait_exit(self):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self.p.poll() is not None:
                while self.read_some(0.1):
                    pass
                return self.p.returncode
            self.read_some(0.2)
        self.p.kill()
        return None

    def restored(self):
        return termios.tcgetattr(self.slave) == self.orig

    def tail(self):
        return repr(self.out[-400:])


def session(t):
    # A person types once the shell is there: its prompt, in raw mode.
    ok = say(t.wait_raw(), "seatctl shell puts the local terminal in raw mode", t.tail())
    ok &= say(t.expect(rb"# ") is not None, "the shell's prompt shows", t.tail())
    t.send(b"echo M1-$(tty)\r")
    m = t.expect(rb"M1-(/dev/pts/\d+)")
    ok &= say(m is not None, "tty in the shell is a /dev/pts terminal", t.tail())
    t.send(b"echo S1-$(stty size)-\r")
    m = t.expect(rb"S1-(\d+ \d+)-")
    ok &= say(m is not None and m.group(1) == b"%d %d" % (ROWS, COLS), "stty size is the local terminal's (%d %d)" % (ROWS, COLS),
              m.group(1).decode() if m else t.tail())

    # A resize of the local terminal reaches the remote one (asynchronously: asked again
    # until it shows, a bounded number of times: 240 half-seconds and more, a bound that
    # only catches a hang on a loaded host).
    t.set_size(40, 120)
    got = None
    for i in range(240):
        start = len(t.out)
        t.send(b"echo S2%d-$(stty size)-\r" % i)
        m = t.expect(rb"S2%d-(\d+ \d+)-" % i, start)
        got = m.group(1) if m else None
        if got == b"40 120":
            break
        time.sleep(0.5)
    ok &= say(got == b"40 120", "stty size follows a resize (40 120)", repr(got) + " " + t.tail())

    # The next prompt first, and the cursor query busybox sends after it answered (in
    # read_some), or the answer would reach `read` instead of the line editor.
    t.expect(rb"/ # ", m.end() if m else len(t.out))
    while t.read_some(0.5):
        pass
    start = len(t.out)
    t.send(b"read v; echo R-$v-R\r")
    t.expect(rb"read v; echo R-\$v-R", start)  # the line was echoed: read waits now
    t.send(b"typed-input\r")
    m = t.expect(rb"R-typed-input-R", start)
    ok &= say(m is not None, "an interactive read gets typed input", t.tail())

    # The status on a line of its own: an interactive shell drops the rest of a command
    # line whose foreground job died of SIGINT, as it would for its own ^C.
    start = len(t.out)
    t.send(b"sh -c 'echo READY-$((40+2)); exec sleep 300'\r")
    m = t.expect(rb"READY-42", start)
    if m:
        t.send(b"\x03")
        m = t.expect(rb"\^C", start)
    if m:
        t.send(b"echo C-$?-C\r")
        m = t.expect(rb"C-(\d+)-C", start)
    ok &= say(m is not None and m.group(1) == b"130", "Ctrl-C through the terminal kills the foreground command (status 130)",
              (m.group(1).decode() if m else t.tail()))

    t.send(b"exit 7\r")
    rc = t.wait_exit()
    ok &= say(rc == 7, "the shell's exit status (7) is seatctl's", "%r %s" % (rc, t.tail()))
    ok &= say(t.restored(), "the local terminal's mode is restored after exit", "")
    return ok


def status(t):
    m = t.expect(rb"T-(/dev/pts/\d+)-T")
    ok = say(m is not None, "exec -t: the command's stdout is a terminal", t.tail())
    rc = t.wait_exit()
    ok &= say(rc == 3, "exec -t: the command's exit status (3) is seatctl's", "%r %s" % (rc, t.tail()))
    ok &= say(t.restored(), "exec -t: the local terminal's mode is restored after exit", "")
    return ok


def sigterm(t):
    ok = say(t.wait_raw(), "exec -it puts the local terminal in raw mode", t.tail())
    t.p.send_signal(signal.SIGTERM)
    rc = t.wait_exit()
    ok &= say(rc == -signal.SIGTERM, "kill -TERM ends seatctl (by SIGTERM)", "%r %s" % (rc, t.tail()))
    ok &= say(t.restored(), "the local terminal's mode is restored after kill -TERM of seatctl", "")
    return ok


def detach(t):
    ok = say(t.wait_raw(), "exec -it: raw mode before the escape", t.tail())
    t.send(b"\r~.")
    rc = t.wait_exit()
    ok &= say(rc == 125, "'~.' after Enter disconnects (seatctl exits 125)", "%r %s" % (rc, t.tail()))
    ok &= say(b"disconnected" in t.out, "seatctl says it disconnected", t.tail())
    ok &= say(t.restored(), "the local terminal's mode is restored after '~.'", "")
    return ok


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    scenario = {"session": session, "status": status, "sigterm": sigterm, "detach": detach}[sys.argv[1]]
    t = Term(sys.argv[3:], os.environ.get("PTY_TRANSCRIPT"))
    try:
        return 0 if scenario(t) else 1
    finally:
        if t.p.poll() is None:
            t.p.kill()
            t.p.wait()


if __name__ == "__main__":
    sys.exit(main())
