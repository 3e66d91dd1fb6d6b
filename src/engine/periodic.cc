#include "engine/periodic.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>

namespace skippr {
namespace {

using Clock = std::chrono::steady_clock;

struct Task {
  std::chrono::milliseconds every;
  std::function<void()> run;
  Clock::time_point next;
  bool cancelled = false;
};

// Lives for the whole process (never destroyed: a run may end while static destructors run).
class PeriodicThread {
 public:
  static PeriodicThread& get() {
    static auto* instance = new PeriodicThread();
    return *instance;
  }

  Task* add(std::chrono::milliseconds every, std::function<void()> run) {
    std::lock_guard lock(mu_);
    tasks_.push_back({every, std::move(run), Clock::now() + every});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    cv_.notify_all();
    return &tasks_.back();
  }

  void remove(Task* task) {
    std::unique_lock lock(mu_);
    task->cancelled = true;
    done_.wait(lock, [&] { return running_ != task; });
    tasks_.remove_if([&](const Task& t) { return &t == task; });
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    while (true) {
      Clock::time_point wake = Clock::now() + std::chrono::seconds(60);
      for (auto& task : tasks_) {
        if (task.cancelled) continue;
        if (task.next <= Clock::now()) {
          running_ = &task;
          lock.unlock();
          const bool keep = call(task);
          lock.lock();
          if (!keep) task.cancelled = true;
          running_ = nullptr;
          done_.notify_all();
          task.next = Clock::now() + task.every;
        }
        wake = std::min(wake, task.next);
      }
      cv_.wait_until(lock, wake);
    }
  }

  // False when the task threw: it is not called again.
  static bool call(Task& task) {
    try {
      task.run();
      return true;
    } catch (const std::exception& e) {
      spdlog::error("a periodic task failed and is stopped: {}", e.what());
    } catch (...) {
      spdlog::error("a periodic task failed and is stopped");
    }
    return false;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_;
  std::list<Task> tasks_;  // a list: a task's address stays while others come and go
  Task* running_ = nullptr;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<void, void (*)(void*)> run_periodically(std::chrono::milliseconds every, std::function<void()> task) {
  Task* added = PeriodicThread::get().add(every, std::move(task));
  return {added, [](void* t) { PeriodicThread::get().remove(static_cast<Task*>(t)); }};
}

}  // namespace skippr
