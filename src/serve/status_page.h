// The page `skipprd serve` shows at / and the JSON at /api/status: one row per pipeline with its state, throughput
// and backlog charts over the last hour (inline SVG drawn here), rows, WAL and lag, and its last error. Everything is
// in the one HTML answer (no CDN, no script needed to read it); it reloads itself every few seconds, and narrows to
// one card per pipeline on a phone. The action buttons ask once for the token and send it as a Bearer header.
#pragma once

#include <string>
#include <vector>

#include "serve/supervisor.h"

namespace skippr {

std::string status_page_html(const std::vector<PipelineStatus>& pipelines, bool actions_enabled);
std::string status_json(const std::vector<PipelineStatus>& pipelines);

// Text made safe inside HTML element content and attribute values.
std::string html_escape(std::string_view text);

}  // namespace skippr
