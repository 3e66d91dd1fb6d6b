# AzureBlob: tested against azurite, which install-deps.sh fetches from the npm registry.
skippr_connector(AzureBlob
  KIND sink
  SPEC azure_blob_sink_spec
  HEADER sinks/azure_blob/azure_blob_sink.h
  CLIENTS azure
  TESTS tests/objectstores
)
