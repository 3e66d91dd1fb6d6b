// The File source's promises checked the same way on every object store (S3, Azure Blob, GCS): gzip'd JSON-lines
// objects with malformed lines -> DuckDB under outside SIGKILLs land every good line once with the content DuckDB's
// own read_json sees in the inputs and every malformed line once in the dead letters, named by its URL; objects
// added later are picked up; an object replaced after it was read is an error naming it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace skippr::test {

struct RemoteInbox {
  std::string url;  // where the objects go, ending in '/': s3://bucket/in/
  // Puts every file under `dir` at url + its relative path, replacing what is there.
  std::function<void(const std::filesystem::path& dir)> upload;
  std::map<std::string, std::string> env;  // for skipprd
  std::string more_params;                 // extra File parameters, e.g. ", account: devstoreaccount1"
};

// `files` objects; at least `min_kills` SIGKILLs before a run finishes. `max_lines` > 0: every object but a big one
// of 1 MiB has at most that many lines, and a bad line comes every 7th (many small objects).
void expect_every_line_once_under_kills(const RemoteInbox& inbox, int files, int min_kills, int seed_base,
                                        uint64_t max_lines = 0);
void expect_new_objects_read_and_replaced_ones_refused(const RemoteInbox& inbox);

}  // namespace skippr::test
