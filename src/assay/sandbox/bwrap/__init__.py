"""The bubblewrap backend and its private machinery: the backend, the parked exec launchers (and
the C one), the pool, cgroups, the watcher, bwrap's command line, the root filesystem, ending a
workload, finding and probing bwrap.
"""
