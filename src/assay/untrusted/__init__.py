"""Reading what an agent wrote without being hurt by it: the tree walker and remover, JSON with a
depth limit, regular expressions with a time limit, archives, an agent's session files. Imports
nothing of assay (docs/security.md).
"""
