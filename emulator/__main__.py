"""``python -m emulator``: see :mod:`emulator.cli`."""

import sys

from .cli import main

sys.exit(main())
