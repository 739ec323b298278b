#include <fmt/format.h>

#include "gpufit/plan/manifests/sharing_backend.h"

namespace gpufit::manifests {

// Defined in one file each.
extern const SharingBackend kTimeSlicing;
extern const SharingBackend kMig;
extern const SharingBackend kHami;
extern const SharingBackend kKai;
extern const SharingBackend kDraMps;

const std::vector<SharingBackend>& SharingBackends() {
  static const std::vector<SharingBackend> all = {kTimeSlicing, kMig, kHami, kKai, kDraMps};
  return all;
}

std::string SharingBackendNames() {
  std::string names;
  for (const SharingBackend& b : SharingBackends()) names += (names.empty() ? "" : ", ") + std::string(b.name);
  return names;
}

Result<const SharingBackend*> FindSharingBackend(const std::string& name) {
  for (const SharingBackend& b : SharingBackends())
    if (name == b.name) return &b;
  return InvalidArgument("--sharing: unknown back end '{}' (known: {})", name, SharingBackendNames());
}

}  // namespace gpufit::manifests
