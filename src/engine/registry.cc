// Every connector this build has: adding one is its own folder plus one line here.
#include "sinks/amqp/amqp_sink.h"
#include "sinks/athena/athena_sink.h"
#include "sinks/athena_iceberg/athena_iceberg_sink.h"
#include "sinks/azure_blob/azure_blob_sink.h"
#include "sinks/bigquery/bigquery_sink.h"
#include "sinks/clickhouse/clickhouse_sink.h"
#include "sinks/databricks/databricks_sink.h"
#include "sinks/duckdb/duckdb_sink.h"
#include "sinks/duckdb/motherduck_sink.h"
#include "sinks/file/file_sink.h"
#include "sinks/gcs/gcs_sink.h"
#include "sinks/postgres/postgres_sink.h"
#include "sinks/redshift/redshift_sink.h"
#include "sinks/s3/s3_sink.h"
#include "sinks/sftp/sftp_sink.h"
#include "sinks/skippr_lake/skippr_lake_sink.h"
#include "sinks/snowflake/snowflake_sink.h"
#include "sinks/stdout/stdout_sink.h"
#include "sinks/synapse/synapse_sink.h"
#include "sources/file/file_source.h"
#include "sources/google_analytics/google_analytics_source.h"
#include "sources/http_client/http_client_source.h"
#include "sources/http_server/http_server_source.h"
#include "sources/kafka/kafka_source.h"
#include "sources/postgres/postgres_source.h"
#include "sources/sample/sample_source.h"

namespace skippr {

const std::vector<ConnectorSpec>& connector_registry() {
  static const std::vector<ConnectorSpec> registry = {
      sample_source_spec(),      file_source_spec(),      postgres_source_spec(),         http_server_source_spec(),
      http_client_source_spec(), kafka_source_spec(),     google_analytics_source_spec(), duckdb_sink_spec(),
      motherduck_sink_spec(),    redshift_sink_spec(),    postgres_sink_spec(),           stdout_sink_spec(),
      file_sink_spec(),          s3_sink_spec(),          azure_blob_sink_spec(),         gcs_sink_spec(),
      sftp_sink_spec(),          skippr_lake_sink_spec(), athena_iceberg_sink_spec(),     athena_sink_spec(),
      clickhouse_sink_spec(),    amqp_sink_spec(),        snowflake_sink_spec(),          bigquery_sink_spec(),
      databricks_sink_spec(),    synapse_sink_spec(),
  };
  return registry;
}

}  // namespace skippr
