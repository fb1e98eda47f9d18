gcloud ai-platform jobs submit training job1 \
  --region us-central1 \
  --module-name trainer.task \
  --package-path trainer \
  --runtime-versoin 2.3
