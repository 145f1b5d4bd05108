# tools/README.md's usage lines against the tools' --help: every option a
# tool (or a bbtree-query command) takes appears in the usage block of the
# tool's README section, so that the README leaves out no flag.
set -euo pipefail
README=$(cd "$(dirname "$0")/../../tools" && pwd)/README.md  # before helpers.bash changes directory
source "$(dirname "$0")/helpers.bash" "$@"

# usage_block TOOL: the indented lines right under README's "### TOOL".
usage_block() {
  awk -v heading="### $1" '
    $0 == heading { inside = 1; next }
    inside && /^    / { print; started = 1; next }
    inside && started { exit }
  ' "$README"
}

# options HELP_FILE: the options --help lists, as -x,--long or --long, but
# --help and --version, which every tool has.
options() {
  grep -oE '^ +(-[a-zA-Z],)?--[a-z][a-z-]*' "$1" | tr -d ' ' |
    grep -vxE -e '(-h,)?--help' -e '--version' || true
}

for tool in build query dump verify merge shards; do
  usage_block "bbtree-$tool" >usage
  [[ -s usage ]] || fail "tools/README.md has no usage block for bbtree-$tool"
  "$TOOLS/bbtree-$tool" --help >help
  if [[ $tool == query ]]; then
    for command in get range prefix count first last; do
      "$TOOLS/bbtree-query" x $command --help >>help
    done
  fi
  for option in $(options help); do
    long=${option#*,} short=${option%%,*}
    # A short form (-o OUT) stands for its long one (--output).
    grep -qE -e "(^|[[ |])$long([] |=,]|\$)" usage ||
      { [[ $short != "$option" ]] && grep -qE -e "(^|[[ |])$short([] ]|\$)" usage; } ||
      fail "bbtree-$tool takes $long, which its usage in tools/README.md lacks"
  done
done

# And options whose --help said less than the README: --huge-pages does not
# make the open wait for the copy.
"$TOOLS/bbtree-query" --help >help
grep -q -- '--huge-pages  *Copy the file into huge-page memory in the background' help ||
  fail "bbtree-query --help on --huge-pages: $(grep -- --huge-pages help)"

echo "readme_usage: ok"
