// GoogleAnalytics: GA4 reports (Data API runReport) by day. GA4 keeps revising the last days' figures, so each sync
// reads the last `lookback_days` before the last complete day it read, plus the days since, one day at a time
// (paged by offset/limit), and its pipelines land with replace_partition on `date` unless they say otherwise: every
// day a sync read then holds exactly that sync's figures. The position is the last complete day read, and, mid-sync,
// the range the sync reads and how far it got, so a restart goes on with the same sync.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec google_analytics_source_spec();
}
