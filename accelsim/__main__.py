"""python -m accelsim: the accelsim command line."""

import sys

from accelsim.cli import main

if __name__ == "__main__":
    sys.exit(main())
