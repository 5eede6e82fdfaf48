# The CI cache: what a run installs or builds, kept outside the clone so the next run on the
# same machine starts warm (sourced by .ci/run; a cache, not an install step: with an empty one
# every run still passes, only slower).
#
# It lives in ${TOOLPORT_CI_CACHE:-$HOME/.cache/toolport-ci}, one run at a time (flock on its
# .lock). Each entry is a folder named for what it depends on, NAME-KEY (KEY: the first 16 hex
# digits of a sha256 of its inputs), and the clone reaches it through a symbolic link at the path
# the scripts always used (target/, .ci/venv, .ci/node_modules …), so nothing else needs to know
# where it is. When an entry's inputs change, the run makes a new, empty NAME-KEY and deletes
# the other NAME-* folders: a changed lock file or toolchain wipes what was built from the old
# one. Programs that write their own path into what they build (venvs' scripts, the cross
# toolchain's rustc wrapper) are given the entry's real path, never the link's, so an entry
# made from one clone works from the next.
#
# Over TOOLPORT_CI_CACHE_CAP_MB (default 12288: CI's disk has about 15 GB free for a run,
# stop 38) the target/ entries are deleted at the start of a run (what grows, and what cargo
# remakes from the rest), and the whole cache if that is not enough. `.ci/run` prints each entry's state
# (hit: the folder was there; carried: its previous version renamed,
# cache_carry; miss: made empty now) and the cache's size at the end.

CACHE="${TOOLPORT_CI_CACHE:-$HOME/.cache/toolport-ci}"
CACHE_CAP_MB="${TOOLPORT_CI_CACHE_CAP_MB:-12288}"
CACHE_STATES=()
# The entries cache_carry renamed from their previous key.
CACHE_CARRIED=()
# What each entry that may be carried was made for (cache_carry's BASE), written into it.
declare -A CACHE_CARRY_BASE=()

# cache_open: create and lock the cache (waiting up to 90 minutes for another run), and wipe it
# when it has grown past the cap.
cache_open() {
  mkdir -p "$CACHE"
  CACHE="$(cd "$CACHE" && pwd -P)"
  exec 9>"$CACHE/.lock"
  if ! flock -n 9; then
    echo "waiting for another run's lock on the CI cache $CACHE"
    flock -w 5400 9 || die "the CI cache $CACHE stayed locked for 90 minutes"
  fi
  local size
  size="$(cache_size_mb)"
  if ((size > CACHE_CAP_MB)); then
    # target/ first: it is what grows (cache_carry keeps the crates a lock change left behind)
    # and what cargo rebuilds from the rest; the toolchains, node and Python installs stay.
    echo "the CI cache is ${size} MB, over its cap of ${CACHE_CAP_MB} MB: deleting its target/ entries"
    find "$CACHE" -mindepth 1 -maxdepth 1 -name 'target-*' -exec rm -rf {} +
    CACHE_STATES+=("(target/ entries deleted at the start: ${size} MB > ${CACHE_CAP_MB} MB)")
    size="$(cache_size_mb)"
  fi
  if ((size > CACHE_CAP_MB)); then
    echo "the CI cache is still ${size} MB, over its cap of ${CACHE_CAP_MB} MB: wiping it"
    find "$CACHE" -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf {} +
    CACHE_STATES+=("(wiped at the start: ${size} MB > ${CACHE_CAP_MB} MB)")
  fi
}

cache_size_mb() {
  du -sm "$CACHE" 2>/dev/null | cut -f1
}

# cache_key INPUT...: the key of these inputs (file contents, or the words given for a word
# that is not a file).
cache_key() {
  local input
  for input in "$@"; do
    if [[ -f "$input" ]]; then cat "$input"; else printf '%s\n' "$input"; fi
  done | sha256sum | cut -c1-16
}

# cache_link NAME KEY TREE_PATH [SUB]: make TREE_PATH (in the clone) a link to the entry
# NAME-KEY (or to its subfolder SUB), creating the entry empty when it is not there (a miss) and
# deleting NAME's entries of other keys.
# A real folder at TREE_PATH (a developer's tree from before the cache) is replaced, except
# target/, which is left as it is (and reported) since it may hold someone's build.
cache_link() {
  local name="$1" key="$2" tree="$3" sub="${4:-}" entry old state
  entry="$CACHE/$name-$key"
  for old in "$CACHE/$name"-????????????????; do
    [[ -e "$old" && "$old" != "$entry" ]] && rm -rf "$old"
  done
  if [[ -e "$tree" && ! -L "$tree" ]]; then
    if [[ "$name" == target ]]; then
      CACHE_STATES+=("$(printf '%-18s %s' "$name" "not used: ${tree#"$ROOT"/} is a folder of this clone's own")")
      return 0
    fi
    rm -rf "$tree"
  fi
  if [[ " ${CACHE_CARRIED[*]} " == *" $name "* ]]; then
    state=carried
  elif [[ -d "$entry" ]]; then state=hit; else state=miss; mkdir -p "$entry"; fi
  if [[ -n "${CACHE_CARRY_BASE[$name]:-}" ]]; then
    printf '%s\n' "${CACHE_CARRY_BASE[$name]}" >"$entry/.carry-base"
  fi
  mkdir -p "$(dirname "$tree")"
  ln -sfn "$entry${sub:+/$sub}" "$tree"
  CACHE_STATES+=("$(printf '%-18s %-4s %s' "$name" "$state" "${tree#"$ROOT"/} -> $entry")")
}

# cache_carry NAME KEY BASE: called before cache_link for an entry that can start from its
# previous version. When NAME-KEY is not there and the entry cache_link would delete was made
# for the same BASE (the inputs whose change makes all of it useless: for target/, the
# toolchains; the lock file is not among them), that entry is renamed to NAME-KEY instead of
# being deleted, so a changed Cargo.lock rebuilds only the crates it changed instead of
# everything (about 25 minutes of a cold run on CI's two cores). What the old entry holds for
# crates no longer locked stays until the size cap wipes the cache; cargo never reads it.
cache_carry() {
  local name="$1" key="$2" base="$3" entry old
  entry="$CACHE/$name-$key"
  if [[ ! -e "$entry" ]]; then
    for old in "$CACHE/$name"-????????????????; do
      if [[ -d "$old" && "$(cat "$old/.carry-base" 2>/dev/null)" == "$base" ]]; then
        mv "$old" "$entry"
        CACHE_CARRIED+=("$name")
        echo "CI cache: $name carried over from ${old##*/} (same toolchains; only its lock file changed)"
        break
      fi
    done
  fi
  CACHE_CARRY_BASE["$name"]="$base"
}

# cache_report: each entry's state and the cache's size (printed at the end of a run).
cache_report() {
  printf '\n==> CI cache %s (%s MB; cap %s MB)\n' "$CACHE" "$(cache_size_mb)" "$CACHE_CAP_MB"
  printf '  %s\n' "${CACHE_STATES[@]}"
}
