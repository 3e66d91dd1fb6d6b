# Azure Storage: Shared Key and SAS, Blob REST.
skippr_client(azure
  USES aws http
)
