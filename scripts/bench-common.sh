# Shared by the benchmark scripts (source it): timing a command, recording runs, medians and
# ratios of occupancy against the plain compiler work measured in the same run.

measure() { # prints "wall cpu" of the command (cpu: user + sys of every process)
  local TIMEFORMAT='%R %U %S'
  { time "$@" >/dev/null 2>&1 ; } 2>&1 | awk '{printf "%.3f %.3f\n", $1, $2 + $3}'
}
# The median of the numbers on stdin, one a line (the mean of the middle two for an even count).
median() { sort -n | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2] + a[NR/2+1]) / 2}'; }
declare -A wall cpu
record() { # name, "wall cpu"
  wall[$1]+="${2% *} "; cpu[$1]+="${2#* } "
  echo "  $1: wall ${2% *} s, cpu ${2#* } s"
}
med() { printf '%s\n' $1 | median; }
ratio() { echo "$1 / $2" | bc -l; }
per_run_ratios() { # ours, plain (space-separated lists of one value per run)
  local -a o=($1) p=($2); local i out=""
  for i in "${!o[@]}"; do out+="$(printf %.3f "$(ratio "${o[$i]}" "${p[$i]}")") "; done
  echo "${out% }"
}
report() { # label, ours, plain: medians and their ratio, then each run's ratio
  local ow pw oc pc
  ow=$(med "${wall[$2]}"); pw=$(med "${wall[$3]}"); oc=$(med "${cpu[$2]}"); pc=$(med "${cpu[$3]}")
  printf '%-44s wall %7.2fs vs %7.2fs = %.3f | cpu %7.2fs vs %7.2fs = %.3f\n' "$1" "$ow" "$pw" "$(ratio "$ow" "$pw")" "$oc" "$pc" "$(ratio "$oc" "$pc")"
  printf '%-44s wall %s | cpu %s\n' "  per run" "$(per_run_ratios "${wall[$2]}" "${wall[$3]}")" "$(per_run_ratios "${cpu[$2]}" "${cpu[$3]}")"
}

find_nvcc() { # sets NVCC: $NVCC, else nvcc on PATH, else the one scripts/setup-cuda.sh installed
  if [[ -z "${NVCC:-}" ]] && ! command -v nvcc >/dev/null; then source <(scripts/setup-cuda.sh --env); fi
  NVCC=${NVCC:-$(command -v nvcc)}
}
