#include "gpufit/controller/webhook.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "gpufit/serve/loopback.h"

namespace gpufit::controller {
namespace {

using nlohmann::json;

constexpr std::size_t kNamed = 5;  // names listed per drift rule
constexpr std::size_t kMaxAnswerBytes = 64 << 10;

template <class T, class Name>
std::string FirstFew(const std::vector<T>& items, Name name) {
  std::string out;
  for (std::size_t i = 0; i < std::min(items.size(), kNamed); ++i) out += (i ? ", " : "") + name(items[i]);
  if (items.size() > kNamed) out += fmt::format(" and {} more", items.size() - kNamed);
  return out;
}

json Section(const std::string& mrkdwn) {
  return {{"type", "section"}, {"text", {{"type", "mrkdwn"}, {"text", mrkdwn}}}};
}

}  // namespace

Result<WebhookUrl> ParseWebhookUrl(const std::string& url) {
  WebhookUrl u;
  const std::size_t colon = url.find("://");
  if (colon == std::string::npos) return InvalidArgument("--webhook {}: not an http(s):// URL", url);
  u.scheme = url.substr(0, colon);
  if (u.scheme != "http" && u.scheme != "https")
    return InvalidArgument("--webhook {}: the scheme must be https (or http to loopback), got {}", url, u.scheme);
  const std::string rest = url.substr(colon + 3);
  const std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  u.path = slash == std::string::npos ? "/" : rest.substr(slash);
  u.port = u.scheme == "https" ? 443 : 80;
  std::size_t port_at = std::string::npos;
  if (!authority.empty() && authority.front() == '[') {  // [::1]:port
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) return InvalidArgument("--webhook {}: unclosed [ in the host", url);
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port_at = close + 1;
  } else {
    port_at = authority.find(':');
    u.host = authority.substr(0, port_at);
  }
  if (port_at != std::string::npos) {
    const std::string port = authority.substr(port_at + 1);
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), u.port);
    if (ec != std::errc() || end != port.data() + port.size() || u.port < 1 || u.port > 65535)
      return InvalidArgument("--webhook {}: the port must be 1-65535, got {}", url, port);
  }
  if (u.host.empty()) return InvalidArgument("--webhook {}: no host", url);
  if (u.scheme == "http" && !serve::IsLoopbackHost(u.host))
    return InvalidArgument(
        "--webhook {}: plain http only to a loopback address (the summary names the cluster's "
        "workloads); use https",
        url);
  return u;
}

