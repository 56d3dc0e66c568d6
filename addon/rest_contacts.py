"""Rest contacts: triangle pairs that already collide in the rest pose (designed-in
overlaps: segmented mannequins, clothing layers), which *Ignore Rest Contacts* drops.

They belong to the character, not to the scene (issue 26): each built mesh's data keeps
the contacts involving it (`storage.set_rest_contacts`): with itself under its data's
uid, with another character under that character's `storage.uid`. So a character linked
into several scenes, or using its asset file's build, brings its contacts everywhere.
Contacts are read with the objects' session ids (`storage.uid`), which tell apart a link
and an override sharing one asset's data.

Earlier versions kept them per scene (`scene.skin_collide.rest_contacts`, a JSON Text,
one contact per line); those are still read, and pruned when the characters they name
are rebuilt or cleared.
"""
from __future__ import annotations

import json

import numpy as np

from ..core.contacts import pairs as contacts
from . import rest_pose, storage
from .state import STATE

Contact = tuple[str, int, str, int]

# Parsed contacts per scene: (version, participants' data) -> ContactIndex. The version is
# bumped by every write of ours, so frames never decode the stored contacts again.


def _changed() -> None:
    STATE.rest_contacts_version += 1


def forget_index(scene) -> None:
    STATE.rest_contacts_index.pop(scene.name_full, None)


def _groups(meshes: list) -> list[tuple[tuple[str, str], np.ndarray]]:
    """The stored rest contacts among `meshes` (built) per object pair of session ids:
    ``((id_a, id_b), (K, 2) triangle pairs)``, each stored set read once for every object
    using it. Contacts between two characters come from both of their data."""
    ids = [storage.uid(ob) for ob in meshes]
    by_text: dict[str, list[str]] = {}
    first: dict[str, object] = {}
    for ob, r in zip(meshes, ids):
        u = storage.text_uid(ob)
        by_text.setdefault(u, []).append(r)
        first.setdefault(u, ob)
    out = []
    for u, ob in first.items():
        for key, pairs in storage.rest_contacts_of(ob).items():
            for r1 in by_text[u]:
                partners = [r1] if key == u else ([key] if key in ids else by_text.get(key, []))
                out += [((r1, r2), pairs) for r2 in partners]
    return out


def index(scene, meshes: list) -> contacts.ContactIndex:
    """The rest contacts of `meshes` (and the scene's, from earlier versions), decoded
    once per change of what is stored."""
    key = (STATE.rest_contacts_version, _legacy_pointer(scene), tuple(_data_key(ob) for ob in meshes))
    hit = STATE.rest_contacts_index.get(scene.name_full)
    if hit is not None and hit[0] == key:
        return hit[1]
    found = contacts.ContactIndex.from_arrays(_groups(meshes) + _legacy_groups(scene))
    STATE.rest_contacts_index[scene.name_full] = (key, found)
    return found


def _data_key(ob) -> tuple[str, str]:
    """What `ob`'s stored contacts depend on: its id and its data's build."""
    text = storage.text_of(ob)
    return storage.uid(ob), ("" if text is None else str(text.get(storage.BUILD_KEY)))


def of_scene(scene) -> set[Contact]:
    """The rest contacts of the scene's built meshes (and the scene's own, from earlier
    versions), each once."""
    built = [ob for ob in scene.objects if ob.type == "MESH" and storage.has_data(ob)]
    return contacts.ContactIndex.from_arrays(_groups(built) + _legacy_groups(scene)).as_set()


def store(scene, meshes: list, objects: list, self_collision: bool) -> int:
    """Query the rest pose of `meshes` (just built: armatures switched to Rest Position for
    the evaluation, then restored) with the scene's other built, up-to-date meshes, and
    store each built mesh's contacts with its data. Other characters' contacts are kept;
    their contacts with a rebuilt mesh are replaced by the new ones. Returns the number of
    contacts involving `meshes`."""
    others = [ob for ob in scene.objects if ob.type == "MESH" and ob not in meshes
              and storage.has_data(ob) and not storage.stale_reason(ob)]
    try:
        other_objs = [storage.load(ob) for ob in others]
    except ValueError:
        others, other_objs = [], []
    group = list(meshes) + others
    from .state import quiet  # the rest-pose switch is not a pose edit

    with quiet():
        pairs = rest_pose.rest_pose_pairs(group, list(objects) + other_objs, self_collision)
    ids = [storage.uid(ob) for ob in group]
    own, count = _per_built_mesh(pairs, ids, len(meshes))
    built_ids = set(ids[:len(meshes)])
    storage.drop_rest_partners(built_ids)       # the others' views of the rebuilt meshes
    for k, ob in enumerate(meshes):
        storage.set_rest_contacts(ob, own[k])
    _prune_legacy(built_ids)
    _changed()
    return count


def _per_built_mesh(pairs, ids: list[str], n_built: int) -> tuple[list[dict], int]:
    """Rest-pose triangle pairs (i, j, (K, 2)) as each of the first `n_built` meshes
    stores them (partner key -> its pairs, its own triangle first), and how many contacts
    involve them."""
    own: list[dict[str, list]] = [{} for _ in range(n_built)]
    count = 0
    for i, j, p in pairs:
        if i >= n_built and j >= n_built:
            continue
        p = contacts.normalized_pairs(p, i == j)
        count += len(p)
        if i < n_built:
            own[i].setdefault(ids[i] if i == j else ids[j], []).append(p)
        if j < n_built and i != j:
            own[j].setdefault(ids[i], []).append(p[:, ::-1])
    return [{k: np.concatenate(v) for k, v in d.items()} for d in own], count


def forget(uids: set[str]) -> None:
    """Drop the rest contacts involving `uids` (their data was cleared)."""
    storage.drop_rest_partners(uids)
    _prune_legacy(uids)
    _changed()


# -- earlier versions: contacts per scene --------------------------------------------------

def _legacy_pointer(scene) -> int:
    text = scene.skin_collide.rest_contacts
    return 0 if text is None else text.as_pointer()


def _legacy_groups(scene) -> list[tuple[tuple[str, str], np.ndarray]]:
    """The scene's earlier-version contacts per object pair, as `_groups` gives them."""
    grouped: dict[tuple[str, str], list] = {}
    for ka, a, kb, b in _legacy(scene):
        grouped.setdefault((ka, kb), []).append((a, b))
    return [(k, np.array(v, dtype=np.int64)) for k, v in grouped.items()]


def _legacy(scene) -> list[Contact]:
    text = scene.skin_collide.rest_contacts
    if text is None:
        return []
    try:
        data = json.loads(text.as_string() or "[]")
    except ValueError:
        return []
    return [tuple(p) for p in data if isinstance(p, list) and len(p) == 4]


def _prune_legacy(uids: set[str]) -> None:
    """Remove the contacts involving `uids` from every scene's earlier-version contacts
    (the characters' own data now holds theirs)."""
    import bpy

    for scene in bpy.data.scenes:
        old = _legacy(scene)
        kept = [p for p in old if p[0] not in uids and p[2] not in uids]
        if len(kept) != len(old):
            scene.skin_collide.rest_contacts.from_string(_contacts_json(sorted(kept)))


def _contacts_json(pairs) -> str:
    """The contacts as a JSON list, one pair per line: `Text.from_string` is quadratic in
    the length of a line (a 1.7 MB line took 108 s in bpy 5.0.1)."""
    return "[\n" + ",\n".join(json.dumps(list(p)) for p in pairs) + "\n]\n"
