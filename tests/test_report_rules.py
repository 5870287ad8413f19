"""The rules the committed reports must keep (results/*.md, docs/results.md, run_info.json):
each test reads the committed files and the results folders beside them, so a table typed or
generated against a rule fails here. PAAC_REPORTS_ROOT: check another checkout's reports
(e.g. an older commit's, extracted with `git archive`) with this code.

1. an aggregate holds every run its table shows and names them (games.md, the README), and
   its interval resamples what can vary;
2. an ablation table holds every column at its title's budget, every seed of a config of its
   own, sample std, earlier-protocol evaluations marked;
3. a time to a score is of the training average over all episodes;
4. a headline median names one budget and one protocol, its runs were evaluated there,
   one run per seed of a game;
5. earlier-protocol scores are marked and every std is the sample std (seeds.md, docs);
6. run_info.json is complete (commit or a note why not; config matching the command), its
   wall time without pauses;
7. the reports read nothing outside the results folder they are given.
"""
import glob
import json
import os
import re
import statistics

import pytest

from tools.reports import ablation
from tools import events
from tools import reference_scores as ref
from tools.reports import results_table as rt
from tools.reports import run_groups
from tools.reports import run_labels
from tools.reports import run_record
from tools.reports import run_results
from tools.reports import seed_runs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.environ.get("PAAC_REPORTS_ROOT", REPO)
RESULTS = os.path.join(ROOT, "results")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)/\)")
_SCORE = re.compile(r"(-?\d+(?:\.\d+)?) ± (\d+(?:\.\d+)?)")


def _read(*parts):
  with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
    return f.read()


def _table_rows(text):
  """The cells of every markdown table row of `text` (not the header rules)."""
  return [[c.strip() for c in line.strip().strip("|").split("|")]
          for line in text.splitlines()
          if line.startswith("|") and not line.startswith("|---")]


def _percent(text):
  return float(text.rstrip("%")) / 100.0


@pytest.fixture(scope="module")
def seed_folders():
  return {r.name: r for r in seed_runs.find(RESULTS)}


# --- 1. the 12-game aggregate -------------------------------------------------------------

def test_12_game_median_and_iqm_hold_the_scores_the_table_shows():
  text = _read("results", "games.md")
  shown, folders = {}, set()
  for cells in _table_rows(text)[1:]:
    game = cells[0].split(" (")[0]
    if cells[3].endswith("%"):
      shown[game] = _percent(cells[3])
      folders |= {name for name, _ in _LINK.findall(cells[0])}
  aggregate = next(line for line in text.splitlines() if "human-normalized median" in line)
  median = _percent(re.search(r"median (-?[\d.]+%)", aggregate).group(1))
  iqm = _percent(re.search(r"IQM (-?[\d.]+%)", aggregate).group(1))
  values = sorted(shown.values())
  quarter = len(values) // 4           # 12 games: rliable's IQM is the mean of the middle 6
  assert median == pytest.approx(statistics.median(values), abs=0.002)
  assert iqm == pytest.approx(statistics.fmean(values[quarter:len(values) - quarter]),
                              abs=0.002)
  assert "The runs: " in aggregate
  named = {n.rstrip(".") for n in re.findall(r"[a-z0-9_.]+_[a-z0-9_.]+",
                                             aggregate.split("The runs: ")[1])}
  assert named == folders             # every run the table shows, no other
  assert aggregate in _read("README.md")       # the README's glance says the same


def test_an_aggregates_interval_can_move():
  """A 95% CI equal to its point on both sides comes from resampling what cannot vary (one
  score a game resampled within its game): the aggregates of games.md and the README show
  intervals that resample the games then."""
  for name in (("results", "games.md"), ("README.md",)):
    for line in _read(*name).splitlines():
      if "human-normalized median" not in line:
        continue
      intervals = re.findall(r"(-?[\d.]+%) \(95% CI (-?[\d.]+%) to (-?[\d.]+%)\)", line)
      assert intervals, line
      for point, low, high in intervals:
        assert _percent(low) < _percent(high), (name, point, low, high)
        assert _percent(low) <= _percent(point) <= _percent(high), (name, point, low, high)


