#!/usr/bin/env bash
# Grid search over a learning rate, the tuning config written next to the command.
set -euo pipefail

PROJECT_ID=my-project
REGION=europe-west4
IMAGE_URI=europe-west4-docker.pkg.dev/${PROJECT_ID}/trainers/resnet:latest

cat > hptuning.yaml <<EOF
studySpec:
  metrics:
  - metricId: accuracy
    goal: MAXIMIZE
  parameters:
  - parameterId: lr
    scaleType: UNIT_LOG_SCALE
    doubleValueSpec: {minValue: 0.001, maxValue: 0.3}
trialJobSpec:
  workerPoolSpecs:
  - replicaCount: 1
    machineSpec:
      machineType: g2-standard-8
      acceleratorType: NVIDIA_L4
      acceleratorCount: 1
    containerSpec:
      imageUri: ${IMAGE_URI}
EOF

gcloud beta ai hp-tuning-jobs create \
  --project="${PROJECT_ID}" \
  --region="${REGION}" \
  --display-name="resnet-lr-grid" \
  --algorithm=grid-search \
  --max-trial-count=8 \
  --parallel-trial-count=16 \
  --config=hptuning.yaml
