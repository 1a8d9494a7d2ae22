// tlio/trust.hpp: knowing a file is the one meant. SHA-256 of files (local or remote, streamed),
// checked against what a store publishes (the Hub) or a digest the caller gives, and model
// signatures in the OpenSSF model-signing v1.0 format (key-based: ECDSA on P-256/384/521).
// Nothing here runs on a plain File::open: a digest costs a full read, so it is asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/error.hpp"
#include "tlio/export.hpp"
#include "tlio/file.hpp"

namespace tlio {

/// The SHA-256 of one file.
struct FileHash {
  /// The file as messages show it (a URL without its credentials).
  std::string location;
  uint64_t size = 0;
  /// Lower-case hexadecimal, 64 digits.
  std::string sha256;
  /// What the bytes were also checked against, when the file's store publishes a SHA-256:
  /// "X-Linked-Etag" (the Hub's answer), "ETag", "the Hugging Face cache's blob name"; else
  /// empty.
  std::string checked_against;
};

struct HashOptions {
  /// For remote locations the token and the warning callback; for local files the backend:
  /// mmap (the default) hashes through a mapping (no copy; a file that shrinks meanwhile raises
  /// SIGBUS, as mapped reads do), pread with positional reads (such a file is Error{io}).
  OpenOptions open = {};
  /// Files hashed at once by hash_files (each file is one sequential SHA-256). 0: one per core.
  unsigned threads = 0;
};

/// The SHA-256 of the file at `location` (a path or any URL tlio reads), read once from start
/// to end; a URL is hashed as it downloads, nothing is stored; a pipe (a FIFO, a shell's
/// `<(...)`) is read to its end. When the file's store publishes
/// a SHA-256 (FileHash::checked_against), the bytes are checked against it:
/// Error{verification} when they differ. Error{io} when it cannot be read.
TLIO_API FileHash hash_file(const std::string& location, const HashOptions& options = {});

/// The SHA-256 of an open File's bytes (its header and data, read as the File reads them: its
/// mapping, or positional reads for Backend::pread), checked like hash_file's.
TLIO_API FileHash hash_file(const File& file);

/// hash_file(file), and Error{verification} naming the file unless its bytes have the SHA-256
/// `sha256` (64 hex digits, either case; Error{invalid_argument} otherwise). It checks the
/// bytes as they are now: a file rewritten in place afterwards (not replaced: a rename leaves
/// the File its version) is not caught when its tensors are read.
TLIO_API FileHash check_sha256(const File& file, std::string_view sha256);

/// Hashes each location on up to `options.threads` threads. `done(index, hash, error)` is
/// called for each, in the order given, as soon as it and every one before it are done; `error`
/// is set (and `hash` empty) when that file failed. Error{interrupted} from the caller's
/// InterruptScope stops them all.
TLIO_API void hash_files(
    std::span<const std::string> locations, const HashOptions& options,
    const std::function<void(size_t index, const FileHash& hash, const Error* error)>& done);

/// The regular files of a local folder, recursively, as relative POSIX paths in path order
/// (component by component, as model signatures list them),
/// without the `.git` folder. With `follow_file_links`, a symbolic link to a regular file is
/// listed as that file (a Hugging Face cache snapshot is made of them). Error{io} when it
/// cannot be listed; Error{unsupported} naming any other symbolic link or a special file (a
/// FIFO, a device), which hashing would follow or block on.
TLIO_API std::vector<std::string> folder_files(const std::string& folder,
                                               bool follow_file_links = true);

/// An entry of a folder that folder_files leaves out, and why.
struct SkippedEntry {
  std::string path;    ///< relative to the folder, '/'-separated
  std::string reason;  ///< "is not a regular file (a FIFO, socket or device)"
};

/// folder_files, with what it cannot take (a link or special file, a folder it cannot read)
/// put in `skipped` instead of thrown, so that a caller can go on with the rest and name them
/// all. Error{io} still when `folder` itself cannot be listed.
TLIO_API std::vector<std::string> folder_files(const std::string& folder, bool follow_file_links,
                                               std::vector<SkippedEntry>& skipped);

/// Where a model signature goes when none is named: FOLDER/model.sig.
inline constexpr std::string_view kDefaultSignatureName = "model.sig";

struct SignOptions {
  /// The signature file. Empty: FOLDER/model.sig.
  std::string signature = {};
  /// More paths (relative to the folder, or absolute inside it: files or folders) left out of
  /// the signature, besides the signature file itself and the top-level entries whose names
  /// start with ".git". One outside the folder is Error{invalid_argument}.
  std::vector<std::string> ignore_paths = {};
  /// Files hashed at once (0: one per core).
  unsigned threads = 0;
};

/// Signs every file of `folder` with the PEM private key in the file `private_key`: writes a
/// Sigstore bundle (OpenSSF model-signing v1.0, the "files" serialization over SHA-256; see
/// docs/security.md) to the signature file, atomically. Returns the signature's path.
/// Error{invalid_argument} for a file that is not an unencrypted PEM private key, or a
/// signature path holding something else than a signature (it is never replaced);
/// Error{unsupported} for a key that is not on P-256/384/521 (RSA, Ed25519), a link or special
/// file in the folder, a name that is not UTF-8.
TLIO_API std::string sign_folder(const std::string& folder, const std::string& private_key,
                                 const SignOptions& options = {});

struct VerifyOptions {
  /// The signature file. Empty: FOLDER/model.sig.
  std::string signature = {};
  /// Paths left out besides those the signature lists as ignored (older bundles list none),
  /// the signature file and the ".git" paths.
  std::vector<std::string> ignore_paths = {};
  /// Files hashed at once (0: one per core).
  unsigned threads = 0;
};

/// What checking a model signature found.
struct SignatureCheck {
  /// Each failure in words, naming its file: a digest that differs, a file added or missing,
  /// a key hint or signature that does not match, a root digest inconsistent with the files.
  std::vector<std::string> problems;
  /// Files the signature lists.
  size_t files = 0;
  /// The signature's key hint: the hex SHA-256 of the public key's PEM text (its
  /// SubjectPublicKeyInfo in 64-character lines, as `openssl ec -pubout` writes it).
  std::string key_hint;
  bool ok() const noexcept { return problems.empty(); }
};

/// Checks `folder` against its signature with the PEM public key in the file `public_key` (a
/// private key's file serves too: its public half checks the signature).
/// Mismatches are reported, not thrown (links and special files in the folder too); the files
/// are only read when the signature verifies. Error{io} or Error{invalid_argument} when the
/// folder, the key or the signature cannot be read at all, Error{unsupported} for a key not on
/// P-256/384/521.
TLIO_API SignatureCheck check_signature(const std::string& folder, const std::string& public_key,
                                        const VerifyOptions& options = {});
/// check_signature, throwing Error{verification} that lists every problem unless it passed.
TLIO_API SignatureCheck verify_signature(const std::string& folder, const std::string& public_key,
                                         const VerifyOptions& options = {});

}  // namespace tlio
