"""Every piece of runtime state of the add-on, in one place (nothing here is saved with the
.blend: that lives in PropertyGroups and Texts). Handlers, the live session and the
overlay read and write these attributes; `reset` puts them back as after registration
(the tests call it between cases; unregistering calls it too).

Imports nothing from the add-on, so that every module below the handlers (extraction,
rest contacts) can mark its own scene writes `quiet` without an import cycle.
"""
from __future__ import annotations

from contextlib import contextmanager


class State:
    """The add-on's runtime state (one instance, `STATE`)."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        # -- live updates (addon/handlers.py) --
        self.busy = False           # a live query is running
        self.quiet = 0              # > 0 while the project itself writes to the scene
        self.pending = ""           # a scene whose pose changed while we could not follow
        self.last_end = 0.0         # perf_counter() at the end of the last live query
        self.last_seconds = 0.0     # its duration
        # -- the live session (addon/session.py) --
        self.live: dict = {}        # scene name -> its last `session.LiveResult`
        # (scene, Text, object pointer) -> the rest positions verified for a build, and the
        # meshes whose data changed since (`session.mark_mesh_changed`).
        self.verified: dict = {}
        self.changed_meshes: set[int] = set()
        # The panel's ignore zones per (mesh data, object, groups, size), read once: a
        # weight change marks the mesh changed, which makes them read again (addon/zones.py).
        self.zone_masks: dict = {}
        # scene name -> the contacts memo of its pose updates (`Scanner.contacts_memo`).
        self.contacts_memo: dict = {}
        # scene name -> its `core.scan.FrameMemo`: answers of frames seen before, for
        # playback looping and scrubbing back (`session.query` with carry).
        self.frame_memos: dict = {}
        # scene name -> what its live pose updates carry between frames (kept frames and
        # answers of the carried pairs, `core.scan.carry.Carried`).
        self.carried: dict = {}
        # -- built data and rest contacts (addon/storage/, addon/rest_contacts.py) --
        # (Text full name, object pointer) -> (build id, the decoded `CollisionObject` named
        # after that object): a link and an override of one asset may share a Text.
        self.objects: dict = {}
        self.missing_data: set[str] = set()   # meshes to rebuild when first needed
        # Text full name -> (build id, the object decoded from the bytes it holds): what
        # copies of one character sharing them decode once (`storage.shared`).
        self.shared_bases: dict = {}
        # (Text full name, object pointer) -> (build id, the Future of its decoding in the
        # background after a file was opened: `storage.prefetch`).
        self.prefetched: dict = {}
        self.rest_contacts_version = 0  # bumped when any character's rest contacts change
        self.rest_contacts_index: dict = {}   # scene name -> (key, its ContactIndex)
        # -- collection instances (addon/drawn.py) --
        # (instancer pointer, persistent id) -> the instance's world matrix, as the last
        # depsgraph read drew it (`drawn.refresh`: once per evaluated frame).
        self.instance_matrices: dict = {}
        # (instance name, id of its source's loaded data) -> the instance's
        # `CollisionObject` (`session.load_objects`).
        self.instance_objects: dict = {}
        # (scene, participants' ids, builds, self) -> the rest contacts involving the
        # collection instances among them (`session._with_instance_rest_contacts`).
        self.instance_rest_contacts: dict = {}
        # -- the overlay (addon/overlay.py) --
        self.drawn: dict = {}       # scene name -> the arrays drawn for its last result
        self.build_count = 0        # how many times they were (re)built (tests read it)
        self.draw_errors: dict[str, str] = {}   # callback -> the last error it printed


STATE = State()


@contextmanager
def quiet():
    """Around the project's own writes (rest-pose switches, bakes): depsgraph updates they
    cause are not pose edits and must not start a live query."""
    STATE.quiet += 1
    try:
        yield
    finally:
        STATE.quiet -= 1
