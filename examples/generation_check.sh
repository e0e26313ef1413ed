#!/bin/sh
# External generation check for `gtm deploy ... --generation-check examples/generation_check.sh`.
#
#   generation_check.sh check  ID GEN   exit 0 if GEN is the last generation recorded for ID
#                                        (or ID was never recorded), else exit 1
#   generation_check.sh record ID GEN   append "ID GEN" to the log
#
# The log (GTM_GENERATION_LOG, default ./gtm-generations.log) is append-only by convention; keep
# it somewhere a restore of the state file from a backup does not also roll back (another host,
# an append-only file `chattr +a`, a WORM bucket). A state rolled back to an older copy has a
# smaller generation than the log's last entry and is refused before any step runs.
set -eu
log="${GTM_GENERATION_LOG:-./gtm-generations.log}"
action="$1"; id="$2"; gen="$3"
case "$action" in
  record)
    printf '%s %s\n' "$id" "$gen" >> "$log" ;;
  check)
    last=$( (grep "^$id " "$log" 2>/dev/null || true) | tail -n 1 | cut -d' ' -f2)
    if [ -z "$last" ]; then
      echo "generation check: no record of deployment $id yet; accepting generation $gen" >&2
      exit 0
    fi
    if [ "$last" != "$gen" ]; then
      echo "generation check: the log says generation $last, the state file says $gen" >&2
      exit 1
    fi ;;
  *)
    echo "usage: $0 check|record ID GENERATION" >&2; exit 2 ;;
esac
