"""assay: an evaluation platform for AI agents whose numbers hold up when someone checks them."""

__version__ = "0.1.0"
