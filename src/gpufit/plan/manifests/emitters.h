// The emitters that are not sharing back ends; each adds its objects and patches to the
// Builder (plan/manifests/builder.h).
#pragma once

#include "gpufit/plan/manifests/builder.h"

namespace gpufit::manifests {

void EmitTraining(Builder& b);  // needs in().training
void EmitLending(Builder& b);   // needs in().lending
// Keeps the plan's multi-GPU pods off shared nodes under `backend` (whole_gpus.cpp).
void EmitWholeGpus(Builder& b, const std::string& backend);
// Servers that pre-allocate: the engine's memory setting (engine_settings.cpp).
void EmitEngineSettings(Builder& b, const std::string& backend);

}  // namespace gpufit::manifests
