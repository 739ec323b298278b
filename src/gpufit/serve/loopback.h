// Whether a listen or target host is this machine's loopback: where plain HTTP without
// authentication is allowed (serve --insecure-http, controller --metrics-insecure-http, a
// webhook over http), since nothing off the machine can reach it.
#pragma once

#include <string>

namespace gpufit::serve {

// localhost, ::1 or an address of 127.0.0.0/8 (RFC 1122 3.2.1.3).
inline bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace gpufit::serve
