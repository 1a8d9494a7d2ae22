#!/usr/bin/env bash
# The style the repository claims, checked: every C and C++ file as clang-format writes it
# (.clang-format: Google's style, 100 columns), and no source file over 600 lines, tests
# included (a file that grows is split by concern, not packed). Run from anywhere in a clone.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t c_files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' ':!tests/data' ':!fuzz/corpus')
clang-format --dry-run -Werror "${c_files[@]}"
mapfile -t sources < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.py' '*.rs' '*.sh' '*.cmake' \
  'CMakeLists.txt' '*/CMakeLists.txt' ':!tests/data' ':!fuzz/corpus')
long=$(wc -l "${sources[@]}" | awk '$2 != "total" && $1 > 600 { print "  " $2 ": " $1 " lines" }')
if [ -n "$long" ]; then
  echo "files over 600 lines (split them):" >&2
  echo "$long" >&2
  exit 1
fi
echo "style: ${#c_files[@]} C/C++ files as clang-format writes them; ${#sources[@]} sources of 600 lines or fewer"
