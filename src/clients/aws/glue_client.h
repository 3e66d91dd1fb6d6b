// The AWS Glue Data Catalog calls the lake sinks make (the JSON 1.1 API over clients/aws/aws_json): databases,
// tables with their optimistic-concurrency VersionId, and partitions.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/aws/aws_config.h"
#include "core/result.h"

namespace skippr {

// kConfig naming `where` unless `name` is a name Athena accepts for a database or table (lower-case letters,
// digits, underscores).
Status check_glue_name(std::string_view where, const std::string& name);

enum class GlueWrite { kApplied, kAlreadyExists, kConflict };

class GlueClient {
 public:
  explicit GlueClient(AwsService service) : service_(std::move(service)) {}

  // Creates the database unless it exists.
  Status ensure_database(const std::string& database);
  // The table (Glue's Table object, with VersionId); nullopt when there is none.
  Result<std::optional<nlohmann::json>> get_table(const std::string& database, const std::string& table);
  // kAlreadyExists when a table of that name exists.
  Result<GlueWrite> create_table(const std::string& database, const nlohmann::json& table_input);
  // UpdateTable conditional on `version_id` (the VersionId read with the table): kConflict when another writer
  // updated it since (ConcurrentModificationException). Empty `version_id`: unconditional.
  Result<GlueWrite> update_table(const std::string& database, const nlohmann::json& table_input,
                                 const std::string& version_id);
  // Adds partitions (PartitionInput objects, at most 100 a call); one that exists already is fine.
  Status create_partitions(const std::string& database, const std::string& table,
                           const std::vector<nlohmann::json>& partitions);
  // Every partition of the table (all pages).
  Result<std::vector<nlohmann::json>> get_partitions(const std::string& database, const std::string& table);

 private:
  AwsService service_;
};

}  // namespace skippr
