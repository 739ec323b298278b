#include "gpufit/ingest/prometheus/serving/engine.h"

namespace gpufit::serving {

// Defined in one file each.
extern const ServingEngineReader kVllmReader;
extern const ServingEngineReader kTritonReader;
extern const ServingEngineReader kPromqlReader;

const std::vector<ServingEngineReader>& ServingEngines() {
  static const std::vector<ServingEngineReader> all = {kVllmReader, kTritonReader, kPromqlReader};
  return all;
}

const ServingEngineReader* FindServingEngine(const std::string& name) {
  for (const ServingEngineReader& e : ServingEngines())
    if (name == e.name) return &e;
  return nullptr;
}

}  // namespace gpufit::serving
