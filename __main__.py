import sys

from .cli import exit_process, main

status = main()
if "bpy" in sys.modules:
    exit_process(status)    # bpy 4.5 LTS would hang at exit (see exit_process)
sys.exit(status)
