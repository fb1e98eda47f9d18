"""``python -m components.plugin ENGINE``: the provider plugin (what the executable runs)."""

from . import main

main()
