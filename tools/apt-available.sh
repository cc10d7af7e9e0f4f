#!/usr/bin/env bash
# Prints, one a line, those of the named Debian packages that this system's package lists offer
# (a candidate version in `apt-cache policy`). Usage: tools/apt-available.sh PACKAGE...
#
# One apt-cache call for all names, read to its end before parsing: a pipe into `grep -q` would
# close early, apt-cache would die of SIGPIPE, and under `set -o pipefail` every package would
# look unavailable.
set -euo pipefail
(($#)) || exit 0
policy=$(apt-cache policy "$@" 2>/dev/null) || policy=""
awk '/^[^ \t].*:$/ { pkg = substr($0, 1, length($0) - 1) }
     /^[ \t]+Candidate:/ && $2 != "(none)" && pkg != "" { print pkg; pkg = "" }' <<<"$policy"
