gcloud ai custom-jobs create --region=us-central1 --display-name=with-config \
  --config=vertex_create_config.yaml \
  --service-account=other-trainer@my-project.iam.gserviceaccount.com \
  --persistent-resource-id=shared-pool \
  --enable-web-access
