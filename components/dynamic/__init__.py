"""The dynamic door: Python programs' ``pulumi.dynamic`` job resources and the host they run in.

The resources (``components.training_job``, ``components.tuning_job``: their base is
``_job_resource``) are declared in the program's process; their providers
(``components._provider``, ``components._tuning_provider``: the modules states pickle by
reference) run in the dynamic provider host, ``python -m pulumi.dynamic``, a client of the core
(``components.core``) like the plugin. The host's run-time patches are this door's alone
(``_host``; docs/patches.md lists each); the plugin's process imports none of this folder.
"""

from __future__ import annotations

__all__: list[str] = []
