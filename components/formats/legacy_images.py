"""Which prebuilt Vertex AI training image a legacy job runs in (``training_images.csv``).

An AI Platform ``runtimeVersion`` bundled TensorFlow, scikit-learn and XGBoost in one image;
Vertex AI publishes one image per framework, version, Python and accelerator (CPU, GPU or
TPU), under three registry hosts. A legacy job does not say which framework it uses, so
the TensorFlow image of its runtime version is chosen, and the notes say so and how to
choose another. A version Vertex AI has no image for is a problem naming the nearest ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..rules._catalog import Catalog, TrainingImage
from ..rules._images import ExecutorImage, registry_uri
from ..rules._violations import Violation
from .bounded_yaml import SourceFloat
from .text import clipped

__all__ = [
    "FRAMEWORK_NAMES",
    "ImageChoice",
    "accelerator_kind",
    "choose_image",
    "image_uri",
    "other_frameworks_hint",
    "parse_version",
    "version_text",
]

FRAMEWORK_NAMES = {
    "tensorflow": "TensorFlow",
    "pytorch": "PyTorch",
    "scikit-learn": "scikit-learn",
    "xgboost": "XGBoost",
}
_KIND_WORDS = {"cpu": "CPU", "gpu": "GPU", "tpu": "TPU"}
_VERSION = re.compile(r"\d{1,4}(\.\d{1,4}){0,3}")
_MAX_SHOWN = 40


def version_text(value: Any) -> str:
    """A version as written: ``2.10`` read by YAML as a float is still ``"2.10"``."""
    if isinstance(value, SourceFloat):
        return value.text.strip()
    if isinstance(value, float):
        return repr(value)
    return str(value).strip()


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"2.10"`` → ``(2, 10)``; None for anything that is not a dotted version."""
    if not _VERSION.fullmatch(text):
        return None
    return tuple(int(part) for part in text.split("."))


def accelerator_kind(catalog: Catalog, machine: dict[str, Any]) -> str:
    """``cpu``, ``gpu`` or ``tpu``: what a pool's machine spec computes on."""
    name = machine.get("acceleratorType")
    accelerator = catalog.accelerators.get(name) if isinstance(name, str) else None
    if accelerator is not None and machine.get("acceleratorCount"):
        return accelerator.kind
    machine_type = catalog.machine_types.get(str(machine.get("machineType")))
    if machine_type is not None and machine_type.family == "tpu":
        return "tpu"
    return "gpu" if name and machine.get("acceleratorCount") else "cpu"


def image_uri(catalog: Catalog, image: TrainingImage, region: str | None) -> str:
    """The image's URI under the registry host of the region's geography."""
    return registry_uri(catalog, image, region)


@dataclass
class ImageChoice:
    """The image chosen for a pool (None when there is none), notes, and any problem."""

    uri: str | None
    notes: list[str] = field(default_factory=list)
    problem: Violation | None = None


@dataclass(frozen=True)
class _Wanted:
    framework: str
    version: str
    python: str | None
    accelerator: str
    version_path: str
    image_field: str

    @property
    def what(self) -> str:
        """``TensorFlow 2.11 GPU``."""
        name = FRAMEWORK_NAMES.get(self.framework, self.framework)
        return f"{name} {clipped(self.version, _MAX_SHOWN)} {_KIND_WORDS[self.accelerator]}"


def choose_image(
    catalog: Catalog,
    *,
    version: str,
    python: str | None,
    accelerator: str,
    region: str | None,
    version_path: str = "trainingInput.runtimeVersion",
    image_field: str = "masterConfig.imageUri",
    framework: str = "tensorflow",
    today: date | None = None,
) -> ImageChoice:
    """The prebuilt image for a framework version, Python version and accelerator kind.

    ``version_path`` and ``image_field`` name where the input sets the version and where
    it could give its own image instead, for the problem's wording.
    """
    wanted = _Wanted(framework, version, python, accelerator, version_path, image_field)
    candidates = [
        i
        for i in catalog.training_images
        if i.framework == framework and i.accelerator == accelerator
    ]
    if parse_version(version) is None:
        reason = f"{clipped(version, _MAX_SHOWN)!r} is not a version like 2.11"
        return ImageChoice(None, problem=_problem(version_path, reason, _known(candidates)))
    same = [i for i in candidates if i.framework_version == version]
    if not same:
        reason = _missing_reason(catalog, wanted)
        return ImageChoice(
            None, problem=_problem(version_path, reason, _nearest(wanted, candidates))
        )
    image, notes, problem = _by_python(wanted, same)
    if image is None:
        return ImageChoice(None, problem=problem)
    notes += _lifecycle_notes(wanted, image, today or date.today())
    return ImageChoice(image_uri(catalog, image, region), notes)


