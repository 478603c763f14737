"""python -m accelsim.cli (the same as python -m accelsim)."""

import sys

from accelsim.cli import main

if __name__ == "__main__":
    sys.exit(main())
