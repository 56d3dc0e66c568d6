"""The shape of one mesh's AABB self tree (`SelfTree`): what `tree.build` makes once at
rest and every query reads. A module of its own so that the box code (`boxes`) and the
build (`tree`) both name it without importing each other.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np


@dataclass
class SelfTree:
    """Topology and rest-pose structure of one mesh's self-collision tree.

    Attributes:
        height: H, the leaf level. n_slots: S = 2**H.
        tri_slot: (T,) intp leaf slot of each triangle.
        slot_tri: (S,) intp triangle of each slot, -1 for an empty slot.
        seeds: per level l = 0..H, (a, b) pair of (n_l,) intp node indices on level l with
            a < b: the non-touching, non-empty node pairs whose parents touch or coincide.
            They are box-tested every frame.
        rest_keys: (T, 3) int64 welded vertex keys of the rest triangles.
        adj_ptr, adj_idx: CSR (T + 1,), (2P,) intp: the triangles rest-adjacent to each
            triangle (sharing a rest key), used when a frame's keys differ from the rest.
        weld_ids: (V,) int64 the welded vertex ids the tree was built with.
        seed_cols: per level, (fa, fb) (n_l,) intp flat indices into the level's (n, 8)
            box rows: the coordinate that separated each seed most at rest (a first,
            cheap test; the full test decides).
        build_seconds: time the build took.
        seed_index: per level, the seeds of each node (`seeds_of_nodes`), made on first
            use by a carried query (a pose edit) and kept; None before.
        seed_hint: the seeds of every level in one list with, per seed, the coordinate
            that last separated it in a queried frame (`seed_hints`;
            `query._seed_pass` moves a seed's hint to the column that separates it when
            the hinted one did not). A cost choice only, never an answer: any one
            coordinate with ``lo_a > hi_b`` proves the boxes apart. Made from `seed_cols`
            on first use; None before.
        merged_hint: the seeds a whole-frame query tests, with their hints
            (`merged_seed_hints`): the seeds above `FIRST_LEVEL` moved down to it, and
            where a node is a seed with both children of a node of the level above, the
            two replaced by one *half seed* of the node and that parent. Made from
            `seeds` on first use; None before.
        hint_lock: held while a query reads and moves the hints, so that a seed's two
            flat indices are always read as the pair they were written as.
    """

    height: int
    n_slots: int
    tri_slot: np.ndarray
    slot_tri: np.ndarray
    seeds: list[tuple[np.ndarray, np.ndarray]]
    rest_keys: np.ndarray
    adj_ptr: np.ndarray
    adj_idx: np.ndarray
    weld_ids: np.ndarray
    seed_cols: list[tuple[np.ndarray, np.ndarray]] | None = None
    build_seconds: float = 0.0
    seed_index: list | None = field(default=None, repr=False, compare=False)
    seed_hint: tuple | None = field(default=None, repr=False, compare=False)
    merged_hint: tuple | None = field(default=None, repr=False, compare=False)
    hint_lock: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                      compare=False)

    @property
    def n_triangles(self) -> int:
        return int(self.tri_slot.size)

    def __getstate__(self) -> dict:
        # A lock does not pickle; a copy gets its own.
        state = self.__dict__.copy()
        state.pop("hint_lock", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.hint_lock = threading.Lock()
