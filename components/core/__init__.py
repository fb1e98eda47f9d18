"""The core: a job's whole life, for every door, behind a typed interface with no Pulumi type.

A door (the dynamic provider, ``components._provider``; the provider plugin,
``components.plugin``) translates its host's requests into a job's inputs and settings
(``components.lifecycle._settings.ProviderSettings``), calls the core, and translates the
typed answers back (``components.core._results``): check → the inputs to use, problems (property
path; reason: what is wrong; suggestion: what to change, or None, never repeated in the reason;
``Problem.text`` words them as users see them) and the validator's warnings; diff → changed
paths with each replace's reason; create, read, update → the job's id and outputs (its
``status``: state, cost, placed region); delete → nothing, or an error whose text is safe to
show; ``cancel_operations`` (the engine's Cancel) → every wait of the process ends, each job
left as it is. A preview's notes and quota shortfalls are data too (``Note``, ``Shortfall``).

- ``_jobs``: the lifecycle (check, diff, submit-or-adopt and wait, read, update, delete) and
  the kinds of job (``TRAINING_JOB``, ``TUNING_JOB``);
- ``_placement``: candidate regions, tried in order; ``_importing``: ``pulumi import``'s read;
- ``_preview``: the notes a preview says (cost, quota fit, placement plan, images, billing);
- ``_billing_cli``: live billing prices over the catalog's snapshot.

Nothing under this folder imports ``pulumi`` (``tests/test_layout.py``).
"""

from __future__ import annotations

__all__: list[str] = []
