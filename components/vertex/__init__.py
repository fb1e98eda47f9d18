"""Everything that talks to Vertex AI: the only package that imports ``google.cloud.aiplatform``.

- ``convert``: ``JobSpec`` <-> ``aiplatform_v1.CustomJob`` (imports the client library's types).
- ``api``: the client (one constructor, for Vertex AI and the local emulator alike), retries with
  backoff, and a job's lifecycle (submit or adopt, wait, cancel, delete), written against a
  ``JobKind`` so that a second kind of job reuses it.

- ``quotas``: the project's Vertex training quotas, read with the Cloud Quotas client
  (``cloudquotas_v1``, imported on the first read; never ``google.cloud.aiplatform``).
- ``_library``: imports the client library's job service alone (what ``refresh`` and
  ``destroy`` need, half the import's cost), its message types (to build a job) or the
  library whole; a run-time change of the library's import, listed in docs/patches.md.

Importing this package is cheap; ``api`` loads the client library on its first call and
``convert`` when it is imported, so the preview path (``check``/``diff``) imports neither.
"""

__all__: list[str] = []
