"""The quickstart notebook runs top to bottom, offline, and shows the report's charts."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT

NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
MISSING = [m for m in ("nbclient", "nbformat", "ipykernel") if importlib.util.find_spec(m) is None]


@pytest.mark.skipif(
    bool(MISSING),
    reason=f"executing the notebook needs {', '.join(MISSING)}: pip install nbclient nbformat "
    "ipykernel",
)
def test_quickstart_notebook_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # jupyter_core warns about its path migration unless this is set; warnings are errors.
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    import nbclient
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        kernel_name="python3",  # jupyter_client runs it with this interpreter (the venv's)
        timeout=60,
        resources={"metadata": {"path": str(tmp_path)}},  # the report lands in tmp_path
    )
    client.execute()

    outputs: list[dict[str, Any]] = [o for c in notebook.cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    svgs = [h for h in html if h.lstrip().startswith("<svg")]
    assert len(svgs) >= 5, "margin, alpha, kappa, heatmap and dimension charts are shown inline"
    assert any('class="chart heatmap"' in s for s in svgs)
    markdown = [o["data"]["text/markdown"] for o in outputs if "text/markdown" in o.get("data", {})]
    assert markdown and re.match(r"# \S", markdown[0])  # the verdict
    assert (tmp_path / "quickstart-report" / "report.html").exists()
    assert (tmp_path / "quickstart-report" / "report.md").exists()
