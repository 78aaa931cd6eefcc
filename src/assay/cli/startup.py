"""The ``assay`` process's garbage collector during start-up and at exit.

A command imports about 700 modules, which make about 70,000 long-lived containers the
collector tracks (pydantic's schemas, dataclasses' generated methods, class dicts). With the
collector on, it walks them again and again while they are being made, and once more in full when
the interpreter exits: on a one-trial run that was about a sixth of its wall time (docs/cli.md).
So the process entry turns the collector off, and once the command's imports are done :func:`settled` freezes what they made (the
collections of a long run never walk it) and turns it back on: a run of 10⁵ trials still collects
its own cycles. At exit the same freeze skips the final full walk; only cyclic garbage made after
the last collection goes unfinalized then, and assay closes every file it writes explicitly.

Only the process entry (:func:`begin`, from ``main()`` with no argv) changes anything; in-process
calls (``main(argv)``, the tests) leave the collector as they found it.
"""

from __future__ import annotations

import atexit
import gc

_begun = False


def begin() -> None:
    """Collector off until the command's imports are done; frozen at exit."""
    global _begun
    if _begun:
        return
    _begun = True
    gc.disable()
    atexit.register(gc.freeze)  # registered first, so it runs after every other exit handler


def importing() -> None:
    """A command about to import its world (after the root's callback settled): off again."""
    if _begun:
        gc.disable()


def settled() -> None:
    """The command's imports are done: freeze what they made, collect again from here on."""
    if _begun:
        gc.freeze()
        gc.enable()
