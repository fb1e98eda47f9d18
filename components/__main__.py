"""Entry point of ``python -m components``."""

import sys

from .cli._cli import main

sys.exit(main())
