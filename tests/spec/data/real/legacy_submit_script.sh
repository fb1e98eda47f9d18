#!/bin/bash
# Train the census model on AI Platform.
set -euo pipefail

export PROJECT_ID=my-project
export BUCKET_NAME=${PROJECT_ID}-mlengine
REGION=us-central1
JOB_NAME=census_training_$(date +%Y%m%d_%H%M%S)
JOB_DIR=gs://$BUCKET_NAME/jobs/$JOB_NAME
TRAIN_DATA=gs://$BUCKET_NAME/data/adult.data.csv

echo "Submitting $JOB_NAME"
gcloud ai-platform jobs submit training $JOB_NAME \
  --job-dir $JOB_DIR \
  --runtime-version 2.4 \
  --python-version 3.7 \
  --module-name trainer.task \
  --package-path trainer/ \
  --region $REGION \
  --scale-tier CUSTOM \
  --master-machine-type n1-standard-8 \
  --master-accelerator count=1,type=nvidia-tesla-t4 \
  -- \
  --train-files $TRAIN_DATA \
  --num-epochs 10

gcloud ai-platform jobs stream-logs $JOB_NAME
