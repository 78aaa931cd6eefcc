"""The mapping report of an import: per task, what mapped to assay's own fields, what was
approximated, what could not map and why, and whether the task was imported at all."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class TaskReport:
    """One source task: ``imported`` False means it is not in the suite (``refused`` says why)."""

    source: str
    id: str
    imported: bool = True
    mapped: list[str] = field(default_factory=list)
    approximated: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def refuse(self, why: str) -> None:
        self.imported = False
        self.refused.append(why)


@dataclass
class ImportReport:
    """Every task of one import, and the category weights the importer chose."""

    format: str
    source: str
    tasks: list[TaskReport] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    weights_note: str = ("each category weighs 1.0 (a macro-average over the categories found): the importer's "
                         "choice, edit suite.yaml to change it")

    @property
    def left_out(self) -> list[TaskReport]:
        return [t for t in self.tasks if not t.imported]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    def to_markdown(self) -> str:
        n = sum(t.imported for t in self.tasks)
        out = [f"# Import of {self.source} ({self.format})", "",
               f"{n} of {len(self.tasks)} task(s) imported. Category weights: {self.weights_note}.", ""]
        for t in self.tasks:
            out.append(f"## {t.id}: {'imported' if t.imported else 'NOT imported'}")
            for title, items in (("Refused", t.refused), ("Could not map", t.unmapped),
                                 ("Approximated", t.approximated), ("Mapped", t.mapped)):
                if items:
                    out += [f"- **{title}**:", *[f"  - {i}" for i in items]]
            out.append("")
        return "\n".join(out)

    def write(self, suite_dir: Path) -> None:
        (suite_dir / "import-report.json").write_text(self.to_json())
        (suite_dir / "import-report.md").write_text(self.to_markdown())
