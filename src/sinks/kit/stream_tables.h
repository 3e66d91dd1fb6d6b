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

struct ConnectorSpec;

inline constexpr std::string_view kStreamPlaceholder = "{stream}";
// The escape character of the LIKE patterns target_like makes: not a backslash, which some engines' literals read as
// an escape of their own (Snowflake's, Redshift's), so every engine quotes it plainly.
inline constexpr char kLikeEscape = '!';

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
  // The table as given: with {stream} when per_stream() (what names the pipeline's tables as a whole).
  const std::string& pattern() const { return template_; }
  // The table `stream` lands in (the table as written for the unnamed stream of a one-stream source).
  std::string table_for(std::string_view stream) const;
  // A LIKE pattern (kLikeEscape escapes) that every stream's `target` matches and little else: `target(table)` is how
  // the sink names a table in its ledger, applied to the pattern with {stream} standing where each name goes.
  std::string target_like(const std::function<std::string(std::string_view)>& target) const;
  // True when `table` is one table_for could give: the pattern's text around each {stream}, with a plain name (letters,
  // digits, _) where it stood. For telling a pipeline's own tables (and what it names after them) among others.
  bool may_name(std::string_view table) const;
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

// The fold of a destination whose table names are compared as written (quoted identifiers, case-sensitive names).
inline std::string same_name(std::string_view name) { return std::string(name); }

// A name for all of a pipeline's tables as one (its fence table, its staging folder): `table` itself, or for a
// {stream} pattern the pattern with its placeholder as _streams_ (no engine takes braces in a plain name).
std::string tables_as_one_name(std::string table);

// What a sink knows of each stream's table (its columns, say), kept while it lands in another: a batch of several
// streams switches tables part by part, and each is described once.
template <class Known>
class KnownPerTable {
 public:
  // Claims `to`, the table `stream` lands in, in `tables` (StreamTables::claim: kConfig when another stream has it,
  // in the spelling `fold` gives). When `to` is not `table` (the one landed in last), `known` (what is known of
  // `table`) is kept, what was kept of `to` (Known{} the first time) takes its place, and `table` becomes `to`.
  // True when `known` is what was known of `to` before (or the table did not change); false: describe `to`.
  Result<bool> enter(StreamTables& tables, std::string_view stream, const std::string& to,
                     const std::function<std::string(std::string_view)>& fold, std::string& table, Known& known) {
    // Before anything else, also for the table landed in last: two streams may fold to one name (a.b and a_b).
    SKIPPR_TRY(tables.claim(stream, to, fold));
    if (to == table) return true;
    others_[table] = std::move(known);
    auto found = others_.find(to);
    const bool was_known = found != others_.end();
    known = was_known ? std::move(found->second) : Known{};
    if (was_known) others_.erase(found);
    table = to;
    return was_known;
  }
  // Forgets every table (a rolled-back transaction took their DDL with it).
  void clear() { others_.clear(); }

 private:
  std::map<std::string, Known, std::less<>> others_;
};

// Object stores and folders (S3, GCS, AzureBlob, SFTP, File): a key prefix or folder may hold {stream} in the same
// way. A source of several streams and a prefix without it: "{stream}/" is added at its end, so each stream has a
// folder of its own (raw/ becomes raw/public.orders/...). kConfig when it holds {stream} and the source names one.
// `prefix` is "" or ends in '/' (a folder: no trailing '/' needed); the result keeps that form.
Result<std::string> stream_prefix(std::string_view sink, std::string_view param, std::string prefix,
                                  bool source_streams);
// `prefix` with each {stream} replaced by the stream's folder name: the name with every byte other than a letter, a
// digit, '.', '_' or '-' written %XX (as Hive escapes partition values), so no name makes folders of its own or
// climbs out of the prefix ("." and ".." are escaped whole).
std::string stream_prefix_for(std::string_view prefix, std::string_view stream);
// The part of `prefix` before its first {stream}, up to and without the last '/' before it: the folder every stream's
// folder is under ("" when {stream} is in the first segment); `prefix` itself without a trailing '/' when it holds no
// {stream}.
std::string stream_prefix_base(std::string_view prefix);
// Declares that `spec` lands streams in folders of its prefix (or folder) parameter `param`, and says so in its doc.
void lands_streams_in_folders(ConnectorSpec& spec, std::string_view param);

}  // namespace skippr
