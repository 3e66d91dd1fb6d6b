// Sample: a deterministic bike-hire event generator. Row n is a pure function of (seed, n), so the position is just
// the next row number and a resumed run produces exactly the rows a straight run would have.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec sample_source_spec();
}
