// A training job and a hyperparameter tuning job on the gpu-training provider plugin.
import * as gpu from "@gpu-training/pulumi";

const image = "us-docker.pkg.dev/my-project/trainers/train:v1";

const train = new gpu.vertex.TrainingJob("train", {
    labels: { team: "ml" },
    jobSpec: {
        workerPoolSpecs: [
            {
                machineSpec: { machineType: "n1-standard-4", acceleratorType: "NVIDIA_TESLA_T4", acceleratorCount: 1 },
                replicaCount: 1,
                containerSpec: { imageUri: image, args: ["--epochs", "2"] },
            },
        ],
        scheduling: { timeout: "600s" },
    },
    waitFor: "succeeded",
});

const tune = new gpu.vertex.HyperparameterTuningJob("tune", {
    labels: { team: "ml" },
    maxTrialCount: 3,
    parallelTrialCount: 2,
    studySpec: {
        metrics: [{ metricId: "loss", goal: "MINIMIZE" }],
        parameters: [{ parameterId: "learning_rate", discreteValueSpec: { values: [0.01, 0.05, 0.1] } }],
        algorithm: "GRID_SEARCH",
    },
    trialJobSpec: {
        workerPoolSpecs: [
            { machineSpec: { machineType: "n1-standard-4" }, replicaCount: 1, containerSpec: { imageUri: image } },
        ],
    },
    waitFor: "succeeded",
});

export const trainState = train.state;
export const tuneState = tune.state;
export const bestTrial = tune.bestTrial;
