# the BigQuery REST API.
skippr_client(bigquery
  USES google http sql
)
