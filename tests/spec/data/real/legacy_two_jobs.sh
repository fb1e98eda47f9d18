gcloud ai-platform jobs submit training job_a --region us-central1 --module-name trainer.task --package-path trainer --runtime-version 2.3
gcloud ai-platform jobs submit training job_b --region us-east1 --module-name trainer.task --package-path trainer --runtime-version 2.3
