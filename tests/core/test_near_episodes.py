"""Near episodes by bone pair (issue 42), built by the same keyed runs as contact episodes
(`core.contacts.episodes.keyed_runs`): runs of consecutive scanned frames, the closest
frame (the first of equal ones), the key's object order, the order of the list and the
bounded summary."""
from skin_collide.core.contacts import clearance as near
from skin_collide.core.contacts import episodes


def nc(a, b, ba, bb, d):
    return {"objects": [a, b], "bones": [ba, bb], "min_distance": d, "kind": "near"}


def test_near_episodes_runs_closest_and_order():
    frames = [
        (1, [nc("A", "B", "hand", "hip", 0.3), nc("A", "B", "hand", "hip", 0.2)]),
        (2, [nc("B", "A", "hip", "hand", 0.1)]),          # the same key, objects swapped
        (3, [nc("A", "B", "hand", "hip", 0.1), nc("A", "C", None, "x", 0.05)]),
        (5, []),
        (6, [nc("A", "B", "hand", "hip", 0.4)]),
    ]
    eps = near.near_episodes(frames)
    got = [(e.a, e.b, e.bone_a, e.bone_b, e.start, e.end, e.closest_frame, e.closest, e.frames)
           for e in eps]
    assert got == [("A", "B", "hand", "hip", 1, 3, 2, 0.1, 3),
                   ("A", "C", None, "x", 3, 3, 3, 0.05, 1),
                   ("A", "B", "hand", "hip", 6, 6, 6, 0.4, 1)]
    report = [{"frame": f, "near_contacts": found} for f, found in frames]
    report.insert(3, {"frame": 4, "not_checked": "skipped"})
    assert [e.to_json() for e in near.episodes_of_report(report)] == [e.to_json() for e in eps]
    text = near.summary(eps, limit=2)
    lines = text.splitlines()
    assert lines[0] == "3 near episode(s) by bone pair:" and lines[-1] == "  and 1 more"
    assert lines[1].startswith("  A × C") and "closest 5.0 cm at frame 3" in lines[1]
    assert near.summary([]) == "no near contacts"


def test_keyed_runs_fold_and_split():
    frames = [(1, [{"objects": ["B", "A"], "bones": ["b", "a"]}] * 2),
              (2, [{"objects": ["A", "B"], "bones": ["a", "b"]}]), (4, [])]
    runs = episodes.keyed_runs(frames, lambda n, c: n + 1, 0)
    assert runs == [(("A", "B", "a", "b"), [(1, 2), (2, 1)])]
    assert episodes.best_frame([(1, 2.0), (2, 1.0), (3, 1.0)], lambda x, y: x < y) == (2, 1.0)
