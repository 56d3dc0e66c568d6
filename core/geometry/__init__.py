"""Geometry that must agree with Blender's own, and the continuous collision kernel
(`ccd.py`: vertex-face and edge-edge contact under linear motion; `swept.py`: swept bounds
and the mesh-level query built on it). Pure numpy; imports nothing else of the package."""
