"""What assay writes, as frozen pydantic models: attempt results, the run manifest, incidents,
score and report documents, comparisons, and their published JSON schemas.
"""
