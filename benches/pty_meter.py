#!/usr/bin/env python3
"""Run a command on a pseudo-terminal of a given size and count what it writes to it.

    benches/pty_meter.py --size 160x45 --stats FILE [--pid-file FILE] [--raw FILE] -- COMMAND [ARG ...]

The command's side of the pty gets the size through TIOCSWINSZ before it starts, so it sees a
160x45 terminal exactly as it would over SSH. This side reads everything the command writes
(the bytes a terminal would receive) and, once a second, appends one line to FILE:

    SECONDS_SINCE_START BYTES_TOTAL FRAMES_TOTAL

A frame is a burst of output: writes separated by less than 20 ms belong to the same burst
(the console writes each frame in one buffered write, so one frame is one burst; a burst can
hold two frames only if they left within 20 ms of each other, which the frame-rate cap
forbids). Cursor-position queries (ESC [ 6 n) are answered so no program waits for a reply.
SIGTERM or SIGINT ends the command and this harness; the final line is written first.
"""

import argparse
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

BURST_GAP_S = 0.020


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="160x45", help="COLSxROWS")
    parser.add_argument("--stats", required=True, help="file the per-second lines go to")
    parser.add_argument("--pid-file", help="file the command's pid is written to")
    parser.add_argument("--raw", help="file every byte read is also copied to, for inspection")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    cols, rows = (int(n) for n in args.size.lower().split("x"))

    pid, master = pty.fork()
    if pid == 0:
        # The child: stdin is the pty's terminal side; give it the size, then become COMMAND.
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)

    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(f"{pid}\n")

    stop = False

    def on_signal(_signum, _frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    start = time.monotonic()
    total = 0
    frames = 0
    last_read = None
    next_report = start + 1.0
    tail = b""
    raw = open(args.raw, "ab") if args.raw else None
    with open(args.stats, "a", buffering=1) as stats:
        while not stop:
            timeout = max(0.0, next_report - time.monotonic())
            try:
                ready, _, _ = select.select([master], [], [], timeout)
            except InterruptedError:
                continue
            now = time.monotonic()
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the command closed the terminal (it exited)
                    break
                if not chunk:
                    break
                total += len(chunk)
                if raw:
                    raw.write(chunk)
                if last_read is None or now - last_read >= BURST_GAP_S:
                    frames += 1
                last_read = now
                if b"\x1b[6n" in tail + chunk:
                    os.write(master, b"\x1b[1;1R")
                tail = chunk[-3:]
            if now >= next_report:
                stats.write(f"{now - start:.3f} {total} {frames}\n")
                next_report += 1.0
        stats.write(f"{time.monotonic() - start:.3f} {total} {frames}\n")
    if raw:
        raw.close()
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    # Keep draining so the command is never blocked on a full pty while it shuts down.
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                os.read(master, 65536)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
