# The prod job as the legacy command line it was once submitted with.
# Format: a `gcloud ai-platform jobs submit training` command; --config supplies the worker
# setup and flags override it (as gcloud did). The program stages the package itself, so
# --package-path is only kept for the record.
gcloud ai-platform jobs submit training prod_a100 \
  --region us-central1 \
  --config prod-a100-config.yaml \
  --module-name trainer.task \
  --package-path ../../examples/trainer/trainer \
  --labels team=ml-platform,stack=prod,cost-center=ml-research \
  -- \
  --epochs 20 --steps-per-epoch 500
