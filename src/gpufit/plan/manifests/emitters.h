// The emitters that are not sharing back ends; each adds its objects and patches to the
// Builder (plan/manifests/builder.h).
#pragma once

#include "gpufit/plan/manifests/builder.h"

namespace gpufit::manifests {

void EmitTraining(Builder& b);  // needs in().training
void EmitLending(Builder& b);   // needs in().lending

}  // namespace gpufit::manifests
