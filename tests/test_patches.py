"""The run-time patches: each one listed in docs/patches.md, checked against the upstream code
it depends on, and none of the dynamic host's in the plugin's process (which loads the status
alias and the core's partial import of the client library, ``components/vertex/_library.py``).

A patch reaches into code that is not ours (the dynamic provider host of the Pulumi SDK, gRPC's
server, the standard library's thread pool, the client library's package files). Each entry of
``UPSTREAM`` fingerprints that code (the source of the function or class, as the pinned versions
ship it; ``UPSTREAM_FILES``, a whole file): when an upgrade changes
it, the test fails and names what to check again, and docs/patches.md's "checked on" column is
to be updated with the new fingerprint. Dependencies are found by file, never imported: the
host module runs a server when executed.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PATCHES_DOC = REPO / "docs" / "patches.md"

UPSTREAM = {
    # module, qualified name: (the patch that depends on it, sha256[:16] of its source)
    ("pulumi.dynamic.__main__", "main"): (
        "widen_host_pool, install_cancel_handler",
        "77f501f1bcbf5341",
    ),
    ("pulumi.dynamic.__main__", "DynamicResourceProviderServicer.Cancel"): (
        "install_cancel_handler",
        "7f80297d7e8b6e27",
    ),
    ("pulumi.dynamic.__main__", "DynamicResourceProviderServicer.Delete"): (
        "request_urn",
        "169a59a39a4b28be",
    ),
    ("pulumi.dynamic.__main__", "DynamicResourceProviderServicer.Read"): (
        "request_urn",
        "1e85bf8b41212a2b",
    ),
    ("pulumi.dynamic.__main__", "_abort_with_traceback"): (
        "install_error_handlers",
        "162f39826b1607b7",
    ),
    ("grpc._server", "_select_thread_pool_for_behavior"): (
        "install_cancel_handler",
        "0bfe681c8f395530",
    ),
    ("grpc._server", "_ServerState"): ("install_cancel_handler", "79b1d818dc3df40b"),
    ("grpc._utilities", "DictionaryGenericHandler"): (
        "install_cancel_handler",
        "aa3647775254c0cd",
    ),
    ("concurrent.futures.thread", "ThreadPoolExecutor._adjust_thread_count"): (
        "widen_host_pool",
        "63dd96fa865aea0c",
    ),
}

# Whole files the library import of both doors (components/vertex/_library.py: `job_service`,
# `types_only`) leaves unexecuted until a name of them is asked for: it relies on them doing
# nothing a submodule needs (they import and name things, and warn of old Pythons and
# dependencies). Module: (the patch, sha256[:16] of the file's text).
UPSTREAM_FILES = {
    "google.cloud.aiplatform_v1": ("job_service, types_only", "0c59adcc192de1ed"),
    "google.cloud.aiplatform_v1.types": ("job_service, types_only", "a4b436d62a9c6dcc"),
}


def _file_of(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, module
    return Path(spec.origin)


def _source(module: str, qualname: str) -> str:
    """The source text of ``qualname`` (``Class.method``) in ``module``'s file."""
    path = _file_of(module)
    text = path.read_text()
    scope: list[ast.stmt] = ast.parse(text).body
    node: ast.AST | None = None
    for part in qualname.split("."):
        node = next(
            (
                n
                for n in scope
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and n.name == part
            ),
            None,
        )
        assert node is not None, f"{module}.{qualname} is gone: check the patch that uses it"
        scope = node.body
    segment = ast.get_source_segment(text, node)  # type: ignore[arg-type]
    assert segment is not None
    return segment


def _fingerprint(module: str, qualname: str) -> str:
    return hashlib.sha256(_source(module, qualname).encode()).hexdigest()[:16]


@pytest.mark.parametrize(("module", "qualname"), sorted(UPSTREAM))
def test_the_code_under_a_patch_is_as_it_was_checked(module, qualname):
    patch, expected = UPSTREAM[(module, qualname)]
    found = _fingerprint(module, qualname)
    assert found == expected, (
        f"{module}.{qualname} changed under {patch} (components/dynamic/_host.py): check the "
        f"patch against the new code, then record {found} here and in docs/patches.md"
    )


