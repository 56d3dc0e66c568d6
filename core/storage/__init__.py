"""Prepared collision data as bytes, so that a build survives saving the .blend: the
compact binary container of named arrays (`blob`) and the prepared objects to and from it
(`persist`). Pure numpy, no pickle; where the bytes live in Blender is `addon.storage`'s
business."""
