"""The job's lifecycle in the provider: check and diff, submit or adopt, wait, read, delete.

The pickled addresses the engine loads stay where states name them:
``components._provider``, ``components._tuning_provider`` and ``components._run_key``."""

__all__: list[str] = []
