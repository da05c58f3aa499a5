# ab_runs.sh - sourced by the A/B benchmark scripts (bench_auth_ab.sh,
# bench_micro_ab.sh): runs two commands alternately, each writing its JSON
# rows, so that both sides see the same machine state.
#
# ab_runs OUT RUNS NAME_A NAME_B CMD...
#   Runs RUNS rounds of: CMD with AB_SIDE=NAME_A and AB_JSON=OUT/NAME_A<i>.jsonl,
#   then the same for NAME_B. CMD reads both variables (a function of the
#   calling script), so each side can run its own build and environment.
ab_runs() {
  local out=$1 runs=$2 a=$3 b=$4 i side
  shift 4
  for i in $(seq "$runs"); do
    for side in "$a" "$b"; do
      echo "run $i/$runs: $side" >&2
      AB_SIDE=$side AB_JSON="$out/$side$i.jsonl" "$@" >/dev/null
    done
  done
}
