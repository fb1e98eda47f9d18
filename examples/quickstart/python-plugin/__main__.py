"""A training job and a hyperparameter tuning job on the gpu-training provider plugin."""

import pulumi
import pulumi_gpu_training as gpu

IMAGE = "us-docker.pkg.dev/my-project/trainers/train:v1"

train = gpu.vertex.TrainingJob(
    "train",
    labels={"team": "ml"},
    job_spec={
        "worker_pool_specs": [
            {
                "machine_spec": {
                    "machine_type": "n1-standard-4",
                    "accelerator_type": "NVIDIA_TESLA_T4",
                    "accelerator_count": 1,
                },
                "replica_count": 1,
                "container_spec": {"image_uri": IMAGE, "args": ["--epochs", "2"]},
            }
        ],
        "scheduling": {"timeout": "600s"},
    },
    wait_for="succeeded",
)

tune = gpu.vertex.HyperparameterTuningJob(
    "tune",
    labels={"team": "ml"},
    max_trial_count=3,
    parallel_trial_count=2,
    study_spec={
        "metrics": [{"metric_id": "loss", "goal": "MINIMIZE"}],
        "parameters": [
            {"parameter_id": "learning_rate", "discrete_value_spec": {"values": [0.01, 0.05, 0.1]}}
        ],
        "algorithm": "GRID_SEARCH",
    },
    trial_job_spec={
        "worker_pool_specs": [
            {
                "machine_spec": {"machine_type": "n1-standard-4"},
                "replica_count": 1,
                "container_spec": {"image_uri": IMAGE},
            }
        ]
    },
    wait_for="succeeded",
)

pulumi.export("trainState", train.state)
pulumi.export("tuneState", tune.state)
pulumi.export("bestTrial", tune.best_trial)
