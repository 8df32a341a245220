#!/usr/bin/env bash
# The house rules, checked on the source tree (run by the test suite as
# `house-rules`; by hand: ./scripts/check_house.sh [SOURCE_ROOT]):
#  1. includes point down only: src/ never includes plugin/ or pipelines/;
#     plugin/ never pipelines/; pipelines/ takes from plugin/ only its
#     installed headers (plugin/gst/torchinfer/). Inside pipelines/, the
#     apps (qa/, server/) never include each other, the shared app
#     libraries (app/, eval/, evidence/, lineio/, parts/) include no app, and a core/
#     folder, eval/ or lineio/ has no GStreamer (no <gst/...>, no plugin/ header). One
#     include prefix names one folder: no folder of src/ is also one of
#     pipelines/ (docs/architecture.md, "The house").
#  2. no include cycle between the folders of src/ (model -> batching ->
#     model would make the two one library in all but name).
#  3. no function longer than 60 lines in src/, plugin/ or pipelines/
#     (universal-ctags gives each definition's first and last line).
#  4. no source file longer than 600 lines there (split it by concern).
#  5. ROI metas are read through the helper API (torchinfer-helpers.h:
#     gst_torch::foreach_roi/foreach_detection, gst_torch_roi_get_object_id),
#     not by a hand-written meta loop or object_id param lookup.
# What breaks a rule today is listed in scripts/house/*.txt with its size;
# a listed item may shrink but not grow, and a mended one must leave the
# list, so the lists only get shorter.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
lists=scripts/house
max_lines=60
max_file_lines=600
failures=0
fail() { echo "house-rules: $*"; failures=$((failures + 1)); }

# The file an include names, as the compiler would find it: next to the
# includer first, then under the includer's own layer, then src/, plugin/.
resolve() {
  local from=$1 name=$2 layer=${1%%/*}
  local d
  for d in "$(dirname "$from")" "$layer" "$(dirname "$from")/.." src plugin; do
    [ -f "$d/$name" ] && { realpath --relative-to=. "$d/$name"; return; }
  done
}

sources() {
  { git ls-files -- "$@" 2>/dev/null || find "$@" -type f; } | grep -E '\.(c|cc|cpp|h|hpp)$'
}

# "from_file -> to_file" for every quoted include of the three layers.
include_edges() {
  local f name target
  for f in $(sources src plugin pipelines); do
    while IFS= read -r name; do
      target=$(resolve "$f" "$name")
      [ -n "$target" ] && echo "$f -> $target"
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  done
}

edges=$(include_edges)

check_layers() {
  local bad
  bad=$(echo "$edges" | awk '
    $1 ~ /^src\// && $3 !~ /^src\//                               { print; next }
    $1 ~ /^plugin\// && $3 ~ /^pipelines\//                      { print; next }
    $1 ~ /^pipelines\// && $3 ~ /^plugin\// && $3 !~ /^plugin\/gst\/torchinfer\// { print }')
  bad+=$(echo "$edges" | awk '
    $1 ~ /^pipelines\/qa\// && $3 ~ /^pipelines\/server\//                   { print "\n" $0; next }
    $1 ~ /^pipelines\/server\// && $3 ~ /^pipelines\/qa\//                   { print "\n" $0; next }
    $1 ~ /^pipelines\/(app|eval|evidence|lineio|parts)\// && $3 ~ /^pipelines\/(qa|server)\// { print "\n" $0; next }
    $1 ~ /^pipelines\/([a-z_]+\/core|eval|lineio)\// && $3 ~ /^plugin\//             { print "\n" $0 }')
  bad+=$(for f in $(sources pipelines/*/core pipelines/eval pipelines/lineio); do
    grep -l '^[[:space:]]*#[[:space:]]*include[[:space:]]*<gst/' "$f" | sed 's/$/ -> <gst\/...>/; s/^/\n/'
  done)
  bad+=$(comm -12 <(cd src && ls -d */ | sort) <(cd pipelines && ls -d */ | sort) |
    sed 's|/$||; s|.*|\nsrc/& and pipelines/& (one include prefix, two folders)|')
  compare_list "$(echo -e "$bad" | sed '/^$/d')" "$lists/include-exceptions.txt" \
    "an include that points up, across apps, or into a private header"
}

