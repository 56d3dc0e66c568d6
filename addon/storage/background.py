"""Decoding ahead: after a file is opened, the data of the live overlay's characters is
decoded (with their self trees) in a background thread (`prefetch`), and `store.load`
takes the result instead of decoding on the first frame change.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ...core.contacts.bones import polygon_bones
from ...core.scan import CollisionObject
from ...core.scan.carry import for_object
from ...core.storage import persist
from ..state import STATE
from .keys import BLOB_KEY, OWN_KEY
from .texts import session_key, text_of

_PREFETCH: ThreadPoolExecutor | None = None


def prefetch(scenes) -> int:
    """After a file is opened: decode, in a background thread, the data stored in the file
    of the built meshes of `scenes` whose live overlay is on (what their first frame
    change would decode), with their self trees when the scene checks self-collision, so
    that the first update does not wait for it. `load` takes the result (or waits for a
    decoding still running). Only numpy and lzma run in the thread; the bytes are read
    here. Data in the disk cache or to rebuild is left to `load`. Returns how many."""
    global _PREFETCH
    STATE.prefetched.clear()
    jobs = {}
    for scene in scenes:
        settings = getattr(scene, "skin_collide", None)
        if settings is None or not settings.live:
            continue
        for ob in scene.objects:
            text = text_of(ob) if ob.type == "MESH" else None
            if text is None or text.get(BLOB_KEY) is None or OWN_KEY in text:
                continue                  # (a copy's: decoded once from what it shares)
            cache_key, key = session_key(ob, text)
            if cache_key in jobs or STATE.objects.get(cache_key, (None,))[0] == key:
                continue
            jobs[cache_key] = (key, bytes(text[BLOB_KEY]), settings.self_collision)
    if jobs and _PREFETCH is None:
        _PREFETCH = ThreadPoolExecutor(1, thread_name_prefix="skin_collide_prefetch")
    for cache_key, (key, data, self_tree) in jobs.items():
        STATE.prefetched[cache_key] = (key, _PREFETCH.submit(_decode, data, self_tree))
    return len(jobs)


def _decode(data: bytes, self_tree: bool) -> CollisionObject:
    obj = persist.from_bytes(data)
    if self_tree:
        ready_for_self_collision(obj)
    return obj


def ready_for_self_collision(obj: CollisionObject) -> None:
    """Make now what the first self query and the first self contact of `obj` would make
    (kept on it): its self tree, and each polygon's dominant bone (which tells a self
    contact's sides apart). Numpy only: safe on a worker thread."""
    for_object(obj)
    polygon_bones(obj.rig)


def stop_prefetch() -> None:
    """Forget the background decodings (unregistering): running ones finish unused."""
    global _PREFETCH
    STATE.prefetched.clear()
    if _PREFETCH is not None:
        _PREFETCH.shutdown(wait=False, cancel_futures=True)
        _PREFETCH = None


def take_prefetched(cache_key, key: str) -> CollisionObject | None:
    """The object `prefetch` decoded for `cache_key` at build id `key` (waiting for it if
    still running), or None: none, another build's, or its decoding failed (then `load`
    decodes on this thread and reports the error as always)."""
    job = STATE.prefetched.pop(cache_key, None)
    if job is None or job[0] != key:
        return None
    try:
        return job[1].result()
    except Exception:  # noqa: BLE001 - decoded again by the caller, which reports it
        return None
