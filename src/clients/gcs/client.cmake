# the Cloud Storage JSON API.
skippr_client(gcs
  USES google http
)
