#include "cli/cli.h"

int main(int argc, char** argv) { return skippr::cli::run(argc, argv); }
