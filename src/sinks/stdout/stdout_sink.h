// Stdout: JSON lines on standard output, for debugging. Guarantee "none": never retried.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec stdout_sink_spec();
}
