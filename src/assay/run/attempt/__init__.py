"""One attempt: its phases, each returning a frozen record, the end state decided from them, the
seal, the evidence, the process faults.
"""
