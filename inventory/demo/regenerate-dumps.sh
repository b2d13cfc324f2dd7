#!/bin/sh
# Regenerates, for every node tree under nodes/<host>/etc/containerd/, what the installed containerd
# prints for it — through bin/containerd-at-etc, so the tree sits at /etc/containerd and the dump names
# real node paths:
#
#   nodes/<host>/config-dump.toml       stdout of `containerd --config /etc/containerd/config.toml config dump`
#   nodes/<host>/config-dump.stderr     its stderr
#   nodes/<host>/config-dump.rc         its exit status
#   nodes/<host>/containerd-version.txt `containerd --version`
#
# Needs root (private mount namespace + bind mount). CONTAINERD overrides the binary (default: PATH).
# Never edit the outputs by hand; rerun this script instead.
#
# containerd 1.x rebuilds the dump's `imports` list from a Go map, so its order changes from run to run
# (services/server/config/config.go, LoadConfig @v1.6.20). When a new dump differs from the committed
# one only in that order, the committed file — an equally real output — is kept, so regenerating does
# not produce a diff of pure noise.

set -eu

demo_dir=$(cd -- "$(dirname -- "$0")" && pwd -P)
wrapper=$demo_dir/bin/containerd-at-etc

if [ "$(id -u)" != 0 ]; then
    echo "regenerate-dumps.sh: must run as root (containerd-at-etc needs a private mount namespace)" >&2
    exit 2
fi

# The dump with its `imports` entries sorted, everything else as printed.
dump_ignoring_imports_order() {
    sed -n 's/^imports = \[\(.*\)\]$/\1/p' "$1" | tr ',' '\n' | sed 's/^ *//' | LC_ALL=C sort
    grep -v '^imports = ' "$1" || true
}

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT INT TERM

found=0
for node_dir in "$demo_dir"/nodes/*/; do
    node_dir=${node_dir%/}
    config=$node_dir/etc/containerd/config.toml
    [ -f "$config" ] || continue
    found=$((found + 1))
    host=$(basename -- "$node_dir")

    "$wrapper" --version >"$work/version" 2>&1
    rc=0
    "$wrapper" --config "$config" config dump >"$work/dump" 2>"$work/stderr" || rc=$?
    echo "$rc" >"$work/rc"

    if [ -f "$node_dir/config-dump.toml" ] \
        && cmp -s "$work/stderr" "$node_dir/config-dump.stderr" \
        && cmp -s "$work/rc" "$node_dir/config-dump.rc" \
        && ! cmp -s "$work/dump" "$node_dir/config-dump.toml" \
        && dump_ignoring_imports_order "$work/dump" >"$work/new.norm" \
        && dump_ignoring_imports_order "$node_dir/config-dump.toml" >"$work/old.norm" \
        && cmp -s "$work/new.norm" "$work/old.norm"; then
        cp -- "$node_dir/config-dump.toml" "$work/dump"
    fi

    for name in config-dump.toml config-dump.stderr config-dump.rc; do
        case $name in
            config-dump.toml) new=$work/dump ;;
            config-dump.stderr) new=$work/stderr ;;
            config-dump.rc) new=$work/rc ;;
        esac
        cp -- "$new" "$node_dir/$name"
    done
    cp -- "$work/version" "$node_dir/containerd-version.txt"
    printf '%-12s rc=%s  %s\n' "$host" "$rc" "$(cat -- "$node_dir/containerd-version.txt")"
done

if [ "$found" = 0 ]; then
    echo "regenerate-dumps.sh: no node trees under $demo_dir/nodes" >&2
    exit 1
fi
