"""The benchmarks, one package with one entry point (run from the repository root):

    bash dev python -m bench --list                      # the scenarios, with their help
    bash dev python -m bench SCENARIO [options]          # one scenario
    bash dev python -m bench SCENARIO --smoke            # a few frames of a small generated rig
    bash dev python -m bench SCENARIO --against REV      # A (REV) against B (this checkout)

Layout: `registry` (the scenarios by name), `scenes` (building and loading the scenes),
`timing` (timers, repeats, medians, ratios, Blender's rebuild bar, the printed rows),
`ab` (another revision of skin_collide imported under another name), `scenarios/` (one
module per scenario, registering itself). Nothing here asserts on time.
"""
