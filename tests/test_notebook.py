"""examples/cartpole.ipynb runs as a user runs it: every cell in a Jupyter kernel (nbclient,
the dev extra), no error, the curve and the agent's GIF displayed."""
import os

import nbclient
import nbformat
import pytest

from conftest import REPO

NOTEBOOK = os.path.join(REPO, "examples", "cartpole.ipynb")


@pytest.mark.timeout(300)
def test_the_cartpole_notebook_trains_plots_and_shows_the_agent(tmp_path, monkeypatch):
  monkeypatch.setenv("PYTHONPATH", REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
  notebook = nbformat.read(NOTEBOOK, as_version=4)
  nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3",
                          resources={"metadata": {"path": str(tmp_path)}}).execute()
  outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
  assert not [o for o in outputs if o.output_type == "error"]
  text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
  assert "agent step 4000: evaluation mean return" in text
  assert "Run summary: total_steps reached at agent step 8000" in text
  images = [m for o in outputs if o.output_type == "display_data" for m in o.data
            if m.startswith("image/")]
  assert images == ["image/png", "image/gif"], images
  runs = os.listdir(tmp_path / "runs")
  assert len(runs) == 1 and runs[0].startswith("cartpole-")
