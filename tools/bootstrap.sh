#!/usr/bin/env bash
# Sets up everything `make demo` and `make test` need: Debian packages (when we may install
# them), the .venv with pinned Python requirements (ROS 2 Kilted wheels from PyPI unless a
# system ROS 2 is sourced) and the mfm_snake package itself.
# Usage: tools/bootstrap.sh [--dev]     (--dev adds test, lint and oracle requirements)
#
# One line per step on stdout; the tools' own output goes to .venv/setup.log and its end is
# printed when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
dev=0
[[ ${1:-} == --dev ]] && dev=1

say() { printf '[setup] %s\n' "$*"; }
mkdir -p build
log=build/setup.log
: >"$log"
# run LOG-LABEL CMD...: runs CMD with its output in the log; on failure shows the log's end
run() {
  local what=$1
  shift
  if ! "$@" >>"$log" 2>&1; then
    say "FAILED: $what (last lines of $log below)"
    tail -n 25 "$log" | sed 's/^/  | /'
    exit 1
  fi
}

# --- Debian packages ------------------------------------------------------------------
mapfile -t wanted < <(grep -Ev '^\s*(#|$)' tools/apt-packages.txt)
# make test also runs the code on Debian's own Python packages (tools/apt-packages-test.txt)
((dev)) && mapfile -t -O "${#wanted[@]}" wanted < <(grep -Ev '^\s*(#|$)' tools/apt-packages-test.txt)
missing=()
for p in "${wanted[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == "install ok installed" ]] || missing+=("$p")
done
# npm vendors three.js and urdf-loader for the WebGL view; Node.js may come from elsewhere
# than Debian (its npm is then not a Debian package), so look for the command itself.
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]} == 0)); then
  say "Debian packages: all ${#wanted[@]} present"
else
  if [[ $(id -u) == 0 ]]; then sudo=(); elif sudo -n true 2>/dev/null; then sudo=(sudo -n); else sudo=(none); fi
  if [[ ${sudo[*]-} == none ]]; then
    say "missing Debian packages (not root, no passwordless sudo): ${missing[*]}"
    say "install them with: sudo apt-get install --no-install-recommends ${missing[*]}"
    say "continuing; the firmware, emulator and browser parts need them"
  else
    say "updating the Debian package lists (apt-get update)"
    run "apt-get update" "${sudo[@]}" apt-get update -qq
    # install what this distribution has; name what it lacks (Ubuntu, e.g., ships Chromium
    # as a snap and another clang runtime) instead of failing on it
    mapfile -t available < <(tools/apt-available.sh "${missing[@]}")
    unavailable=()
    for p in "${missing[@]}"; do
      [[ " ${available[*]} " == *" $p "* ]] || unavailable+=("$p")
    done
    if ((${#available[@]})); then
      say "installing Debian packages: ${available[*]}"
      run "apt-get install" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${available[@]}"
      say "installed: ${available[*]}"
    fi
    if ((${#unavailable[@]})); then
      say "not in this system's package lists: ${unavailable[*]} (install them another way;"
      say "the parts that need them say so: firmware build and fuzzing, browser tests)"
    fi
  fi
fi

# --- Python virtual environment -------------------------------------------------------
# The venv is made for one ROS source: the PyPI wheels, or a sourced system ROS 2.
mode=${ROS_DISTRO:+system-ros-$ROS_DISTRO}
mode=${mode:-pypi-ros}
if [[ -f $venv/.ros-mode && $(cat "$venv/.ros-mode") != "$mode" ]]; then
  say "$venv was made for $(cat "$venv/.ros-mode"), now $mode: recreating it"
  rm -rf "$venv"
fi
if [[ ! -x $venv/bin/python ]]; then
  if [[ -n ${ROS_DISTRO:-} ]]; then
    say "system ROS 2 '$ROS_DISTRO' is sourced: creating $venv with its site packages (no ROS wheels)"
    run "python3 -m venv (install python3-venv)" python3 -m venv --system-site-packages "$venv"
  else
    say "creating $venv"
    run "python3 -m venv (install python3-venv)" python3 -m venv "$venv"
  fi
fi
echo "$mode" >"$venv/.ros-mode"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check)
reqs=(-r requirements.txt)
if [[ -z ${ROS_DISTRO:-} ]]; then
  reqs+=(-r requirements-ros.txt)
elif system_numpy=$(python3 -c 'import numpy; print(numpy.__version__)' 2>/dev/null); then
  # ROS 2's message packages are compiled against the system numpy: keep it
  say "keeping the system numpy $system_numpy (ROS 2 '$ROS_DISTRO' is built against it)"
  grep -v '^numpy==' requirements.txt >"$venv/requirements-system-ros.txt"
  echo "numpy==$system_numpy" >"$venv/constraints-system-ros.txt"
  reqs=(-r "$venv/requirements-system-ros.txt" -c "$venv/constraints-system-ros.txt")
fi
((dev)) && reqs+=(-r requirements-dev.txt)
say "installing pinned Python requirements (${reqs[*]})"
run "pip install ${reqs[*]}" "${pip[@]}" "${reqs[@]}"
# A non-editable install: `pip install -e .` would drop data_files (launch/, urdf/, config/).
say "installing mfm_snake into $venv"
run "pip install ." "${pip[@]}" --no-deps --no-build-isolation --force-reinstall .
say "done: $("$venv/bin/python" -m pip list --disable-pip-version-check 2>/dev/null | wc -l) Python packages in $venv (log: $log)"
