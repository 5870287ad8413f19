"""The tags of the training-return summaries, shared by the writers (`summaries.py`, the
Ape-X learner), the reference curve (`reference_curve.py`) and the tools that read them back
(`tools/events.py`). No TensorFlow here: the readers of CSV files import it.

The tags against agent steps keep the strings `Metrics_vs_EnvironmentSteps/...` (TF-Agents'
name, which the runs and reference curves in results/ carry): their step is the agent step
(`frameskip` frames on Atari)."""

RETURN_VS_UPDATES = "Metrics/AverageReturn"                          # step: learner updates
RETURN_VS_AGENT_STEPS = "Metrics_vs_EnvironmentSteps/AverageReturn"  # step: agent steps
# Ape-X: the episodes of its least-exploring environments (epsilon <= apex_learner.low_epsilon).
LOW_EPSILON_RETURN_VS_UPDATES = "Metrics/AverageReturnLowEpsilon"
LOW_EPSILON_RETURN_VS_AGENT_STEPS = "Metrics_vs_EnvironmentSteps/AverageReturnLowEpsilon"

# Evaluation while training (the evaluation protocol on a snapshot; step: agent steps).
EVAL_RETURN = "Eval/AverageReturn"
EVAL_TAGS = {"mean": EVAL_RETURN, "std": "Eval/StdReturn", "min": "Eval/MinReturn",
             "max": "Eval/MaxReturn", "average_length": "Eval/AverageEpisodeLength",
             "episodes": "Eval/Episodes", "wall_time_s": "Eval/WallTime_s"}
# Every scalar a run writes goes to its train/summaries.csv too, as these columns (the
# format of a results folder's summaries.csv, tools/events.py's write_csv).
CSV_FILE = "summaries.csv"
CSV_COLUMNS = ("step", "wall_time", "tag", "value")
