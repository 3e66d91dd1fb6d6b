// The flow of the sinks that load a warehouse from an object they stage per batch (Redshift from S3, Synapse from
// Azure Blob): every batch of the group staged first, outside the transaction, under a name from its BatchId (so
// staging again after a failure writes the same bytes under the same name); then the landing transaction; then the
// staged objects deleted. A crash between leaves objects behind, which the sink sweeps when it opens: each one either
// landed already or is staged again by the landing that needs it.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/result.h"
#include "sinks/kit/batch_ledger.h"

namespace skippr {

struct StagingArea {
  std::string where;  // the sink and its staging place, for messages
  // Writes `body` under `name`. An unknown outcome is reported as kUnavailable: the landing has not begun, and
  // staging again rewrites the same object.
  std::function<Status(const std::string& name, const std::string& body)> put;
  std::function<Status(const std::string& name)> remove;
  std::function<Result<std::vector<std::string>>(const std::string& prefix)> list;
};

// The staged object's name of `item` (CSV, gzipped, named after its BatchId). `part_table`: for a part of a batch of
// several streams, its (folded) table, which goes before the extension so the streams of one batch stay apart; empty
// for one stream. The pipeline's name stays first, so a sweep by "<pipeline>-" finds every part.
std::string staged_csv_name(const BatchToLand& item, std::string_view part_table);

// The staged form of a batch: CSV with a header row, gzipped.
Result<std::string> staged_csv_gzip(const Batch& batch);

// Stages each batch with rows of `group` (`staged_name`, `body` give its name and bytes; the streams of one batch
// are items of their own, so the name tells them apart), runs `land`, and on success deletes what it staged (a failed
// delete is a warning: the next sweep removes it).
Result<std::vector<BatchLanded>> land_through_stage(std::span<const BatchToLand> group, const StagingArea& area,
                                                    const std::function<std::string(const BatchToLand&)>& staged_name,
                                                    const std::function<Result<std::string>(const BatchToLand&)>& body,
                                                    const std::function<Result<std::vector<BatchLanded>>()>& land);

// Deletes every object under `prefix` (a failed delete is a warning: the next sweep tries again).
Status sweep_staged(const StagingArea& area, const std::string& prefix);

}  // namespace skippr