def test_the_12_game_aggregate_states_the_fire_assist_beside_it():
  """The games evaluated with the FIRE assist (games.md's assists column) are counted in the
  line under the aggregate, with the policies' own-action median, in games.md and README."""
  text = _read("results", "games.md")
  rows = [c for c in _table_rows(text)[1:] if c[3].endswith("%")]
  assisted = sum("FIRE" in c[2] for c in rows)
  assert assisted
  for name in (("results", "games.md"), ("README.md",)):
    lines = [line for line in _read(*name).splitlines() if "with the FIRE assist" in line]
    assert len(lines) == 1, name
    assert lines[0].startswith("%d of the %d games were evaluated with the FIRE assist" % (
        assisted, len(rows))), lines[0][:120]
    assert re.search(r"own actions only: median -?[\d.]+% \(95% CI", lines[0])


# --- 2. the ablation tables ---------------------------------------------------------------

def _ablation_reports():
  folder = os.path.join(RESULTS, "ablation_paac")
  return sorted(n for n in os.listdir(folder) if n.endswith(".md"))


def _runs_of(text):
  """{row label: [results folder]} from the report's 'Runs:' list."""
  out = {}
  for label, folder in re.findall(r"^- (.+?): `.*` \((\S+)\)$", text, re.M):
    out.setdefault(label, []).append(os.path.basename(folder))
  return out


@pytest.mark.parametrize("name", _ablation_reports())
def test_ablation_table_at_its_titles_budget_with_every_seed(name, seed_folders):
  text = _read("results", "ablation_paac", name)
  budget = float(re.match(r"# \w+: PAAC runs compared at ([\d.]+)M frames", text).group(1))
  steps = int(budget * 1e6 / ref.FRAMES_PER_AGENT_STEP)
  runs = _runs_of(text)
  rows = _table_rows(text)[1:]
  assert rows
  for cells in rows:
    assert cells[1] == "%.1fM" % budget, (name, cells[0], cells[1])
    label = cells[0].split(", seeds ")[0]
    folders = runs[label]
    first = seed_folders[folders[0]]
    if run_labels.is_headline_config(first.config):       # every seed that exists
      group = seed_runs.by_seed(list(seed_folders.values()), first.game, first.config, steps)
      assert sorted(folders) == sorted(r.name for r in group.runs.values()), (name, label)
    score = _SCORE.search(cells[-1])
    if len(folders) > 1 or not score:
      continue
    evaluated = first.evaluation_at(steps)
    assert evaluated is not None, "%s: %s's evaluation is not at %s frames" % (
        name, label, budget)
    mean, std, _ = run_record.eval_stats(evaluated.evaluation)
    assert score.group(0) == "%.1f ± %.1f" % (mean, std), (name, label)      # sample std
    if not run_record.seeds_apart(evaluated.evaluation):
      assert run_record.EARLIER_MARK in cells[-1], (name, label)


# --- 3. time to a score -------------------------------------------------------------------

def test_time_to_score_from_the_all_episode_training_average():
  text = _read("results", "time_to_score.md")
  checked = 0
  for cells in _table_rows(text)[1:]:
    folder = os.path.join(ROOT, cells[1])
    if cells[2].startswith("-") or not os.path.isdir(folder):
      continue
    curve = ablation.read_curve(cells[1], folder, all_episodes=True)
    hit = ablation.first_reach(curve, 18.0)
    assert hit is not None and "%.1fM" % (hit[0] / 1e6) == cells[2], cells[1]
    checked += 1
  assert checked


# --- 4. headline medians ------------------------------------------------------------------

_HEADLINE = re.compile(r"^- \*\*Median human-normalized score, (.+?), (\S+) at (\S+) frames, "
                       r"(%s|%s): (-?[\d.]+)%%\*\* over \d+ games? \((.+?)\)\. " % (
                           re.escape(rt.CURRENT), re.escape(rt.EARLIER)), re.M)


