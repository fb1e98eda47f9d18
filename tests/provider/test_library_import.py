"""The client library imported in part: the job service alone for refresh and destroy, with the
message types for a create.

Each case runs in a fresh interpreter (this test process has the whole library imported
already), which prints what it found as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from emulator.testing import EmulatorProcess
from tests.provider.conftest import configured, job_inputs
from tests.provider.test_tuning import tuning_inputs

REPO = Path(__file__).resolve().parents[2]
OTHER_SERVICE = "google.cloud.aiplatform_v1.services.dataset_service"


def fresh(code: str) -> Any:
    """Run ``code`` in a new interpreter at the repository root; what it printed, as JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_job_service_alone_leaves_the_rest_of_the_library_unimported() -> None:
    found = fresh(
        f"""
        import json, sys
        from components.vertex._library import PACKAGE, job_service
        client_class = job_service().JobServiceClient
        package = sys.modules[PACKAGE]
        print(json.dumps({{
            "other_service": {OTHER_SERVICE!r} in sys.modules,
            "package_ran": "JobServiceClient" in vars(package),
            "client": client_class.__name__,
        }}))
        """
    )
    assert found == {"other_service": False, "package_ran": False, "client": "JobServiceClient"}


def test_code_that_uses_the_library_whole_finds_it_whole() -> None:
    found = fresh(
        f"""
        import json, sys
        from components.vertex._library import job_service
        service = job_service()
        from google.cloud import aiplatform_v1
        study = aiplatform_v1.types.StudySpec  # a type the job service did not need
        from google.cloud.aiplatform_v1.types import CustomJob
        try:
            aiplatform_v1.NoSuchThing
            missing = "no error"
        except AttributeError as exc:
            missing = str(exc)
        print(json.dumps({{
            "same_client": aiplatform_v1.JobServiceClient is service.JobServiceClient,
            "same_type": CustomJob is aiplatform_v1.CustomJob,
            "study": study.__name__,
            "version": bool(aiplatform_v1.__version__),
            "other_service": {OTHER_SERVICE!r} in sys.modules,
            "missing": missing,
        }}))
        """
    )
    assert found["same_client"] and found["same_type"] and found["version"]
    assert found["study"] == "StudySpec"
    assert found["other_service"] is True  # the package's own __init__ ran
    assert "NoSuchThing" in found["missing"]


def test_the_job_service_alone_uses_the_types_a_whole_import_names() -> None:
    """Every message type the lazily imported client uses is the object the whole library
    names, registered once in protobuf's pool: a type defined twice (a submodule of the
    deferred ``types`` package run a second time by the whole import) would be a different
    class, and a job built from one would not be the other's (docs/patches.md)."""
    found = fresh(
        """
        import json, sys, types
        import proto
        from google.protobuf import descriptor_pool
        from components.vertex._library import job_service
        service = job_service()
        client = sys.modules[service.JobServiceClient.__module__]
        used = {
            (module.__name__, name): cls
            for module in vars(client).values()
            if isinstance(module, types.ModuleType)
            and module.__name__.startswith("google.cloud.aiplatform_v1.types.")
            for name, cls in vars(module).items()
            if isinstance(cls, type) and issubclass(cls, proto.Message)
            and cls.__module__ == module.__name__
        }
        from google.cloud import aiplatform_v1
        aiplatform_v1.CustomJob  # a name of the package: its __init__ files run, as in use
        pool = descriptor_pool.Default()
        whole = vars(aiplatform_v1.types)
        print(json.dumps({
            "used": len(used),
            "not_the_same": sorted(
                name for (_, name), cls in used.items()
                if name in whole and whole[name] is not cls
            ),
            "named": sum(1 for (_, name) in used if name in whole),
            "registered_twice": sorted(
                name for (_, name), cls in used.items()
                if pool.FindMessageTypeByName(cls.pb().DESCRIPTOR.full_name)
                is not cls.pb().DESCRIPTOR
            ),
            "same_client": aiplatform_v1.JobServiceClient is service.JobServiceClient,
            "custom_job": aiplatform_v1.CustomJob is client.gca_custom_job.CustomJob,
        }))
        """
    )
    assert found["used"] > 50 and found["named"] > 50  # the check would pass on no types
    assert found["not_the_same"] == [] and found["registered_twice"] == []
    assert found["same_client"] and found["custom_job"]


def test_a_library_imported_before_is_used_as_it_is() -> None:
    found = fresh(
        """
        import json, warnings
        warnings.simplefilter("ignore", FutureWarning)
        from google.cloud import aiplatform_v1
        from components.vertex import _library
        service = _library.job_service()
        print(json.dumps({
            "deferred": sorted(_library._unexecuted),
            "same": service.JobServiceClient is aiplatform_v1.JobServiceClient,
        }))
        """
    )
    assert found == {"deferred": [], "same": True}


