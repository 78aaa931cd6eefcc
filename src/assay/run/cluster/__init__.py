"""Running a campaign's attempts on a Ray cluster: the executor on the head, the worker actor on
each node, the hub actor serving the services (docs/scale.md).
"""
