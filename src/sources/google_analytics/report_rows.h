// One runReport answer as a batch: a column per dimension (text; `date` as a DATE) and per metric, typed from the
// metric's header (TYPE_INTEGER as int64; float, currency, seconds, milliseconds and the other measures as double).
// A row whose value does not read as its type becomes a dead letter with the reason.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/connector.h"
#include "core/result.h"

namespace skippr {

struct ReportPage {
  Batch rows;
  std::vector<DeadLetter> bad;
  uint64_t row_count = 0;  // the report's rows in all (rowCount), for paging
  size_t received = 0;     // rows in this answer, good and bad
};

// kUnavailable for an answer whose shape is not runReport's (its headers and rows disagree). `origin` names the
// report in dead letters ("GA4 property 123 2026-11-10").
Result<ReportPage> report_page(const nlohmann::json& answer, const std::string& origin);

}  // namespace skippr
