// cli/signals.hpp: what Ctrl-C, SIGTERM, SIGHUP and SIGBUS do to a tlio command.
#pragma once

namespace tlio::cli {

/// Installs the CLI's handlers. SIGINT, SIGTERM and SIGHUP remove the temporaries of every
/// unfinished write (tlio::remove_temporary_files), print one line and exit with 128 + the
/// signal (130, 143, 129); a folder output is never half-published, since its files are renamed
/// into place with these signals held back. SIGBUS inside a mapped input (the file shrank, or
/// its storage failed, while it was read) removes them too, says which file changed and exits 1.
/// SIGXFSZ is ignored: a write past `ulimit -f` is an I/O error (EFBIG) like a full disk.
/// While an upload to an object store runs, the first of those signals asks it to abort
/// (tlio::stop_uploads) instead, and the command ends once it has: see stopped_by_signal().
void install_signal_handlers();

/// The signal that stopped an upload (the command then exits with 128 + it), or 0.
int stopped_by_signal() noexcept;

}  // namespace tlio::cli
