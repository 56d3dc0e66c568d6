"""`python -m bench`: see bench/__init__.py."""
import sys

from bench.registry import main

status = main()
if "bpy" in sys.modules:
    # Leave as `python -m skin_collide` does once the work is printed: the pip bpy 4.5
    # hangs, and 4.2 can crash, in the interpreter's exit (docs/versions.md).
    from skin_collide.cli.errors import exit_process

    exit_process(status)
sys.exit(status)
