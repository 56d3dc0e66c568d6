"""The names of stored builds: the data Text's name prefix, the custom-property keys the
add-on writes on it, the disk cache's folder and suffix, and the Text's one-line body.
Which key holds what: `texts` (ownership, the recorded signatures and options), `store`
and `disk` (the bytes), `rest` (rest contacts).
"""
from __future__ import annotations

TEXT_PREFIX = ".skin_collide/"
OWNER_KEY = "skin_collide_owner"        # the owner's name (earlier versions; kept as a note)
OWNER_ID_KEY = "skin_collide_owner_id"  # the owner itself (an ID pointer property)
UID_KEY = "skin_collide_uid"
BUILD_KEY = "skin_collide_build"
BLOB_KEY = "skin_collide_blob"          # the persist bytes, when kept in the file
CACHE_KEY = "skin_collide_cache"        # the rig signature, when kept on disk
METHOD_KEY = "skin_collide_method"      # the method asked at build (for a rebuild)
SET_KEY = "skin_collide_sphere_set"     # earlier versions: a sphere set's (count, seed)
OPTIONS_KEY = "skin_collide_options"    # the method's build options (JSON), for a rebuild
SIGNATURE_KEY = "skin_collide_signature"  # the rig signature at build (also on local objects)
SHAPE_KEY = "skin_collide_shape"        # the state signature at build (also on local objects)
REST_KEY = "skin_collide_rest"          # the character's rest contacts (addon/rest_contacts.py)
RIGID_KEY = "skin_collide_rigid"        # what moves a rigid prop ("" or absent: skinned)
SOURCE_KEY = "skin_collide_source"      # the signature of the mesh's own rig, when the
                                        # data is of its evaluated surface
SHARED_KEY = "skin_collide_shared"      # a copy's: the data Text holding the bytes it shares
SHARED_BUILD_KEY = "skin_collide_shared_build"  # ... and that Text's build id when shared
OWN_KEY = "skin_collide_own"            # a copy's own rig fields (`persist.own_bytes`)
CACHE_DIR = "//skin_collide_cache/"
CACHE_SUFFIX = ".skcb"
BODY = ("skin_collide collision data for '{}': binary, in this Text's custom property or "
        "in //skin_collide_cache/; do not edit.\n")
