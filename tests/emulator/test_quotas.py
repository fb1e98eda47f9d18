"""The emulator's Cloud Quotas API through Google's own client, and its 429 at create through the
aiplatform client (``emulator.quotas``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import cloudquotas_v1 as cq
from google.cloud.aiplatform_v1 import types as aip

from emulator import quotas
from emulator.names import derived_number
from emulator.testing import EmulatorProcess, running_emulator
from tests.emulator.conftest import PARENT, SIMULATE_ARGS, make_job, raw_http, trainer_pool

T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
T4_SPOT = "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_t4_gpus"
T4_ID = "CustomModelTrainingT4GPUsPerProjectPerRegion"
T4_ENUM = aip.AcceleratorType.NVIDIA_TESLA_T4


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    # Jobs stay active (run 30 s) so that they hold their quota while the tests create more.
    args = [a if a != "0.3" else "30" for a in SIMULATE_ARGS]
    with running_emulator(
        *args,
        "--quota",
        "custom_model_training_nvidia_t4_gpus@us-central1=4",
        "--quota",
        "custom_model_training_preemptible_nvidia_t4_gpus=2",
    ) as server:
        yield server


def _quotas_client(emu: EmulatorProcess) -> cq.CloudQuotasClient:
    return cq.CloudQuotasClient(
        transport="rest",
        client_options={"api_endpoint": emu.endpoint},
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
    )


def _t4_job(name: str, replicas: int, gpus: int, *, spot: bool = False) -> aip.CustomJob:
    """A chief and ``replicas - 1`` workers, each with ``gpus`` T4s (the chief pool holds one
    replica, as Vertex requires)."""
    pools = [trainer_pool(accelerator=(T4_ENUM, gpus))]
    if replicas > 1:
        pools.append(trainer_pool(replicas=replicas - 1, accelerator=(T4_ENUM, gpus)))
    job = make_job(name, pools=pools)
    if spot:
        job.job_spec.scheduling = aip.Scheduling(strategy=aip.Scheduling.Strategy.SPOT)
    return job


def _limits(client: cq.CloudQuotasClient, project: str) -> dict[str, cq.QuotaInfo]:
    parent = f"projects/{project}/locations/global/services/aiplatform.googleapis.com"
    return {i.metric: i for i in client.list_quota_infos(parent=parent)}


def test_quota_infos_list_the_serve_limits_and_the_defaults(emu):
    infos = _limits(_quotas_client(emu), "infos-project")
    t4 = infos[T4]
    assert t4.quota_id == T4_ID
    assert list(t4.dimensions) == ["region"]
    by_region = {tuple(d.dimensions.items()): d.details.value for d in t4.dimensions_infos}
    assert by_region[(("region", "us-central1"),)] == 4
    assert by_region[()] == quotas.DEFAULT_GPU_LIMIT  # every other region
    cpus = infos["aiplatform.googleapis.com/custom_model_training_cpus"]
    assert cpus.dimensions_infos[-1].details.value == quotas.DEFAULT_CPU_LIMIT
    spot = infos[T4_SPOT]
    assert [d.details.value for d in spot.dimensions_infos] == [2]  # no region: every region


def test_a_preference_is_granted_at_once_and_becomes_the_limit(emu):
    client = _quotas_client(emu)
    created = client.create_quota_preference(
        parent="projects/pref-project/locations/global",
        quota_preference_id="more-t4",
        quota_preference=cq.QuotaPreference(
            quota_id=T4_ID,
            service="aiplatform.googleapis.com",
            dimensions={"region": "europe-west4"},
            quota_config=cq.QuotaConfig(preferred_value=12),
        ),
    )
    # named by project number, as the service names everything it returns
    number = derived_number("pref-project")
    assert created.name == f"projects/{number}/locations/global/quotaPreferences/more-t4"
    assert created.quota_config.granted_value == 12
    assert not created.reconciling
    assert client.get_quota_preference(name=created.name).quota_id == T4_ID
    listed = client.list_quota_preferences(parent="projects/pref-project/locations/global")
    assert [p.name for p in listed] == [created.name]
    listed = client.list_quota_preferences(parent=f"projects/{number}/locations/global")
    assert [p.name for p in listed] == [created.name]
    info = client.get_quota_info(
        name=f"projects/pref-project/locations/global/services/aiplatform.googleapis.com/quotaInfos/{T4_ID}"
    )
    values = {d.dimensions.get("region"): d.details.value for d in info.dimensions_infos}
    assert values["europe-west4"] == 12
    # another project keeps the serve-time limits
    other = _limits(client, "other-project")[T4]
    assert "europe-west4" not in {d.dimensions.get("region") for d in other.dimensions_infos}
    with pytest.raises(gexc.Conflict):
        client.create_quota_preference(
            parent="projects/pref-project/locations/global",
            quota_preference_id="more-t4",
            quota_preference=cq.QuotaPreference(
                quota_id=T4_ID, quota_config=cq.QuotaConfig(preferred_value=1)
            ),
        )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"quotaId": "NoSuchQuota", "quotaConfig": {"preferredValue": "1"}}, "quota_id"),
        ({"quotaId": T4_ID, "quotaConfig": {"preferredValue": "-5"}}, "preferred_value"),
        ({"quotaId": T4_ID, "quotaConfig": {"preferredValue": "1e99"}}, "preferred_value"),
        # int64 in proto3 JSON: ASCII decimal digits, no spaces, no separators, no booleans
        ({"quotaId": T4_ID, "quotaConfig": {"preferredValue": "٣"}}, "preferred_value"),
        ({"quotaId": T4_ID, "quotaConfig": {"preferredValue": " 3 "}}, "preferred_value"),
        ({"quotaId": T4_ID, "quotaConfig": {"preferredValue": "1_000"}}, "preferred_value"),
        ({"quotaId": T4_ID, "quotaConfig": {"preferredValue": True}}, "preferred_value"),
        ({"quotaId": T4_ID, "quotaConfig": {"preferredValue": "-2"}}, "preferred_value"),
        ({"quotaId": T4_ID}, "quota_config"),
        (
            {"quotaId": T4_ID, "quotaConfig": {"preferredValue": 1}, "dimensions": {"zone": "a"}},
            "dimensions",
        ),
        (
            {"quotaId": T4_ID, "quotaConfig": {"preferredValue": 1}, "dimensions": {"region": 5}},
            "dimensions.region",
        ),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_preferences_are_400s_naming_the_field(emu, body, field):
    project = "bad-preferences"
    status, answer = raw_http(
        emu,
        "POST",
        f"/v1/projects/{project}/locations/global/quotaPreferences",
        json.dumps(body).encode(),
    )
    assert status == 400
    assert field in answer["error"]["message"]
    # nothing of it was kept: the project's quota infos still answer
    status, _ = raw_http(
        emu,
        "GET",
        f"/v1/projects/{project}/locations/global/services/aiplatform.googleapis.com/quotaInfos",
    )
    assert status == 200


@pytest.mark.parametrize(("value", "shown"), [(0, 0), (-1, -1)])
def test_a_preference_of_zero_or_unlimited_is_taken(emu, value, shown):
    """The real client sends a preferred value of 0 as ``"quotaConfig": {}`` (proto3 JSON
    leaves out a field at its default); -1 is unlimited, as the Cloud Quotas API allows."""
    client = _quotas_client(emu)
    project = f"preference-{shown + 1}"
    created = client.create_quota_preference(
        parent=f"projects/{project}/locations/global",
        quota_preference_id=f"t4-{shown + 1}",
        quota_preference=cq.QuotaPreference(
            quota_id=T4_ID,
            dimensions={"region": "us-central1"},
            quota_config=cq.QuotaConfig(preferred_value=value),
        ),
    )
    assert created.quota_config.granted_value == shown
    values = {
        d.dimensions.get("region"): d.details.value
        for d in _limits(client, project)[T4].dimensions_infos
    }
    assert values["us-central1"] == shown
    jobs = emu.client()
    parent = f"projects/{project}/locations/us-central1"
    if value == 0:
        with pytest.raises(gexc.TooManyRequests):
            jobs.create_custom_job(parent=parent, custom_job=_t4_job("none", 1, 1))
    else:  # far past the serve-time limit of 4 in us-central1
        made = jobs.create_custom_job(parent=parent, custom_job=_t4_job("many", 3, 4))
        jobs.cancel_custom_job(name=made.name)


def test_a_preference_without_an_id_takes_the_first_free_one():
    """A client may name a preference ``pref-2`` itself: one made without an id then gets the
    next free name, not a 409. (An emulator of its own: ids are numbered across projects.)"""

    def preference() -> cq.QuotaPreference:
        return cq.QuotaPreference(
            quota_id=T4_ID,
            service="aiplatform.googleapis.com",
            dimensions={"region": "us-east1"},
            quota_config=cq.QuotaConfig(preferred_value=8),
        )

    parent = "projects/named-prefs/locations/global"
    with running_emulator(*SIMULATE_ARGS) as server:
        client = _quotas_client(server)
        named = client.create_quota_preference(
            parent=parent, quota_preference_id="pref-2", quota_preference=preference()
        )
        unnamed = [
            client.create_quota_preference(parent=parent, quota_preference=preference())
            for _ in range(2)
        ]
        ids = [p.name.rsplit("/", 1)[-1] for p in (named, *unnamed)]
        assert ids == ["pref-2", "pref-3", "pref-4"]
        assert len(list(client.list_quota_preferences(parent=parent))) == 3


def test_quotas_live_at_the_global_location_only(emu):
    status, answer = raw_http(
        emu,
        "GET",
        "/v1/projects/p/locations/us-central1/services/aiplatform.googleapis.com/quotaInfos",
    )
    assert status == 400 and "global" in answer["error"]["message"]


def test_a_job_over_the_limit_is_refused_with_vertex_s_429(emu):
    client = emu.client()
    with pytest.raises(gexc.TooManyRequests) as refused:
        client.create_custom_job(parent=PARENT, custom_job=_t4_job("too-big", 2, 4))
    message = str(refused.value)
    assert "The following quota metrics exceed quota limits: " + T4 in message
    assert refused.value.response.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert not [j for j in client.list_custom_jobs(parent=PARENT) if j.display_name == "too-big"]


def test_active_jobs_hold_their_quota_until_they_end(emu):
    client = emu.client()
    parent = "projects/held-project/locations/us-central1"
    first = client.create_custom_job(parent=parent, custom_job=_t4_job("first", 1, 4))
    with pytest.raises(gexc.TooManyRequests, match="custom_model_training_nvidia_t4_gpus"):
        client.create_custom_job(parent=parent, custom_job=_t4_job("second", 1, 1))
    # another region has its own (default) limit
    client.create_custom_job(
        parent="projects/held-project/locations/europe-west4", custom_job=_t4_job("eu", 1, 4)
    )
    client.cancel_custom_job(name=first.name)
    for _ in range(200):
        if client.get_custom_job(name=first.name).state == aip.JobState.JOB_STATE_CANCELLED:
            break
        time.sleep(0.05)
    client.create_custom_job(parent=parent, custom_job=_t4_job("second", 1, 1))


def test_a_project_by_id_and_by_number_shares_its_quota(emu):
    """A preference set by project ID is the limit of jobs created by number, and jobs created
    by either name hold the same quota."""
    project, region = "both-names", "asia-east1"
    number = derived_number(project)
    _quotas_client(emu).create_quota_preference(
        parent=f"projects/{project}/locations/global",
        quota_preference_id="two-t4",
        quota_preference=cq.QuotaPreference(
            quota_id=T4_ID,
            service="aiplatform.googleapis.com",
            dimensions={"region": region},
            quota_config=cq.QuotaConfig(preferred_value=2),
        ),
    )
    client = emu.client()
    by_number = f"projects/{number}/locations/{region}"
    with pytest.raises(gexc.TooManyRequests):
        client.create_custom_job(parent=by_number, custom_job=_t4_job("four", 1, 4))
    client.create_custom_job(
        parent=f"projects/{project}/locations/{region}", custom_job=_t4_job("two", 1, 2)
    )
    with pytest.raises(gexc.TooManyRequests):
        client.create_custom_job(parent=by_number, custom_job=_t4_job("one-more", 1, 1))


def test_spot_jobs_count_against_the_preemptible_metric(emu):
    client = emu.client()
    parent = "projects/spot-project/locations/us-central1"
    client.create_custom_job(parent=parent, custom_job=_t4_job("spot-2", 1, 2, spot=True))
    with pytest.raises(gexc.TooManyRequests, match="preemptible_nvidia_t4_gpus"):
        client.create_custom_job(parent=parent, custom_job=_t4_job("spot-1", 1, 1, spot=True))
    client.create_custom_job(parent=parent, custom_job=_t4_job("on-demand", 1, 4))


def test_a_tuning_job_holds_its_parallel_trials(emu):
    client = emu.client()
    parent = "projects/tuning-project/locations/us-central1"
    trial = _t4_job("trial", 1, 2).job_spec
    study = aip.StudySpec(
        metrics=[
            aip.StudySpec.MetricSpec(
                metric_id="loss", goal=aip.StudySpec.MetricSpec.GoalType.MINIMIZE
            )
        ],
        parameters=[
            aip.StudySpec.ParameterSpec(
                parameter_id="lr",
                double_value_spec=aip.StudySpec.ParameterSpec.DoubleValueSpec(
                    min_value=0.01, max_value=0.1
                ),
            )
        ],
    )

    def tuning(parallel: int) -> aip.HyperparameterTuningJob:
        return aip.HyperparameterTuningJob(
            display_name=f"tune-{parallel}",
            study_spec=study,
            max_trial_count=6,
            parallel_trial_count=parallel,
            trial_job_spec=trial,
        )

    with pytest.raises(gexc.TooManyRequests, match="custom_model_training_nvidia_t4_gpus"):
        client.create_hyperparameter_tuning_job(parent=parent, hyperparameter_tuning_job=tuning(3))
    client.create_hyperparameter_tuning_job(parent=parent, hyperparameter_tuning_job=tuning(2))
    with pytest.raises(gexc.TooManyRequests):
        client.create_custom_job(parent=parent, custom_job=_t4_job("after", 1, 1))


def test_a_bad_quota_flag_is_a_clear_error():
    table = quotas.load_table()
    with pytest.raises(ValueError, match="unknown metric"):
        quotas.parse_limit("custom_model_training_nvidia_t5_gpus=3", table)
    with pytest.raises(ValueError, match="METRIC"):
        quotas.parse_limit("custom_model_training_cpus=lots", table)
    assert quotas.parse_limit("custom_model_training_cpus@us-east1=-1", table) == (
        "aiplatform.googleapis.com/custom_model_training_cpus",
        "us-east1",
        -1,
    )


def test_a_machine_with_its_own_gpus_counts_them_and_spot_counts_preemptible():
    from emulator.protos import CUSTOM_JOB

    table = quotas.load_table()
    job = make_job(
        "g2", pools=[trainer_pool(machine_type="g2-standard-24"), trainer_pool(replicas=2)]
    )
    need = quotas.job_need(aip.CustomJob.pb(job), CUSTOM_JOB, table)
    assert need == {
        "aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus": 2,  # g2-standard-24: 2 L4
        "aiplatform.googleapis.com/custom_model_training_cpus": 2 * 4,  # g2 has no CPU metric
    }
    spot = _t4_job("spot", 2, 4, spot=True)
    assert quotas.job_need(aip.CustomJob.pb(spot), CUSTOM_JOB, table) == {
        T4_SPOT: 8,
        "aiplatform.googleapis.com/custom_model_training_preemptible_cpus": 8,
    }


def test_jobs_created_before_a_restart_still_hold_their_quota(emu):
    parent = "projects/restart-project/locations/us-central1"
    emu.client().create_custom_job(parent=parent, custom_job=_t4_job("before", 1, 2))
    emu.crash()
    emu.restart()
    client = emu.client()
    with pytest.raises(gexc.TooManyRequests, match="2 in use, limit 4"):
        client.create_custom_job(parent=parent, custom_job=_t4_job("after", 1, 4))
    client.create_custom_job(parent=parent, custom_job=_t4_job("fits", 1, 2))
