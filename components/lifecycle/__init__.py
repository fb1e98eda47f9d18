"""The terms of a job's life, for every door, with no API call: the wire (property names,
labels, type tokens), the settings, adoption's rules, check and diff decisions, interrupts,
progress, the profiler. The lifecycle itself is the core's (``components.core``); the pickled
addresses the engine loads stay where states name them: ``components._provider``,
``components._tuning_provider`` and ``components._run_key``."""

__all__: list[str] = []
