#include "gpufit/serve/bind_verb.h"

#include <optional>

namespace gpufit::serve {

BindAnswer DecideBind(Extender& extender, const BindFunction& bind, const BindingArgs& args) {
  if (!bind.bind)
    return {"not_enabled", "bind: gpufit serve binds only with an API server to bind through (--kube-api)"};
  std::optional<KubePod> from_api;
  if (bind.verify) {
    Result<KubePod> pod = bind.verify(args);
    if (!pod)
      return {pod.error().code == Code::kFailedPrecondition ? "not_bindable" : "api_unreachable", pod.error().message};
    from_api = std::move(*pod);
  }
  ReserveFailure why = ReserveFailure::kNone;
  const Result<Reservation> reserved = extender.Reserve(args, &why, from_api ? &*from_api : nullptr);
  if (!reserved) {
    const char* outcome = why == ReserveFailure::kUnknownNode    ? "unknown_node"
                          : why == ReserveFailure::kUnknownPod   ? "unknown_pod"
                          : why == ReserveFailure::kAlreadyBound ? "already_bound"
                                                                 : "no_room";
    return {outcome, reserved.error().message};
  }
  if (Result<void> bound = bind.bind(args); !bound) {
    // Refused for certain: the room goes back. Otherwise the Binding may exist: the pod keeps its
    // room (the safe side) until it binds again or a snapshot says otherwise.
    if (bound.error().code == Code::kFailedPrecondition) {
      extender.Release(args);
      return {"api_refused", bound.error().message};
    }
    extender.MarkUncertain(args);
    return {"api_unknown", bound.error().message + "; gpufit keeps the pod's GPUs counted until it binds again"};
  }
  return {"ok", ""};
}

}  // namespace gpufit::serve
