gcloud ml-engine jobs submit training ${JOB_NAME} \
        --package-path $APP_PACKAGE_PATH \
        --module-name $MAIN_APP_MODULE \
        --job-dir $JOB_DIR \
        --region us-central1 \
        --config seed001_config_t4.yaml \
        --worker-count 2 \
        -- \
        --epochs '$NOT_EXPANDED'
