#include "signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

#include "tlio/interrupt.hpp"

namespace tlio::cli {
namespace {

// Only async-signal-safe calls below: write(2), _exit(2), and the two tlio functions made so.
void say(const char* text) noexcept {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

// On a terminal the message starts on a line of its own (after "^C" or a progress bar).
bool g_stderr_is_terminal = false;

volatile sig_atomic_t g_upload_stopped_by = 0;

void on_stop(int sig) {
  // An upload is undone by a request, which a handler cannot make: the first signal asks it to
  // abort itself and lets the command end (stopped_by_signal); a second one ends it now.
  if (g_upload_stopped_by == 0 && tlio::stop_uploads()) {
    g_upload_stopped_by = sig;
    if (g_stderr_is_terminal) say("\n");
    say("tlio: stopping: aborting the upload (again to quit at once)\n");
    return;
  }
  tlio::remove_temporary_files();
  if (g_stderr_is_terminal) say("\n");
  say(sig == SIGINT    ? "tlio: interrupted (SIGINT); unfinished outputs removed\n"
      : sig == SIGTERM ? "tlio: terminated (SIGTERM); unfinished outputs removed\n"
                       : "tlio: hung up (SIGHUP); unfinished outputs removed\n");
  ::_exit(128 + sig);
}

void on_bus(int sig, siginfo_t* info, void*) {
  static char name[4096];
  if (!tlio::mapped_file_name(info->si_addr, name, sizeof name)) {
    // Not one of tlio's mappings: a bug, not a changed file. Die as SIGBUS would.
    ::signal(sig, SIG_DFL);
    return;  // the access faults again, now fatally
  }
  tlio::remove_temporary_files();
  say("tlio: ");
  say(name);
  say(": changed while it was read (it shrank, or its storage failed); unfinished outputs removed\n");
  ::_exit(1);
}

}  // namespace

int stopped_by_signal() noexcept { return g_upload_stopped_by; }

void install_signal_handlers() {
  g_stderr_is_terminal = ::isatty(STDERR_FILENO) == 1;
  struct sigaction stop {};
  stop.sa_handler = on_stop;
  sigemptyset(&stop.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop.sa_mask, s);  // one handler at a time
  for (int s : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    ::sigaction(s, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;  // ignored by who started us (nohup, a background job)
    ::sigaction(s, &stop, nullptr);
  }
  // Past a file-size limit (ulimit -f) a write fails with EFBIG, reported and cleaned up like
  // any I/O error, instead of the process dying of SIGXFSZ with its temporaries left.
  ::signal(SIGXFSZ, SIG_IGN);
  struct sigaction bus {};
  bus.sa_sigaction = on_bus;
  bus.sa_flags = SA_SIGINFO;
  sigemptyset(&bus.sa_mask);
  ::sigaction(SIGBUS, &bus, nullptr);
}

}  // namespace tlio::cli
