# shellcheck shell=bash
# What the test runners share (sourced by scripts/test and every scripts/test-*.sh):
#
#   suite NAME CMD...   runs CMD with its output in $log_dir/NAME.log; prints one line, PASS or FAIL
#                       with the seconds and the log's last line; on failure also the log's last 60
#                       lines. (`part` is the same function, the sub-runners' word.)
#   lane NAME FUNC...   runs FUNC (a function that calls `suite`) in the background, beside what
#                       follows; its suites' lines print as they end, its rows stay in their place
#                       in the table. `lanes_wait` waits for every lane.
#   step NAME CMD...    a setup step: like suite, but a failure ends the run at once (setup_failed)
#   setup_failed WHAT LOG   prints what failed and LOG's tail, "0 passed, 1 failed", exits 1
#   apt_install [--with-recommends] PKG...   apt-get install, with one `apt-get update` retry
#                       (quiet; output on stderr), one at a time across every script of a run
#   nightly_toolchain   the nightly toolchain with rust-src and miri, when it is missing
#   C_TESTS…            the C test programs, and the part of them each other run takes
#   finish              the closing lines: the failed suites, a table of every suite's time (wall
#                       clock and CPU) in the order the runner declares them, the disk space left,
#                       and "N passed, M failed"; returns non-zero when any suite failed
#
# The runner sets log_dir (where the logs go) before the first suite; width (the name column,
# default 34) is optional. Results are files under $log_dir/.results, so lanes (subshells) count.
# Rows are ordered by where their suite or lane starts in the runner, not by when they end.

# The C test programs, tests/c/NAME.c, each a main of its own: the one list the runners build
# from. scripts/test builds and runs C_TESTS (stress.c is the races' stress host, built by
# scripts/test-races.sh); the other runs take the parts below, each with why.
C_TESTS=(parity guard client soak calls live resources)
# Windows (mingw-w64, under Wine): soak.c and calls.c count threads in /proc; live.c kills and
# waits for processes with POSIX calls.
C_TESTS_WINDOWS=(parity guard client resources)
# The release wheels' libraries on musl and on aarch64 (qemu-user): the ABI and one whole client
# pass on each; what the others check does not differ by libc or CPU.
C_TESTS_WHEELS=(parity client)
# ThreadSanitizer: the threaded ones (parity and guard run on one thread) and the stress host.
C_TESTS_TSAN=(client calls live soak stress resources)

: "${width:=34}"
_lib_t0=$SECONDS
_lib_slot=0  # the foreground's position; a lane takes one slot and numbers its own suites under it
_lib_sub=""  # inside a lane: its slot, and the next number within it
_lib_n=0
_lib_lanes=()

_lib_results() { echo "$log_dir/.results"; }

_lib_init() {
  [ -n "${_lib_ready:-}" ] && return 0
  mkdir -p "$log_dir"
  rm -rf "$(_lib_results)" && mkdir -p "$(_lib_results)"
  _lib_ready=1
}

# MiB free on the disk of the checkout (and target/): a full disk fails every suite after
# it within a second, so a failure says so when space is short, and the table ends with it.
_lib_free_mib() { df -Pm . 2>/dev/null | awk 'NR == 2 { print $4 }'; }
_lib_free0=$(_lib_free_mib)

# The table's CPU column, so that a suite's cost shows apart from its waiting on two cores: a
# suite runs in a subshell that writes the builtin `times` (its own and its children's user and
# system time) to FILE when the command ends; a lane's subshell is not among its children, so
# what a lane uses is not counted in the suite during which the lane ended. Processes nobody
# waits for (wineserver, servers a test kills) are in no figure.
_lib_cpu_of() { # _lib_cpu_of FILE: the seconds in FILE, rounded; "?" without it
  awk '{ for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); sub(",", ".", a[2]);
    n += a[1] * 60 + a[2] } } END { if (NR) printf "%.0f", n; else printf "?" }' "$1" 2>/dev/null || echo "?"
}

# Prints a block in one piece: lanes and the foreground never interleave their lines.
_lib_say() {
  local lock
  lock=$(_lib_results)/.lock
  { flock 9; printf '%s\n' "$1"; } 9>>"$lock"
}

_lib_key() { # sets _lib_k to the next row's sort key (not printed: a $(…) would lose the count)
  if [ -n "$_lib_sub" ]; then
    _lib_n=$((_lib_n + 1))
    printf -v _lib_k '%04d.%03d' "$_lib_sub" "$_lib_n"
  else
    _lib_slot=$((_lib_slot + 1))
    printf -v _lib_k '%04d.000' "$_lib_slot"
  fi
}

