# the Snowflake SQL API v2.
skippr_client(snowflake
  USES auth http
)
