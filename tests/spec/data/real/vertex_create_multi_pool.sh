gcloud beta ai custom-jobs create \
  --region=europe-west4 \
  --display-name=dist-train \
  --labels=team=vision,env=dev \
  --worker-pool-spec=machine-type=n1-standard-16,replica-count=1,accelerator-type=nvidia-tesla-t4,accelerator-count=2,executor-image-uri=europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-12.py310:latest,python-module=trainer.task \
  --worker-pool-spec=machine-type=n1-standard-16,replica-count=3,accelerator-type=nvidia-tesla-t4,accelerator-count=2,executor-image-uri=europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-12.py310:latest,python-module=trainer.task \
  --python-package-uris=gs://my-bucket/trainer-0.1.tar.gz
