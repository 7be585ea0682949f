"""The ``memviz`` console script: the native command line, run in-process."""

import sys

from memviz import _native


def main() -> None:
    """Runs ``memviz ARGS...`` and exits with its code."""
    sys.stdout.flush()
    sys.stderr.flush()
    raise SystemExit(_native.run_cli([sys.argv[0], *sys.argv[1:]]))


if __name__ == "__main__":
    main()
