#!/usr/bin/env bash
REGION=us-central1
IMAGE_URI=us-central1-docker.pkg.dev/my-project/training/trainer:latest
gcloud ai custom-jobs create \
  --region=$REGION \
  --display-name=flowers-train \
  --worker-pool-spec=machine-type=n1-standard-8,replica-count=1,accelerator-type=NVIDIA_TESLA_V100,accelerator-count=2,container-image-uri=$IMAGE_URI \
  --args=--epochs=10,--batch-size=64
