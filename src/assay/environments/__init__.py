"""Task environments: a task's image built here, without Docker, into a content-addressed root
filesystem (docs/environments.md). A Debian base from mmdebstrap, each step in a bubblewrap
sandbox over the image being built, the result kept read-only in a local image store and run
over by every trial of the task."""
