#include "core/failpoint.h"

#include <atomic>

namespace skippr::failpoint {

namespace {
std::atomic<Handler> g_handler{nullptr};
}

void set_handler(Handler handler) { g_handler.store(handler, std::memory_order_release); }

void hit(std::string_view name) {
  if (Handler h = g_handler.load(std::memory_order_acquire)) h(name);
}

}  // namespace skippr::failpoint
