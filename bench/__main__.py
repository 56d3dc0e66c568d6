"""`python -m bench`: see bench/__init__.py."""
import sys

from bench.registry import main

sys.exit(main())
