"""``python -m splitprec``: the command-line entry point (the accuracy report lives in ``accuracy``)."""
from accuracy.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
