// The engine's metrics in the Prometheus text exposition format (version 0.0.4), named as
// vLLM names them (docs/reference/openai-api.md section 7) so the same dashboards work.
#pragma once

#include <string>

#include "engine/engine_metrics.h"

namespace crosspoint {

std::string prometheus_text(const EngineMetrics& metrics, const std::string& model_name);

}  // namespace crosspoint
