"""Approvals: policies per tool and argument pattern (allow / ask / deny), a scripted approver
declared by the task, and a durable store of requests so a wait outlives the runner."""

from assay.approvals.policy import approver_rule, decide_policy, matches
from assay.approvals.store import ApprovalRequest, ApprovalStore

__all__ = ["ApprovalRequest", "ApprovalStore", "approver_rule", "decide_policy", "matches"]
