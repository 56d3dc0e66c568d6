#!/bin/sh
# Runs `python -m skin_collide ARGS` in a Blender binary instead of a Python with the bpy
# module: give this script as the farm's interpreter (the OpenJD template's Python, the
# Flamenco job type's python, farm-commands --python); it is called as
#   blender_python.sh -m skin_collide ARGS
# and runs
#   $BLENDER --background --factory-startup --python-exit-code 2 --python-expr BOOT -- ARGS
# BOOT sets sys.argv to skin_collide's arguments (those after "--") and runs the package's
# __main__, whose exit status becomes Blender's. BLENDER is the Blender executable (default
# `blender` on PATH). skin_collide must be importable by Blender's own Python: install it
# there (`/path/to/blender/4.5/python/bin/python3.11 -m pip install /path/to/skin_collide`),
# or put a folder holding the package, as a folder named skin_collide, on PYTHONPATH.
set -eu
if [ "$#" -lt 2 ] || [ "$1" != "-m" ] || [ "$2" != "skin_collide" ]; then
  echo "blender_python.sh: expected '-m skin_collide ARGS', got '$*'" >&2
  exit 2
fi
shift 2
exec "${BLENDER:-blender}" --background --factory-startup --python-exit-code 2 --python-expr \
  'import runpy, sys; sys.argv = ["skin_collide"] + sys.argv[sys.argv.index("--") + 1:]; runpy.run_module("skin_collide", run_name="__main__", alter_sys=True)' \
  -- "$@"
