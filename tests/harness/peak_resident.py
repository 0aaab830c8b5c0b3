#!/usr/bin/env python3
# A test's wrapper: runs a command and fails if its peak resident memory went above a bound.
"""Runs a command and fails if its peak resident memory went above a bound.

Usage: peak_resident.py MAX_KB COMMAND [ARGS...]. The command's output passes through; the exit
status is the command's, or 1 when it exited 0 but its peak resident set (ru_maxrss of the
children, in KB) was above MAX_KB, said on stderr; only within the bound is the peak printed on
stdout, so a test may match that line alone.
"""
import resource
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print("usage: peak_resident.py MAX_KB COMMAND [ARGS...]", file=sys.stderr)
        return 2
    bound = int(sys.argv[1])
    status = subprocess.run(sys.argv[2:], check=False).returncode
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak > bound:
        print(f"peak_resident.py: {peak} KB resident at the peak, above the bound of {bound} KB", file=sys.stderr)
        return status or 1
    print(f"peak resident: {peak} KB, within {bound} KB")
    return status


if __name__ == "__main__":
    sys.exit(main())