def test_a_library_laid_out_otherwise_is_imported_whole() -> None:
    found = fresh(
        """
        import json
        from components.vertex import _library
        _library._JOB_SERVICE = _library.PACKAGE + ".services.no_such_service"
        try:
            _library.job_service()
            error = ""
        except ImportError as exc:
            error = type(exc).__name__
        from google.cloud import aiplatform_v1
        print(json.dumps({
            "error": error,
            "deferred": sorted(_library._unexecuted),
            "whole": "CustomJob" in vars(aiplatform_v1),
        }))
        """
    )
    assert found == {"error": "ModuleNotFoundError", "deferred": [], "whole": True}


def test_a_refresh_and_a_delete_import_the_job_service_only(sim: EmulatorProcess) -> None:
    provider = configured(sim.endpoint, cancelTimeout="20")
    hanging = job_inputs(labels={"emulator-outcome": "hang"}, wait_for="running")
    created = provider.create(provider.check({}, hanging).inputs)
    found = fresh(
        f"""
        import json, sys
        from pulumi.dynamic import ConfigureRequest
        from pulumi.dynamic.config import Config
        from components._provider import TrainingJobProvider
        provider = TrainingJobProvider()
        provider.configure(
            ConfigureRequest(Config({{"training:endpoint": {sim.endpoint!r}}}, "gpu-training"))
        )
        outs = json.loads({json.dumps(json.dumps({**created.outs, "delete_record_on_delete": True}))})
        read = provider.read({created.id!r}, outs)
        provider.delete({created.id!r}, outs)
        print(json.dumps({{
            "state": read.outs["status"]["state"],
            "other_service": {OTHER_SERVICE!r} in sys.modules,
        }}))
        """
    )
    assert found == {"state": "JOB_STATE_RUNNING", "other_service": False}
    with pytest.raises(gexc.NotFound):  # cancelled, then its record deleted
        sim.client().get_custom_job(name=created.id)


def test_the_types_are_whole_for_threads_that_convert_at_once() -> None:
    """``types_only`` runs the types package's ``__init__`` (which ``job_service`` defers): 16
    creates building their jobs at once all find the types (a pulumi up of 200 jobs failed
    some with "module 'google.cloud.aiplatform_v1.types' has no attribute 'CustomJobSpec'")."""
    found = fresh(
        f"""
        import json, sys, threading
        from components.vertex._library import job_service, types_only
        job_service()
        whole_at_once = "CustomJobSpec" in vars(types_only())
        errors, barrier = [], threading.Barrier(16)

        def convert():
            barrier.wait()
            try:
                types_only().CustomJobSpec, types_only().StudySpec
            except Exception as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=convert) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        types = sys.modules["google.cloud.aiplatform_v1.types"]
        print(json.dumps({{
            "errors": errors,
            "whole_at_once": whole_at_once,
            "executed": "__getattr__" not in vars(types),
            "other_service": {OTHER_SERVICE!r} in sys.modules,
        }}))
        """
    )
    assert found == {
        "errors": [],
        "whole_at_once": True,
        "executed": True,
        "other_service": False,
    }


def test_a_create_imports_the_job_service_and_the_message_types_only(
    sim: EmulatorProcess,
) -> None:
    """The job is built from the library's message types: the clients of its other services
    (the package ``__init__``, 0.25 s more of CPU in every ``pulumi up``) stay unimported."""
    inputs = json.dumps(json.dumps([job_inputs(), tuning_inputs()]))
    found = fresh(
        f"""
        import json, sys
        from pulumi.dynamic import ConfigureRequest
        from pulumi.dynamic.config import Config
        from components._provider import TrainingJobProvider
        from components._tuning_provider import TuningJobProvider
        made = {{}}
        training, tuning = json.loads({inputs})
        for provider, inputs in ((TrainingJobProvider(), training), (TuningJobProvider(), tuning)):
            provider.configure(
                ConfigureRequest(Config({{"training:endpoint": {sim.endpoint!r}}}, "gpu-training"))
            )
            created = provider.create(provider.check({{}}, inputs).inputs)
            made[type(provider).__name__] = created.outs["status"]["state"]
        print(json.dumps({{
            "made": made,
            "other_service": {OTHER_SERVICE!r} in sys.modules,
        }}))
        """
    )
    assert found["other_service"] is False
    assert set(found["made"]) == {"TrainingJobProvider", "TuningJobProvider"}


def test_a_tuning_jobs_name_is_read_without_the_library() -> None:
    found = fresh(
        """
        import json, sys
        from components._tuning_provider import TUNING_JOB
        place = TUNING_JOB.parse_name("projects/p/locations/r/hyperparameterTuningJobs/7")
        print(json.dumps({
            "place": place,
            "library": "google.cloud.aiplatform_v1" in sys.modules,
        }))
        """
    )
    assert found == {"place": ["p", "r", "7"], "library": False}
