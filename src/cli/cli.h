// The command line: parses arguments and dispatches to the engine and the control language. Returns the exit code.
#pragma once

namespace skippr::cli {
int run(int argc, char** argv);
}
