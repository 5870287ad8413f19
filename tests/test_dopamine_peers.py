"""Dopamine's baselines at 10M frames: the iteration arithmetic, the CSV made from their
data files, and its table in the 12-game report."""
import collections
import json

import pytest

from conftest import run_module
from tools.reports import dopamine_peers
from tools.reports import games

REPS = 200


def test_iteration_and_frames():
  # An iteration: 250,000 agent steps x 4 frames = 1M frames; 10M frames: the 10th's end.
  assert dopamine_peers.frames_at_iteration_end(0) == 1_000_000
  assert dopamine_peers.frames_at_iteration_end(9) == 10_000_000
  assert dopamine_peers.iteration_at_frames(10_000_000) == 9
  assert dopamine_peers.iteration_at_frames(1_000_000) == 0
  assert dopamine_peers.iteration_at_frames(200_000_000) == 199
  for frames in (0, 2_500_000, 10_000_001):
    with pytest.raises(ValueError, match="not the end of a Dopamine iteration"):
      dopamine_peers.iteration_at_frames(frames)


def test_data_file_names():
  assert dopamine_peers.data_file("MsPacman") == "mspacman.json"
  assert dopamine_peers.data_file("UpNDown") == "upndown.json"
  assert dopamine_peers.data_file("NameThisGame") == "namethisgame.json"
  assert dopamine_peers.data_file("Breakout") == "breakout.json"


def _records(agent, iteration, values):
  return [{"Iteration": iteration, "Value": v, "Agent": agent} for v in values]


def test_rows_average_the_seeds_at_iteration_9_and_round_trip(tmp_path):
  files = {"breakout.json": (_records("DQN", 8, [1.0] * 5)
                             + _records("DQN", 9, [10, 20, 30, 40, 50])
                             + _records("IQN", 9, [100.0, 102.0]) + _records("IQN", 10, [999.0])),
           "pong.json": _records("Rainbow", 9, [15.0, 16.0, 17.0, 14.0, 13.0])}
  rows = dopamine_peers.rows(lambda name: files[name], ["Breakout", "Pong"])
  assert rows == [("Breakout", "DQN", 9, 10_000_000, 5, 30.0, 15.81),
                  ("Breakout", "IQN", 9, 10_000_000, 2, 101.0, 1.41),
                  ("Pong", "Rainbow", 9, 10_000_000, 5, 15.0, 1.58)]
  # Read from a checkout's data directory, as the command does.
  data = tmp_path / "dopamine" / "baselines" / "atari" / "data"
  data.mkdir(parents=True)
  for name, records in files.items():
    (data / name).write_text(json.dumps(records))
  read, _ = dopamine_peers.reader(str(tmp_path / "dopamine"))
  assert dopamine_peers.rows(read, ["Breakout", "Pong"]) == rows
  text = dopamine_peers.write_csv(rows, "abc123", ["Breakout", "Pong"])
  assert text.startswith("# Source: github.com/google/dopamine, commit abc123, files "
                         "baselines/atari/data/breakout.json, baselines/atari/data/pong.json\n")
  assert "sticky actions (repeat action probability 0.25)" in text
  path = tmp_path / "results" / "peers" / "dopamine_10m.csv"
  path.parent.mkdir(parents=True)
  path.write_text(text)
  assert dopamine_peers.read_csv(str(path)) == {"Breakout": {"DQN": 30.0, "IQN": 101.0},
                                                "Pong": {"Rainbow": 15.0}}
  proc = run_module("tools.reports.dopamine_peers", "--dopamine", str(tmp_path / "nope"),
                    timeout=120)
  err = proc.stderr.strip().splitlines()
  assert proc.returncode == 2 and len(err) == 1 and err[0].startswith("error: "), proc.stderr


def test_games_report_shows_the_peers_beside_our_10m_scores(tmp_path):
  text = dopamine_peers.write_csv([("Breakout", "DQN", 9, 10_000_000, 5, 21.48, 4.0)],
                                  "abc123", ["Breakout"])
  (tmp_path / "peers").mkdir()
  (tmp_path / "peers" / "dopamine_10m.csv").write_text(text)
  report = games.report(str(tmp_path), "cmd", str(tmp_path), reps=REPS)
  assert "## Peers at 10M frames: Dopamine's baselines" in report
  assert "| Breakout | — | 21.5 | — | — | — |" in report
  assert report.index("## Peers at 10M frames") < report.index("## Aggregates")
  # With one of our runs evaluated at 10M frames: its mean beside theirs.
  run = collections.namedtuple("Run", "score")((23.25, 1.0, 30))
  lines = games.dopamine_lines([("Breakout", [run])], str(tmp_path))
  assert "| Breakout | 23.2 | 21.5 | — | — | — |" in "\n".join(lines)
  assert games.dopamine_lines([("Breakout", [run])], str(tmp_path / "none")) == []
