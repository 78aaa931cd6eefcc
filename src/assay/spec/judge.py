"""The LLM judge as a measuring instrument: its definition, the human-labelled calibration set it
is checked against, and the calibration record that binds a result to the judge's digest.

A judge may score only what has no single right answer (a clear explanation, a graceful
refusal), only once calibrated, and never over a failed deterministic check. Everything that
shapes its verdicts (model, prompt template, rubric, sampling) is in :meth:`JudgeSpec.digest`,
so a changed judge makes its old calibration *stale*.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.spec.digest import sha256_json
from assay.spec.predicates import PredicateSpec

#: bump when the judge prompt template or the output parsing changes (part of every judge digest)
PROMPT_TEMPLATE_VERSION = "judge-prompt/2"  # 2: each answer fenced by a digest of the answers
CALIBRATION_SCHEMA = "assay.judge-calibration/1"

PairLabel = Literal["A", "B", "tie"]
#: a pairwise verdict as the same judge should give it with A and B swapped (anything else is a flip)
SWAPPED: dict[str, str] = {"A": "B", "B": "A", "tie": "tie"}


class _Frozen(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)


class Sampling(_Frozen):
    """Pinned sampling settings of the judge model (sent with every judge call)."""

    temperature: float = Field(0.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int = 0
    max_tokens: int = Field(128, ge=1, le=2 ** 31)  # the gateway answers a larger limit HTTP 400 (gateway/wire/fields.py)


class Thresholds(_Frozen):
    """What a calibration must reach before the judge may contribute to a strict pass."""

    min_items: int = Field(10, ge=1, description="Fewest calibration items with a parsed judge verdict.")
    kappa: float = Field(0.6, ge=-1, le=1, description="Cohen's kappa, judge vs human round 1.")
    tpr: float = Field(0.7, ge=0, le=1, description="True-positive rate on the positive class.")
    tnr: float = Field(0.7, ge=0, le=1, description="True-negative rate on the negative class.")
    max_flip_rate: float = Field(0.2, ge=0, le=1, description="Pairwise: verdicts that flip when A and B swap.")
    max_parse_failures: float = Field(0.1, ge=0, le=1, description="Share of judge answers that did not parse.")
    max_injection_flip_rate: float = Field(0.0, ge=0, le=1, description="Adversarial items (answers addressing the "
                                           "judge) on which the verdict leaves the human label.")


class JudgeSpec(_Frozen):
    """A judge: rubric, mode, sampling and the thresholds its calibration must meet."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    version: str = "1"
    mode: Literal["pairwise", "absolute"] = Field("pairwise", description="Pairwise (A vs B) is preferred.")
    rubric: str = Field(min_length=1, description="What makes an answer better, in the labellers' own words.")
    scale: tuple[int, int] = Field((1, 5), description="Absolute mode: lowest and highest score.")
    pass_score: int = Field(4, description="Absolute mode: a score at or above this is a pass.")
    sampling: Sampling = Field(default_factory=Sampling)
    thresholds: Thresholds = Field(default_factory=Thresholds)

    @model_validator(mode="after")
    def _scale(self) -> "JudgeSpec":
        lo, hi = self.scale
        if lo >= hi or not lo <= self.pass_score <= hi:
            raise ValueError("scale must be [low, high] with low < high and pass_score inside it")
        return self

    def digest(self, model_id: str, backend: str | None) -> str:
        """Digest of everything that shapes a verdict: a calibration is valid only for this digest."""
        return sha256_json({"template": PROMPT_TEMPLATE_VERSION, "model": model_id, "backend": backend,
                            "mode": self.mode, "rubric": self.rubric, "scale": list(self.scale),
                            "pass_score": self.pass_score, "sampling": self.sampling.model_dump()})


