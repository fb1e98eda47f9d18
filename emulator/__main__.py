"""``python -m emulator``: see :mod:`emulator.cli`."""

import sys

from emulator.cli import main

sys.exit(main())
