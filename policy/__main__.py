"""CrossGuard policy pack for TrainingJob and HyperparameterTuningJob resources.

The rules are plain functions in ``components.policies`` (unit-tested without the
engine); this file only hands them to ``pulumi_policy``. A tuning job counts as all its
parallel trials at once (GPUs and dollars per hour), judged on its trial spec. A plugin job
without its own project or region takes its provider's (``resource.provider``'s inputs) or,
for the default provider, the stack's ``gpu-training:project``/``gpu-training:region``, then
the environment pulumi-gcp reads (``GOOGLE_REGION``..., the pack's: the engine starts it with
the environment it starts the plugin with). A stack
policy sees each resource's outputs: a plugin job's price with its ``costBasis`` is judged as
what it is (``job_from_props``: a bound as a bound). Thresholds come from the policy
config file (``policy/dev.json``, ``policy/prod.json``); a rule it does not set is off:

    pulumi preview --stack dev --policy-pack policy --policy-pack-config policy/dev.json
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# The rules' package: beside this file in a release's pack (gpu-training-policy/components,
# scripts/release.py), else the checkout's root.
sys.path.insert(
    0,
    str(
        Path(__file__).resolve().parent
        if (Path(__file__).resolve().parent / "components").is_dir()
        else Path(__file__).resolve().parents[1]
    ),
)

import pulumi
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from components import Catalog, load_catalog
from components.config import ConfigError, load_price_setting, priced_catalog
from components.plugin._shape import PACKAGE
from components.policies import (
    JOB_RULES,
    QUOTA_RULE,
    STACK_COST_RULE,
    PolicyJob,
    RuleSpec,
    job_from_props,
    max_cost_per_stack,
    plugin_defaults,
    quota_fits,
)


def _catalog() -> Catalog:
    """The catalog with the stack's organisation prices (``training:prices``) over its own:
    the policy pack is given the stack's configuration, as the program is."""
    return priced_catalog(load_price_setting())


def _stack_settings() -> dict[str, str | None]:
    """The stack's ``gpu-training:project``/``region``: what a default provider of the plugin
    is configured with (the engine gives the pack the stack's configuration)."""
    config = pulumi.Config(PACKAGE)
    return {f"{PACKAGE}:{key}": config.get(key) for key in ("project", "region")}


def _job(name: str, resource_type: str, props: Any, provider: Any) -> PolicyJob | None:
    """The job behind a resource; a plugin job's project and region default to its
    provider's configuration, or the stack's, then the environment's."""
    defaults = plugin_defaults(resource_type, provider, _stack_settings(), os.environ)
    return job_from_props(name, resource_type, props, defaults)


def _resource_policy(rule: RuleSpec) -> ResourceValidationPolicy:
    def check(args: ResourceValidationArgs, report: ReportViolation) -> None:
        job = _job(args.name, args.resource_type, args.props, args.provider)
        if job is None:
            return
        try:
            catalog = _catalog()
        except ConfigError as exc:
            report(f"cannot price {job.title}: {exc}", args.urn)
            return
        for message in rule.check(job, args.get_config(), catalog):
            report(message, args.urn)

    return ResourceValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=check,
        config_schema=PolicyConfigSchema(properties={k: dict(v) for k, v in rule.config.items()}),
    )


def _jobs(args: StackValidationArgs) -> list[PolicyJob]:
    """The stack's training and tuning jobs."""
    return [
        job
        for resource in args.resources
        if (job := _job(resource.name, resource.resource_type, resource.props, resource.provider))
        is not None
    ]


def _stack_cost(args: StackValidationArgs, report: ReportViolation) -> None:
    jobs = _jobs(args)
    try:
        catalog = _catalog()
    except ConfigError as exc:
        report(f"cannot price the stack's jobs: {exc}", None)
        return
    for message in max_cost_per_stack(jobs, args.get_config(), catalog):
        report(message, None)


def _stack_quota(args: StackValidationArgs, report: ReportViolation) -> None:
    """Opt-in (``quota-fits: {enabled: true}``): the jobs fit the quotas the program read."""
    for message in quota_fits(_jobs(args), args.get_config(), load_catalog()):
        report(message, None)


PolicyPack(
    name="gpu-training-guardrails",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        *(_resource_policy(rule) for rule in JOB_RULES),
        StackValidationPolicy(
            name=STACK_COST_RULE.name,
            description=STACK_COST_RULE.description,
            validate=_stack_cost,
            config_schema=PolicyConfigSchema(
                properties={k: dict(v) for k, v in STACK_COST_RULE.config.items()}
            ),
        ),
        StackValidationPolicy(
            name=QUOTA_RULE.name,
            description=QUOTA_RULE.description,
            validate=_stack_quota,
            config_schema=PolicyConfigSchema(
                properties={k: dict(v) for k, v in QUOTA_RULE.config.items()}
            ),
        ),
    ],
)
