#!/bin/bash
# Submits the census hyperparameter tuning job; the config lives in the script.
BUCKET=gs://census-ml
JOB_NAME=census_hpt_1

cat > hptuning_config.yaml <<END
trainingInput:
  scaleTier: BASIC
  hyperparameters:
    goal: MAXIMISE
    hyperparameterMetricTag: accuracy
    maxTrials: 12
    maxParallelTrials: 3
    params:
    - parameterName: first-layer-size
      type: INTEGER
      minValue: 50
      maxValue: 500
      scaleType: UNIT_LINEAR_SCALE
END

gcloud ai-platform jobs submit training $JOB_NAME \
    --stream-logs \
    --job-dir $BUCKET/$JOB_NAME \
    --runtime-version 2.11 \
    --python-version 3.7 \
    --module-name trainer.task \
    --package-path trainer/ \
    --region us-central1 \
    --config hptuning_config.yaml \
    -- \
    --train-files $BUCKET/data/adult.data.csv
