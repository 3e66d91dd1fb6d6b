#include "support/postgres_pipeline.h"

#include <fmt/format.h>

namespace skippr::test {

std::string postgres_sink_yaml(const std::string& schema, const std::string& table) {
  return fmt::format(R"(    Postgres:
      host: 127.0.0.1
      port: ${{PG_PORT}}
      user: postgres
      password: "${{PG_PASSWORD}}"
      database: "${{PG_DATABASE}}"
      schema: {}
      table: {}
)",
                     schema, table);
}

std::string sample_to_postgres_config(uint64_t rows, uint64_t seed, const std::string& landing) {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: {} }}
data_sinks:
  warehouse:
{}pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: {}
{})",
                     rows, seed, postgres_sink_yaml("bike", "trips"), landing,
                     landing == "merge_by_key" ? "    primary_key: trip_id\n" : "");
}

std::map<std::string, std::string> postgres_env(const PostgresServer& server, const std::string& database) {
  return {{"PG_PORT", std::to_string(server.port())},
          {"PG_PASSWORD", PostgresServer::kPassword},
          {"PG_DATABASE", database}};
}

PgTripsDigest pg_trips_digest(const PostgresServer& server, const std::string& database) {
  // Timestamps print in UTC so the digest does not depend on the session's time zone.
  auto rows = server.query(database,
                           "SET TIME ZONE 'UTC'; SELECT count(*), count(DISTINCT trip_id), md5(string_agg((trip_id, "
                           "rider_id, bike_id, event_type, event_time, station, duration_s, firmware, metadata)::text, "
                           "'|' ORDER BY trip_id)) FROM bike.trips");
  return {rows.at(0).at(0).value_or(""), rows.at(0).at(1).value_or(""), rows.at(0).at(2).value_or("")};
}

}  // namespace skippr::test
