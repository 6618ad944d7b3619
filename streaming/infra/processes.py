"""Child processes that do not outlive the process that started them."""

from __future__ import annotations

import contextlib
import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """`preexec_fn` for Popen (Linux): the child gets SIGKILL when the thread that started it dies, even by a
    signal that skips atexit and fixture teardown, so a killed test run or demo leaves no JVM holding a port.
    Start children from a long-lived thread (the main one): the signal follows the starting thread."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: stop() and atexit still stop them
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
