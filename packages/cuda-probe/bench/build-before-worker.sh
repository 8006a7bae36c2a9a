#!/bin/sh
# Builds the probe child (src/_worker.ts) of an earlier commit into bench-results/before-<commit>/worker.js,
# for `npm run bench -w @soup/cuda-probe -- --compare --before-worker <that file>`: the old child and
# the new one, alternately, in one run. Usage: bench/build-before-worker.sh [commit]  (default: main)
set -eu
commit="${1:-main}"
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
sha="$(git -C "$repo" rev-parse --short "$commit")"
out="$here/bench-results/before-$sha"
rm -rf "$out" && mkdir -p "$out/src"
git -C "$repo" archive "$sha" packages/cuda-probe/src | tar -x -C "$out/src" --strip-components=3
"$repo/node_modules/.bin/esbuild" "$out/src/_worker.ts" --bundle --platform=node --format=esm --target=node20 \
  --external:onnxruntime-node --outfile="$out/worker.js" --log-level=warning
rm -rf "$out/src"
echo "$out/worker.js"
