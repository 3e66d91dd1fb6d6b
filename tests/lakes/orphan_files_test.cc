// Which batch a SkipprLake data file was written for, read back from its name: the sweep of files no snapshot names
// removes only files of batches the ledger holds, so a name it misreads must read as no batch at all.
#include <gtest/gtest.h>

#include "formats/iceberg/orphan_files.h"
#include "formats/object_encoding.h"

namespace skippr {
namespace {

TEST(OrphanFiles, ADataFileNameGivesBackTheBatchItWasWrittenFor) {
  const ObjectEncoding parquet{OutputFormat::kParquet};
  for (const BatchId& id :
       {BatchId{"bike-hire-2", 7, 42, "0123456789abcdef0123456789abcdef"}, BatchId{"p", 1234567, 1, ""}}) {
    std::string name = batch_object_name(id, parquet);
    name.insert(name.size() - parquet.extension().size(), "-0badf00d");
    EXPECT_EQ(batch_of_data_file(name), std::optional<BatchId>(id)) << name;
  }
  for (const char* other :
       {"00000-1-another-engine.parquet", "p-000001-00000000000000000001.parquet",
        "p-000001-00000000000000000001-0badf00d.avro", "-000001-00000000000000000001-0badf00d.parquet",
        "p-x00001-00000000000000000001-0badf00d.parquet"}) {
    EXPECT_EQ(batch_of_data_file(other), std::nullopt) << other;
  }
}

}  // namespace
}  // namespace skippr
