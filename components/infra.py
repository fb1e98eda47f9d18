"""``TrainingInfra``: the GCP resources a cloud training job needs (pulumi-gcp).

Children (all with ``parent=self``):

- ``aiplatform.googleapis.com`` enabled on the project (left enabled on destroy: other
  things in the project may use it);
- a regional bucket in the job's region for the staged trainer package and job output:
  uniform bucket-level access, public access prevented, a lifecycle rule that deletes job
  output after ``output_retention_days`` and aborts stale multipart uploads;
- a service account the jobs run as, with least privilege: ``roles/storage.objectAdmin`` on
  that bucket only (read the package, write checkpoints and the model). It gets no project
  role: Vertex AI's own service agent provisions the machines and collects logs, and
  ``roles/aiplatform.user`` is what the *submitter* needs, not the job. Whoever runs
  ``pulumi up`` must be able to act as the account: pass ``deployer`` (e.g.
  ``user:me@example.com``) to grant ``roles/iam.serviceAccountUser`` on this account only;
- the trainer package, built deterministically from source (``components.lifecycle._packaging``) and
  uploaded as ``packages/<sha256[:16]>/<name>-<version>.tar.gz``: a code change is a new
  object name, so the job's spec changes and the job is replaced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_gcp as gcp

from .lifecycle._packaging import build_sdist, write_sdist

__all__ = ["TrainingInfra", "TrainingInfraArgs"]

_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]$")


@dataclass
class TrainingInfraArgs:
    """Inputs of ``TrainingInfra``.

    :param project: GCP project ID.
    :param region: the jobs' region; the bucket is created there.
    :param trainer_source: directory of the trainer package (``setup.py`` or
        ``pyproject.toml``); None stages nothing.
    :param bucket_name: default ``<project>-<stack>-training`` (must be globally unique).
    :param output_retention_days: job output under ``jobs/`` is deleted after this many days;
        None keeps it forever.
    :param force_destroy: let ``pulumi destroy`` delete a bucket that still holds objects.
    :param deployer: IAM member allowed to run jobs as the service account.
    :param build_dir: where built archives are written before upload.
    """

    project: str
    region: str
    trainer_source: Path | None = None
    bucket_name: str | None = None
    output_retention_days: int | None = 90
    force_destroy: bool = False
    deployer: str | None = None
    build_dir: Path | None = None


class TrainingInfra(pulumi.ComponentResource):
    """Bucket, service account, API enablement and staged trainer package for Vertex jobs."""

    bucket: gcp.storage.Bucket
    service_account: gcp.serviceaccount.Account
    package: gcp.storage.BucketObject | None
    bucket_name: pulumi.Output[str]
    service_account_email: pulumi.Output[str]
    package_uri: pulumi.Output[str] | None

    def __init__(
        self,
        name: str,
        args: TrainingInfraArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpu-training:infra:TrainingInfra", name, None, opts)
        bucket_name = args.bucket_name or f"{args.project}-{pulumi.get_stack()}-training"
        if not _BUCKET_NAME.match(bucket_name) or "goog" in bucket_name:
            raise pulumi.RunError(
                f"training:infra bucketName: {bucket_name!r} is not a valid bucket name "
                "(3-63 lowercase letters, digits, '-', '_'; no 'goog')"
            )
        child = pulumi.ResourceOptions(parent=self)
        self.api = gcp.projects.Service(
            f"{name}-aiplatform-api",
            project=args.project,
            service="aiplatform.googleapis.com",
            disable_on_destroy=False,
            opts=child,
        )
        self.bucket = self._bucket(name, bucket_name, args, child)
        self._identity(name, args, child)
        self.package, self.package_uri = self._package(name, args, child)
        self.bucket_name = self.bucket.name
        self.service_account_email = self.service_account.email
        outputs: dict[str, pulumi.Input[str]] = {
            "bucket_name": self.bucket.name,
            "service_account_email": self.service_account.email,
        }
        if self.package_uri is not None:
            outputs["package_uri"] = self.package_uri
        self.register_outputs(outputs)

    @staticmethod
    def _bucket(
        name: str, bucket_name: str, args: TrainingInfraArgs, child: pulumi.ResourceOptions
    ) -> gcp.storage.Bucket:
        """The regional bucket: uniform access, never public, job outputs expire."""
        rules = [
            gcp.storage.BucketLifecycleRuleArgs(
                action=gcp.storage.BucketLifecycleRuleActionArgs(
                    type="AbortIncompleteMultipartUpload"
                ),
                condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=1),
            )
        ]
        if args.output_retention_days is not None:
            rules.append(
                gcp.storage.BucketLifecycleRuleArgs(
                    action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
                    condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                        age=args.output_retention_days, matches_prefixes=["jobs/"]
                    ),
                )
            )
        return gcp.storage.Bucket(
            f"{name}-bucket",
            name=bucket_name,
            project=args.project,
            location=args.region.upper(),
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            force_destroy=args.force_destroy,
            lifecycle_rules=rules,
            labels={"managed-by": "pulumi", "purpose": "vertex-training"},
            opts=child,
        )

    def _identity(self, name: str, args: TrainingInfraArgs, child: pulumi.ResourceOptions) -> None:
        """The jobs' service account, object admin on the bucket only; act-as for the deployer."""
        self.service_account = gcp.serviceaccount.Account(
            f"{name}-job-sa",
            project=args.project,
            account_id=_account_id(pulumi.get_stack()),
            display_name=f"Vertex AI training jobs ({pulumi.get_stack()})",
            opts=child,
        )
        member = self.service_account.email.apply(lambda email: f"serviceAccount:{email}")
        self.bucket_access = gcp.storage.BucketIAMMember(
            f"{name}-job-sa-bucket",
            bucket=self.bucket.name,
            role="roles/storage.objectAdmin",
            member=member,
            opts=child,
        )
        self.deployer_access: gcp.serviceaccount.IAMMember | None = None
        if args.deployer:
            self.deployer_access = gcp.serviceaccount.IAMMember(
                f"{name}-deployer-act-as",
                service_account_id=self.service_account.name,
                role="roles/iam.serviceAccountUser",
                member=args.deployer,
                opts=child,
            )

    def _package(
        self, name: str, args: TrainingInfraArgs, child: pulumi.ResourceOptions
    ) -> tuple[gcp.storage.BucketObject | None, pulumi.Output[str] | None]:
        """The trainer, built deterministically and uploaded under its hash (or nothing)."""
        if args.trainer_source is None:
            return None, None
        sdist = build_sdist(args.trainer_source)
        build_dir = args.build_dir or Path(__file__).resolve().parents[1] / "build" / "packages"
        archive = write_sdist(sdist, build_dir)
        package = gcp.storage.BucketObject(
            f"{name}-trainer-package",
            bucket=self.bucket.name,
            name=f"packages/{sdist.sha256[:16]}/{sdist.filename}",
            source=pulumi.FileAsset(str(archive)),
            content_type="application/gzip",
            opts=child,
        )
        return package, pulumi.Output.concat("gs://", package.bucket, "/", package.name)

    def output_uri(self, job: str) -> pulumi.Output[str]:
        """``gs://<bucket>/jobs/<job>``: a job's ``baseOutputDirectory``."""
        return pulumi.Output.concat("gs://", self.bucket.name, f"/jobs/{job}")


def _account_id(stack: str) -> str:
    # 6-30 characters: lowercase letters, digits, hyphens; starts with a letter.
    cleaned = re.sub(r"[^a-z0-9-]", "-", stack.lower()).strip("-") or "stack"
    account = f"vertex-train-{cleaned}"[:30].rstrip("-")
    return account if len(account) >= 6 else account.ljust(6, "0")
