// Field names longer than a destination allows. Postgres cuts identifiers to 63 bytes silently (so a sink that
// looks its column up by the long name finds nothing), Redshift refuses names over 127 bytes, and so on. A sink
// declares its limit (ConnectorSpec::max_identifier_bytes) and the engine hands it every field under a name that
// fits: the same long name always becomes the same short one, and two long names sharing a prefix stay apart.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"

namespace skippr {

// `name` + `suffix` when that fits in `max_bytes` (or max_bytes is 0: no limit). Otherwise the longest prefix of
// `name` that ends on a whole UTF-8 character and leaves room for "_", 8 hex digits of the FNV-1a hash of the whole
// name (stable across versions and machines) and `suffix`, then those: a 70-byte name under Postgres' 63 becomes
// its first 54 bytes + "_" + 8 hex digits.
std::string fit_identifier(std::string_view name, size_t max_bytes, std::string_view suffix = {});

// Renames the schema's fields that do not fit (see fit_identifier). True when any was renamed.
bool fit_field_names(Schema& schema, size_t max_bytes);

// fit_identifier over each name (a pipeline's primary_key or partition_by, which name fields).
std::vector<std::string> fit_identifiers(const std::vector<std::string>& names, size_t max_bytes);

}  // namespace skippr
