JOBNAME=taxifare_hparam_$(date -u +%y%m%d_%H%M%S)
gcloud ai-platform jobs submit training $JOBNAME \
  --region us-central1 \
  --module-name trainer.task \
  --package-path taxifare/trainer \
  --job-dir gs://my-bucket/taxifare/hparam \
  --scale-tier STANDARD_1 \
  --runtime-version 2.3 \
  --python-version 3.7 \
  --config hypertune_config.yaml
