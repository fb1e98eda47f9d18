NNSIZE="32 8"
ARGS="--train-steps 1000 --eval-steps 100"
gcloud ml-engine jobs submit training taxi_$(date -u +%y%m%d_%H%M%S) \
  --region us-central1 \
  --module-name trainer.task \
  --package-path trainer \
  --scale-tier STANDARD_1 \
  --runtime-version 1.15 \
  --python-version 3.7 \
  -- \
  --nnsize $NNSIZE \
  $ARGS
