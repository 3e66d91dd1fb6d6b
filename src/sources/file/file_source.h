// File: local JSON lines, CSV or Parquet files matched by a glob (`in/**/*.jsonl.gz`), read in sorted order, new
// files picked up on every poll. gzip and zstd are decompressed as streams. The position (file_position.h) resumes
// mid-file; bad records go to the dead-letter file.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec file_source_spec();
}
