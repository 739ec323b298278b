#include "progress.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace gpufit::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Work shorter than this shows no progress line.
constexpr auto kShowAfter = std::chrono::seconds(2);
constexpr auto kRedrawEvery = std::chrono::milliseconds(250);

struct Console {
  std::mutex mu;
  std::condition_variable wake;
  ConsoleOptions options;
  std::shared_ptr<spdlog::logger> log;
  bool progress_enabled = false;  // stderr is a terminal and no -q
  std::string phase;              // "" = no phase running
  bool phase_timed = false;       // a Phase (its time is logged), not the command's name
  Clock::time_point started{}, phase_started{};
  bool line_shown = false;  // the progress line is on the terminal now
  std::string drawn;        // what it shows
  bool stopping = false;
  std::thread painter;
};

Console& State() {
  static Console c;
  return c;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Erases the progress line (caller holds mu).
void EraseLine(Console& c) {
  if (!c.line_shown) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  c.line_shown = false;
}

void Paint(Console& c) {
  std::unique_lock lock(c.mu);
  while (!c.stopping) {
    c.wake.wait_for(lock, kRedrawEvery);
    if (c.stopping || c.phase.empty()) continue;
    const auto now = Clock::now();
    if (now - c.started < kShowAfter) continue;
    std::string line =
        "gpufit: " + c.phase + " ... " + std::to_string(static_cast<long>(Seconds(now - c.started))) + " s";
    if (c.line_shown && line == c.drawn) continue;  // redrawn only when it changes
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    c.drawn = std::move(line);
    c.line_shown = true;
  }
}

// Ends the running phase (caller holds mu).
void EndPhase(Console& c, Clock::time_point now) {
  if (c.phase.empty()) return;
  if (c.log && c.phase_timed) {
    EraseLine(c);
    c.log->info("phase {}: {:.3f} s", c.phase, Seconds(now - c.phase_started));
  }
  c.phase.clear();
}

}  // namespace

void ConfigureConsole(const ConsoleOptions& o) {
  Console& c = State();
  std::lock_guard lock(c.mu);
  c.options = o;
  c.progress_enabled = !o.quiet && ::isatty(STDERR_FILENO) == 1;
  if (o.verbosity > 0 && !c.log) {
    c.log = std::make_shared<spdlog::logger>("gpufit", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    c.log->set_pattern("gpufit: [%H:%M:%S.%e] %v");
    c.log->set_level(o.verbosity > 1 ? spdlog::level::debug : spdlog::level::info);
    c.log->flush_on(spdlog::level::debug);
  }
}

bool Verbose() {
  Console& c = State();
  std::lock_guard lock(c.mu);
  return c.log != nullptr;
}

bool Quiet() {
  Console& c = State();
  std::lock_guard lock(c.mu);
  return c.options.quiet;
}

void LogVerbose(const std::string& text) {
  Console& c = State();
  std::lock_guard lock(c.mu);
  if (!c.log) return;
  EraseLine(c);
  c.log->info("{}", text);
}

namespace {

void Begin(const std::string& name, bool timed) {
  Console& c = State();
  std::lock_guard lock(c.mu);
  const auto now = Clock::now();
  if (c.started == Clock::time_point{}) c.started = now;
  EndPhase(c, now);
  c.phase = name;
  c.phase_timed = timed;
  c.phase_started = now;
  if (c.progress_enabled && !c.painter.joinable()) c.painter = std::thread([&c] { Paint(c); });
}

}  // namespace

void StartCommand(const std::string& name) { Begin(name, false); }

void Phase(const std::string& name) { Begin(name, true); }

void EraseProgressLine() {
  Console& c = State();
  std::lock_guard lock(c.mu);
  EraseLine(c);
}

void LogDebug(const std::string& text) {
  Console& c = State();
  std::lock_guard lock(c.mu);
  if (!c.log) return;
  EraseLine(c);
  c.log->debug("{}", text);
}

void EndPhases() {
  Console& c = State();
  {
    std::lock_guard lock(c.mu);
    EndPhase(c, Clock::now());
    c.stopping = true;
  }
  c.wake.notify_all();
  if (c.painter.joinable()) c.painter.join();
  std::lock_guard lock(c.mu);
  EraseLine(c);
  if (c.log && c.started != Clock::time_point{}) c.log->info("total: {:.3f} s", Seconds(Clock::now() - c.started));
}

}  // namespace gpufit::cli