class CalibrationItem(_Frozen):
    """One human-labelled item. Pairwise: ``a``/``b`` and labels A|B|tie; absolute: ``output`` and scores.
    ``labels`` holds one label per labelling round (round 2 re-labelled later, in shuffled order)."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    prompt: str = Field(description="What the agent was asked (context for the judge).")
    a: str | None = None
    b: str | None = None
    output: str | None = None
    labels: list[PairLabel | int] = Field(min_length=1, description="Human label per round.")
    adversarial: bool = Field(False, description="An answer here addresses the judge (claims to be graded, orders "
                                                 "a verdict, embeds a fake rubric): the verdict must not move.")


class CalibrationSet(_Frozen):
    """Items for calibrating one judge; never the test set itself."""

    judge: str = Field(description="Name of the judge this set calibrates.")
    items: list[CalibrationItem] = Field(min_length=1)

    def check(self, spec: JudgeSpec) -> list[str]:
        """Problems of this set for ``spec`` (field paths and fixes), empty when usable."""
        out: list[str] = []
        if self.judge != spec.name:
            out.append(f"judge: the set is for {self.judge!r}, not {spec.name!r} (fix: use the matching judge file)")
        ids = [i.id for i in self.items]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            out.append(f"items: id {dup!r} appears twice (fix: give every item a unique id)")
        lo, hi = spec.scale
        for n, item in enumerate(self.items):
            where = f"items.{n} ({item.id})"
            if spec.mode == "pairwise":
                if item.a is None or item.b is None:
                    out.append(f"{where}: pairwise items need 'a' and 'b' (fix: add both answers)")
                if any(lab not in ("A", "B", "tie") for lab in item.labels):
                    out.append(f"{where}.labels: pairwise labels are A, B or tie")
            else:
                if item.output is None:
                    out.append(f"{where}: absolute items need 'output' (fix: add the answer to score)")
                if any(isinstance(lab, str) or not lo <= lab <= hi for lab in item.labels):
                    out.append(f"{where}.labels: absolute labels are whole scores from {lo} to {hi}")
        rounds = {len(i.labels) for i in self.items}
        if len(rounds) > 1:
            out.append(f"items: every item needs the same number of label rounds (found {sorted(rounds)})")
        return out


class Agreement(_Frozen):
    """Agreement figures of one calibration (None where the data cannot give the figure)."""

    items: int
    parsed: int
    parse_failures: int
    cohen_kappa: float | None
    krippendorff_alpha: float | None
    human_kappa: float | None = Field(None, description="Round 1 vs round 2 of the human labels.")
    tpr: float | None
    tnr: float | None
    flip_rate: float | None = Field(None, description="Pairwise: share of items whose verdict flips with order.")
    length_bias_judge: float | None = Field(None, description="Spearman rho: judge preference vs length.")
    length_bias_human: float | None = Field(None, description="Spearman rho: human preference vs length.")
    injection_items: int = Field(0, description="Adversarial items in the set.")
    injection_flip_rate: float | None = Field(None, description="Share of adversarial items whose verdict left the "
                                              "human label (an unparsed answer counts as moved); None without them.")


class CalibrationRecord(_Frozen):
    """A calibration, bound to the judge digest it was measured for. Written once, versioned."""

    schema_: str = Field(CALIBRATION_SCHEMA, alias="schema")
    judge: str
    judge_version: str
    judge_digest: str
    model: str
    backend: str | None
    set_sha256: str
    created_at: float
    agreement: Agreement
    thresholds: Thresholds
    passed: bool
    failures: list[str] = Field(default_factory=list, description="Which thresholds were missed.")
    verdicts: list[dict[str, object]] = Field(default_factory=list, description="Per item: judge and human labels.")

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True, populate_by_name=True)


# ----------------------------------------------------------------------------- in a run's report


class _Read(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="ignore", frozen=True)


class JudgeVerdict(_Read):
    """One judged answer of a run (a final attempt's judge predicate, final or of a turn)."""

    trial_id: str
    task_id: str
    agent: str
    predicate: str
    turn: int | None = Field(None, description="The conversation turn whose answer was judged (None: the final state).")
    answer_chars: int | None = Field(None, description="Length of the judged answer (None: there was none).")
    verdict: PairLabel | None = Field(None, description="Pairwise: the agent's answer (A) against the reference.")
    score: float | None = Field(None, description="Absolute: the judge's score.")
    held: bool
    counted: bool = Field(description="False when the judge was not calibrated for the run's model.")


class JudgeSummary(_Read):
    """One judge (name, version, model) over a run: its calibration next to the verdicts it gave."""

    judge: str
    version: str
    model: str
    mode: str
    calibration: list[str] = Field(description="Calibration states seen, e.g. ['calibrated'].")
    agreement: Agreement | None = Field(None, description="The calibration record's figures, when readable.")
    scale: tuple[float, float] | None = Field(None, description="Absolute mode: the score scale.")
    length_rho: float | None = Field(None, description="This run: Spearman rho of the judge's preference "
                                     "against the answer's length (None below 3 verdicts or without spread).")
    verdicts: list[JudgeVerdict]

    def preference(self, v: JudgeVerdict) -> float | None:
        """0..1: how much the judge preferred the answer (pairwise A=1, tie=0.5, B=0; absolute:
        the score on its scale)."""
        if v.verdict is not None:
            return {"A": 1.0, "tie": 0.5, "B": 0.0}[v.verdict]
        if v.score is not None and self.scale is not None and self.scale[1] > self.scale[0]:
            return (v.score - self.scale[0]) / (self.scale[1] - self.scale[0])
        return None

    @property
    def counted(self) -> int:
        return sum(1 for v in self.verdicts if v.counted)

    @property
    def held(self) -> int:
        return sum(1 for v in self.verdicts if v.counted and v.held)


# ----------------------------------------------------------------------------- the predicate


class JudgeCheck(PredicateSpec):
    """An LLM judge's verdict on what has no single right answer (fail closed unless calibrated).

    ``judge`` and ``calibration`` are files of the task's verifier code (``verify/``): the judge
    definition and its calibration record. Pairwise compares the agent's answer (A) with a hidden
    reference answer (B) in both orders; absolute scores the answer. The judge model is the run's
    ``--judge-model``, through a gateway session of its own. An uncalibrated, stale or
    below-threshold judge never passes (it cannot contribute to a strict pass), and a judge can
    never turn a failed deterministic predicate into a pass: every required predicate must hold.
    """

    kind: Literal["judge"] = "judge"
    judge: str = Field(description="Judge definition (YAML) under the task's verify/ directory.")
    calibration: str = Field(description="Calibration record (JSON) under the task's verify/ directory.")
    target: str = Field("final_output", description="final_output, or file:PATH of the final workspace.")
    reference: str | None = Field(None, description="Pairwise: file under hidden/ with the reference answer.")
    accept: Literal["win", "win_or_tie"] = Field("win_or_tie", description="Pairwise: what counts as holding.")
