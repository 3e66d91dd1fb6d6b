// A fault a test injects into one pipeline by name, to prove that an unexpected exception in one pipeline's thread
// ends that pipeline's run with an error (exit 1) and never the process: `serve` keeps the others landing.
// SKIPPR_TEST_THROW_IN_POLL=<pipeline>: that pipeline's source throws from poll(), on the reader's own thread.
#pragma once

#include <memory>
#include <string_view>

#include "core/connector.h"

namespace skippr {

// `source` itself unless the environment asks for a fault in `pipeline`.
std::unique_ptr<Source> with_injected_faults(std::unique_ptr<Source> source, std::string_view pipeline);

}  // namespace skippr
