"""``python -m splitprec``: the command-line entry point (the accuracy report lives in ``splitprec.accuracy``)."""
from splitprec.accuracy.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
