#include "cli/cli.h"

namespace skippr::cli {
int run(int, char**) { return 0; }  // STUB: replaced by the real CLI
}
