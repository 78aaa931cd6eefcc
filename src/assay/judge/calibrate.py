"""``assay judge calibrate``: run a judge over a human-labelled calibration set and record how far
it can be trusted, bound to the judge's digest.

Pairwise items are judged in both orders (position bias); the judge's verdict for agreement is
the order-consistent one (an order flip counts as a tie). Human round 1 is the reference; a
second round gives human-vs-human agreement, which bounds what any judge can reach.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from assay.errors import InfraRateExceeded, SpecError, SpecProblem
from assay.judge import agreement as ag
from assay.judge.client import JudgeClient, JudgeOutputError
from assay.spec.digest import sha256_file
from assay.spec.judge import SWAPPED, Agreement, CalibrationRecord, CalibrationSet, JudgeSpec, Thresholds
from assay.spec.user_file import read_user_yaml


_TYPES = {"int", "str", "float", "bool"}


def _load(path: Path, model: type, what: str):  # noqa: ANN202 - returns the model instance
    f = read_user_yaml(path, what=what, fix="see docs/judge.md for the format")
    try:
        return model.model_validate(f.data)
    except ValidationError as e:
        problems: dict[str, SpecProblem] = {}
        for err in e.errors():  # a union error names each member type: keep the field path, once
            loc = [x for x in err["loc"] if isinstance(x, int) or (x.isidentifier() and x not in _TYPES)]
            key = ".".join(map(str, loc))
            problems.setdefault(key, SpecProblem(str(path), f.where(loc), err["msg"], "see docs/judge.md for the format"))
        raise SpecError(list(problems.values())) from None


def load_judge(path: Path) -> JudgeSpec:
    return _load(path, JudgeSpec, "judge file")


def load_calibration_set(path: Path, spec: JudgeSpec) -> CalibrationSet:
    cset = _load(path, CalibrationSet, "calibration set")
    problems = cset.check(spec)
    if problems:
        raise SpecError([SpecProblem(str(path), p.split(":", 1)[0], p.split(":", 1)[1].strip()) for p in problems])
    return cset


@dataclass
class Judged:
    """What the judge said about each item (None where its answer did not parse)."""

    first: dict[str, object | None] = field(default_factory=dict)
    swapped: dict[str, str | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    #: items the judge never saw an answer for: the model could not be reached or answered an HTTP
    #: error (the machinery's failure, not the judge's; such a calibration records nothing)
    infra: dict[str, str] = field(default_factory=dict)


#: a judge call that failed for the harness's reasons: no answer to judge
INFRA_REASONS = ("judge_unreachable", "judge_http", "run_budget")


def judge_items(client: JudgeClient, cset: CalibrationSet) -> Judged:
    """The judge's verdicts on the set's items in order, up to the first item the model could not
    answer: :func:`calibrate` refuses the set then, whatever the rest would say, so no later item is
    sent (each a paid call; a mistyped URL cost a minute of back-off over every item)."""
    out = Judged()
    for item in cset.items:
        if out.infra:
            break
        try:
            if client.spec.mode == "pairwise":
                assert item.a is not None and item.b is not None
                out.first[item.id] = client.pairwise(item.prompt, item.a, item.b)
                out.swapped[item.id] = client.pairwise(item.prompt, item.b, item.a)
            else:
                assert item.output is not None
                out.first[item.id] = client.absolute(item.prompt, item.output)
        except JudgeOutputError as e:
            out.first[item.id] = None
            out.errors[item.id] = str(e)
            if e.reason in INFRA_REASONS:
                out.infra[item.id] = str(e)
    return out


def measure(spec: JudgeSpec, cset: CalibrationSet, judged: Judged) -> tuple[Agreement, list[dict[str, object]]]:
    """The agreement figures of one judged calibration set (a pure function of labels and verdicts)."""
    rows: list[dict[str, object]] = []
    judge_labels: dict[str, object] = {}
    for item in cset.items:
        v = judged.first.get(item.id)
        if v is not None and spec.mode == "pairwise":
            w = judged.swapped.get(item.id)
            v = v if w is not None and SWAPPED[str(v)] == w else "tie"
        if v is not None:
            judge_labels[item.id] = v
        rows.append({"id": item.id, "judge": v, "first_order": judged.first.get(item.id),
                     "swapped_order": judged.swapped.get(item.id), "human": list(item.labels),
                     "error": judged.errors.get(item.id)})
    parsed = [i for i in cset.items if i.id in judge_labels]
    human1 = [i.labels[0] for i in parsed]
    jl = [judge_labels[i.id] for i in parsed]
    kappa = ag.cohen_kappa(jl, human1) if parsed else None  # type: ignore[arg-type]
    human_kappa = None
    if all(len(i.labels) >= 2 for i in cset.items):
        human_kappa = ag.cohen_kappa([i.labels[0] for i in cset.items], [i.labels[1] for i in cset.items])
    rounds = max(len(i.labels) for i in cset.items)
    raters = [[i.labels[r] if r < len(i.labels) else None for i in cset.items] for r in range(rounds)]
    raters.append([judge_labels.get(i.id) for i in cset.items])  # type: ignore[misc]
    level = "nominal" if spec.mode == "pairwise" else "ordinal"
    alpha = ag.krippendorff_alpha(raters, level)  # type: ignore[arg-type]
    if spec.mode == "pairwise":
        binary = [(j, h) for j, h in zip(jl, human1) if h != "tie"]
        tpr, tnr = ag.rates([j == "A" for j, _ in binary], [h == "A" for _, h in binary])
        both = [i for i in cset.items if judged.first.get(i.id) is not None and judged.swapped.get(i.id) is not None]
        flips = ag.flip_rate([str(judged.first[i.id]) for i in both], [str(judged.swapped[i.id]) for i in both])
        lengths = [float(len(i.a or "") - len(i.b or "")) for i in parsed]
        lb_judge = ag.spearman(lengths, [ag.preference(j) for j in jl])  # type: ignore[arg-type]
        lb_human = ag.spearman(lengths, [ag.preference(h) for h in human1])
    else:
        tpr, tnr = ag.rates([int(j) >= spec.pass_score for j in jl],  # type: ignore[call-overload]
                            [int(h) >= spec.pass_score for h in human1])
        flips = None
        lengths = [float(len(i.output or "")) for i in parsed]
        lb_judge = ag.spearman(lengths, [float(j) for j in jl])  # type: ignore[arg-type]
        lb_human = ag.spearman(lengths, [float(h) for h in human1])
    figures = Agreement(items=len(cset.items), parsed=len(parsed), parse_failures=len(cset.items) - len(parsed),
                        cohen_kappa=kappa, krippendorff_alpha=alpha, human_kappa=human_kappa, tpr=tpr, tnr=tnr,
                        flip_rate=flips, length_bias_judge=lb_judge, length_bias_human=lb_human,
                        **_injection(spec, cset, judge_labels))
    return figures, rows


def _injection(spec: JudgeSpec, cset: CalibrationSet, judge_labels: dict[str, object]) -> dict[str, object]:
    """How often the answer talked the judge out of the human verdict on the adversarial items."""
    adv = [i for i in cset.items if i.adversarial]
    if not adv:
        return {"injection_items": 0, "injection_flip_rate": None}

    def same(j: object, h: object) -> bool:
        if spec.mode == "pairwise":
            return j == h
        return (int(j) >= spec.pass_score) == (int(h) >= spec.pass_score)  # type: ignore[call-overload]

    moved = sum(1 for i in adv if i.id not in judge_labels or not same(judge_labels[i.id], i.labels[0]))
    return {"injection_items": len(adv), "injection_flip_rate": round(moved / len(adv), 6)}


def missed(figures: Agreement, t: Thresholds) -> list[str]:
    """Every threshold the calibration misses; a figure that could not be computed misses (unknown is failure)."""
    out = []
    if figures.parsed < t.min_items:
        out.append(f"parsed items {figures.parsed} < min_items {t.min_items}")
    if figures.items and figures.parse_failures / figures.items > t.max_parse_failures:
        out.append(f"parse failures {figures.parse_failures}/{figures.items} > {t.max_parse_failures:g}")
    for name, value, floor in (("cohen_kappa", figures.cohen_kappa, t.kappa), ("tpr", figures.tpr, t.tpr),
                               ("tnr", figures.tnr, t.tnr)):
        if value is None or value < floor:
            out.append(f"{name} {'n/a' if value is None else f'{value:.3f}'} < {floor:g}")
    if figures.flip_rate is not None and figures.flip_rate > t.max_flip_rate:
        out.append(f"flip_rate {figures.flip_rate:.3f} > {t.max_flip_rate:g}")
    if figures.injection_flip_rate is not None and figures.injection_flip_rate > t.max_injection_flip_rate:
        out.append(f"injection_flip_rate {figures.injection_flip_rate:.3f} > {t.max_injection_flip_rate:g}: the "
                   "verdict moved on answers addressing the judge")
    return out


def calibrate(spec: JudgeSpec, cset: CalibrationSet, client: JudgeClient, *, backend: str | None,
              set_sha256: str, judge_items_fn: Callable[[JudgeClient, CalibrationSet], Judged] = judge_items
              ) -> CalibrationRecord:
    """Judge every item and build the calibration record (nothing is written). A model that could
    not answer an item (unreachable, an HTTP error) is refused, exit 4: a record then would
    describe the machinery as the judge (every item a parse failure, the injection items moved)."""
    judged = judge_items_fn(client, cset)
    if judged.infra:
        (item_id, why), = judged.infra.items()  # the first such item ends the judging
        rest = len(cset.items) - len(judged.first)
        raise InfraRateExceeded(f"the judge model could not answer item {item_id} ({why}); the {rest} other item(s) "
                                "were not asked and nothing was recorded: a calibration measures the judge, not the "
                                "connection (fix: check --model, and that the model answers)")
    figures, rows = measure(spec, cset, judged)
    failures = missed(figures, spec.thresholds)
    return CalibrationRecord(judge=spec.name, judge_version=spec.version, judge_digest=spec.digest(client.model, backend),
                             model=client.model, backend=backend, set_sha256=set_sha256, created_at=time.time(),
                             agreement=figures, thresholds=spec.thresholds, passed=not failures, failures=failures,
                             verdicts=rows)


def calibrate_files(judge_file: Path, set_file: Path, model: str) -> CalibrationRecord:
    """Load the judge and its set, serve the judge model through a gateway of its own, calibrate."""
    from assay.gateway.standalone import start_standalone
    from assay.judge.model import judge_record

    spec = load_judge(judge_file)
    cset = load_calibration_set(set_file, spec)
    record = judge_record(model)
    gw = start_standalone(record)
    try:
        client = JudgeClient(gw.url, gw.session.key, gw.session.model, spec)
        return calibrate(spec, cset, client, backend=record.backend, set_sha256=sha256_file(set_file))
    finally:
        gw.stop()
