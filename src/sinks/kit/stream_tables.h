// Where each stream of a pipeline lands. A sink's table parameter may hold {stream}: each stream then lands in the
// table that names, the stream's name made a plain identifier (every character other than a letter, a digit or _
// becomes _, so public.orders lands in raw_public_orders from raw_{stream}). A source that names one stream lands in
// the table as written, as it always did. Two streams that would land in one table (after that folding, and the
// destination's own folding of letter case) stop the run naming both, before either lands there.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace skippr {

inline constexpr std::string_view kStreamPlaceholder = "{stream}";

class StreamTables {
 public:
  // `sink` names the sink for messages ("sink 'warehouse'"), `param` the parameter ("table"); `table` is its value,
  // nullopt when not given: then "{stream}" when the source names several streams, else kConfig (a one-stream
  // source needs the table named). `source_streams` is ConnectorContext::source_streams. kConfig for a table
  // without {stream} when the source names several streams (they would share it), and for {stream} when it names
  // one.
  static Result<StreamTables> make(std::string_view sink, std::string_view param, std::optional<std::string> table,
                                   bool source_streams);
  // A connector's `param` as make() takes it: nullopt when absent.
  static std::optional<std::string> given(const nlohmann::json& params, std::string_view param);

  bool per_stream() const { return per_stream_; }
  // The table `stream` lands in (the table as written for the unnamed stream of a one-stream source).
  std::string table_for(std::string_view stream) const;
  // Checks that no other stream landed in `table` (in the spelling `fold` gives it: the destination's rule for
  // which names are the same table); kConfig naming both streams when one did.
  Status claim(std::string_view stream, const std::string& table,
               const std::function<std::string(std::string_view)>& fold);

 private:
  std::string sink_;
  std::string template_;
  bool per_stream_ = false;
  std::map<std::string, std::string, std::less<>> streams_by_table_;  // folded table -> the stream that lands there
};

}  // namespace skippr
