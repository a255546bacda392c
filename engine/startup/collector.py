"""The collector's policy, for the engine process and the tests: what start-up and a load made
(JAX, a network, the compiled search: about a million objects, in the engine) leaves the
collector's generations once it is made, so that the collections a search or a test triggers do
not traverse it again (4-12 % of the search thread's time with the random backend; 0.1-0.7 s a
full collection in a test process).

Nothing here at start-up itself (:func:`engine.startup.configure`): what is worth freezing exists
only once a network is loaded. The controller calls :func:`freeze` after its network loads and
:func:`unfreeze` when it drops one; tests/conftest.py calls ``freeze(collect=True)`` between test
modules. This module imports nothing of the engine's, so the controller may call it (the
import layers: pyproject.toml)."""

from __future__ import annotations

import gc


def freeze(*, collect: bool = False) -> None:
    """Move every object the collector tracks now out of its generations (``gc.freeze``);
    ``collect``: collect first what is in reference cycles (a pass over what is not frozen yet),
    so that it is not kept."""
    if collect:
        gc.collect()
    gc.freeze()


def unfreeze() -> None:
    """Give what was frozen back to the collector (a dropped network's cycles can then be
    collected)."""
    gc.unfreeze()
