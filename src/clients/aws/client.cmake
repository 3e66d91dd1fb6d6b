# SigV4, S3, DynamoDB, Glue: the S3 WAL and the DynamoDB state store use it (libxml2 reads S3's XML answers).
skippr_client(aws
  CORE
  USES http
  PKG_CONFIG libxml-2.0
  DEBIAN libxml2-dev
)
