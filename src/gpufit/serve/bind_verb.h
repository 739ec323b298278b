// The bind verb's decision, apart from HTTP: reserve the pod's GPUs in the extender's state
// (exactly one of concurrent binds for the last room wins), then create the Binding through
// `bind`; a Binding refused for certain gives the room back, one whose outcome is unknown keeps
// it (the safe side). serve/http_server.h calls it for POST <prefix>/bind.
#pragma once

#include <functional>
#include <string>

#include "gpufit/core/result.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/serve/extender.h"
#include "gpufit/serve/extender_wire.h"

namespace gpufit::serve {

// What a bind came to: `outcome` is the metrics label (ok, not_enabled, not_bindable,
// api_unreachable, unknown_node, unknown_pod, already_bound, no_room, api_refused, api_unknown); `error` is "" when
// bound, else the ExtenderBindingResult's Error (kube-scheduler then schedules the pod again).
struct BindAnswer {
  std::string outcome{};
  std::string error{};
};

// How the bind reaches the API server (ApiServerBinder):
//  * `verify` reads the pod and node and checks them (ApiServerBinder::Verify): the pod it returns
//    is what the bind reserves; kFailedPrecondition: not bindable (outcome not_bindable), any
//    other error: the API server could not be read (api_unreachable). Null: the filter request's
//    pod is trusted (the reservation logic's unit tests; `gpufit serve` always verifies).
//  * `bind` creates the Binding (ApiServerBinder::Bind): kFailedPrecondition when it does not
//    exist for certain, any other error when it may. Null: binding is not enabled.
struct BindFunction {
  std::function<Result<KubePod>(const BindingArgs&)> verify{};
  std::function<Result<void>(const BindingArgs&)> bind{};
};

BindAnswer DecideBind(Extender& extender, const BindFunction& bind, const BindingArgs& args);

}  // namespace gpufit::serve