def test_each_headline_median_names_one_budget_and_protocol_and_its_runs_are_there():
  text = _read("results", "README.md")
  lines = [line for line in text.splitlines() if line.startswith("- **Median human-normalized")]
  assert lines
  results = run_results.collect([RESULTS])
  for line in lines:
    match = _HEADLINE.match(line)
    assert match, "no budget and protocol: %s" % line[:120]
    _, config, budget, protocol, _, held = match.groups()
    for folder in {n.rstrip(".") for n in re.findall(r"[a-z0-9.]+_[a-z0-9_.]+", held)}:
      there = [r for r in results if r.folder_name == folder and r.evaluated and
               rt.human_count(r.frames) == budget and rt.protocol_of(r) == protocol and
               r.config == config]
      assert there, "%s is not evaluated at %s frames by the %s (%s)" % (
          folder, budget, protocol, config)


def test_a_headline_holds_one_run_per_seed_of_a_game():
  """A game's runs in a headline median are of different seeds: a seed's stages are not
  averaged with another run of the same seed."""
  text = _read("results", "README.md")
  for line in text.splitlines():
    match = _HEADLINE.match(line)
    if not match:
      continue
    for game_runs in re.split(r", (?=[A-Z])", match.group(6)):
      folders = [n.rstrip(".") for n in re.findall(r"[a-z0-9.]+_[a-z0-9_.]+", game_runs)]
      seeds = [seed_runs.seed_of(os.path.join(RESULTS, f)) for f in folders]
      assert len(set(seeds)) == len(seeds), (line[:100], folders, seeds)


# --- 5. earlier protocol marked, sample std -----------------------------------------------

def test_seeds_report_marks_earlier_protocol_evaluations(seed_folders):
  text = _read("results", "seeds.md")
  per_seed = text.split("## Per seed")[1].split("##")[0]
  checked = 0
  for cells in _table_rows(per_seed)[1:]:
    name = _LINK.search(cells[3]).group(1)
    evaluated = seed_folders[name].evaluation_at(2_500_000)
    if evaluated is not None and not run_record.seeds_apart(evaluated.evaluation):
      assert run_record.EARLIER_MARK in cells[5], name
      checked += 1
  assert checked


def _evaluations():
  """(path, mean, population std, sample std, earlier protocol) of every evaluation file
  with its returns under results/ (archive/ included)."""
  for dirpath, _, names in os.walk(RESULTS):
    for n in names:
      if n.startswith("eval") and n.endswith(".json"):
        with open(os.path.join(dirpath, n), encoding="utf-8") as f:
          data = json.load(f)
        returns = data.get("returns") or []
        if len(returns) > 1:
          yield (os.path.join(dirpath, n), statistics.fmean(returns),
                 statistics.pstdev(returns), statistics.stdev(returns),
                 not run_record.seeds_apart(data))


def test_docs_results_types_sample_std_and_marks_earlier_protocol_scores():
  docs = _read("docs", "results.md")
  paragraphs = re.split(r"\n\s*\n|\n(?=\|)", docs)
  for path, mean, pstd, std, earlier in _evaluations():
    population, sample = "%.1f ± %.1f" % (mean, pstd), "%.1f ± %.1f" % (mean, std)
    if population != sample:
      assert population not in docs, "%s: population std in docs/results.md" % path
    if earlier:
      for p in paragraphs:
        if sample in p:
          assert "earlier protocol" in p, "%s: %s unmarked in docs/results.md" % (path, sample)


def test_quick_start_evaluations_are_their_eval_files_and_not_the_training_average():
  """Each evaluated cell of the README's quick-start table is an evaluation file of its run
  at two decimals with its standard error, so that 17.97 beside a training average of 18.0
  is not read as the same number."""
  text = _read("README.md")
  cells = [(c[0], c[5]) for c in _table_rows(text) if len(c) == 7 and c[5] and
           c[0].startswith("[")]
  assert cells
  for run, evaluated in cells:
    folder = _LINK.search(run).group(2).split("/")[-1]
    found = re.match(r"(-?\d+\.\d\d) \(s\.e\. (\d+\.\d\d); std", evaluated)
    assert found, evaluated
    means = []
    for name in os.listdir(os.path.join(RESULTS, folder)):
      if name.startswith("eval") and name.endswith(".json"):
        with open(os.path.join(RESULTS, folder, name)) as f:
          means.append(json.load(f).get("mean"))
    assert any(m is not None and abs(m - float(found.group(1))) <= 0.005 for m in means), (
        folder, evaluated, means)


