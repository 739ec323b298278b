// The seal of `gpufit apply`'s history (issue 51): `--revert` undoes only what a run of gpufit
// apply recorded, not what anyone who can write ConfigMaps in the history namespace planted.
//
// Each run's ConfigMap (history.h) carries the annotation gpufit.io/seal: the HMAC-SHA256
// (RFC 2104; SHA-256 of FIPS 180-4) in lower-case hex of "<ConfigMap name>\n<data["run.json"]>"
// under a 256-bit key kept in the Secret gpufit-apply-key (data.key, 64 hex digits) of the
// history namespace. gpufit apply creates that Secret on its first run (the key from OpenSSL's
// RAND_bytes); RBAC should let only the applier read it (deploy/helm: a Role with
// resourceNames). A record whose seal is absent or wrong, or whose name does not match its run,
// is refused by --revert, named, and nothing is changed. (A replay of an older version of a
// genuine record can only undo what that run did, back to the values it saved.)
//
// Run ids: the start in UTC to the second, a dash and 6 random lower-case letters and digits
// ("20261207t181500z-k3f9a2"): two runs in one second differ, and an id cannot be foreseen, so
// a record cannot be planted under a future run's name.
#pragma once

#include <string>

#include "gpufit/core/result.h"
#include "gpufit/ingest/kube_api/kube_client.h"

namespace gpufit::apply {

inline constexpr const char* kKeySecret = "gpufit-apply-key";
inline constexpr const char* kSealAnnotation = "gpufit.io/seal";

// The key of namespace `ns`'s history. When the Secret is absent: with `create`, a new key and
// the Secret holding it (a concurrent creator's key wins: the Secret is read back); without it,
// kNotFound ("no sealed run in ns"). kInvalidArgument when the Secret holds no 64-hex-digit key.
Result<std::string> HistoryKey(const kube_api::KubeClient& kube, const std::string& ns, bool create);

// HMAC-SHA256 of `name` + "\n" + `text` under `key`, in lower-case hex (64 digits).
std::string Seal(const std::string& key, const std::string& name, const std::string& text);

// Whether `seal` is Seal(key, name, text), compared in constant time.
bool SealMatches(const std::string& key, const std::string& name, const std::string& text, const std::string& seal);

// A new run id for a run started at `now_s` (Unix seconds).
std::string NewRunId(double now_s);

}  // namespace gpufit::apply
