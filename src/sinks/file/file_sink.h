// File: one file per batch in a folder, named from the BatchId (<pipeline>-<epoch>-<seq>.<format>[.gz|.zst]),
// written to <name>.tmp, fsynced, renamed and the folder fsynced. A retry rewrites the same name, so the folder
// holds each batch once: overwrite on retry.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec file_sink_spec();
}