suite() { # suite NAME CMD...
  _lib_init
  local name=$1; shift
  local key log t0=$SECONDS rc secs tf cpu
  _lib_key
  key=$_lib_k
  log="$log_dir/${name//[^a-zA-Z0-9_-]/_}.log"
  tf="$(_lib_results)/.times.$key"
  rm -f "$tf"
  ( "$@"; rc=$?; times >"$tf"; exit $rc ) >"$log" 2>&1
  rc=$?
  secs=$((SECONDS - t0))
  cpu=$(_lib_cpu_of "$tf")
  local where=""
  [ -n "$_lib_sub" ] && where=" [${_lib_lane}]"
  if [ $rc -eq 0 ]; then
    printf 'PASS|%s|%s|%s|%s\n' "$secs" "$name" "$where" "$cpu" >"$(_lib_results)/$key"
    _lib_say "$(printf 'PASS  %-*s %4ss  %s%s' "$width" "$name" "$secs" "$(tail -n 1 "$log" | cut -c1-100)" "$where")"
  else
    printf 'FAIL|%s|%s|%s|%s\n' "$secs" "$name" "$where" "$cpu" >"$(_lib_results)/$key"
    local free
    free=$(_lib_free_mib)
    _lib_say "$(printf 'FAIL  %-*s %4ss  (log: %s)%s\n' "$width" "$name" "$secs" "$log" "$where"
      tail -n 60 "$log" | sed 's/^/      | /'
      [ "${free:-0}" -lt 2048 ] && echo "      (only ${free:-?} MiB free on the disk of the checkout)")"
  fi
  return $rc
}
part() { suite "$@"; }

step() { # step NAME CMD...: a setup step, timed in the table; a failure ends the run
  suite "setup: $1" "${@:2}" >/dev/null ||
    setup_failed "$1" "$log_dir/$(echo "setup: $1" | sed 's/[^a-zA-Z0-9_-]/_/g').log"
}

lane() { # lane NAME FUNC...: FUNC in the background, its suites' rows kept in this place
  _lib_init
  local name=$1; shift
  _lib_slot=$((_lib_slot + 1))
  (
    _lib_sub=$_lib_slot _lib_n=0 _lib_lane=$name
    "$@"
  ) &
  _lib_lanes+=($!)
}
lanes_wait() {
  local p
  for p in "${_lib_lanes[@]}"; do wait "$p"; done
  _lib_lanes=()
}

setup_failed() { # setup_failed WHAT LOG
  echo "setup failed: $1"
  [ -n "${2:-}" ] && tail -n 60 "$2" 2>/dev/null | sed 's/^/      | /'
  echo "0 passed, 1 failed"
  exit 1
}

# The lanes of a run install beside each other (the cross tools while the bindings install Go):
# apt holds one lock and fails at once when another apt-get has it, so our installs take turns
# on a lock of their own, and wait a while for any other apt-get on the machine.
apt_install() { # apt_install [--with-recommends] PKG...
  export DEBIAN_FRONTEND=noninteractive
  local rec=(--no-install-recommends) apt=(apt-get -o DPkg::Lock::Timeout=300)
  [ "${1:-}" = --with-recommends ] && { rec=(); shift; }
  # Opened for reading (made first if missing): an open that creates nothing is allowed on a
  # file another user made in /tmp (fs.protected_regular); bounded, so a stuck holder fails us.
  local l=${TMPDIR:-/tmp}/toolnexus-apt.lock
  [ -e "$l" ] || : >>"$l"
  (
    flock -w 900 8 || { echo "apt_install: $l held for 15 minutes" >&2; exit 1; }
    "${apt[@]}" install -y -q "${rec[@]}" "$@" >&2 ||
      { "${apt[@]}" update -q >&2 && "${apt[@]}" install -y -q "${rec[@]}" "$@" >&2; }
  ) 8<"$l"
}

# The nightly toolchain (fuzzing, Miri, ThreadSanitizer's -Zbuild-std) when it is missing, with
# rust-src and miri: -c makes rustup take the newest nightly that has both (some ship without Miri).
nightly_toolchain() {
  rustup run nightly rustc --version >/dev/null 2>&1 ||
    rustup toolchain install nightly --profile minimal -c rust-src -c miri
}

finish() { # the closing lines; non-zero when any suite failed
  lanes_wait
  local dir f status secs name where cpu all_cpu passed=0 failed=0 names=()
  dir=$(_lib_results)
  mkdir -p "$dir"
  times >"$dir/.times.all" # after lanes_wait: every suite, lane and step of the run
  all_cpu=$(_lib_cpu_of "$dir/.times.all")
  echo
  echo "== times (s: wall clock, then CPU; [lane]: ran beside the suites around it)"
  for f in $(cd "$dir" 2>/dev/null && ls | sort); do
    IFS='|' read -r status secs name where cpu <"$dir/$f"
    printf '%s  %-*s %5s %5s%s\n' "$status" "$width" "$name" "$secs" "${cpu:-?}" "$where"
    case $name in setup:*) continue ;; esac
    if [ "$status" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); names+=("$name"); fi
  done
  printf '      %-*s %5s %5s\n' "$width" "total" $((SECONDS - _lib_t0)) "$all_cpu"
  echo "disk: $(_lib_free_mib) MiB free at the end, ${_lib_free0:-?} MiB at the start"
  [ $failed -gt 0 ] && echo "failed: ${names[*]}"
  echo "$passed passed, $failed failed"
  [ $failed -eq 0 ]
}