def _missing_reason(catalog: Catalog, wanted: _Wanted) -> str:
    """No image of that version at all, or only for other accelerator kinds (CPU, not TPU)."""
    kinds = sorted(
        {
            i.accelerator
            for i in catalog.training_images
            if i.framework == wanted.framework and i.framework_version == wanted.version
        }
    )
    name = FRAMEWORK_NAMES.get(wanted.framework, wanted.framework)
    if not kinds:
        return f"Vertex AI has no prebuilt {name} training image for {clipped(wanted.version, _MAX_SHOWN)}"
    others = " and ".join(_KIND_WORDS[k] for k in kinds)
    return (
        f"Vertex AI has prebuilt {name} {wanted.version} training images for {others} only, "
        f"none for {_KIND_WORDS[wanted.accelerator]}"
    )


def _problem(path: str, reason: str, suggestion: str | None) -> Violation:
    return Violation(path, reason, suggestion, rule="legacy")


def _sorted_versions(images: list[TrainingImage]) -> list[str]:
    versions = {i.framework_version for i in images if parse_version(i.framework_version)}
    return sorted(versions, key=lambda v: parse_version(v) or ())


def _known(images: list[TrainingImage]) -> str | None:
    versions = _sorted_versions(images)
    return f"versions with an image: {', '.join(versions)}" if versions else None


def _nearest(wanted: _Wanted, images: list[TrainingImage]) -> str:
    versions = _sorted_versions(images)
    name = FRAMEWORK_NAMES.get(wanted.framework, wanted.framework)
    if not versions:
        return (
            f"Vertex AI publishes no {name} {_KIND_WORDS[wanted.accelerator]} training image; "
            f"set {wanted.image_field} to an image of your own"
        )
    target = parse_version(wanted.version) or ()
    lower = [v for v in versions if (parse_version(v) or ()) < target]
    higher = [v for v in versions if (parse_version(v) or ()) > target]
    nearest = [*lower[-1:], *higher[:1]]
    field_name = wanted.version_path.rsplit(".", 1)[-1]
    return (
        f"nearest versions with one: {', '.join(nearest)}; set {field_name} to one of them, "
        f"or set {wanted.image_field} to an image of your own"
    )


def _by_python(
    wanted: _Wanted, images: list[TrainingImage]
) -> tuple[TrainingImage | None, list[str], Violation | None]:
    """The image with the wanted Python version, or the nearest one of the same major."""
    by_python = sorted(images, key=lambda i: parse_version(i.python_version) or (), reverse=True)
    pythons = ", ".join(i.python_version for i in by_python)
    if wanted.python is None:
        notes = []
        if len(by_python) > 1:
            notes.append(
                f"no pythonVersion: the {wanted.what} image with Python "
                f"{by_python[0].python_version} (also published: Python "
                f"{', '.join(i.python_version for i in by_python[1:])}; set pythonVersion)"
            )
        return by_python[0], notes, None
    exact = [i for i in by_python if i.python_version == wanted.python]
    if exact:
        return exact[0], [], None
    major = (parse_version(wanted.python) or (-1,))[0]
    same_major = [i for i in by_python if (parse_version(i.python_version) or (0,))[0] == major]
    if same_major:
        note = (
            f"pythonVersion {clipped(wanted.python, _MAX_SHOWN)}: Vertex AI's {wanted.what} image has "
            f"Python {same_major[0].python_version}; the trainer runs on that"
        )
        return same_major[0], [note], None
    reason = (
        f"Vertex AI's {wanted.what} training image has Python {pythons}, "
        f"not {clipped(wanted.python, _MAX_SHOWN)}"
    )
    suggestion = f"set pythonVersion to {by_python[0].python_version} (the trainer must run on it)"
    return None, [], _problem("trainingInput.pythonVersion", reason, suggestion)


def _lifecycle_notes(wanted: _Wanted, image: TrainingImage, today: date) -> list[str]:
    support, available = image.end_of_support, image.end_of_availability
    past = ExecutorImage("prebuilt", image).lifecycle(today)
    if past is not None:
        return [past]  # the one sentence every reader gives (``components.rules._images``)
    if support and today.isoformat() >= support:
        return [
            f"Google's {wanted.what} training image ({image.image_path}) is deprecated: end of "
            f"patch and support was {support}"
            + (f", end of availability {available}" if available else "")
        ]
    return []


def other_frameworks_hint(catalog: Catalog, accelerator: str, region: str | None) -> str:
    """Where to set another framework's image, with the newest of each as an example."""
    examples, names = [], []
    for framework in ("scikit-learn", "xgboost", "pytorch"):
        images = [
            i
            for i in catalog.training_images
            if i.framework == framework and i.accelerator == accelerator
        ]
        newest = _sorted_versions(images)[-1:]
        chosen = [i for i in images if i.framework_version in newest][:1]
        examples += [image_uri(catalog, i, region) for i in chosen]
        names += [FRAMEWORK_NAMES[framework]] if chosen else []
    shown = f" (e.g. {', '.join(examples)})" if examples else ""
    # Only the frameworks with an image for this accelerator kind (no scikit-learn TPU image).
    named = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)
    return (
        f"to run it in a {named or 'scikit-learn, XGBoost or PyTorch'} image instead, set "
        f"masterConfig.imageUri to that prebuilt image{shown}: with packageUris it becomes "
        "the executorImageUri"
    )
