# daemons.sh - what shell tests share about the daemons they start (sourced):
# whether a pid still runs, and the fluxon-* daemons started for a folder.

# A process counts as running unless it is gone or a zombie (in some sandboxes
# pid 1 does not reap the daemons that `fluxon up` leaves to it).
running() { [ -r "/proc/$1/stat" ] && ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$1/stat"; }

# Prints the pids of running fluxon-* daemons with an argument under DIR.
daemons_in() {
  local p
  for p in /proc/[0-9]*; do
    case "$(cat "$p/comm" 2>/dev/null)" in fluxon-*) ;; *) continue ;; esac
    { tr '\0' '\n' <"$p/cmdline"; } 2>/dev/null | grep -q "^$1/" && running "${p#/proc/}" &&
      echo "${p#/proc/}"
  done
}
