#!/bin/sh
# Regenerates the viewer's reference pictures (viewer/tests/reference/*_160x120.png) from the
# current renderer: run after a deliberate change to the picture, look at the new images, commit.
# Usage: scripts/update_reference_images.sh [BUILD_DIR]   (default: build)
set -eu
build=${1:-build}
cd "$build"
WEFT_UPDATE_REFERENCES=1 ctest -R 'viewer_pictures_reference' --output-on-failure
