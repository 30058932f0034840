// tests/conformance/supervisor.cc — see the header.
#include "tests/conformance/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>

namespace keel::conformance {
namespace {

using Clock = std::chrono::steady_clock;

struct Worker {
  pid_t pid = -1;
  int to = -1;    // parent writes case indices
  int from = -1;  // parent reads result lines
  long current = -1;  // position in `todo`, -1 when idle
  Clock::time_point started;
  std::string buffer;
};

bool WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The worker's loop: "<case index>\n" in, one result line out, until EOF.
[[noreturn]] void WorkerMain(int in, int out, const std::vector<Case>& cases, const RunOptions& run) {
  std::string pending;
  char buf[256];
  for (;;) {
    size_t nl;
    while ((nl = pending.find('\n')) == std::string::npos) {
      const ssize_t n = read(in, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(0);
      pending.append(buf, static_cast<size_t>(n));
    }
    const size_t index = std::strtoul(pending.substr(0, nl).c_str(), nullptr, 10);
    pending.erase(0, nl + 1);
    CaseResult r;
    if (index >= cases.size()) {
      r.status = "error";
      r.reason = "internal: bad case index";
    } else {
      try {
        r = RunCase(cases[index], run);
      } catch (const std::exception& e) {  // nothing should throw; keep the worker alive if it does
        r = CaseResult{};
        r.status = "error";
        r.reason = std::string("exception: ") + e.what();
      }
    }
    if (!WriteAll(out, SerializeResult(r) + "\n")) _exit(1);
  }
}

bool Spawn(Worker& w, std::vector<Worker>& all, const std::vector<Case>& cases, const RunOptions& run) {
  int to[2], from[2];
  if (pipe(to) != 0) return false;
  if (pipe(from) != 0) {
    close(to[0]);
    close(to[1]);
    return false;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {to[0], to[1], from[0], from[1]}) close(fd);
    return false;
  }
  if (pid == 0) {
    // The other workers' pipe ends must not stay open here, or their EOF
    // (a crash) would go unseen by the parent.
    for (Worker& o : all) {
      if (o.to >= 0) close(o.to);
      if (o.from >= 0) close(o.from);
    }
    close(to[1]);
    close(from[0]);
    signal(SIGPIPE, SIG_DFL);
    WorkerMain(to[0], from[1], cases, run);
  }
  close(to[0]);
  close(from[1]);
  w.pid = pid;
  w.to = to[1];
  w.from = from[0];
  w.current = -1;
  w.buffer.clear();
  return true;
}

// Reaps a worker (after EOF or a kill) and says how it ended.
std::string Reap(Worker& w) {
  int status = 0;
  std::string how = "worker exited";
  if (w.pid > 0 && waitpid(w.pid, &status, 0) == w.pid) {
    if (WIFSIGNALED(status)) {
      how = "crashed: signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    } else if (WIFEXITED(status)) {
      how = "worker exited with status " + std::to_string(WEXITSTATUS(status));
    }
  }
  if (w.to >= 0) close(w.to);
  if (w.from >= 0) close(w.from);
  w = Worker{};
  return how;
}

}  // namespace

std::vector<CaseResult> RunCases(const std::vector<Case>& cases, const std::vector<size_t>& todo,
                                 const RunOptions& run, const SupervisorOptions& options,
                                 const std::function<void(size_t, const CaseResult&)>& on_result) {
  signal(SIGPIPE, SIG_IGN);  // a dead worker's pipe must not kill the parent
  std::vector<CaseResult> results(todo.size());
  const int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(std::max<size_t>(todo.size(), 1))));
  std::vector<Worker> workers(static_cast<size_t>(jobs));
  size_t next = 0, done = 0;
  auto finish = [&](Worker& w, CaseResult r) {
    const size_t pos = static_cast<size_t>(w.current);
    results[pos] = std::move(r);
    w.current = -1;
    ++done;
    if (on_result) on_result(todo[pos], results[pos]);
  };
  // Ends worker `w` (reaped; respawned on the next hand-out) and records its case
  // as an error: `why`, or how the worker ended when `why` is empty.
  auto fail_current = [&](Worker& w, const std::string& why) {
    const long current = w.current;
    const auto started = w.started;
    CaseResult r;
    r.status = "error";
    r.run_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    const std::string how = Reap(w);  // resets w
    r.reason = why.empty() ? how : why;
    if (current >= 0) {
      w.current = current;
      finish(w, std::move(r));
    }
  };
  while (done < todo.size()) {
    // Hand out work; (re)spawn workers as needed.
    for (Worker& w : workers) {
      if (w.current >= 0 || next >= todo.size()) continue;
      if (w.pid < 0 && !Spawn(w, workers, cases, run)) {
        CaseResult r;
        r.status = "error";
        r.reason = std::string("cannot start a worker: ") + std::strerror(errno);
        w.current = static_cast<long>(next++);
        finish(w, std::move(r));
        continue;
      }
      w.current = static_cast<long>(next);
      w.started = Clock::now();
      if (!WriteAll(w.to, std::to_string(todo[next]) + "\n")) {
        ++next;
        fail_current(w, "worker died before the case started");
        continue;
      }
      ++next;
    }
    // Wait for a result, a death or the nearest deadline.
    std::vector<pollfd> fds;
    std::vector<Worker*> owners;
    double wait_s = options.timeout_seconds;
    for (Worker& w : workers) {
      if (w.current < 0) continue;
      fds.push_back({w.from, POLLIN, 0});
      owners.push_back(&w);
      const double elapsed = std::chrono::duration<double>(Clock::now() - w.started).count();
      wait_s = std::min(wait_s, options.timeout_seconds - elapsed);
    }
    if (fds.empty()) {
      // Nothing running and nothing handed out: only possible if every hand-out
      // failed above, which already recorded its case. Never spin.
      if (next >= todo.size()) break;
      continue;
    }
    const int timeout_ms = static_cast<int>(std::max(0.0, wait_s) * 1000) + 10;
    const int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      Worker& w = *owners[i];
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        const ssize_t got = read(w.from, buf, sizeof(buf));
        if (got > 0) {
          w.buffer.append(buf, static_cast<size_t>(got));
          const size_t nl = w.buffer.find('\n');
          if (nl != std::string::npos) {
            CaseResult r;
            if (!ParseResult(w.buffer.substr(0, nl), r)) {
              r = CaseResult{};
              r.status = "error";
              r.reason = "internal: unreadable worker result";
            }
            w.buffer.erase(0, nl + 1);
            finish(w, std::move(r));
          }
          continue;
        }
        if (got < 0 && errno == EINTR) continue;
        fail_current(w, "");  // EOF: the worker died mid-case
        continue;
      }
      const double elapsed = std::chrono::duration<double>(Clock::now() - w.started).count();
      if (elapsed >= options.timeout_seconds) {
        kill(w.pid, SIGKILL);
        char secs[32];
        std::snprintf(secs, sizeof(secs), "%g", options.timeout_seconds);
        fail_current(w, std::string("timed out after ") + secs + " s");
      }
    }
  }
  for (Worker& w : workers) {
    if (w.pid > 0) {
      close(w.to);
      w.to = -1;
      Reap(w);
    }
  }
  return results;
}

int RunInChild(const std::function<int(int fd)>& fn, std::string* output) {
  int p[2];
  if (pipe(p) != 0) return -1;
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    close(p[0]);
    _exit(fn(p[1]));
  }
  close(p[1]);
  char buf[1024];
  for (;;) {
    const ssize_t n = read(p[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output) output->append(buf, static_cast<size_t>(n));
  }
  close(p[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace keel::conformance