def test_an_evaluation_without_a_recount_is_read_as_it_is_without_a_warning(tmp_path, caplog):
  path = str(tmp_path / "eval.json")
  data = {"mean": 1.0, "returns": [1.0]}
  assert run_groups.with_distinct_episodes(path, data) == data
  assert not [r for r in caplog.records if r.levelname == "WARNING"]
  with open(str(tmp_path / run_groups.DISTINCT_EPISODES), "w") as f:
    json.dump({"returns": [1.0], "distinct_episodes": 1, "replays": False}, f)
  assert run_groups.with_distinct_episodes(path, data) == dict(data, distinct_episodes=1,
                                                               replays=False)


def test_a_score_from_replayed_games_says_so_where_it_is_shown():
  """An evaluation whose episodes replay a few games (evaluation.py's `replays`, or a
  distinct_episodes.json recount of it) is marked on every line that shows its mean."""
  marked = 0
  for folder in sorted(glob.glob(os.path.join(RESULTS, "*"))):
    path = os.path.join(folder, "eval.json")
    if not os.path.isfile(path):
      continue
    with open(path) as f:
      evaluation = run_groups.with_distinct_episodes(path, json.load(f))
    if not evaluation.get("replays"):
      continue
    name, score = os.path.basename(folder), "%.1f ± " % evaluation["mean"]
    for report in (("README.md",), ("results", "README.md"), ("results", "games.md")):
      for line in _read(*report).splitlines():
        if "%s/)" % name in line and score in line:
          assert "replays" in line, (report, line[:160])
          marked += 1
  assert marked or not glob.glob(os.path.join(RESULTS, "*", run_groups.DISTINCT_EPISODES))


# --- 6. run_info.json ---------------------------------------------------------------------

def test_run_info_is_complete_for_every_run_shown():
  for r in run_results.collect([RESULTS]):
    info = r.run_info or {}
    name = r.folder_name
    assert "commit" in info, "%s: no commit" % name
    assert info["commit"] or info.get("commit_note"), "%s: commit null without a why" % name
    assert info.get("config"), "%s: no config" % name
    from_command = run_labels.config_of({"command": info.get("command")})[0]
    assert info["config"].split(" + ")[0] == (from_command or "").split(" + ")[0], (
        "%s: labelled %s, trained from %s" % (name, info["config"], from_command))


def test_run_info_wall_time_leaves_out_pauses():
  """run_info.json's wall_time_s is the training time: within 10% of summaries.csv's
  (gaps over events.PAUSE_S between summaries, pauses and resumes, left out)."""
  checked = 0
  for info_path in sorted(glob.glob(os.path.join(RESULTS, "*", "run_info.json"))):
    folder = os.path.dirname(info_path)
    with open(info_path) as f:
      wall = json.load(f).get("wall_time_s")
    rows = events.summaries_rows(folder) if isinstance(wall, (int, float)) else None
    active = events.summaries_training_seconds(rows) if rows else None
    if not active:
      continue
    assert abs(wall - active) <= 0.1 * active, (os.path.basename(folder), wall, active)
    checked += 1
  assert checked


# --- 7. nothing read outside the results folder -------------------------------------------

def test_a_report_reads_nothing_outside_its_results_folder(tmp_path):
  """An eval.json names the run directory it was trained in (policy_dir), which exists on
  the machine that trained it: the results folder alone is read all the same."""
  results, runs = tmp_path / "results", tmp_path / "runs"
  policy = runs / "x" / "policies" / "pong" / "100"
  policy.mkdir(parents=True)
  (runs / "x" / "run_config.json").write_text(json.dumps({"network": "elsewhere"}))
  folder = results / "x"
  folder.mkdir(parents=True)
  (folder / "eval.json").write_text(json.dumps({
      "mean": 1.0, "returns": [0.0, 2.0], "episodes": 2, "train_step": 100,
      "env_name": "Pong", "policy_dir": str(policy)}))
  (folder / "run_info.json").write_text(json.dumps({
      "command": "python -m paac_tf.train --gin_file=atari.gin", "env_name": "Pong",
      "algorithm": "paac", "agent_steps": 100}))
  found = run_results.collect([str(results)])
  assert len(found) == 1 and found[0].folder_name == "x"
  assert found[0].network is None          # not the run directory's run_config.json
  assert found[0].run_events is None
