"""Child process for the leader tests: becomes leader, says so, keeps the lock until killed.

I/O: the coordination service, stdout. Usage: ``python holder.py URL MEMBER LOCK_NAME``.
Prints ``LEADER`` once it holds the lock, then refreshes it; exits by itself
after 120 s (a bound: the tests kill it long before).
"""

from __future__ import annotations

import sys
import time

from l3ha.clock import SystemClock
from l3ha.daemon.leader import Leadership

LIFETIME = 120.0


def main() -> int:
    url, member, lock_name = sys.argv[1:4]
    leadership = Leadership(url, member, SystemClock(), lock_name)
    leadership.connect()
    deadline = time.monotonic() + LIFETIME
    while not leadership.try_acquire():
        if time.monotonic() > deadline:
            return 1
        time.sleep(MIN_SLEEP)
    print("LEADER", flush=True)
    while time.monotonic() < deadline:
        if not leadership.still_leader():
            print("LOST", flush=True)
            return 2
        time.sleep(MIN_SLEEP)
    leadership.close()
    return 0


MIN_SLEEP = 0.3

if __name__ == "__main__":
    sys.exit(main())
