"""``assay view``: a local web app over run directories (read from the sealed evidence only)."""
