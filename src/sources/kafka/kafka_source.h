// Kafka: a streaming source on librdkafka. The position is the next offset of every partition, stored with each WAL
// batch; on (re)assignment partitions start from those offsets, not the consumer group's, and offsets are committed
// to Kafka only in acknowledge(), after the WAL commit (the group's offsets are for monitoring and for partitions
// this pipeline never read).
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec kafka_source_spec();
}
