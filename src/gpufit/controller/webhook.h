// The summary a run sends to a Slack-compatible incoming webhook
// (https://api.slack.com/messaging/webhooks: a POST of application/json {"text": ...,
// "blocks": [...]}; Mattermost, Rocket.Chat and Teams' Slack-compatible connectors take the same),
// and the POST itself.
//
// Payload: `text` is the one-line summary (the fallback notifications show); `blocks` are a
// header, a section with the plan's figures (GPUs before -> after, USD per month saved,
// workloads by verdict), a section with the drift (pods over their envelope, new workloads,
// workloads whose peak drifted; the first few of each named) and a context line with the
// source and the run's duration. A failed run sends its error instead of the figures.
//
// Delivery: PostWebhook sends once, bounded: `timeout_s` for the whole exchange (connect, TLS,
// the request and the answer together: a server that trickles a byte at a time cannot hold the
// controller's loop), cut at once when `cancelled` says so (a signal); at most 64 KiB of the
// answer is read. https verifies the server with the system's
// CAs (OpenSSL's default paths); plain http only to a loopback address, since the summary
// names the cluster's workloads. The caller logs a failure; it never fails the run.
#pragma once

#include <functional>
#include <string>

#include "gpufit/controller/drift.h"
#include "gpufit/controller/exposition.h"
#include "gpufit/controller/plan_facts.h"
#include "gpufit/core/result.h"

namespace gpufit::controller {

struct WebhookUrl {
  std::string scheme;  // http or https
  std::string host;
  int port = 0;
  std::string path;  // "/" when the URL has none; query included
};

// Errors: kInvalidArgument naming --webhook: not http(s)://host[:port][/path], a bad port, or
// http to a host other than 127.0.0.1, ::1 or localhost.
Result<WebhookUrl> ParseWebhookUrl(const std::string& url);

// The JSON text of the payload. `plan`, `drift` null after a failed run (runs.error says why).
std::string WebhookPayload(const PlanFacts* plan, const DriftReport* drift, const RunRecord& runs,
                           const std::string& source);

// POSTs `payload`. Errors: kUnavailable naming the webhook: no answer within `timeout_s` (a
// deadline), cancelled, cannot connect, TLS failed, an answer past 64 KiB, or a status other than
// 2xx (with the start of its body).
Result<void> PostWebhook(const WebhookUrl& url, const std::string& payload, double timeout_s,
                         const std::function<bool()>& cancelled = {});

}  // namespace gpufit::controller
