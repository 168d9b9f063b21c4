#!/usr/bin/env bash
# The full-length drape checks of the bundled cloth scenes (tests/engine/test_scene_drape.c with
# WEFT_TEST_SLOW=1): scenes/cloth_drape.json and scenes/showcase.json run as written (their frames,
# substeps and particles) and their settled cloths checked against the ball and the table. CI runs
# only the fast variants. On one CPU core: ~10 s for cloth_drape, ~100 s for showcase; on a GPU,
# seconds.
# Usage: scripts/validation/scene_drape.sh [build dir (default build)] [cpu|cuda (default cpu)]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
device=${2:-cpu}
cmake --build "$build" --target test_scene_drape >/dev/null
WEFT_TEST_SLOW=1 TH_WATCHDOG_S=0 "$build/tests/engine/test_scene_drape" --device "$device"
