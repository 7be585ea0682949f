#!/bin/sh
# bundle.sh: the shell's build step, run by trunk's post_build hook (trunk.toml) from the
# repository root. esbuild (pinned in tests/web/package.json, installed by `cargo xtask install`)
# bundles www/js into two ES modules in the build's staging dir, which trunk then moves to dist/:
#   js/main.js    the page (index.html's <script type="module" src="js/main.js">)
#   js/worker.js  the Web Worker (bridge.js starts `new URL('./worker.js', import.meta.url)`)
# Neither imports anything at run time but the wasm-bindgen glue, which the worker imports by
# the URL the page reads from trunk's preload links (or MEMVIZ_ASSETS in a `memviz html` report).
# Not minified: the bundles are ~130 KB beside a wasm of several MB, and unminified code keeps
# the names and lines of stack traces and of the page's errors readable (esbuild marks each
# module's start with a `// www/js/…` comment). No source map: nothing to serve or inline beside.
set -eu
esbuild=tests/web/node_modules/.bin/esbuild
if [ ! -x "$esbuild" ]; then
  echo "memviz: $esbuild is missing: run \`cargo xtask install\` (it installs tests/web's pinned npm packages), then build again" >&2
  exit 1
fi
"$esbuild" www/js/main.js www/js/worker.js --bundle --format=esm --target=es2022 --charset=utf8 \
  --log-level=warning --outdir="${TRUNK_STAGING_DIR:?run by trunk's post_build hook (trunk.toml)}/js"
