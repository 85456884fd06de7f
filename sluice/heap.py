"""Keep the garbage collector off a long-running service's startup heap.

A service's modules, engines (Presidio's recognizers, a spaCy model) and clients live as long as the
process, yet every full collection walks them again: with the redaction engines loaded that is hundreds
of thousands of objects per scan, on the hot path and holding the GIL. ``settle_heap`` collects once, then
freezes everything alive into the permanent generation, so later collections scan only what the
service made since. Call it once the service is up (again after a large rebuild is harmless).

    settle_heap(gen0_threshold=10_000)
"""

from __future__ import annotations

import gc


def settle_heap(gen0_threshold: int | None = None, collect: bool = True) -> int:
    """Collect (unless ``collect`` is false: a service already serving, whose event loop a full pause
    would stall), freeze what is alive out of later scans; optionally raise the young-generation
    threshold (request paths that make little cyclic garbage pay for fewer, not larger, pauses). Returns
    how many objects are frozen."""
    if collect:
        gc.collect()
    gc.freeze()
    if gen0_threshold is not None:
        _, gen1, gen2 = gc.get_threshold()
        gc.set_threshold(gen0_threshold, gen1, gen2)
    return gc.get_freeze_count()
