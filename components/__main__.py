"""Entry point of ``python -m components``."""

import sys

from components._cli import main

sys.exit(main())
