# Sourced by .ci/run and scripts/run-tests.sh: `step NAME COMMAND...` runs one step, says its name
# first, and records how long it took; when the script ends (done or failed) a table of every step
# and its duration is printed, so where the time goes is in every log (issue 42), with how busy the
# machine's cores were meanwhile (all of them, from /proc/stat: whatever ran, not the step alone),
# which says where running steps side by side could still gain.
STEP_NAMES=()
STEP_SECONDS=()
STEP_RESULTS=()
STEP_BUSY=()
STEPS_STARTED=$SECONDS

# The machine's CPU ticks so far: "busy total" (busy: all but idle and iowait).
cpu_ticks() {
  awk '/^cpu / { total = 0; for (i = 2; i <= NF; i++) total += $i; print total - $5 - $6, total }' /proc/stat
}
# The share of the cores' time that was busy since `cpu_ticks` said $1 $2, in percent.
busy_since() {
  local now
  now=$(cpu_ticks)
  awk -v b0="$1" -v t0="$2" -v now="$now" 'BEGIN { split(now, n, " "); d = n[2] - t0; printf "%d%%", (d > 0 ? 100 * (n[1] - b0) / d : 0) }'
}
STEPS_TICKS=$(cpu_ticks)

step() {
  local name=$1
  shift
  printf '\033[1m==> %s\033[0m\n' "$name"
  local start=$SECONDS rc=0 ticks
  ticks=$(cpu_ticks)
  "$@" || rc=$?
  STEP_BUSY+=("$(busy_since $ticks)")
  STEP_NAMES+=("$name")
  STEP_SECONDS+=($((SECONDS - start)))
  STEP_RESULTS+=("$([ "$rc" -eq 0 ] && echo ok || echo "exit $rc")")
  return "$rc"
}

# `step_beside NAME COMMAND...` starts a step in the background, beside the steps that follow (a
# build leaves a core idle for much of its time: its single-crate stretches and links), its output
# kept until `step_join NAME` waits for it, prints that output, and records its duration (its own,
# overlapping the others': the table says so) and its result.
declare -A BESIDE_PID=() BESIDE_LOG=() BESIDE_START=() BESIDE_TICKS=()
step_beside() {
  local name=$1
  shift
  printf '\033[1m==> %s (beside the next steps)\033[0m\n' "$name"
  BESIDE_LOG[$name]=$(mktemp)
  BESIDE_START[$name]=$SECONDS
  BESIDE_TICKS[$name]=$(cpu_ticks)
  local log=${BESIDE_LOG[$name]} ticks=${BESIDE_TICKS[$name]}
  # Its end said by itself (its result, when, how busy the cores were), not when it is joined.
  {
    local rc=0
    "$@" || rc=$?
    echo "$rc $SECONDS $(busy_since $ticks)" >"$log.end"
  } >"$log" 2>&1 &
  BESIDE_PID[$name]=$!
}

step_join() {
  local name=$1 rc=0 ended=$SECONDS busy=
  local log=${BESIDE_LOG[$name]}
  wait "${BESIDE_PID[$name]}" || rc=$?
  [ ! -s "$log.end" ] || read -r rc ended busy <"$log.end"
  printf '\033[1m==> %s (ran beside, its output)\033[0m\n' "$name"
  cat "$log"
  rm -f "$log" "$log.end"
  unset "BESIDE_PID[$name]"
  STEP_NAMES+=("$name (beside)")
  STEP_SECONDS+=($((ended - BESIDE_START[$name])))
  STEP_BUSY+=("$busy")
  STEP_RESULTS+=("$([ "$rc" -eq 0 ] && echo ok || echo "exit $rc")")
  return "$rc"
}

steps_summary() {
  local rc=$?
  # A step still running beside (the script failed before its join) ends with the script.
  local pid
  for pid in "${BESIDE_PID[@]}"; do
    pkill -P "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  done
  [ ${#STEP_NAMES[@]} -gt 0 ] || return "$rc"
  printf '\n\033[1m%s: where the time went\033[0m\n' "${STEPS_TITLE:-steps}"
  printf '%-72s %9s  %-10s %s\n' "step" "min:sec" "cores busy" "result"
  local i
  for i in "${!STEP_NAMES[@]}"; do
    printf '%-72s %6d:%02d  %-10s %s\n' "${STEP_NAMES[$i]}" $((STEP_SECONDS[i] / 60)) $((STEP_SECONDS[i] % 60)) \
      "${STEP_BUSY[$i]}" "${STEP_RESULTS[$i]}"
  done
  local total=$((SECONDS - STEPS_STARTED))
  printf '%-72s %6d:%02d  %s\n' "all" $((total / 60)) $((total % 60)) "$(busy_since $STEPS_TICKS)"
  return "$rc"
}
trap steps_summary EXIT
