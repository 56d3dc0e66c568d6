"""The rest contacts stored with a character's data (`addon.rest_contacts` decides them):
per partner, the triangle pairs in contact at rest, as a zlib `core.storage.blob` container in
the data Text (`REST_KEY`).
"""
from __future__ import annotations

import numpy as np

from ...core.storage import blob as container  # (`blob` names the stored bytes elsewhere)
from .encoding import set_bytes
from .keys import REST_KEY
from .texts import data_texts, text_of


def rest_contacts_of(ob) -> dict[str, np.ndarray]:
    """The rest contacts stored with `ob`'s data: partner key -> (K, 2) int64 triangle
    pairs (this character's, the partner's). The key is `text_uid(ob)` for contacts with
    itself, else the partner's `uid`. Empty when none are stored or they cannot be read."""
    text = text_of(ob)
    raw = None if text is None else text.get(REST_KEY)
    if raw is None:
        return {}
    try:
        arrays = container.decode(bytes(raw))
    except ValueError:
        return {}
    return {k: v.astype(np.int64).reshape(-1, 2) for k, v in arrays.items()}


def set_rest_contacts(ob, by_partner: dict[str, np.ndarray]) -> None:
    """Store `ob`'s rest contacts (see `rest_contacts_of`) with its own local data, as
    compact binary: hundreds of thousands of contacts (two coincident characters) would
    make a Text body slow to write and to show."""
    text = text_of(ob)
    if text is None or text.library is not None:
        raise ValueError(f"'{ob.name_full}' has no collision data of this file to store "
                         "rest contacts with: build it")
    arrays = {k: np.asarray(v, np.int64).reshape(-1, 2) for k, v in by_partner.items()
              if len(v)}
    if arrays:
        set_bytes(text, container.encode(arrays, codec="zlib"), REST_KEY)
    elif REST_KEY in text:
        del text[REST_KEY]


def drop_rest_partners(keys: set[str]) -> int:
    """Remove the rest contacts with partners `keys` from every local data Text (rebuilt or
    cleared characters). Returns how many Texts changed."""
    changed = 0
    for text in data_texts():
        if text.library is not None or REST_KEY not in text:
            continue
        try:
            arrays = container.decode(bytes(text[REST_KEY]))
        except ValueError:
            continue
        kept = {k: v for k, v in arrays.items() if k not in keys}
        if len(kept) != len(arrays):
            if kept:
                set_bytes(text, container.encode(kept, codec="zlib"), REST_KEY)
            else:
                del text[REST_KEY]
            changed += 1
    return changed
