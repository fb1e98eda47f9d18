gcloud ai custom-jobs create \
  --region=us-central1 \
  --display-name=autopackaged \
  --worker-pool-spec=machine-type=n1-standard-4,replica-count=1,executor-image-uri=us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-12.py310:latest,local-package-path=trainer,python-module=trainer.task
