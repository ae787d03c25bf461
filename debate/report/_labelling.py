"""The labelling sheet: the items a policy escalates, for people to rule on offline.

``debate decide --policy P --to-people DIR`` writes two files:

* ``to_label.csv``: one verdict row per escalated item (``item, judge, verdict`` plus
  context columns the reader ignores), ``verdict`` left blank for a person to fill in with
  A, B or tie and ``judge`` set to ``person_1`` (rename it to tell people apart). Filled in,
  it is a labels table: ``debate validity FILE --labels to_label.csv`` reads it, and so the
  rulings feed the next calibration.
* ``to_label.html``: the same items as a page that works offline (no network, no server):
  a person picks A, B or tie for each and saves the same CSV from the page.

Item and option names are data: escaped in the page, and quoted by the CSV writer.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Sequence
from pathlib import Path

from debate.records import ItemDecision

SHEET_COLUMNS = ("item", "judge", "verdict", "option_a", "option_b", "panel_lead", "p_agree")
"""The sheet's columns: the first three make it a labels table; the rest are context."""
DEFAULT_PERSON = "person_1"


def escalated(decisions: Sequence[ItemDecision]) -> list[ItemDecision]:
    """The decisions a policy left to people, one per item (the first pair of an item)."""
    seen: set[str] = set()
    out = []
    for d in decisions:
        if d.outcome == "escalate" and d.item not in seen:
            seen.add(d.item)
            out.append(d)
    return out


def sheet_rows(decisions: Sequence[ItemDecision]) -> list[dict[str, str]]:
    """One blank verdict row per escalated item."""
    return [
        {
            "item": d.item,
            "judge": DEFAULT_PERSON,
            "verdict": "",
            "option_a": d.options[0],
            "option_b": d.options[1],
            "panel_lead": d.lead or "",
            "p_agree": "" if d.p_agree is None else f"{d.p_agree:.3f}",
        }
        for d in escalated(decisions)
    ]


def sheet_csv(rows: Sequence[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SHEET_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def sheet_html(rows: Sequence[dict[str, str]]) -> str:
    """A page that lists the items with A / B / tie choices and saves the CSV, offline."""
    body = "\n".join(_row_html(k, row) for k, row in enumerate(rows))
    data = json.dumps(list(rows)).replace("<", "\\u003c")
    return _PAGE.format(count=len(rows), rows=body, data=data)


def _row_html(k: int, row: dict[str, str]) -> str:
    e = html.escape
    lead = f"panel leans {e(row['panel_lead'])}" if row["panel_lead"] else "panel has no lead"
    p = f", p_agree {e(row['p_agree'])}" if row["p_agree"] else ""
    choices = "".join(
        f'<label><input type="radio" name="v{k}" value="{v}"> {label}</label>'
        for v, label in (("A", f"A: {e(row['option_a'])}"), ("B", f"B: {e(row['option_b'])}"))
    )
    choices += f'<label><input type="radio" name="v{k}" value="tie"> tie</label>'
    return (
        f'<tr><td class="item">{e(row["item"])}</td><td>{choices}</td>'
        f'<td class="hint">{lead}{p}</td></tr>'
    )


def write_labelling_sheet(folder: Path, decisions: Sequence[ItemDecision]) -> str:
    """Write ``to_label.csv`` and ``to_label.html`` into ``folder``; a line saying so."""
    rows = sheet_rows(decisions)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "to_label.csv").write_text(sheet_csv(rows), encoding="utf-8")
    (folder / "to_label.html").write_text(sheet_html(rows), encoding="utf-8")
    return (
        f"{len(rows)} escalated items written for people to {folder / 'to_label.csv'} and "
        f"{folder / 'to_label.html'}; fill in verdict (A, B or tie) and give the file to "
        "`debate validity --labels`"
    )


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Items for people to label</title>
<style>
body {{ font: 15px/1.45 system-ui, sans-serif; margin: 1.5rem; color: #1d1d1f; }}
table {{ border-collapse: collapse; width: 100%; }}
td, th {{ border-bottom: 1px solid #ddd; padding: .45rem .5rem; text-align: left; }}
label {{ margin-right: 1rem; white-space: nowrap; }}
.item {{ font-family: ui-monospace, monospace; }}
.hint {{ color: #666; font-size: 13px; }}
button {{ font: inherit; padding: .4rem .9rem; }}
</style></head><body>
<h1>Items for people to label</h1>
<p>The panel could not give these {count} items a verdict with its guarantee. For each,
choose which option is better (or tie), then save the file and give it to
<code>debate validity --labels</code>. Nothing leaves this page: it works offline.</p>
<p><label>Your name <input id="who" value="person_1"></label>
<button id="save" type="button">Save to_label.csv</button> <span id="left"></span></p>
<table><thead><tr><th>item</th><th>which is better?</th><th>the panel</th></tr></thead>
<tbody>
{rows}
</tbody></table>
<script>
const ROWS = {data};
function cell(v) {{
  const s = String(v);
  return /[",\\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}}
function picked(k) {{
  const c = document.querySelector('input[name="v' + k + '"]:checked');
  return c ? c.value : "";
}}
function update() {{
  const left = ROWS.filter((_, k) => !picked(k)).length;
  document.getElementById("left").textContent = left + " of " + ROWS.length + " left";
}}
document.addEventListener("change", update);
document.getElementById("save").addEventListener("click", () => {{
  const who = document.getElementById("who").value.trim() || "person_1";
  const head = ["item", "judge", "verdict", "option_a", "option_b"];
  const lines = [head.join(",")];
  ROWS.forEach((r, k) => {{
    const v = picked(k);
    if (v) lines.push([r.item, who, v, r.option_a, r.option_b].map(cell).join(","));
  }});
  const blob = new Blob([lines.join("\\n") + "\\n"], {{type: "text/csv"}});
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = "to_label.csv";
  a.click();
}});
update();
</script>
</body></html>
"""
