// Kafka: a streaming source on librdkafka. The position is the next offset of every partition, stored with each WAL
// batch; on (re)assignment partitions start from those offsets, not the consumer group's, and offsets are committed
// to Kafka only in acknowledge(), after the WAL commit. The group's offsets are for monitoring only: a partition this
// pipeline never read (a first run, or after RESET) starts at `start`, and `latest` is pinned to the partition's end
// and committed as a position even when no message follows.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec kafka_source_spec();
}
