gcloud ai-platform jobs submit training flowers_$(date +%s) \
  --region us-central1 \
  --scale-tier basic-gpu \
  --runtime-version 2.1 \
  --python-version 3.7 \
  --module-name trainer.task \
  --package-path trainer