std::string WebhookPayload(const PlanFacts* plan, const DriftReport* drift, const RunRecord& runs,
                           const std::string& source) {
  json blocks = json::array();
  std::string text;
  if (!runs.success || plan == nullptr) {
    text = fmt::format("gpufit: the run failed: {}", runs.error);
    blocks.push_back({{"type", "header"}, {"text", {{"type", "plain_text"}, {"text", "gpufit: run failed"}}}});
    blocks.push_back(Section(fmt::format("*Error:* {}", runs.error)));
  } else {
    std::map<std::string, int> verdicts;
    for (const WorkloadFacts& w : plan->workloads) ++verdicts[w.verdict];
    std::string by_verdict;
    for (const auto& [v, n] : verdicts) by_verdict += fmt::format("{}{} {}", by_verdict.empty() ? "" : ", ", n, v);
    text = fmt::format("gpufit: {} -> {} GPUs, ${:.0f}/month saved", plan->gpus_before, plan->gpus_after,
                       plan->usd_per_month_saved);
    if (drift)
      text += fmt::format("; drift: {} pods over their envelope, {} new workloads, {} peaks drifted",
                          drift->over_envelope.size(), drift->new_workloads.size(), drift->drifted());
    blocks.push_back({{"type", "header"}, {"text", {{"type", "plain_text"}, {"text", "gpufit plan"}}}});
    blocks.push_back(Section(
        fmt::format("*GPUs:* {} -> {}\n*Saved:* ${:.0f} per month (${:.0f} -> ${:.0f})\n*Workloads:* {} ({})",
                    plan->gpus_before, plan->gpus_after, plan->usd_per_month_saved, plan->usd_per_month_before,
                    plan->usd_per_month_after, plan->workloads.size(), by_verdict.empty() ? "none" : by_verdict)));
    if (drift) {
      std::string d = fmt::format("*Pods over their envelope:* {}", drift->over_envelope.size());
      if (!drift->over_envelope.empty())
        d += " (" +
             FirstFew(drift->over_envelope,
                      [](const PodOverEnvelope& p) {
                        return fmt::format("{} {:.0f} > {} MiB", p.pod, p.peak_mib, p.cap_mib);
                      }) +
             ")";
      d += fmt::format("\n*New workloads:* {}", drift->new_workloads.size());
      if (!drift->new_workloads.empty())
        d += " (" + FirstFew(drift->new_workloads, [](const std::string& w) { return w; }) + ")";
      std::vector<PeakDrift> drifted;
      for (const PeakDrift& p : drift->peaks)
        if (p.drifted) drifted.push_back(p);
      d += fmt::format("\n*Peaks drifted:* {}", drifted.size());
      if (!drifted.empty())
        d += " (" +
             FirstFew(drifted, [](const PeakDrift& p) { return fmt::format("{} x{:.2f}", p.workload, p.ratio); }) + ")";
      blocks.push_back(Section(d));
    }
  }
  blocks.push_back(
      {{"type", "context"},
       {"elements", {{{"type", "mrkdwn"}, {"text", fmt::format("{} · run took {:.1f} s", source, runs.duration_s)}}}}});
  return json{{"text", text}, {"blocks", blocks}}.dump();
}

Result<void> PostWebhook(const WebhookUrl& url, const std::string& payload, double timeout_s,
                         const std::function<bool()>& cancelled) {
  const std::string where = fmt::format("webhook {}://{}:{}{}", url.scheme, url.host, url.port, url.path);
  httplib::Client client(fmt::format(
      "{}://{}:{}", url.scheme, url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host, url.port));
  const auto seconds = static_cast<time_t>(timeout_s);
  const auto micros = static_cast<time_t>((timeout_s - static_cast<double>(seconds)) * 1e6);
  client.set_connection_timeout(seconds, micros);
  client.set_read_timeout(seconds, micros);
  client.set_write_timeout(seconds, micros);
  client.enable_server_certificate_verification(true);
  httplib::Request req;
  req.method = "POST";
  req.path = url.path;
  req.body = payload;
  req.set_header("Content-Type", "application/json");
  std::string answer;
  req.content_receiver = [&answer](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    answer.append(data, std::min(n, kMaxAnswerBytes - std::min(answer.size(), kMaxAnswerBytes)));
    return answer.size() < kMaxAnswerBytes;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  // httplib bounds each read and write, not the exchange: it runs on a thread of its own, and
  // this one stops it (Client::stop closes its socket) at the deadline or when cancelled.
  std::atomic<bool> done{false};
  bool sent = false;
  std::thread exchange([&] {
    sent = client.send(req, res, error);
    done = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string cut;
  while (!done) {
    if (std::chrono::steady_clock::now() >= deadline) {
      cut = fmt::format("no answer within {:g} s (--webhook-timeout)", timeout_s);
    } else if (cancelled && cancelled()) {
      cut = "cancelled (the controller is stopping)";
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    client.stop();
    break;
  }
  exchange.join();
  if (!cut.empty()) return Unavailable("{}: {}", where, cut);
  if (!sent)
    return Unavailable("{}: {}", where,
                       error == httplib::Error::Canceled && answer.size() >= kMaxAnswerBytes
                           ? "the answer passed 64 KiB"
                           : "request failed (" + httplib::to_string(error) + ")");
  if (res.status < 200 || res.status >= 300)
    return Unavailable("{}: HTTP {}: {}", where, res.status, answer.substr(0, 200));
  return {};
}

}  // namespace gpufit::controller