@pytest.mark.parametrize("module", sorted(UPSTREAM_FILES))
def test_the_package_files_the_library_import_defers_are_as_they_were_checked(module):
    patch, expected = UPSTREAM_FILES[module]
    found = hashlib.sha256(_file_of(module).read_text().encode()).hexdigest()[:16]
    assert found == expected, (
        f"{_upstream_path(module)} changed under {patch} (components/vertex/_library.py): "
        "check that it still only imports and names things (nothing a submodule needs runs "
        "there) and that services/job_service is there, then record "
        f"{found} here and in docs/patches.md with the library's version"
    )


def test_the_docs_name_the_client_library_version_the_files_were_checked_on():
    """An upgrade that leaves both files as they were still moves the version checked on."""
    from importlib.metadata import version

    installed = version("google-cloud-aiplatform")
    assert f"google-cloud-aiplatform {installed} " in PATCHES_DOC.read_text(), (
        f"docs/patches.md's 'Checked on' names another google-cloud-aiplatform than {installed}"
    )


def _upstream_path(module: str) -> str:
    """``google/cloud/aiplatform_v1/types/__init__.py``: a package's file as docs name it."""
    return module.replace(".", "/") + "/__init__.py"


def test_the_docs_list_every_patch_with_its_fingerprint():
    text = PATCHES_DOC.read_text()
    listed = [
        (f"{module}.{qualname}", patch, hash_)
        for (module, qualname), (patch, hash_) in UPSTREAM.items()
    ]
    listed += [
        (_upstream_path(module), patch, hash_) for module, (patch, hash_) in UPSTREAM_FILES.items()
    ]
    for upstream, patch, expected in listed:
        assert f"`{upstream}`" in text, upstream
        assert expected in text, f"docs/patches.md lacks {upstream}'s fingerprint {expected}"
        for name in patch.split(", "):
            assert f"`{name}`" in text, name


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_the_status_alias_is_still_needed_and_safe():
    """The plugin's own patch (``components/plugin/__init__.py``): the SDK's server and the
    Vertex client register ``google.rpc.Status`` from two files, and protobuf refuses the
    second. Fails when upstream fixes that (the alias can go) or when the two messages stop
    being the same field for field (the alias would be wrong)."""
    clash = _run("import pulumi.provider.experimental.server\nfrom google.rpc import status_pb2\n")
    assert clash.returncode != 0 and "duplicate symbol 'google.rpc.Status'" in clash.stderr, (
        "the SDK's status_pb2 and the client's load together now: drop the alias in "
        "components/plugin/__init__.py and its entry in docs/patches.md"
    )
    fields = _run(
        "import ast, json\n"
        "from google.protobuf import descriptor_pb2\n"
        "from google.rpc import status_pb2\n"
        "import importlib.util\n"
        "path = importlib.util.find_spec('pulumi.runtime.proto.status_pb2').origin\n"
        "tree = ast.parse(open(path).read())\n"
        "raw = next(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)"
        " and isinstance(n.value, bytes))\n"
        "sdk = descriptor_pb2.FileDescriptorProto.FromString(raw)\n"
        "ours = [(f.name, f.number, f.type) for f in sdk.message_type[0].field]\n"
        "theirs = [(f.name, f.number, f.type) for f in status_pb2.Status.DESCRIPTOR.fields]\n"
        "print(json.dumps([sdk.package, sdk.message_type[0].name, ours, theirs]))\n"
    )
    assert fields.returncode == 0, fields.stderr
    package, name, sdk_fields, client_fields = json.loads(fields.stdout)
    assert (package, name) == ("google.rpc", "Status")
    assert sdk_fields == client_fields and len(sdk_fields) == 3


def test_the_plugin_process_loads_none_of_the_dynamic_doors_code():
    """The plugin's server and provider, imported as ``python -m components.plugin`` does,
    load no module of the dynamic door (its host's patches, its providers, its resources)."""
    found = _run(
        "import json, sys\n"
        "import components.plugin._server\n"
        "import components.plugin._provider\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    assert found.returncode == 0, found.stderr
    loaded = json.loads(found.stdout)
    assert "components.core._jobs" in loaded  # the check would pass on any tree otherwise
    from components._floors import FLOORS

    doors = next(floor for floor in FLOORS if "dynamic" in floor.rooms)
    door = doors.rooms["dynamic"]
    dynamic = [
        name
        for name in loaded
        # the host the patches are for (pulumi itself imports the rest of pulumi.dynamic)
        if name == "pulumi.dynamic.__main__"
        or any(name == prefix or name.startswith(prefix + ".") for prefix in door)
    ]
    assert dynamic == []