# Folder-level graph of src/: "model batching" for src/model/* -> src/batching/*.
check_cycles() {
  local pairs cycles
  pairs=$(echo "$edges" | awk '$1 ~ /^src\// && $3 ~ /^src\// {
      split($1, a, "/"); split($3, b, "/"); if (a[2] != b[2]) print a[2], b[2] }' | sort -u)
  cycles=$(echo "$pairs" | awk 'NF { e[$1" "$2] = 1 } END {
      for (k in e) { split(k, p, " "); if ((p[2]" "p[1]) in e && p[1] < p[2]) print "src/" p[1] " <-> src/" p[2] } }' | sort)
  compare_list "$cycles" "$lists/cycle-exceptions.txt" "an include cycle between folders of src/"
}

check_functions() {
  local long
  long=$(sources src plugin pipelines | xargs ctags --c-kinds=f --c++-kinds=f --fields=+ne -o - 2>/dev/null |
    awk -F'\t' -v max="$max_lines" '{
      line = ""; end = ""
      for (i = 4; i <= NF; i++) {
        if ($i ~ /^line:/) line = substr($i, 6)
        if ($i ~ /^end:/) end = substr($i, 5)
      }
      if (line != "" && end != "" && end - line + 1 > max) print $2 ":" $1, end - line + 1 }' | sort -u)
  compare_sized "$long" "$lists/long-functions.txt"
}

check_files() {
  local long
  long=$(sources src plugin pipelines | xargs wc -l | awk -v max="$max_file_lines" '
    $2 != "total" && $1 > max { print $2, $1 }' | sort)
  compare_sized "$long" "$lists/long-files.txt" "$max_file_lines"
}

# "file:line" of each hand-written ROI meta loop or torchtrack id lookup
# (the call and its argument may be split over two lines).
check_roi_readers() {
  local bad
  bad=$(sources plugin pipelines | grep -v '^plugin/torchinfer-helpers\.cpp$' | xargs awk '
    FNR == 1 { prev = "" }
    { two = prev $0; prev = $0 }
    two ~ /gst_buffer_iterate_meta/ && $0 ~ /GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE/ { print FILENAME ":" FNR; next }
    two ~ /region_of_interest_meta_get_param/ && $0 ~ /OBJECT_ID_STRUCTURE_NAME|"object_id"/ { print FILENAME ":" FNR }')
  [ -z "$bad" ] || fail "a hand-written ROI reader (use torchinfer-helpers.h):" $bad
}

# Items that break a rule must all be listed; listed ones must still break it.
compare_list() {
  local found=$1 list=$2 what=$3 item
  local known
  known=$(grep -v -e '^#' -e '^$' "$list" 2>/dev/null)
  while IFS= read -r item; do
    [ -z "$item" ] && continue
    grep -qxF -- "$item" <<<"$known" || fail "$what: $item"
  done <<<"$found"
  while IFS= read -r item; do
    [ -z "$item" ] && continue
    grep -qxF -- "$item" <<<"$found" || fail "mended, remove it from $list: $item"
  done <<<"$known"
}

# "file:function lines": a listed function may shrink, not grow past its entry.
compare_sized() {
  local found=$1 list=$2 limit=${3:-$max_lines} name size allowed
  while read -r name size; do
    [ -z "$name" ] && continue
    allowed=$(awk -v n="$name" '$1 == n { print $2 }' "$list" 2>/dev/null)
    if [ -z "$allowed" ]; then
      fail "$name is $size lines (at most $limit): split it by concern"
    elif [ "$size" -gt "$allowed" ]; then
      fail "$name grew to $size lines (listed at $allowed; at most $limit for new code)"
    fi
  done <<<"$found"
  while read -r name size; do
    [ -z "$name" ] || [[ "$name" == \#* ]] && continue
    awk -v n="$name" '$1 == n { f = 1 } END { exit !f }' <<<"$found" ||
      fail "mended, remove it from $list: $name"
  done <"$list"
}

check_layers
check_cycles
check_functions
check_files
check_roi_readers
if [ "$failures" -gt 0 ]; then
  echo "house-rules: $failures problem(s); the rules are in scripts/check_house.sh"
  exit 1
fi
echo "house-rules: includes point down, no cycle in src/, functions within $max_lines lines," \
  "files within $max_file_lines" \
  "(listed exceptions: $(grep -cv -e '^#' -e '^$' "$lists"/*.txt | awk -F: '{ s += $2 } END { print s }'))"
