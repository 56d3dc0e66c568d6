"""Render the README's first picture: MakeHuman's benchmark pose (frame 25, self-collision),
drawn headless by the snapshot code (`addon/snapshot.py`: the real viewport in solid shading,
the overlay's colliding triangles and intersection curves), as three views side by side:
the whole figure, with the contact sites numbered, then each site zoomed on its
intersection curve. Matplotlib lays them out (bench/requirements.txt).

    bash dev python -m pip install -r bench/requirements.txt     # once: matplotlib
    bash dev python -m bench.pictures.render_readme_contacts [--file ../shared/assets/makehuman_default.blend]
        [--frame 25] [--sites 2] [--zoom 0.15 0.25] [--out docs/contacts_makehuman_f25.png]

A site is a contact (`core.contacts.groups.Contact`) with a crossing curve, largest first,
skipping contacts within a fifth of the body's size of a site already taken. Prints each
site and the picture's size in bytes.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from bench import scenes

HERE = os.path.join(scenes.ROOT, "bench")
SHARED = scenes.SHARED


def pick_sites(contacts: list, body_size: float, n: int) -> list:
    """The `n` largest crossing contacts, each farther than body_size / 5 from those taken."""
    out = []
    for c in sorted((c for c in contacts if c.segments.size and c.kind == "crossing"),
                    key=lambda c: -c.length):
        if all(np.linalg.norm(c.center - s.center) > body_size / 5 for s in out):
            out.append(c)
        if len(out) == n:
            break
    return out


def project(points: np.ndarray, view: np.ndarray, proj: np.ndarray, w: int, h: int):
    """(K, 3) world points -> (K, 2) pixel coordinates, origin at the bottom left."""
    hom = np.c_[points, np.ones(len(points))] @ (proj @ view).T
    ndc = hom[:, :2] / hom[:, 3:4]
    return (ndc + 1.0) / 2.0 * np.array([w, h])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default=os.path.join(SHARED, "makehuman_default.blend"))
    ap.add_argument("--frame", type=int, default=25)
    ap.add_argument("--sites", type=int, default=2)
    ap.add_argument("--zoom", type=float, nargs="+", default=[0.15, 0.25],
                    help="per site (the last repeats): its view frames at least a sphere of "
                         "this diameter around its curve, as a share of the body's size "
                         "(default 0.15 0.25)")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs",
                                                  "contacts_makehuman_f25.png"))
    a = ap.parse_args(argv)

    import bpy
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from skin_collide.addon import extract, files, scanner, snapshot

    files.load_file(os.path.abspath(a.file))
    scene = bpy.context.scene
    meshes = extract.skinned_meshes(scene)
    sc = scanner.Scanner(meshes, self_collision=True)
    res = snapshot.scanner_result(sc, scene, a.frame)
    objects = {o.name: o for o in sc.objects}
    every = np.concatenate(res.positions)
    body = float(np.linalg.norm(every.max(0) - every.min(0)))
    sites = pick_sites(res.contacts, body, a.sites)
    if not sites:
        print(f"frame {a.frame}: no crossing contact to frame", file=sys.stderr)
        return 1

    colour = snapshot.DEFAULT_COLOUR
    whole_size, zoom_size = (640, 640), (450, 450)
    view, proj, draw = snapshot.choose_view(scene, res, objects, whole_size, colour, every)
    whole = snapshot.render_view(scene, view, proj, *whole_size, draw=draw)
    # Crop the whole view to the figure (its bounding sphere leaves wide margins).
    fig_xy = project(every, view, proj, *whole_size)
    (x0, y0), (x1, y1) = (np.clip(fig_xy.min(0) - 15, 0, whole_size).astype(int),
                          np.clip(fig_xy.max(0) + 15, 0, whole_size).astype(int))
    panels = [(whole[y0:y1, x0:x1], "whole figure", None)]
    marks = []
    for k, c in enumerate(sites, 1):
        pts = c.segments.reshape(-1, 3)
        marks.append((k, project(pts, view, proj, *whole_size) - [x0, y0]))
        mid = (pts.min(0) + pts.max(0)) / 2       # pad the curve to the zoom's sphere
        zoom = a.zoom[min(k, len(a.zoom)) - 1]
        pad = mid + zoom * body / 2 / np.sqrt(3) * np.array([[1, 1, 1], [-1, -1, -1]])
        px = snapshot.snapshot_result(scene, res, objects, None, zoom_size, colour,
                                      focus=np.r_[pts, pad])
        bones = " × ".join(dict.fromkeys(c.bones))
        panels.append((px, f"{k}: {bones}, {100 * c.length:.0f} cm of crossing curve", k))
        print(f"site {k}: {c.a} {c.bones}, {c.kind}, curve {c.length:.4f} m, "
              f"{c.pairs.shape[0]} pairs, centre {np.round(c.center, 3).tolist()}")

    # Every panel as tall as the zoomed ones.
    widths = [p[0].shape[1] * zoom_size[1] / p[0].shape[0] for p in panels]
    dpi = 100
    fig = plt.figure(figsize=(sum(widths) / dpi, (zoom_size[1] + 60) / dpi), dpi=dpi,
                     facecolor="#1d1d1d")
    grid = fig.add_gridspec(1, len(panels), width_ratios=widths, wspace=0.02,
                            left=0.005, right=0.995, bottom=0.045, top=0.935)
    for i, (px, title, _) in enumerate(panels):
        ax = fig.add_subplot(grid[0, i])
        ax.imshow(np.clip(px[..., :3], 0, 1), origin="lower", interpolation="none")
        ax.set_title(title, color="white", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
        if i == 0:
            for k, xy in marks:
                lo, hi = xy.min(0) - 10, xy.max(0) + 10
                ax.add_patch(plt.Rectangle(lo, *(hi - lo), fill=False, ec="#ffd23f", lw=1.2))
                ax.text(hi[0] + 3, hi[1], str(k), color="#ffd23f", fontsize=11,
                        va="top", weight="bold")
    fig.text(0.5, 0.005, f"frame {a.frame}, self-collision: colliding triangles and "
             "intersection curves in the overlay colour", color="#bbbbbb", fontsize=8,
             ha="center", va="bottom")
    fig.savefig(a.out, dpi=dpi, facecolor=fig.get_facecolor())
    print(f"{res.n_pairs} colliding pairs; wrote {a.out} ({os.path.getsize(a.out)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
