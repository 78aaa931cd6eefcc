"""Running a campaign's attempts away from the head, which keeps the run directory's one writer:
on a Ray cluster (the executor on the head, the worker actor on each node, the hub actor serving
the services; docs/scale.md) or in worker processes of this machine (``--executor procs``:
procs.py, procs_worker.py, wire.py). What both share: campaign.py (the head's trial loop),
worker.py (an attempt run and handed back as data), hub.py (the services for it).
"""
