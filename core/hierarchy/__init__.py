"""Hierarchies of bounding volumes and their generic traversal: the primitives that a
method's volumes use and that the query stages share, below both (issue 56: methods
import this room, never `core/query/`). `traversal.py`: the simultaneous traversal of two
`Volumes` (arrays of node pairs, lazy volumes, multi-triangle leaves); `sweep.py`: the
candidate triangle pairs of overlapping multi-triangle leaves by per-triangle boxes. The
frame's query stages (object broad phase, the stacked crowd traversal, near pairs) are in
`core/query/`."""
