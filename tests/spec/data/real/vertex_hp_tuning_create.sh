gcloud ai hp-tuning-jobs create \
  --region=us-central1 \
  --display-name=lr-search \
  --max-trial-count=12 \
  --parallel-trial-count=3 \
  --config=vertex_hp_tuning_config.yaml
