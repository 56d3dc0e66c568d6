"""Geometry that must agree with Blender's own (pure numpy)."""
