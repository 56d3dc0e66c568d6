"""Built collision data in the .blend or in a disk cache next to it: every other module of
the add-on goes through the names re-exported here, so this package is the only place that
knows where the data lives (docs/storage.md §4). Each built mesh points to a hidden data
Text holding its `core.storage.persist` bytes, or naming their disk cache. `keys` names the
Text's custom properties; `texts` decides which Text an object uses and owns (copies,
links and library overrides) and reads what is recorded on it; `encoding` turns a build
into those bytes and back and names what is stored; `validity` tells whether a stored
build still fits its mesh; `disk` keeps builds in the disk cache; `store` saves, loads
and rebuilds; `shared` lets copies of one character share one build's bytes;
`background` decodes ahead after a file is opened; `rest` keeps a character's rest
contacts with its data. Patching a name here reaches callers outside the
package only: patch the submodule that uses it.
"""
from __future__ import annotations

from .background import prefetch, ready_for_self_collision, stop_prefetch
from .disk import cache_dir, cache_path, needs_rebuild, relocate, scan_missing
from .encoding import rig_signature, set_bytes
from .keys import (
    BLOB_KEY,
    BODY,
    BUILD_KEY,
    CACHE_DIR,
    CACHE_KEY,
    CACHE_SUFFIX,
    METHOD_KEY,
    OPTIONS_KEY,
    OWN_KEY,
    OWNER_ID_KEY,
    OWNER_KEY,
    REST_KEY,
    RIGID_KEY,
    SET_KEY,
    SHAPE_KEY,
    SHARED_BUILD_KEY,
    SHARED_KEY,
    SIGNATURE_KEY,
    SOURCE_KEY,
    TEXT_PREFIX,
    UID_KEY,
)
from .rest import drop_rest_partners, rest_contacts_of, set_rest_contacts
from .store import load, save
from .store import rebuild as rebuild  # not in __all__: "rebuild" is also a method id
from .texts import (
    adopt,
    built_signature,
    clear,
    has_data,
    inherited,
    location,
    owns,
    remove_orphans,
    signature_of_text,
    source_signature,
    stored_moved,
    stored_options,
    text_is_rigid,
    text_of,
    text_uid,
    uid,
)
from .validity import shape_signature, stale_reason, state_signature

# `rebuild` is re-exported by its alias above, not listed here: "rebuild" is also a method
# id, which no string outside core.methods may spell (tests/core/test_architecture.py).
__all__ = [
    "BLOB_KEY", "BODY", "BUILD_KEY", "CACHE_DIR", "CACHE_KEY", "CACHE_SUFFIX", "METHOD_KEY",
    "OPTIONS_KEY", "OWN_KEY", "OWNER_ID_KEY", "OWNER_KEY", "REST_KEY", "RIGID_KEY", "SET_KEY",
    "SHAPE_KEY", "SHARED_BUILD_KEY", "SHARED_KEY", "SIGNATURE_KEY", "SOURCE_KEY", "TEXT_PREFIX", "UID_KEY",
    "adopt", "built_signature", "cache_dir", "cache_path", "clear", "drop_rest_partners",
    "has_data", "inherited", "load", "location", "needs_rebuild", "owns", "prefetch",
    "ready_for_self_collision", "relocate", "remove_orphans", "rest_contacts_of",
    "rig_signature", "save", "scan_missing", "set_bytes", "set_rest_contacts",
    "shape_signature", "signature_of_text", "source_signature", "stale_reason",
    "state_signature", "stop_prefetch", "stored_moved", "stored_options", "text_is_rigid",
    "text_of", "text_uid", "uid",
]
