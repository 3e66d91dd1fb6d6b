# Google service-account credentials and the GA4 Data API.
skippr_client(google
  USES auth http
)
