"""``python -m components``: the command line (validate, convert, estimate, prices, quota...)."""

__all__: list[str] = []
