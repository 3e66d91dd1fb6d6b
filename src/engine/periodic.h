// One thread for the periodic chores of every run in the process (saving a run's statistics every few seconds),
// instead of one sleeping thread per run: under serve, fifty idle pipelines would otherwise keep fifty threads
// awake for a few microseconds of work each every five seconds.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

namespace skippr {

// Runs `task` every `every` on the process's periodic thread until the returned handle is destroyed. Destroying it
// waits for a call in progress, so what `task` uses may be destroyed right after. A task that throws is stopped
// (logged), the others go on.
std::unique_ptr<void, void (*)(void*)> run_periodically(std::chrono::milliseconds every, std::function<void()> task);

}  // namespace skippr
