"""What the operators, the frame handler and the overlay share: which meshes take part,
their built data, and the last query's result (kept per scene, in memory)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..core import scan as core_scan
from ..core.aabb_tree import query as _query
from ..core.query import multi
from ..core.scan.carry import Carried
from . import clearance, drawn, extract, motion, rest_pose, scanner, storage, trust
from . import rest_contacts as rest_contacts_store
from .state import STATE


class SessionError(ValueError):
    """A user-facing problem; the message says what to do."""


class DegeneratePose(SessionError):
    """Bones of the pose collapse space (zero scale): the frame is not checked
    (`scanner.DegeneratePose`, as a SessionError for the panel)."""


@dataclass
class LiveResult:
    """The last query of a scene: per object, the colliding triangles, the positions and
    the triangles of the frame they were found at (Blender's split of the deformed quads,
    so that the overlay draws exactly the triangles that collide), the polygon pairs, and
    the sphere wireframes drawn so far at this frame (by object name and tree level)."""

    frame: int
    ms: float
    names: list[str]
    positions: list[np.ndarray]
    hit_triangles: list[np.ndarray]
    polygon_pairs: list[tuple[str, int, str, int]]
    triangles: list[np.ndarray] = field(default_factory=list)
    spheres: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    error: str = ""
    total_pairs: int = -1
    warning: str = ""
    not_checked: bool = False
    modes: list[str] = field(default_factory=list)
    poses: list = field(default_factory=list)
    #: True when counting stopped past `MAX_PAIRS` (a dense frame): `n_pairs` is then a
    #: lower bound ("more than MAX_PAIRS").
    more_than: bool = False
    #: True (with `more_than`) when the frame was dense: more candidate triangle pairs
    #: than the live budgets (`core.aabb_tree.query.CANDIDATE_BUDGET`,
    #: `core.query.multi.live_budget`), so only a
    #: prefix of them was tested and `n_pairs` (the pairs found there, possibly fewer
    #: than `MAX_PAIRS`) is a lower bound.
    dense: bool = False
    #: the frame's contacts (`core.contacts.groups.Contact`), partitioning its pairs
    contacts: list = field(default_factory=list)
    #: with the panel's Clearance on: the clearance D (scene units; None: off), the
    #: frame's near contacts (`core.contacts.clearance.NearContact`, after the filters), per
    #: object the (N,) int64 triangles drawn in the near colour (`addon.clearance`), and
    #: the panel's hint when the clearance cannot apply (fewer than two characters)
    clearance: float | None = None
    near_contacts: list = field(default_factory=list)
    near_triangles: list = field(default_factory=list)
    clearance_note: str = ""
    #: Scan Frame Range with Between Frames: the frame's `core.scan.pipeline.FrameOutcome`
    #: (the first sample of its step); None otherwise
    outcome: object = None

    @property
    def n_pairs(self) -> int:
        """The number of colliding polygon pairs (`polygon_pairs` may be capped): exact,
        or a lower bound when `more_than`."""
        return self.total_pairs if self.total_pairs >= 0 else len(self.polygon_pairs)

    @property
    def count_text(self) -> str:
        """The count for people: "12", "more than 20000" (capped), "at least 812"
        (a dense frame, partly checked)."""
        if self.dense:
            return f"at least {self.n_pairs}"
        if self.more_than:
            return f"more than {MAX_PAIRS}"
        return str(self.n_pairs)




def live_result(scene) -> LiveResult | None:
    return STATE.live.get(scene.name_full)


def chosen_meshes(scene, context=None) -> list:
    """Every mesh the scene settings choose (the selected objects, or the chosen
    collection's), characters or not, and the Empties among them that instance a
    collection (their meshes are drawn as `addon.drawn.Instance`s). Raises SessionError
    when there is none."""
    s = scene.skin_collide
    if s.source == "COLLECTION":
        if s.collection is None:
            raise SessionError("choose a collection of characters, or use Selected")
        candidates = list(s.collection.all_objects)
    else:
        candidates = list(context.selected_objects) if context is not None else \
            [ob for ob in scene.objects if ob.select_get()]
    meshes = [ob for ob in candidates if ob.type == "MESH"
              or (ob.instance_type == "COLLECTION" and ob.instance_collection is not None)]
    if not meshes:
        raise SessionError("no mesh selected: select the skinned characters to check")
    return meshes


def selection(scene, context=None) -> motion.Selection:
    """The characters that take part, per the scene settings (the selected objects, or the
    chosen collection's, and the meshes their collection instances draw): what Blender's
    evaluation moves in the scene's frame range (`addon.motion.characters`), with one note
    per mesh left out. Raises SessionError when no mesh is chosen, or when every chosen
    mesh is left out (the notes say why)."""
    sel = motion.characters(scene, chosen=chosen_meshes(scene, context))
    if not sel.meshes:
        raise SessionError("no character to check: " + "; ".join(sel.notes)
                           + ": parent a prop to a bone or an object, or skin it")
    return sel


def participants_and_notes(scene, context=None) -> tuple[list, list[str]]:
    """`selection`'s meshes and notes."""
    sel = selection(scene, context)
    return sel.meshes, sel.notes


def participants(scene, context=None) -> list:
    """The characters that take part (`participants_and_notes`, without the notes)."""
    return participants_and_notes(scene, context)[0]


def participant_id(ob) -> str:
    """What identifies a participant in rest contacts: its built data's stable id
    (`storage.uid`), and for a collection instance that of its source and its own name."""
    if drawn.is_instance(ob):
        return f"{storage.uid(ob.source)}/{ob.name}"
    return storage.uid(ob)


# Per-vertex staleness (weights, rest positions) without re-reading the weights on every
# use: the rest positions of the last full check that passed, per built data (Text name,
# build id) and object using it, and the meshes whose data changed since
# (`mark_mesh_changed`, from the depsgraph_update_post handler: weight painting, Edit
# Mode, scripts). A use compares the rest positions (0.01 ms on MakeHuman's 13k vertices)
# and re-reads the weights (the full check, 65-85 ms there) only after such a change,
# after a build, or after a file load.


def mark_mesh_changed(mesh) -> None:
    """The data of `mesh` (an original Mesh) changed: its objects need a full check."""
    STATE.changed_meshes.add(mesh.as_pointer())


def forget_checks() -> None:
    """After a file load: nothing is verified any more."""
    STATE.verified.clear()
    STATE.changed_meshes.clear()


def _rest_positions(me) -> np.ndarray:
    buf = np.empty(len(me.vertices) * 3, dtype=np.float32)
    attr = me.attributes.get("position")
    if attr is not None and attr.domain == "POINT" and attr.data_type == "FLOAT_VECTOR":
        attr.data.foreach_get("vector", buf)
    else:
        me.vertices.foreach_get("co", buf)
    return buf


def per_vertex_stale_reason(ob, full_check: bool = False) -> str:
    """Why `ob`'s weights or rest positions no longer fit its built data ('' when they
    fit). Cheap unless something changed since the last check (see `STATE.verified`)."""
    text = storage.text_of(ob)
    signature = storage.built_signature(ob)
    key = (text.name_full, str(text.get(storage.BUILD_KEY) or signature), ob.as_pointer())
    pos = _rest_positions(ob.data)
    seen = STATE.verified.get(key)
    reason = (f"the weights, rest shape or bones (rest pose) of '{ob.name_full}' changed "
              "since its collision data was built: rebuild")
    mesh_key = ob.data.as_pointer()
    if seen is not None and not full_check and mesh_key not in STATE.changed_meshes:
        return "" if np.array_equal(seen, pos) else reason
    try:
        # The mesh's own data, read without evaluating anything (a rig on an evaluated
        # surface keeps its source's signature); the evaluated topology is checked on
        # every frame (`extract.check_topology`). Named as stored (`storage.rig_signature`),
        # so that a link or an override compares with its asset file's build.
        current = storage.rig_signature(ob, extract.source_rig(ob, storage.stored_moved(ob)))
    except extract.RigError as exc:
        return str(exc)
    if current != storage.source_signature(ob):
        return reason
    for k in [k for k in STATE.verified if k[0] == key[0] and k[2] == key[2]]:   # older builds
        del STATE.verified[k]
    STATE.verified[key] = pos
    STATE.changed_meshes.discard(mesh_key)
    return ""


def built(scene, meshes: list, full_check: bool = False) -> list:
    """Meshes with usable built data (raises SessionError when none, or when one is stale).

    Every use checks `storage.state_signature` (counts, vertex group names, modifiers,
    shape keys, bones) and `per_vertex_stale_reason` (rest positions compared on every
    use; weights re-read after the mesh data changed, e.g. weight painting). `full_check`
    re-reads weights, rest positions and bones in any case (once per scan).
    """
    # A collection instance uses its source's data (`addon.drawn`), checked once.
    ready = [ob for ob in meshes if storage.has_data(drawn.source_of(ob))]
    if not ready:
        raise SessionError("no collision data yet: press Build first")
    for src in {drawn.source_of(ob).as_pointer(): drawn.source_of(ob) for ob in ready}.values():
        storage.adopt(src)
        reason = storage.stale_reason(src) or per_vertex_stale_reason(src, full_check)
        if reason:
            raise SessionError(reason)
    return ready


def built_meshes(scene) -> list:
    """The scene's meshes with built data (usable or not: `built` checks them)."""
    return [ob for ob in scene.objects if ob.type == "MESH" and storage.has_data(ob)]


def shown_meshes(scene, view_layer=None) -> list:
    """The built meshes the viewport draws (`view_layer`'s, default the context's): what
    the live overlay and Refresh check, and the collection instances that draw them
    (`addon.drawn`). A hidden character takes no part: hidden with the eye it is not
    drawn; disabled in viewports it is not even evaluated (Blender hands out its rest
    mesh), so its collisions would be with a body nobody sees."""
    built_ = built_meshes(scene)
    out = [ob for ob in built_ if ob.visible_get(view_layer=view_layer)]
    if any(ob.instance_type == "COLLECTION" and ob.instance_collection is not None
           for ob in scene.objects):
        import bpy

        ptrs = {ob.as_pointer() for ob in built_}
        out += [m for m in drawn.drawn_meshes(bpy.context.evaluated_depsgraph_get())
                if drawn.is_instance(m) and m.source.as_pointer() in ptrs]
    return out


def shown_built(scene, view_layer=None, full_check: bool = False, verb: str = "check") -> list:
    """The built meshes the viewport draws (`shown_meshes`), checked as `built` does:
    what the overlay, Refresh and Scan Frame Range collide. With built characters but
    none shown, a SessionError "every built character is hidden: show one to <verb> it"."""
    shown = shown_meshes(scene, view_layer)
    if not shown and built_meshes(scene):
        raise SessionError(f"every built character is hidden: show one to {verb} it")
    return built(scene, shown, full_check=full_check)


def load_objects(meshes: list) -> list:
    """The stored collision data of `meshes`; data saved by an older version of the
    add-on (another format) is a SessionError asking for a rebuild."""
    out = []
    for ob in meshes:
        try:
            out.append(_load_instance(ob) if drawn.is_instance(ob) else storage.load(ob))
        except ValueError as exc:
            raise SessionError(f"'{ob.name_full}': {exc}") from None
    return out


def _load_instance(inst):
    """The stored data of an instance's source, under the instance's name: made once per
    instance and kept while the source's data is (its per-frame state is its own)."""
    base = storage.load(inst.source)
    if base is None:
        return None
    key = (inst.name, id(base))
    obj = STATE.instance_objects.get(key)
    if obj is None:
        obj = STATE.instance_objects[key] = core_scan.renamed(
            base, dataclasses.replace(base.rig, name=inst.name))
    return obj



MAX_PAIRS = 20000
"""At most this many colliding polygon pairs are kept per frame (for the overlay, selection,
bake and reports); the count is always exact. More pairs than this means a broken pose."""


def rest_contacts(scene) -> set[tuple[str, int, str, int]]:
    """Triangle pairs that collide in the rest pose, among the scene's built characters,
    by the objects' stable ids (`storage.uid`), so that renaming a mesh or rebuilding
    another keeps them. Stored with each character's data (`addon.rest_contacts`)."""
    return rest_contacts_store.of_scene(scene)


def store_rest_contacts(scene, meshes, objects, self_collision: bool) -> int:
    """Record the rest contacts of just-built `meshes` (`addon.rest_contacts.store`);
    returns how many involve them."""
    return rest_contacts_store.store(scene, meshes, objects, self_collision)


def forget_contacts(uids: set[str]) -> None:
    """Drop the rest contacts involving `uids` (their data was cleared)."""
    rest_contacts_store.forget(uids)


def pipeline(scene, meshes: list, objects: list, first_hit: bool = False,
             live: bool = False, carry: bool = False, scan: bool = False) -> scanner.Scanner:
    """The scene's pipeline (`addon.scanner.Scanner`, the one the headless scan uses) over
    built `meshes`, with the panel's settings (`panel_settings`) and the stored rest
    contacts (by stable ids). Cheap to make: the objects come built. `live`: the live
    overlay's caps and budgets; `carry`: also what it carries between frames (the memos
    of a `FrameState`); `scan`: Scan Frame Range's (with the panel's Between Frames)."""
    import bpy

    s = scene.skin_collide
    settings = panel_settings(scene, meshes, first_hit, live, carry, scan)
    from . import zones

    try:
        masks = zones.cached_zone_masks(meshes, objects, settings.contact_filter.ignore_groups,
                                        _mesh_was_changed)
    except ValueError as exc:
        raise SessionError(f"Ignore Zone: {exc}") from None
    source = scanner.report_source(bpy.data.filepath, s.method, s.self_collision,
                                   first_hit, s.ignore_rest_contacts)
    source["filters"].update(settings.contact_filter.describe())
    about = scanner.ReportContext(source=source, seen=trust.in_session(scene, meshes),
                                  where=scanner.where(scene))
    sc = scanner.Scanner(meshes, settings=settings, objects=objects,
                         ids=[participant_id(ob) for ob in meshes], zones=masks, about=about)
    if s.ignore_rest_contacts:
        sc.ignore_contacts(rest_contacts_store.index(
            scene, [ob for ob in meshes if not drawn.is_instance(ob)]))
        if any(drawn.is_instance(ob) for ob in meshes):
            sc.ignore_contacts(_with_instance_rest_contacts(scene, sc))
    if carry and live:              # contacts of object pairs whose pairs did not change
        sc.carry_state(core_scan.FrameState(
            frame_memo=_frame_memo(scene, sc),          # and frames seen before
            contacts_memo=STATE.contacts_memo.setdefault(scene.name_full, {}),
            carried=STATE.carried.setdefault(scene.name_full, Carried()).retain(objects)))
    return sc


#: Why Scan Frame Range does not run with both Between Frames and First Hit on.
BETWEEN_FIRST_HIT = ("Between Frames lists every pair that touches during a step and "
                     "cannot stop at the first hit: turn First Hit or Between Frames off")


def panel_settings(scene, meshes: list, first_hit: bool = False, live: bool = False,
                   carry: bool = False, scan: bool = False) -> core_scan.ScanSettings:
    """The panel's `ScanSettings`: method, self-collision, the contact filters and ignore
    zones, the Clearance (`addon.clearance.distance`); `live`: the live overlay's cap and
    clearance budget; `carry`: pairs carried while posing; `scan`: Scan Frame Range's,
    with the panel's Between Frames and Subframes (issue 57; the live overlay checks one
    frame: never between). SessionError on a bad filter, or on Between Frames with
    `first_hit` (`BETWEEN_FIRST_HIT`)."""
    from ..core.contacts import filters as contact_filters

    s = scene.skin_collide
    between = bool(scan and s.between_frames and not live)
    if between and first_hit:
        raise SessionError(BETWEEN_FIRST_HIT)
    try:
        bones = contact_filters.parse_bone_pairs(s.ignore_bones)
    except ValueError as exc:
        raise SessionError(f"Ignore Bones: {exc}") from None
    groups = {ob.name_full: {ob.skin_collide.ignore_group} for ob in meshes
              if ob.skin_collide.ignore_group}
    flt = contact_filters.ContactFilter(crossing_only=bool(s.crossing_only),
                                        min_length=float(s.min_length), ignore_bones=bones,
                                        ignore_groups=groups)
    return core_scan.ScanSettings(
        method=s.method, self_collision=s.self_collision, first_hit=first_hit,
        clearance=clearance.distance(scene), contact_filter=flt,
        max_pairs=MAX_PAIRS if live else None,        # a dense frame stops counting
        clearance_limit=core_scan.LIVE_LIMIT if live else None,   # a large D stops early
        carry=carry and live, between=between,
        subframes=int(s.subframes) if between else 1)


def _with_instance_rest_contacts(scene, sc: scanner.Scanner):
    """`sc.ignore` with the rest contacts of the collection instances among its meshes:
    they are no objects with data of their own to keep them in (`addon.rest_contacts`),
    so they are found here, as the headless scan finds every rest contact
    (`Scanner.rest_pose_contacts`), once per set of participants and builds."""
    key = (scene.name_full, tuple(sc.ids), tuple(id(o.data) for o in sc.objects),
           sc.self_collision)
    groups = STATE.instance_rest_contacts.get(key)
    if groups is None:
        pairs = rest_pose.rest_pose_pairs(sc.meshes, sc.objects, sc.self_collision)
        groups = [((sc.ids[i], sc.ids[j]), p) for i, j, p in pairs
                  if drawn.is_instance(sc.meshes[i]) or drawn.is_instance(sc.meshes[j])]
        STATE.instance_rest_contacts = {key: groups}
    return sc.ignore.merged(groups)


def _mesh_was_changed(me) -> bool:
    """Whether mesh data `me` changed since its last full check (`mark_mesh_changed`)."""
    return me.as_pointer() in STATE.changed_meshes


def _frame_memo(scene, sc: scanner.Scanner) -> core_scan.FrameMemo:
    """The scene's memo of frames answered (`core.scan.FrameMemo`), kept while what the
    answers depend on besides the frame's positions and triangles stays: the same built
    objects (by identity: a build or a reload makes new ones) under the same names and
    armatures, and the same settings and filters (rest contacts and ignore zones by the
    identity of their decoded index and masks, which are made anew when they change).
    Anything else starts a new memo."""
    same = (tuple(sc.objects), sc.ignore if sc.ignore else None,
            tuple((k, sc.zones[k]) for k in sorted(sc.zones)))
    values = (tuple(sc.ids), tuple((o.name, o.rig.armature) for o in sc.objects), sc.settings)
    memo = STATE.frame_memos.get(scene.name_full)
    if memo is None or not _same_memo_key(memo.key, (same, values)):
        memo = STATE.frame_memos[scene.name_full] = core_scan.FrameMemo((same, values))
    return memo


def _same_memo_key(a: tuple, b: tuple) -> bool:
    """Two `_frame_memo` keys: the objects, index and masks by identity, the rest by value."""
    (ids_a, va), (ids_b, vb) = a, b
    return va == vb and _same_identities(ids_a, ids_b)


def _same_identities(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_identities(x, y) for x, y in zip(a, b))
    return a is b or (isinstance(a, int) and isinstance(b, int) and a == b)


def query(scene, depsgraph, meshes: list, objects: list | None = None,
          first_hit: bool = False, exact_count: bool = False,
          carry: bool = False, scan: bool = False) -> LiveResult:
    """Collide `meshes` at the scene's current (already evaluated) frame, through the
    scene's `pipeline`.

    Raises SessionError (never another exception type for a user-caused problem): missing
    or changed armature, vertex count changed by modifiers, unreadable data. At most
    `MAX_PAIRS` polygon pairs are kept; `LiveResult.total_pairs` is the exact count and
    `LiveResult.warning` says when the list is capped. Unless `exact_count` (Scan Frame
    Range), the exact self tree stops once an object's own pairs pass the cap, or once it
    has tested `core.aabb_tree.query.CANDIDATE_BUDGET` candidate pairs, and the
    traversal between objects after `core.query.multi.live_budget` triangle tests (a dense
    frame: `dense`): then `more_than` is set and the count is a lower bound. The clearance
    stage stops too, past `core.scan.LIVE_LIMIT` node pairs of one object pair's box
    traversal: the frame then has no near contacts and `LiveResult.clearance_note` says
    the distance is too large to check live (intersections are unaffected). A pose whose
    bones collapse space raises `DegeneratePose` (the frame is not checked).

    `carry` (the live overlay's updates): each object's self pairs, and the pairs between
    two objects that went through the traversal, are re-checked only where triangles
    moved since their last complete answer, the others carried over
    (`core.scan.carry.object_self_pairs`, `object_cross_pairs`; the same answer), and
    the contacts of an object pair whose pairs and their triangles did not change are
    those of the last update (`core.contacts.groups.frame_contacts`' memo). A query
    without it (Refresh, Scan Frame Range) starts afresh and drops what was kept.

    With the panel's Clearance on, the result also carries the frame's near contacts and
    the triangles the overlay draws in the near colour (`addon.clearance`).

    `scan` (Scan Frame Range): the panel's Between Frames applies (`panel_settings`); with
    it on, the result keeps the frame's `outcome`, the first sample of its step.
    """
    objects = objects or load_objects(meshes)
    if not (carry and not exact_count):     # a query that does not carry starts afresh
        STATE.contacts_memo.pop(scene.name_full, None)
        STATE.frame_memos.pop(scene.name_full, None)
        STATE.carried.pop(scene.name_full, None)
    sc = pipeline(scene, meshes, objects, first_hit=first_hit, live=not exact_count,
                  carry=carry and not exact_count, scan=scan)
    try:
        out = sc.current(scene, depsgraph)
    except extract.RigError as exc:
        raise SessionError(str(exc)) from None
    rec = out.record
    if rec.not_checked:
        raise DegeneratePose(rec.not_checked)
    names = [ob.name_full for ob in meshes]
    hits = [[] for _ in meshes]
    for i, j, p in out.tri_pairs:
        hits[i].append(p[:, 0])
        hits[j].append(p[:, 1])
    hit_tris = [np.unique(np.concatenate(h)) if h else np.zeros(0, dtype=np.int64)
                for h in hits]
    n_polys = len(rec.pairs)
    warning = ""
    if sc.dense:
        warning = (f"dense frame: too many candidate triangle pairs to test them all live "
                   f"(more than {_query.CANDIDATE_BUDGET:,} in one mesh, or than "
                   f"{multi.DENSE_TESTS_PER_TRIANGLE:g} per triangle between meshes); only "
                   f"the first were tested, to keep Blender responsive: showing the "
                   f"{min(n_polys, MAX_PAIRS)} colliding pairs found there (a lower bound); "
                   "Scan Frame Range counts them all")
    elif sc.stopped:
        warning = (f"more than {MAX_PAIRS} colliding pairs (counting stopped there, to keep "
                   f"the frame quick): only {MAX_PAIRS} are kept; Scan Frame Range counts "
                   "them all; a pose this broken is best fixed before checking further")
    elif n_polys > MAX_PAIRS:
        warning = f"{n_polys} colliding pairs: only the first {MAX_PAIRS} are kept"
    hit_tris = [t.astype(np.int64) for t in hit_tris]
    near_found = list(rec.near_contacts) if sc.clearance is not None else []
    near_tris = clearance.near_triangles(sc.objects, out.near, near_found, hit_tris) \
        if near_found else []
    result = LiveResult(scene.frame_current, rec.ms, names, out.positions,
                        hit_tris, rec.pairs[:MAX_PAIRS],
                        total_pairs=n_polys, warning=warning, triangles=out.triangles,
                        modes=rec.modes, poses=out.poses, more_than=sc.stopped,
                        contacts=rec.contacts,
                        dense=sc.dense, clearance=sc.clearance, near_contacts=near_found,
                        near_triangles=near_tris,
                        clearance_note=clearance.note(scene, len(meshes), sc.near_stopped),
                        outcome=out if sc.settings.between else None)
    STATE.live[scene.name_full] = result
    return result


def not_checked(scene, message: str) -> LiveResult:
    """The result of a frame that was not checked (see `DegeneratePose`): no pairs, the
    reason in `error`, `not_checked` set."""
    res = LiveResult(scene.frame_current, 0.0, [], [], [], [], error=message, not_checked=True)
    STATE.live[scene.name_full] = res
    return res


def record_error(scene, message: str) -> None:
    """Keep a failed live query's message for the panel (the overlay then draws nothing)."""
    STATE.live[scene.name_full] = LiveResult(scene.frame_current, 0.0, [], [], [], [], error=message)


def forget(scene) -> None:
    STATE.live.pop(scene.name_full, None)
    STATE.frame_memos.pop(scene.name_full, None)
    STATE.carried.pop(scene.name_full, None)
    rest_contacts_store.forget_index(scene)
