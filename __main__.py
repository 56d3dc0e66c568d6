import os
import sys

from .cli import main

status = main()
if "bpy" in sys.modules:
    # The pip bpy 4.5 LTS hangs for ever in its static destructors at process exit (a
    # delayed-file-close thread's condition variable destroyed while the thread waits on
    # it). The command's work is done and its files are written (fsync'd), so leave without
    # Blender's exit handlers, on every version alike.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
sys.exit(status)
