#include "gpufit/serve/restart_recovery.h"

#include <unordered_set>

namespace gpufit::serve {
namespace {

bool BoundAndLive(const KubePod& p) { return !p.node_name.empty() && p.phase != "Succeeded" && p.phase != "Failed"; }
std::string Key(const KubePod& p) { return p.uid.empty() ? p.Key() : p.uid; }

}  // namespace

Recovered AdoptBoundPods(Extender& extender, const std::vector<KubePod>& listed, const std::vector<KubePod>& api) {
  std::unordered_set<std::string> shown;
  for (const KubePod& p : listed)
    if (BoundAndLive(p)) shown.insert(Key(p));
  Recovered out;
  for (const KubePod& p : api) {
    if (!BoundAndLive(p) || shown.contains(Key(p))) continue;
    if (Result<Reservation> r = extender.Adopt(p); r) {
      ++out.adopted;
    } else if (out.warnings.size() < 20) {
      out.warnings.push_back(r.error().message);
    }
  }
  return out;
}

}  // namespace gpufit::serve
