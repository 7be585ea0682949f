"""The ``memviz`` console script: the native command line, run in-process."""

import signal
import sys

from memviz import _native


def main() -> None:
    """Runs ``memviz ARGS...`` and exits with its code."""
    # As a native program: Ctrl-C stops it (Python's own SIGINT handler only sets a flag that
    # the native code, running without the GIL, never looks at: `memviz open` would never
    # stop), and a closed pipe (`memviz folded F | head`) ends it quietly.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    raise SystemExit(_native.run_cli([sys.argv[0], *sys.argv[1:]]))


if __name__ == "__main__":
    main()
