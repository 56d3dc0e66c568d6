"""Open a .blend or import a glTF into an empty scene (headless and in the UI)."""
from __future__ import annotations

import os


class FileError(ValueError):
    """The file cannot be loaded; the message says why."""


SUPPORTED = (".blend", ".glb", ".gltf")


def load_file(path: str, trusted: bool = False) -> None:
    """Replace the current scene with the contents of `path`.

    A .blend is opened as it is; a .glb/.gltf is imported into an empty scene with
    Blender's own importer (bone shapes off, so no extra objects appear). `trusted`: run
    the .blend's registered text blocks, as Blender does on load with auto-run on (its
    ``-y``); otherwise none runs and Python drivers fail (`addon.trust`).
    """
    import bpy

    if not os.path.isfile(path):
        raise FileError(f"no such file: {path}")
    ext = os.path.splitext(path)[1].lower()
    if ext not in SUPPORTED:
        raise FileError(f"unsupported file type '{ext}' (expected one of {', '.join(SUPPORTED)})")
    try:
        if ext == ".blend":
            bpy.ops.wm.open_mainfile(filepath=path, load_ui=False, use_scripts=trusted)
        else:
            bpy.ops.wm.read_homefile(use_empty=True)
            bpy.ops.import_scene.gltf(filepath=path, disable_bone_shape=True)
    except RuntimeError as exc:
        raise FileError(f"Blender could not read {path}: {str(exc).strip()}") from None
