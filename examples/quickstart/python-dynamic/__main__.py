"""A training job and a hyperparameter tuning job as the package's dynamic resources."""

import pulumi
from gpu_training import HyperparameterTuningJob, TrainingJob

IMAGE = "us-docker.pkg.dev/my-project/trainers/train:v1"
POOL = {
    "machineSpec": {"machineType": "n1-standard-4"},
    "replicaCount": 1,
    "containerSpec": {"imageUri": IMAGE},
}

train = TrainingJob(
    "train",
    spec={
        "workerPoolSpecs": [
            {
                **POOL,
                "machineSpec": {
                    "machineType": "n1-standard-4",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
            }
        ],
        "scheduling": {"timeout": "600s"},
    },
    wait_for="succeeded",
)

tune = HyperparameterTuningJob(
    "tune",
    spec={
        "maxTrialCount": 3,
        "parallelTrialCount": 2,
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameterId": "learning_rate", "discreteValueSpec": {"values": [0.01, 0.05, 0.1]}}
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trialJobSpec": {"workerPoolSpecs": [POOL]},
    },
    wait_for="succeeded",
)

pulumi.export("trainState", train.state)
pulumi.export("bestTrial", tune.best_trial)
